"""The check of a plugin problem (issue 71, item 2): a problem is untrusted code.

Every algorithm's privacy rests on the problem's per-record oracles: the suite clips each
record's gradient itself (`algorithms.counts_maps`), so a release's sensitivity is 2C over its
divisor *if* row i of `per_sample_grads` depends on record i alone, if the clip C (often the
problem's stated G) does not read the data, and, on a product counts layout, if the support
bound that the counts guard trusts is a true bound. A built-in problem's code is ours and its
tests check these; a plugin problem's is checked here, before any cell runs, in the data mode
its cells run in (`bench.privacy_gate`):

1. **Constants that read the data.** `constants` (G, L, rho, ...: public inputs of the clip
   and step rules) must be the same before the problem draws any data, after it draws two
   different samples (and streams in its data mode), and on a fresh instance. A problem that
   sets G from its own records gives a data-dependent clip: eps = infinity.
2. **Per-record oracles.** At public points (the start, points at distance 1-100 from it along
   axes and random directions), each row of `per_sample_grads` (and of `per_sample_grad_diffs`)
   must equal the row computed for that record alone and must not move when another record of
   the batch is replaced by an adversarial one (the problem's list, scale 1e6).
3. **The product layout's support bound** (counts mode on independent two-point coordinates):
   the bound `guarded_counts_grad` reports (the clip guard admits any clip at or above it) must
   be at least the largest per-record gradient norm over the support, enumerated when the
   support has at most 2^12 records, else over 4,096 random records and the two corners; the
   counts-mode mean must equal the mean over the materialized records. Then the suite's clipped
   sum at the smallest clip the guard admits, on a counts batch and on its neighbour (one
   record replaced: each coordinate's count moved by the two records' difference), moves by
   at most 2C (the told sensitivity).

On an atoms layout the suite computes the clipped sum from per-record gradients of the atoms
(a problem's own structured sum is used for built-ins only), so check 2 covers it.

What it cannot see: a bound that fails only at points it did not try (the compiled steps keep
trusting a plugin's declared bound at every iterate: computing it from the affine structure at
each public iterate is still to do), a per-record oracle that is row-local on these points
only, and a problem that detects the check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from problems.counts.dataset import layout_kind
from problems.counts.layouts import CountsBatch

#: Records of a batch the per-record check uses.
BATCH = 24
#: Distances of the public points from the start.
SCALES = (1.0, 10.0, 100.0)
#: Largest support enumerated (2^12 records); past it, this many random records.
ENUMERATE_BITS, SUPPORT_SAMPLE = 12, 4096
#: Relative tolerance of equalities between two evaluations of the same arithmetic.
RTOL = 1e-9


@dataclass(frozen=True)
class ProblemCheck:
    """ok: no check failed; reason: the FAILED line; tried: what was checked."""

    ok: bool
    reason: str
    tried: str


def public_points(prob: Any, seed: int) -> list[np.ndarray]:
    """The start and points at distance 1, 10 and 100 from it along the first two axes (both
    signs) and a random direction: public values, as the iterates of a run are."""
    x0 = np.asarray(prob.x0, dtype=float)
    d = len(x0)
    rng = np.random.default_rng([seed, 71])
    dirs = []
    for j in range(min(d, 2)):
        e = np.zeros(d)
        e[j] = 1.0
        dirs += [e, -e]
    u = rng.standard_normal(d)
    dirs.append(u / np.linalg.norm(u))
    return [x0] + [x0 + s * v for s in SCALES for v in dirs]


def _constants_fields(prob: Any) -> dict:
    c = prob.constants
    return dict(vars(c)) if hasattr(c, "__dict__") else {"value": c}


def check_constants(name: str, make: Any, data_mode: str, seed: int) -> str | None:
    """Check 1 (module docstring): None, or the FAILED reason."""
    prob = make()
    before = _constants_fields(prob)
    for s in (seed, seed + 1):
        prob.sample(64, np.random.default_rng([s, 3]))
        if data_mode == "counts":
            prob.stream(seed=s, budget=64, data="counts").take(64)
    after, fresh = _constants_fields(prob), _constants_fields(make())
    for label, other in (("after it drew data", after), ("on a fresh instance", fresh)):
        moved = [k for k in before if not _equal(before[k], other.get(k))]
        if moved:
            return (f"problem {name!r}: its constants ({', '.join(moved)}) changed {label}: a "
                    "clip or step rule read from them would read the data (constants must be "
                    "fixed by the problem's parameters)")
    return None


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    except Exception:
        return a == b


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)), 1.0)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= RTOL * scale))


def check_per_record(name: str, prob: Any, points: list[np.ndarray], seed: int) -> str | None:
    """Check 2 (module docstring): None, or the FAILED reason."""
    rng = np.random.default_rng([seed, 72])
    rows = np.asarray(prob.sample(BATCH, rng), dtype=float)
    advs = np.asarray(prob.adversarial_records(), dtype=float)
    i, j = 0, BATCH - 1
    for k, x in enumerate(points):
        y = points[k - 1] if k else points[-1]
        for what, fn in (("per_sample_grads", lambda r, x=x: prob.per_sample_grads(x, r)),
                         ("per_sample_grad_diffs",
                          lambda r, x=x, y=y: prob.per_sample_grad_diffs(x, y, r))):
            full = np.asarray(fn(rows), dtype=float)
            alone = np.asarray(fn(rows[i:i + 1]), dtype=float)
            if not _close(full[i], alone[0]):
                return (f"problem {name!r}: {what} row {i} at a public point differs from the "
                        "same record's row computed alone: a record's gradient reads other "
                        "records, so clipping each row does not bound a record's effect")
            for adv in advs[:3]:
                other = rows.copy()
                other[j] = adv
                moved = np.asarray(fn(other), dtype=float)
                if not _close(full[i], moved[i]):
                    return (f"problem {name!r}: {what} row {i} moved when record {j} was "
                            "replaced by an adversarial record: a record's gradient reads "
                            "other records, so clipping each row does not bound its effect")
    return None


def _support(prob: Any, seed: int) -> np.ndarray:
    """Rows of the product layout's support: all of it, or a random part and both corners."""
    lo, hi = np.asarray(prob.record_low, dtype=float), np.asarray(prob.record_high, dtype=float)
    m = len(lo)
    if m <= ENUMERATE_BITS:
        bits = ((np.arange(2 ** m)[:, None] >> np.arange(m)[None, :]) & 1).astype(bool)
    else:
        rng = np.random.default_rng([seed, 73])
        bits = np.vstack([rng.integers(0, 2, size=(SUPPORT_SAMPLE, m)).astype(bool),
                          np.zeros((1, m), bool), np.ones((1, m), bool)])
    return np.where(bits, hi, lo)


def check_product_bound(name: str, prob: Any, points: list[np.ndarray],
                        seed: int) -> str | None:
    """Check 3 (module docstring): None, or the FAILED reason."""
    support = _support(prob, seed)
    exhaustive = len(support) == 2 ** len(prob.record_low)
    where = "the enumerated support" if exhaustive else f"{len(support)} support records"
    stream = prob.stream(seed=seed, budget=64, data="counts")
    batch = stream.take(64)
    records = np.asarray(prob.materialize(batch), dtype=float)
    for k, x in enumerate(points):
        y = points[k - 1] if k else points[-1]
        for what, guarded, rows_fn in (
                ("gradient", lambda b, x=x: prob.guarded_counts_grad(x, b),
                 lambda r, x=x: prob.per_sample_grads(x, r)),
                ("gradient difference", lambda b, x=x, y=y: prob.guarded_counts_grad_diff(x, y, b),
                 lambda r, x=x, y=y: prob.per_sample_grad_diffs(x, y, r))):
            mean, bound = guarded(batch)
            true_mean = np.asarray(rows_fn(records), dtype=float).mean(axis=0)
            if not _close(mean, true_mean):
                return (f"problem {name!r}: its counts-mode mean {what} differs from the mean "
                        "over the batch's materialized records: counts mode is not exact")
            norms = np.linalg.norm(np.asarray(rows_fn(support), dtype=float), axis=1)
            top = float(np.max(norms))
            if not (math.isfinite(bound) and bound >= top * (1 - RTOL)):
                return (f"problem {name!r}: its support bound on the per-record {what} norm at "
                        f"a public point is {bound:.6g}, but a record of {where} has "
                        f"{top:.6g} ({top / bound if bound > 0 else math.inf:.3g}x): the counts "
                        "guard would admit a clip that does not hold")
            moved = _neighbour_move(prob, x, y, batch, support[int(np.argmax(norms))],
                                    what, bound)
            if moved is not None:
                return f"problem {name!r}: {moved}"
    return None


def _neighbour_move(prob: Any, x: np.ndarray, y: np.ndarray, batch: CountsBatch,
                    worst: np.ndarray, what: str, clip: float) -> str | None:
    """The suite's clipped sum at the smallest clip the guard admits, on the batch and on the
    batch with its first record replaced by the support's worst: the move over 2C."""
    from algorithms.counts_maps import clipped_grad_diff_sum, clipped_grad_sum

    if not clip > 0:
        return None
    lo, hi = np.asarray(prob.record_low, dtype=float), np.asarray(prob.record_high, dtype=float)
    first = np.asarray(prob.materialize(batch), dtype=float)[0]
    was_high = np.isclose(first, hi) & ~np.isclose(hi, lo)
    now_high = np.isclose(worst, hi) & ~np.isclose(hi, lo)
    counts = np.asarray(batch.counts, dtype=np.int64) - was_high + now_high
    other = CountsBatch(batch.k, counts)
    fn = (lambda b: clipped_grad_sum(prob, x, b, clip)) if what == "gradient" else \
        (lambda b: clipped_grad_diff_sum(prob, x, y, b, clip))
    ratio = float(np.linalg.norm(fn(other) - fn(batch))) / (2 * clip)
    if ratio > 1 + 1e-6:
        return (f"one record replaced moved the suite's counts-mode clipped {what} sum "
                f"{ratio:.3g}x the told sensitivity 2C")
    return None


def check_problem(name: str, *, d: int, problem_params: dict | None = None,
                  data_mode: str = "records", seed: int = 0) -> ProblemCheck:
    """The three checks (module docstring) of the plugin problem `name` in `data_mode`. Never
    raises for the problem's failure: a crash in its oracles is FAILED with its line."""
    from problems import get_problem

    params = dict(problem_params or {})

    def make() -> Any:
        return get_problem(name, d=d, **params)

    tried = ["constants", "per-record oracles"]
    try:
        prob = make()
        points = public_points(prob, seed)
        reason = check_constants(name, make, data_mode, seed) or \
            check_per_record(name, prob, points, seed)
        if reason is None and data_mode == "counts" and layout_kind(prob) == "product":
            tried.append("support bound and counts neighbours")
            reason = check_product_bound(name, prob, points, seed)
    except Exception as exc:
        reason = f"problem {name!r}: its check crashed ({type(exc).__name__}: {exc})"
    scope = (f"problem {name} ({data_mode}, d {d}): {', '.join(tried)} at "
             f"{1 + (5 if d > 1 else 3) * len(SCALES)} public points")
    return ProblemCheck(reason is None, reason or "", scope)


__all__ = ["ProblemCheck", "check_problem", "public_points"]
