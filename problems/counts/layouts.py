"""What a counts-mode batch is (`CountsBatch`: how many records of each value it holds) and the
layouts of a problem's support that say how counts split: independent binary coordinates
(`BinaryCoordinates`, a product layout) or atoms of a finite distribution (`Categorical`). Each
layout draws a block's root counts, splits counts between two halves by the exact hypergeometric
law, and arranges a leaf's records in a uniformly random order (`problems.counts.stream`)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from problems.counts import kernels as _kernels
from problems.counts.large_hypergeometric import LARGE_POPULATION, hypergeometric_large_reference

#: Records per leaf: 2^LEAF_LEVELS, arranged at once (part of the stream's definition), for
#: layouts that do not set their own `leaf_levels` (BinaryCoordinates: 4 since version 2).
LEAF_LEVELS = 8


#: Above this many coordinates one vectorized hypergeometric call beats a scalar loop
#: (measured: ~45 us fixed cost per array call, ~1-2 us per scalar call).
_VECTOR_SPLIT_MIN = 24


class CountsBatch:
    """The value counts of `k` consecutive records (shape and meaning set by the layout).

    Either given (`counts`), or read lazily from a stream that can count any coordinates of
    records [start, stop) on their own (`problems.counts.coordinates`): `counts_of(cols)`
    then reads only the coordinates a map needs (a Spider's O2 on the separable problems
    reads 2 of d + 2), and `counts` reads them all once. Either way a batch's counts are a
    fixed function of the stream's seed and the records it covers, whenever they are read.
    """

    __slots__ = ("_counts", "_parts", "_source", "_span", "k")

    def __init__(self, k: int, counts: np.ndarray | None = None, *, source=None,
                 span: tuple[int, int] = (0, 0)) -> None:
        if counts is None and source is None:
            raise ValueError("a CountsBatch needs counts or a source to read them from")
        self.k, self._counts, self._source, self._span = k, counts, source, span
        self._parts: dict[tuple, np.ndarray] = {}  # partial reads, by slice

    @property
    def counts(self) -> np.ndarray:
        if self._counts is None:
            self._counts = self._source.counts_between(*self._span, None)
        return self._counts

    def counts_of(self, cols: slice) -> np.ndarray:
        """counts[cols] (a slice of coordinates), reading only those from a lazy source."""
        if self._counts is not None:
            return self._counts[cols]
        key = (cols.start, cols.stop, cols.step)
        part = self._parts.get(key)
        if part is None:  # a second read of the same coordinates walks nothing
            part = self._parts[key] = self._source.counts_between(*self._span, cols)
        return part

    def __len__(self) -> int:
        return self.k

    def __repr__(self) -> str:
        shown = "lazy" if self._counts is None else repr(self._counts)
        return f"CountsBatch(k={self.k}, counts={shown})"


class CountsLayout(ABC):
    """How one record's values are counted: the shape of a counts array and its draws."""

    shape: tuple[int, ...]
    #: Records per leaf of the counts tree: 2^leaf_levels (part of the stream's definition).
    leaf_levels: int = LEAF_LEVELS

    @abstractmethod
    def roots(self, rng: np.random.Generator, n_blocks: int, size: int) -> np.ndarray:
        """Counts of `n_blocks` independent blocks of `size` i.i.d. records, (n_blocks, *shape)."""

    @abstractmethod
    def split(self, rng: np.random.Generator, counts: np.ndarray, size: int) -> np.ndarray:
        """Counts of the first size/2 records of a node of `size` records holding `counts`."""

    @abstractmethod
    def arrange(self, rng: np.random.Generator, counts: np.ndarray, size: int) -> np.ndarray:
        """A uniformly random arrangement of a node of `size` records holding `counts`, in a
        form `arranged_prefix` reads."""

    @abstractmethod
    def arranged_prefix(self, arrangement: np.ndarray, r: int) -> np.ndarray:
        """Counts of the first r records of an arrangement."""

    @abstractmethod
    def check(self, counts: np.ndarray, k: int) -> None:
        """Raise ValueError unless `counts` can be the counts of k records."""


class BinaryCoordinates(CountsLayout):
    """Records with m independent two-point coordinates; coordinate j is "high" with
    probability p[j]. counts[j] = number of records whose coordinate j is high."""

    kernel_kind = _kernels.BINARY  # the compiled walk of `CountsStream` draws as split/arrange
    #: A leaf's arrangement costs records x coordinates, a level of splits coordinates: leaves
    #: of 2^4 minimize the compiled walk's cost per take (measured, issue 27; 2^8 before).
    leaf_levels = 4

    def __init__(self, p: np.ndarray | list[float]) -> None:
        p = np.asarray(p, dtype=float)
        if p.ndim != 1 or len(p) < 1 or not np.all((p > 0) & (p < 1)):
            raise ValueError(f"p={p!r} is invalid: must be a 1-d array of probabilities in (0, 1)")
        self.p = p
        self.shape = (len(p),)

    def roots(self, rng, n_blocks, size):
        return rng.binomial(size, self.p, size=(n_blocks, len(self.p))).astype(np.int64)

    def split(self, rng, counts, size):
        half = size >> 1
        if size > LARGE_POPULATION:  # beyond numpy's sampler (counts stream version 4's top)
            return np.array([hypergeometric_large_reference(rng, c, size - c, half) for c in counts.tolist()],
                            dtype=np.int64)
        if len(counts) >= _VECTOR_SPLIT_MIN:
            out = np.where(counts == size, half, 0).astype(np.int64)
            mixed = (counts > 0) & (counts < size)
            c = counts[mixed]
            out[mixed] = rng.hypergeometric(c, size - c, half)
            return out
        # Empty and full nodes split deterministically; only the rest need a draw.
        draw = rng.hypergeometric
        return np.array([draw(c, size - c, half) if 0 < c < size else (half if c else 0)
                         for c in counts.tolist()], dtype=np.int64)

    def arrange(self, rng, counts, size):
        # Row j of a uniformly random permutation (Fisher-Yates, exact): the positions holding
        # its c_j smallest values are a uniformly random c_j-subset.
        ranks = rng.permuted(np.broadcast_to(np.arange(size), (len(counts), size)), axis=1)
        return ranks < counts[:, None]  # (m, size): which records are high

    def arranged_prefix(self, arrangement, r):
        return np.count_nonzero(arrangement[:, :r], axis=1).astype(np.int64)

    def check(self, counts, k):
        if counts.shape != self.shape or np.any(counts < 0) or np.any(counts > k):
            raise ValueError(f"counts of shape {counts.shape} are invalid for {k} records: must "
                             f"have shape {self.shape} with entries in [0, {k}]")


class Categorical(CountsLayout):
    """Records that are one of K atoms, atom i with probability p[i]; counts[i] = records
    equal to atom i (they sum to k)."""

    kernel_kind = _kernels.CATEGORICAL

    def __init__(self, p: np.ndarray | list[float]) -> None:
        p = np.asarray(p, dtype=float)
        if p.ndim != 1 or len(p) < 1 or np.any(p < 0) or not math.isclose(p.sum(), 1.0, rel_tol=1e-9):
            raise ValueError(f"p of length {np.size(p)} is invalid: must be a 1-d probability vector")
        self.p = p / p.sum()
        self.shape = (len(p),)

    def roots(self, rng, n_blocks, size):
        return rng.multinomial(size, self.p, size=n_blocks).astype(np.int64)

    def split(self, rng, counts, size):
        out = np.zeros_like(counts)
        # Only atoms present in the node can be drawn; small nodes are sparse.
        present = np.flatnonzero(counts)
        if len(present) == 1:
            out[present] = size >> 1
        elif len(present):
            out[present] = rng.multivariate_hypergeometric(counts[present], size >> 1,
                                                           method="marginals")
        return out

    def arrange(self, rng, counts, size):
        present = np.flatnonzero(counts)
        return rng.permutation(np.repeat(present, counts[present]))  # atom of each record

    def arranged_prefix(self, arrangement, r):
        return np.bincount(arrangement[:r], minlength=self.shape[0]).astype(np.int64)

    def check(self, counts, k):
        if counts.shape != self.shape or np.any(counts < 0) or int(counts.sum()) != k:
            raise ValueError(f"counts of shape {counts.shape} are invalid for {k} records: must "
                             f"have shape {self.shape}, entries >= 0, sum {k}")
