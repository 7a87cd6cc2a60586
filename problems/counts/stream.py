"""Exact batch statistics: streams of record *counts* instead of records (README, "Data
modes: records and counts").

Where every record takes finitely many values (independent two-point coordinates, or one of a
finite set of atoms) and clipping is the identity, the mean of the per-sample gradients over
a batch depends on the batch only through its value counts. A `CountsStream` hands out, for
the next k records, those counts, with two properties that make it an exact stand-in for a
record stream:

* exact: the counts of any k consecutive records are distributed exactly as the counts of
  k i.i.d. records (Binomial(k, p_j) per two-point coordinate, Multinomial(k, p) over atoms);
* prefix-consistent: the counts of records [0, m) are a fixed function of (seed, m), whatever
  sizes the consumer takes, so cells with the same data seed stay paired.

Construction (a tree of counts). Records are grouped in blocks of 2^BLOCK_LEVELS; the blocks'
counts are independent Binomial / Multinomial draws, made `BLOCKS_PER_SUPER` at a time. Inside
a block, the count of a dyadic node of 2^l records is split between its two halves by a
hypergeometric draw: given that a node of s records holds c ones, i.i.d. records make every
arrangement equally likely, so the first s/2 hold Hypergeometric(c, s - c, s/2) of them
(multivariate hypergeometric over atoms). Nodes of 2^LEAF_LEVELS records (leaves) are not
split further: their records are arranged at once, uniformly at random given the node's
counts (a random permutation), which is the same distribution as splitting them all the way
down and costs one vectorized draw instead of LEAF_LEVELS scalar ones. The counts of [0, m)
are the sum of whole blocks, the left halves met on the path from the block's root down to
the leaf holding offset m, and the leaf's prefix.

Randomness: a node's draw comes from a Philox counter-based generator (Salmon et al. 2011,
"Parallel random numbers: as easy as 1, 2, 3") whose key comes from the stream's SeedSequence
and whose counter is the node's address (block, level, index), so any node can be drawn
alone, in any order, and always gets the same value. The path of the last query is cached
(one node per level: O(levels x counts) memory), so a take of k records draws about log2(k)
new nodes: the cost per step grows with log k, not k.

Speed: the walk below a block's root runs compiled (`problems.counts.kernels`, numba) and
draws numpy's numbers bit for bit (`ReferenceCountsStream` keeps the numpy walk; the tests hold
the two equal). Version 2 of the stream (`STREAM_VERSION`) gives BinaryCoordinates leaves of
2^4 records instead of 2^8 (its arrangement costs records x coordinates; measured cheapest at
2^4); Categorical keeps 2^8 (its arrangement costs records only).

Version 3 (`problems.counts.coordinates`, what a problem's counts mode draws on a product
layout): the same construction with one tree per coordinate, node counters tagged by the
coordinate, read lazily, so that a map needing 2 of d + 2 coordinates walks 2.

Limits: numpy's hypergeometric sampler needs ngood, nbad < 1e9, hence blocks of 2^29 records;
a take of k records draws the roots of every superblock it passes (k / 2^35 numpy binomial
calls of 64 x m draws), the cost that dominates from k ~ 1e10 on.

Version 4 (the default; `problems.counts.coordinates.counts_stream`) lifts that limit on
product layouts: one block of 2^TOP_LEVELS = 2^50 records per coordinate (a root
Binomial(2^50, p_j), then the same dyadic splits all the way down), the splits of nodes above
2^29 records drawn by the large-population sampler of `problems.counts.large_hypergeometric`
(numpy's HRUA with its log-ratios taken as Stirling differences). A take of k records then
draws about log2(k) nodes per coordinate read, whatever k: no superblock roots. Version 3 (the
same construction with blocks of 2^29 in superblocks of 64) stays available
(`SUPPORTED_STREAM_VERSIONS`; a spec's `counts_stream = 3`) so that stores and the committed
reference made with it stay reproducible; the two draw independent data of the same law (each
from a Philox key of its own, `KEY_WORD` and `KEY_WORD_V4`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from problems.counts import kernels as _kernels
from problems.counts.layouts import BinaryCoordinates, Categorical, CountsBatch, CountsLayout
from problems.counts.philox import STATE_WORDS
from problems.streams import StreamBase, parse_budget, parse_seed

#: Records per block: 2^BLOCK_LEVELS (part of the stream's definition, like streams.CHUNK).
BLOCK_LEVELS = 29
#: Records per block of counts stream version 4 on product layouts: 2^TOP_LEVELS (~1.1e15; the
#: root is numpy's Binomial(2^50, p), exact below 2^53; a longer stream starts another block).
TOP_LEVELS = 50
#: The counts streams' construction (block / leaf sizes, draw order). Version 1: leaves of 2^8
#: for every layout; version 2: BinaryCoordinates' leaves hold 2^4 records; version 3: a
#: problem's product layout draws one tree per coordinate (`problems.counts.coordinates`).
#: Version 4: product layouts draw one block of 2^TOP_LEVELS records per coordinate, its
#: splits above 2^29 records by the large-population sampler (module docstring). Stores record
#: the version (bench.store) and a sweep refuses to resume a store of another version.
STREAM_VERSION = 4
#: The versions this dprates draws (a spec's `counts_stream`; the default is STREAM_VERSION).
SUPPORTED_STREAM_VERSIONS = (3, 4)
#: The last word of the spawn key of the stream's Philox key: versions 1-3 (and atoms layouts
#: in version 4, whose data did not change), and version 4's product layouts. A key of its own
#: keeps version 4 independent of version 3: on one key, version 4's nodes of up to 2^29
#: records in its first 2^29 records would reuse version 3's counters, and HRUA maps the same
#: uniforms to nearly the same split (measured: batches of 1e3 records equal in 55% of seeds).
KEY_WORD = 2**32 + 7
KEY_WORD_V4 = 2**32 + 8
#: Blocks whose root counts are drawn together (one Philox counter per group).
BLOCKS_PER_SUPER = 64
_ROOT_TAG = 2**63  # counter word marking the block-root draws (node levels are < 64)


def require_supported_version(version: int) -> None:
    """One clear line unless `version` is a counts stream version this dprates draws."""
    if isinstance(version, bool) or version not in SUPPORTED_STREAM_VERSIONS:
        raise ValueError(f"counts_stream={version!r} is invalid: must be one of "
                         f"{', '.join(map(str, SUPPORTED_STREAM_VERSIONS))}")


class CountsClipError(ValueError):
    """Counts mode was asked to stand in for a clip that is not the identity."""


class CountsStream(StreamBase):
    """A lazy, exact, prefix-consistent stream of record counts (see the module docstring).

    `take(k)` returns the `CountsBatch` of the next k records. `block_levels`,
    `blocks_per_super` and `leaf_levels` (capped at block_levels; default the layout's) define
    the construction
    (tests use small blocks to cross block boundaries cheaply); changing them changes the data.

    The walk below a block's root runs compiled (`problems.counts.kernels`) for the two
    layouts of this module: the same random numbers as the numpy walk, bit for bit (tested
    against `ReferenceCountsStream`, which keeps the numpy walk), at ~1 us per node instead
    of ~30 us. Roots stay numpy's binomial / multinomial draws.
    """

    #: Use the compiled walk where the layout has one (`ReferenceCountsStream` sets False).
    compiled = True
    #: The deepest block this class splits, and why (numpy's multivariate hypergeometric,
    #: which atoms need, takes counts below 1e9; `CoordinateCountsStream` goes to TOP_LEVELS).
    max_block_levels = BLOCK_LEVELS
    max_block_levels_why = "numpy's hypergeometric needs counts < 1e9"

    def __init__(self, layout: CountsLayout, seed: int | np.random.SeedSequence,
                 budget: int | None = None, *, block_levels: int = BLOCK_LEVELS,
                 blocks_per_super: int = BLOCKS_PER_SUPER, leaf_levels: int | None = None,
                 key_word: int = KEY_WORD) -> None:
        entropy, spawn_key = parse_seed(seed)
        self.budget = parse_budget(budget)
        top = self.max_block_levels
        if not (isinstance(block_levels, int) and 1 <= block_levels <= top):
            raise ValueError(f"block_levels={block_levels!r} is invalid: must be an integer in "
                             f"[1, {top}] ({self.max_block_levels_why})")
        if not (isinstance(blocks_per_super, int) and blocks_per_super >= 1):
            raise ValueError(f"blocks_per_super={blocks_per_super!r} is invalid: must be an integer >= 1")
        self.layout = layout
        self.used = 0
        if leaf_levels is None:
            leaf_levels = layout.leaf_levels
        if not (isinstance(leaf_levels, int) and leaf_levels >= 0):
            raise ValueError(f"leaf_levels={leaf_levels!r} is invalid: must be an integer >= 0")
        self.levels, self.per_super = block_levels, blocks_per_super
        self.leaf_levels = min(leaf_levels, block_levels)
        # Distinct from the record stream's chunk seeds (spawn keys are chunk indices there).
        if key_word not in (KEY_WORD, KEY_WORD_V4):
            raise ValueError(f"key_word={key_word!r} is invalid: must be {KEY_WORD} or {KEY_WORD_V4}")
        self.key_word = key_word
        key = np.random.SeedSequence(entropy, spawn_key=(*spawn_key, key_word)).generate_state(
            2, np.uint64)
        self._bitgen = np.random.Philox(key=key)
        self._state = self._bitgen.state
        self._rng = np.random.Generator(self._bitgen)
        self._zero = np.zeros(layout.shape, dtype=np.int64)
        self._super_index = -1
        self._super_cum: np.ndarray | None = None  # (per_super + 1, *shape) cumulative counts
        self._super_totals: list[np.ndarray] = []  # totals of superblocks 0, 1, ...
        self._trail: dict[int, list] = {}  # see prefix_counts
        self._trail_offset = 0
        self._leaf: tuple[int, int, np.ndarray] | None = None  # (block, index, arrangement)
        self._prefix = self._zero
        self.nodes_drawn = 0
        self._before_run: tuple[int, np.ndarray] = (0, self._zero)  # counts before superblock s
        self._kind = compiled_kind(layout) if self.compiled else None
        if self._kind is not None:
            self._init_path()

    # -- randomness keyed by node address -------------------------------------------------
    def _seek(self, *words: int) -> np.random.Generator:
        st = self._state
        st["state"]["counter"][:] = (0, *words)
        st["buffer_pos"], st["has_uint32"], st["uinteger"] = 4, 0, 0
        self._bitgen.state = st
        return self._rng

    # -- the tree ---------------------------------------------------------------------------
    def _superblock(self, s: int) -> np.ndarray:
        """Cumulative root counts of superblock s, (per_super + 1, *shape)."""
        if s != self._super_index:
            roots = self.layout.roots(self._seek(s, 0, _ROOT_TAG), self.per_super, 1 << self.levels)
            cum = np.zeros((self.per_super + 1, *self.layout.shape), dtype=np.int64)
            np.cumsum(roots, axis=0, out=cum[1:])
            self._super_index, self._super_cum = s, cum
            self.nodes_drawn += 1
            if len(self._super_totals) == s:  # the next total: no second draw in _before_super
                self._super_totals.append(cum[-1].copy())
        assert self._super_cum is not None
        return self._super_cum

    def _before_super(self, s: int) -> np.ndarray:
        """Counts of every record before superblock s (summed on from the last query's s)."""
        while len(self._super_totals) < s:
            j = len(self._super_totals)
            roots = self.layout.roots(self._seek(j, 0, _ROOT_TAG), self.per_super, 1 << self.levels)
            self._super_totals.append(roots.sum(axis=0))
        start, total = self._before_run if self._before_run[0] <= s else (0, self._zero)
        total = total.copy()
        for t in self._super_totals[start:s]:
            total += t
        self._before_run = (s, total)
        return total

    def _leaf_prefix(self, block: int, index: int, counts: np.ndarray, r: int) -> np.ndarray:
        """Counts of the first r records of leaf (block, index), which holds `counts`."""
        if self._leaf is None or self._leaf[:2] != (block, index):
            level = self.leaf_levels
            arrangement = self.layout.arrange(self._seek(index, level, block), counts, 1 << level)
            self._leaf = (block, index, arrangement)
            self.nodes_drawn += 1
        return self.layout.arranged_prefix(self._leaf[2], r)

    def _start(self, block: int, offset: int) -> list:
        """The deepest node of the cached path that contains offset (the root if none)."""
        trail, level = self._trail, self.levels
        root = trail.get(level)
        if root is not None and root[0] == block:
            prev = self._trail_offset
            level = max(self.leaf_levels, (prev ^ offset).bit_length())
            while level < self.levels:  # nodes at >= this level are shared with prev's path
                hit = trail.get(level)
                if hit is not None and hit[0] == block and hit[1] == offset >> level:
                    return [level, *hit]
                level += 1
            return [self.levels, *root]
        s, b_in = divmod(block, self.per_super)
        cum = self._superblock(s)
        entry = [block, 0, cum[b_in + 1] - cum[b_in], self._before_super(s) + cum[b_in], None]
        trail.clear()
        trail[self.levels] = entry
        return [self.levels, *entry]

    def prefix_counts(self, m: int) -> np.ndarray:
        """Counts of records [0, m): a fixed function of (seed, m).

        Walks from the block's root to the leaf holding m, splitting each node on the way;
        the path of the previous query is kept (`_trail`: per level [block, index, counts,
        counts before the node, left-half counts]) and only the nodes below where the two paths
        part are drawn.
        """
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
            raise ValueError(f"m={m!r} is invalid: must be an integer >= 0")
        block, offset = divmod(int(m), 1 << self.levels)
        if self._kind is not None:
            return self._compiled_prefix(block, offset)
        level, _, index, node, before, left = self._start(block, offset)
        self._trail_offset = offset
        while True:
            r = offset - (index << level)
            if r == 0:
                return before
            if level == self.leaf_levels:
                return before + self._leaf_prefix(block, index, node, r)
            entry = self._trail[level]
            if left is None:
                left = self.layout.split(self._seek(index, level, block), node, 1 << level)
                entry[4] = left
                self.nodes_drawn += 1
            level -= 1
            if r < 1 << level:
                child = [block, 2 * index, left, before, None]
            else:
                child = [block, 2 * index + 1, node - left, before + left, None]
            self._trail[level] = child
            _, index, node, before, left = child

    # -- the compiled walk (same nodes, same draws as the loop above) ---------------------
    def _init_path(self) -> None:
        rows, m = self.levels + 1, self.layout.shape[0]
        self._st = np.zeros(STATE_WORDS, dtype=np.uint64)
        self._st[4:6] = self._bitgen.state["state"]["key"]
        self._pidx = np.zeros(rows, dtype=np.int64)
        self._pvalid = np.zeros(rows, dtype=np.bool_)
        self._phas = np.zeros(rows, dtype=np.bool_)
        self._pnode = np.zeros((rows, m), dtype=np.int64)
        self._pbefore = np.zeros((rows, m), dtype=np.int64)
        self._pleft = np.zeros((rows, m), dtype=np.int64)
        self._path_block = -1
        self._leaf_meta = np.zeros(3, dtype=np.int64)  # (block, index, valid) of the leaf
        size = 1 << self.leaf_levels
        if self._kind == _kernels.BINARY:  # a 0/1 mark per coordinate and record
            self._leaf_arr = np.zeros((m, size), dtype=np.uint8)
        else:  # the atom of each record
            self._leaf_arr = np.zeros((1, size), dtype=np.int64)
        self._scratch = np.zeros(m, dtype=np.int64)
        self._trail = self._pvalid  # one entry per level

    def _compiled_prefix(self, block: int, offset: int) -> np.ndarray:
        if block != self._path_block:  # a new block: its root, and a fresh path
            s, b_in = divmod(block, self.per_super)
            cum = self._superblock(s)
            top = self.levels
            self._pvalid[:] = False
            self._pvalid[top], self._phas[top], self._pidx[top] = True, False, 0
            self._pnode[top] = cum[b_in + 1] - cum[b_in]
            self._pbefore[top] = self._before_super(s) + cum[b_in]
            self._path_block = block
        out = np.empty(self.layout.shape, dtype=np.int64)
        self.nodes_drawn += _kernels.walk(
            self._kind, self._st, self.levels, self.leaf_levels, block, offset, self._trail_offset,
            self._pidx, self._pvalid, self._pnode, self._pbefore, self._pleft, self._phas,
            self._leaf_meta, self._leaf_arr, out, self._scratch, 0)
        self._trail_offset = offset
        return out

    def take(self, k: int) -> CountsBatch:
        """The counts of the next k unused records."""
        k = self._check_request(k)
        stop = self.used + k
        prefix = self.prefix_counts(stop)
        batch = CountsBatch(k, prefix - self._prefix)
        self._prefix, self.used = prefix, stop
        return batch

    @property
    def cache_nbytes(self) -> int:
        """Bytes held by the caches: one node per level on the path, one superblock's
        cumulative root counts and the counts before it, one total per superblock passed
        (O(counts x log n))."""
        if self._kind is not None:
            path = self._pnode.nbytes + self._pbefore.nbytes + self._pleft.nbytes
            path += self._leaf_arr.nbytes if self._leaf_meta[2] else 0
        else:
            path = sum(a.nbytes for e in self._trail.values() for a in e[2:] if a is not None)
            path += 0 if self._leaf is None else self._leaf[2].nbytes
        sup = 0 if self._super_cum is None else self._super_cum.nbytes
        sup += self._before_run[1].nbytes
        return path + sup + sum(t.nbytes for t in self._super_totals)

    def digest(self, records: int = 64) -> str:
        """A short hash of the counts of the first `records` records (a pairing check)."""
        m = int(min(records, self.budget))
        if self._kind is not None:  # a twin with a fresh path: the consumer's path stays
            twin = type(self).__new__(type(self))
            twin.__dict__.update(self.__dict__)
            twin._init_path()
            twin._trail_offset = 0
            counts = twin.prefix_counts(m)
            return hashlib.sha256(counts.astype(np.int64).tobytes()).hexdigest()[:16]
        saved = self._trail, self._trail_offset, self._leaf  # leave the consumer's path alone
        self._trail, self._leaf = {}, None
        try:
            counts = self.prefix_counts(m)
        finally:
            self._trail, self._trail_offset, self._leaf = saved
        return hashlib.sha256(counts.astype(np.int64).tobytes()).hexdigest()[:16]


class ReferenceCountsStream(CountsStream):
    """`CountsStream` with its walk in numpy and Python only (the implementation before the
    compiled kernels): the reference the tests compare the compiled walk with, number for
    number, and the benchmarks' "before" figure."""

    compiled = False


def compiled_kind(layout: CountsLayout) -> int | None:
    """The compiled walk's kind for a layout whose draws it reproduces, else None (a
    subclass that changes split / arrange runs the numpy walk)."""
    t = type(layout)
    for base in (BinaryCoordinates, Categorical):
        if isinstance(layout, base) and t.split is base.split and t.arrange is base.arrange \
                and t.arranged_prefix is base.arranged_prefix:
            return base.kernel_kind
    return None


class MaterializedStream(StreamBase):
    """Records made from a counts stream, take by take: `take(k)` returns
    `materialize(counts.take(k))`. It is the record-mode twin of a counts-mode run on the same
    data (the equivalence tests run both), not a general record stream: the rows of one take
    are arranged by `materialize`, so its records depend on the take pattern.
    """

    def __init__(self, counts: CountsStream, materialize: Callable[[CountsBatch], np.ndarray]) -> None:
        self._counts, self._materialize = counts, materialize
        self.budget = counts.budget

    @property
    def used(self) -> int:  # type: ignore[override]
        return self._counts.used

    def take(self, k: int) -> np.ndarray:
        return self._materialize(self._counts.take(k))


def require_identity_clip(oracle: str, clip: float, bound: float) -> None:
    """Counts mode stands in for clipped means only where clipping is the identity.

    `bound` bounds the largest per-record norm in the batch at this iterate. A relative
    slack of 1e-12 absorbs the rounding of two ways of computing one norm (a row within it
    of the threshold would be scaled by at most 1 - 1e-12 in record mode, far below any
    tolerance we test); anything more raises before the release is made or noised.
    """
    if not clip >= bound * (1 - 1e-12):
        raise CountsClipError(
            f"counts mode is exact only while clipping is the identity, but the {oracle} clip "
            f"threshold {clip:.6g} is below the per-record bound {bound:.6g} at this iterate (the "
            "problem's stated constants are too small here): run with data='records'")


__all__ = ["BLOCKS_PER_SUPER", "BLOCK_LEVELS", "KEY_WORD", "KEY_WORD_V4", "STREAM_VERSION",
           "SUPPORTED_STREAM_VERSIONS", "TOP_LEVELS",
           "CountsClipError", "CountsStream",
           "MaterializedStream", "ReferenceCountsStream", "require_identity_clip",
           "require_supported_version"]
