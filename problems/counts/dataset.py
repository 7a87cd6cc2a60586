"""A data set held as value counts, and every way the families read it, exactly (README,
"Data modes: records and counts").

The data set. An empirical algorithm's sample S is the first n records of a counts stream
(`problems.counts.stream.CountsStream.take(n)`, exact and prefix-consistent: paired seeds keep
pairing across n); S is then a `CountsBatch`, the one representation every family reads. Its
exact empirical oracles cost O(support x d) whatever n is: the mean gradient (the problem's
`counts_grad`), F_S (`empirical_loss`), and the metrics' emp_grad (`problems.evaluation.metrics`).

The reads (each distributed exactly as the record-mode read of a data set with these counts):
* the full batch: S itself;
* Poisson subsampling at rate q (`poisson_subsample`): every record kept independently with
  probability q, so an atom held c times is kept Binomial(c, q) times, independently across
  atoms (per-value binomial thinning);
* k records without replacement (`without_replacement`): a uniformly random k-subset of S
  holds Multivariate-Hypergeometric(counts, k) of each atom;
* disjoint chunks of a uniformly random arrangement (`disjoint_chunks`), and shuffled passes
  (`shuffled_passes`, one fresh arrangement per pass): successive multivariate hypergeometric
  splits (chunk j takes its size from what chunks < j left);
* one-pass streams: the counts stream itself (consecutive takes).

Where these are exact. On an *atoms* layout (`problems.counts.stream.Categorical`) the counts of S
determine S up to order, and every read above depends on S only through its multiset, so the
reads are exact. On a *product* layout (independent two-point coordinates,
`problems.counts.stream.BinaryCoordinates`) the counts are per coordinate: they do not say which
coordinate values share a record. One read of S is still exact (its per-coordinate
arrangements are independent and uniform), but two reads of the same S are not: in record
mode they are correlated through S's joint records, which the counts do not carry (n = 2,
counts (1, 1): S is {hh, ll} or {hl, lh}, and a first single-record read (1, 1) rules out a
second one (1, 0); independent per-coordinate reads would allow it). Product layouts
therefore give only the full batch and streams; the resampling reads raise `CountsModeError`
(`require_resampling_exact`, called before a run does any work).

Record-mode twins. `TwinStream` hands out records materialized from the counts of each take,
and the reads above on them draw exactly what the counts read draws (same generator calls)
before materializing: a counts run and a record run on a twin then see the same batches, which
is what the equivalence tests compare. On plain records the reads draw as record mode always
has (`sample[rng.random(n) < q]` for Poisson), so record-mode runs are unchanged.

Limits: numpy's hypergeometric sampler needs each count below 1e9, so the without-replacement
reads refuse larger data sets (`CountsModeError` naming the limit); Poisson thinning has no
such limit (binomial draws take int64 counts).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from problems.counts.binomial_thin import thin_counts
from problems.counts.layouts import BinaryCoordinates, Categorical, CountsBatch
from problems.counts.stream import MaterializedStream

#: numpy's hypergeometric draws need ngood, nbad < 1e9 (its documented limit).
HYPERGEOMETRIC_MAX = 10**9 - 1


class CountsModeError(ValueError):
    """Counts mode cannot reproduce record mode's distribution here (refused before work)."""


def layout_kind(problem: Any) -> str | None:
    """"atoms", "product" or None (no counts mode) for a problem's counts layout."""
    layout = getattr(problem, "layout", None)
    if isinstance(layout, Categorical):
        return "atoms"
    if isinstance(layout, BinaryCoordinates):
        return "product"
    return None


def require_resampling_exact(algorithm: str, problem: Any, why: str) -> None:
    """Refuse (before any work) a counts run that reads one data set more than once on a
    product layout (module docstring); `why` names the read (e.g. "Poisson subsamples")."""
    if layout_kind(problem) == "product":
        raise CountsModeError(
            f"data='counts' is invalid for {algorithm} on problem {problem.name!r}: {algorithm} "
            f"reads its sample repeatedly ({why}), and the counts of a product layout (independent "
            "two-point coordinates) do not say which values share a record, so repeated reads of "
            "one data set are not exact there: run with data='records', or on an atoms problem")


def counts_exact(problem_cls: Any, algorithm_cls: Any) -> bool:
    """Whether counts mode is exact for this (problem class, algorithm class) pair, from the
    classes alone (specs and defaults decide before building anything): the problem has a
    counts mode, the algorithm runs on counts, and an algorithm that re-reads its sample
    meets an atoms layout."""
    if not getattr(problem_cls, "counts_capable", False):
        return False
    if "counts" not in getattr(algorithm_cls, "data_modes", ("records",)):
        return False
    rereads = getattr(algorithm_cls, "counts_rereads", "")
    return not rereads or getattr(problem_cls, "counts_layout_kind", None) == "atoms"


# ------------------------------------------------------------------ the data set's oracles
def empirical_loss(problem: Any, x: np.ndarray, sample: Any) -> float:
    """F_S(x) = the mean of f(x; z_i) over the sample: exact from the counts on an atoms
    layout (O(atoms present)), from the records otherwise."""
    if isinstance(sample, CountsBatch):
        if layout_kind(problem) != "atoms":
            raise CountsModeError(f"empirical_loss from counts needs an atoms layout; problem "
                                  f"{problem.name!r} has {layout_kind(problem)!r}")
        present = np.flatnonzero(sample.counts)
        losses = problem.per_sample_losses(x, problem.atoms[present])
        return float(sample.counts[present] @ losses / sample.k)
    return float(np.mean(problem.per_sample_losses(x, np.asarray(sample))))


# ------------------------------------------------------------------ reads from counts
def _batch(counts: np.ndarray) -> CountsBatch:
    return CountsBatch(int(counts.sum()), counts.astype(np.int64, copy=False))


def _require_atoms(batch: CountsBatch) -> None:
    """The reads below are defined on atom counts (one count per value, summing to k); a
    product layout's per-coordinate counts do not sum to k in general and are refused (a
    defence behind `require_resampling_exact`, which refuses such runs before any work)."""
    if int(batch.counts.sum()) != batch.k:
        raise CountsModeError(f"counts summing to {int(batch.counts.sum())} are not the atom counts "
                              f"of {batch.k} records: the reads of a data set need an atoms layout")


def thin(batch: CountsBatch, q: float, rng: np.random.Generator) -> CountsBatch:
    """Poisson subsample at rate q: each record kept independently with probability q, i.e.
    Binomial(c_i, q) of the c_i copies of each value (atoms layout)."""
    _require_atoms(batch)
    return _batch(thin_counts(batch.counts, q, rng))  # numpy's binomial draws, compiled


def _check_hypergeometric(batch: CountsBatch) -> None:
    _require_atoms(batch)
    if batch.k > HYPERGEOMETRIC_MAX:
        raise CountsModeError(
            f"a data set of {batch.k} records is too large for an exact without-replacement read "
            f"from counts: numpy's hypergeometric sampler needs counts below {HYPERGEOMETRIC_MAX + 1}")


def draw_without_replacement(batch: CountsBatch, k: int, rng: np.random.Generator) -> CountsBatch:
    """The counts of a uniformly random k-subset of the records (multivariate hypergeometric)."""
    if not 0 <= k <= batch.k:
        raise ValueError(f"k={k!r} is invalid: must be an integer in [0, {batch.k}]")
    _check_hypergeometric(batch)
    return _batch(rng.multivariate_hypergeometric(batch.counts, int(k), method="marginals"))


def split_chunks(batch: CountsBatch, sizes: list[int], rng: np.random.Generator) -> list[CountsBatch]:
    """Counts of consecutive chunks of the given sizes of a uniformly random arrangement:
    chunk j is a without-replacement draw from what chunks < j left; sizes must sum to at
    most k (a remainder is left out)."""
    if any(s < 0 for s in sizes) or sum(sizes) > batch.k:
        raise ValueError(f"sizes={sizes!r} are invalid: must be >= 0 and sum to at most {batch.k}")
    _check_hypergeometric(batch)
    left, out = batch.counts.copy(), []
    for s in sizes:
        part = rng.multivariate_hypergeometric(left, int(s), method="marginals") if s else \
            np.zeros_like(left)
        left -= part
        out.append(_batch(part))
    return out


# ------------------------------------------------------------------ reads on any sample
def _twin(sample: Any) -> TwinRecords | None:
    return sample if isinstance(sample, TwinRecords) and sample.source is not None else None


def _rows_of(sample: Any, counts: CountsBatch) -> np.ndarray:
    twin = _twin(sample)
    assert twin is not None
    return twin.materialize(counts)


def poisson_subsample(sample: Any, q: float, rng: np.random.Generator) -> Any:
    """A Poisson subsample (rate q) of `sample`: counts (`thin`), a record twin (the counts
    draw, materialized) or records (`sample[rng.random(n) < q]`, record mode's draw)."""
    if isinstance(sample, CountsBatch):
        return thin(sample, q, rng)
    twin = _twin(sample)
    if twin is not None:
        return _rows_of(twin, thin(twin.source, q, rng))
    return sample[rng.random(len(sample)) < q]


def without_replacement(sample: Any, k: int, rng: np.random.Generator) -> Any:
    """k records of `sample` drawn uniformly without replacement (counts, twin or records)."""
    if isinstance(sample, CountsBatch):
        return draw_without_replacement(sample, k, rng)
    twin = _twin(sample)
    if twin is not None:
        return _rows_of(twin, draw_without_replacement(twin.source, k, rng))
    return sample[rng.permutation(len(sample))[:k]]


def disjoint_chunks(sample: Any, sizes: list[int], rng: np.random.Generator) -> list[Any]:
    """Consecutive chunks of a uniformly random arrangement of `sample`."""
    if isinstance(sample, CountsBatch):
        return split_chunks(sample, sizes, rng)
    twin = _twin(sample)
    if twin is not None:
        return [_rows_of(twin, c) for c in split_chunks(twin.source, sizes, rng)]
    order = rng.permutation(len(sample))
    ends = np.cumsum([0, *sizes])
    return [sample[order[a:b]] for a, b in itertools.pairwise(ends)]


def shuffled_passes(sample: Any, batch_size: int, passes: int,
                    rng: np.random.Generator) -> Iterator[Any]:
    """`passes` passes over `sample`, each a fresh uniformly random arrangement cut into
    floor(k / batch_size) batches of batch_size records (the remainder of a pass is dropped)."""
    k = len(sample) if not isinstance(sample, CountsBatch) else sample.k
    sizes = [int(batch_size)] * (k // int(batch_size))
    for _ in range(int(passes)):
        yield from disjoint_chunks(sample, sizes, rng)


# ------------------------------------------------------------------ record twins
class TwinRecords(np.ndarray):
    """Records materialized from a `CountsBatch` that remember it (`source`) and how they were
    made (`materialize`): the reads above then draw from the counts, as counts mode does.
    Views and results of numpy operations are plain records (their `source` is None)."""

    source: CountsBatch | None = None
    materialize: Callable[[CountsBatch], np.ndarray] | None = None

    def __array_finalize__(self, obj: Any) -> None:
        self.source, self.materialize = None, None


class TwinStream(MaterializedStream):
    """The record-mode twin of a counts stream: `take(k)` returns the records materialized
    from the next k records' counts, as `TwinRecords` that remember those counts (tests and
    audits; module docstring)."""

    def take(self, k: int) -> np.ndarray:
        batch = self._counts.take(k)
        rows = np.asarray(self._materialize(batch)).view(TwinRecords)
        rows.source, rows.materialize = batch, self._materialize
        return rows


__all__ = ["HYPERGEOMETRIC_MAX", "CountsModeError", "TwinRecords", "TwinStream", "counts_exact",
           "disjoint_chunks",
           "draw_without_replacement", "empirical_loss", "layout_kind", "poisson_subsample",
           "require_resampling_exact", "shuffled_passes", "split_chunks", "thin",
           "without_replacement"]
