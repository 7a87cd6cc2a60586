"""A user's loss on two-point records, declared as numba-compiled functions, on the Spiders'
compiled O2 steps (problems/README.md, "Any loss on two-point records, compiled").

`problems.separable.SeparableSaddle` gets compiled steps for one map (its own loss with a
user's 1-d profile). This mixin gets them for any loss whose records have independent
two-point coordinates (`problems.finite_support.TwoPointCoordinates`) and whose per-record
gradient is affine in the record, declared by plain scalar numba functions of (x, record,
params):

* `grad_fn(x, z, p, out)`: grad f(x; z) into out (every record coordinate z may be read);
* `grad_diff_fn(x, y, zh, p, out)`: grad f(x; z) - grad f(y; z) into out, reading only the
  record's first `diff_coordinates` coordinates zh = z[:m] (the terms of f that are linear in x
  drop out of a difference; the counts stream then walks m coordinates a step, not all);
* no support bound: the clip guard's bound (`algorithms.counts_maps`: the largest per-record
  gradient (difference) norm over the whole support at the public iterate) is the suite's,
  computed from the affine structure at every call (`record_grad_bound`, `_BOUND_GRAD`: an
  upper bound, exact where each gradient coordinate reads one record coordinate); a class may
  still set `grad_bound_fn` / `grad_diff_bound_fn` (older guides did), and they are not read
  (issue 71: a problem's bound is computed, not taken from its declaration);
* `loss_fn(x, z, p)`: f(x; z) (records mode, audits);
* `pop_grad_fn(x, p, out)` (optional): grad F(x), exact; where given, `population_grad` is it
  and the compiled steps skip the target monitor wherever ||grad F(x)|| is clearly above the
  target (as they do on hard_valley); where None, the subclass writes `population_grad` and
  the monitor runs at every stored iterate (correct, slower).

The subclass sets `fn_params` (a float64 array, p above), `record_low` / `record_high`, calls
`_init_two_point()`, and writes the population oracles (`population_loss`, `population_grad`
unless `pop_grad_fn`, `population_hessian`), `constants`, `x0` and `params`.

Counts mode is exact because the gradient is affine in the record: a batch's mean gradient
(difference) is the gradient (difference) at its mean record, which the coordinate counts give
(`mean_record`). `check_counts_exact` tests that claim, and the declared `diff_coordinates`
and bounds, once per process and parameters on random points against the per-record
functions averaged over materialized records; a loss that fails it is refused in counts mode
with one line (run it with data = "records"). Python and the compiled steps call the very same
compiled functions (the steps through C wrappers by address,
`algorithms.sosp.compiled_profiles`), so a run is bit for bit the same either way
(tests/test_compiled_loss.py)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numba.core.registry import CPUDispatcher

from problems.base import Problem
from problems.counts.layouts import CountsBatch
from problems.finite_support import TwoPointCoordinates
from problems.jit_cache import enable_disk_cache, load_generated


class CountsExactnessError(ValueError):
    """A declared compiled loss whose counts-mode oracles are not its per-record ones."""


# The row loops, one module per user function (`problems.jit_cache`): the user's function is
# the module's global `fn`, so numba caches them on disk with keys of plain arrays. (Passed as
# an argument, as they once were, a cached specialization's key held the user's dispatcher, one
# entry per plugin load, and a later process reading an entry whose dispatcher was gone failed:
# numba's "underlying object has vanished", seen once in a full test run after 78 entries.)
_ROWS_APPLY = """
import numba
import numpy as np


@numba.njit("float64[:, ::1](float64[::1], float64[:, ::1], float64[::1], int64)", cache=CACHE)
def rows(x, rows, p, d):
    out = np.empty((rows.shape[0], d))
    for i in range(rows.shape[0]):
        fn(x, rows[i], p, out[i])
    return out
"""
_ROWS_DIFF = """
import numba
import numpy as np


@numba.njit("float64[:, ::1](float64[::1], float64[::1], float64[:, ::1], float64[::1], int64)",
            cache=CACHE)
def rows(x, y, rows, p, d):
    out = np.empty((rows.shape[0], d))
    for i in range(rows.shape[0]):
        fn(x, y, rows[i], p, out[i])
    return out
"""
_ROWS_LOSS = """
import numba
import numpy as np


@numba.njit("float64[::1](float64[::1], float64[:, ::1], float64[::1])", cache=CACHE)
def rows(x, rows, p):
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        out[i] = fn(x, rows[i], p)
    return out
"""


# The suite's support bounds (issue 71: a problem's clip-guard bound is computed, never taken
# from its declaration). The gradient is affine in the record: grad f(x; z) = a + sum_j
# (z_j - c_j) e_j, with a the gradient at the support's center c and (hi_j - c_j) e_j the
# gradient at c with z_j = hi_j, minus a. Over the support (every z_j = lo_j or hi_j), the i-th
# coordinate is at most |a_i| + sum_j |(hi_j - c_j) e_ji| in absolute value; the bound is that
# vector's norm: an upper bound everywhere, exact where each gradient coordinate reads one
# record coordinate (the guide's quadratic valley). `fn` is the user's grad_fn (or
# grad_diff_fn on the record's first m coordinates); w + 1 calls of it.
_BOUND_GRAD = """
import math

import numba
import numpy as np


@numba.njit(cache=CACHE)
def bound(x, p, low, high, d):
    w = low.shape[0]
    z = np.empty(w)
    for j in range(w):
        z[j] = 0.5 * (low[j] + high[j])
    a = np.empty(d)
    fn(x, z, p, a)
    u = np.abs(a)
    e = np.empty(d)
    for j in range(w):
        z[j] = high[j]
        fn(x, z, p, e)
        for i in range(d):
            u[i] += abs(e[i] - a[i])
        z[j] = 0.5 * (low[j] + high[j])
    total = 0.0
    for i in range(d):
        total += u[i] * u[i]
    return math.sqrt(total)
"""
_BOUND_DIFF = _BOUND_GRAD.replace("def bound(x, p,", "def bound(x, y, p,").replace(
    "fn(x, z, p,", "fn(x, y, z, p,")


def _py_bound(call: Any, low: np.ndarray, high: np.ndarray, d: int) -> float:
    """`_BOUND_GRAD`'s arithmetic for a plain Python function (call(z, out))."""
    z = 0.5 * (low + high)
    a = np.empty(d)
    call(z, a)
    u = np.abs(a)
    e = np.empty(d)
    for j in range(len(low)):
        z[j] = high[j]
        call(z, e)
        u += np.abs(e - a)
        z[j] = 0.5 * (low[j] + high[j])
    return math.sqrt(float(u @ u))


def suite_bound_source(role: str) -> str:
    """The template of the suite's bound on `grad_fn` ("grad") or `grad_diff_fn` ("diff"):
    the compiled steps' C wrapper runs the same source (`algorithms.sosp.compiled_maps`)."""
    return {"grad": _BOUND_GRAD, "diff": _BOUND_DIFF}[role]


def _rows(fn: Any, template: str) -> Any:
    """The compiled row loop of `template` around the user's function fn (compiled, or loaded
    from disk, for the one signature the callers pass: C-ordered float64 arrays)."""
    return load_generated(fn, template).rows


#: The functions a declared loss sets; numba's disk cache is turned on for each at class
#: creation, before anything compiles them (`problems.jit_cache`).
FUNCTIONS = ("grad_fn", "grad_diff_fn", "grad_bound_fn", "grad_diff_bound_fn", "loss_fn",
             "pop_grad_fn")


def _compiled(fn: Any) -> bool:
    return isinstance(fn, CPUDispatcher)


class CompiledTwoPointLoss(TwoPointCoordinates, Problem):
    """Mixin: a loss on two-point records declared by numba functions (module docstring)."""

    grad_fn: ClassVar[Any]
    grad_diff_fn: ClassVar[Any]
    grad_bound_fn: ClassVar[Any] = None  # not read: the suite computes the bounds
    grad_diff_bound_fn: ClassVar[Any] = None
    loss_fn: ClassVar[Any]
    pop_grad_fn: ClassVar[Any] = None
    #: m: the leading record coordinates `grad_diff_fn` reads
    diff_coordinates: ClassVar[int]
    fn_params: np.ndarray

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for name in FUNCTIONS:  # compiled once per machine, not per process
            enable_disk_cache(cls.__dict__.get(name))

    # --- the record's coordinates ------------------------------------------------------------
    def _params_array(self) -> np.ndarray:
        return np.ascontiguousarray(self.fn_params, dtype=np.float64)

    def _head(self, batch: CountsBatch) -> np.ndarray:
        """The batch's mean record's first m coordinates, `mean_record`'s arithmetic."""
        m = self.diff_coordinates
        frac = batch.counts_of(slice(0, m)) / batch.k
        return self.record_low[:m] + (self.record_high[:m] - self.record_low[:m]) * frac

    # --- per record ---------------------------------------------------------------------------
    def per_sample_losses(self, x, batch):
        rows = np.ascontiguousarray(batch, dtype=np.float64)
        x, fn, p = np.ascontiguousarray(x, dtype=np.float64), type(self).loss_fn, self._params_array()
        if not _compiled(fn):  # a plain Python function: the same calls, row by row
            return np.array([fn(x, r, p) for r in rows], dtype=np.float64)
        return _rows(fn, _ROWS_LOSS)(x, rows, p)

    def per_sample_grads(self, x, batch):
        rows = np.ascontiguousarray(batch, dtype=np.float64)
        x, fn, p = np.ascontiguousarray(x, dtype=np.float64), type(self).grad_fn, self._params_array()
        if not _compiled(fn):
            out = np.empty((len(rows), self.d))
            for r, o in zip(rows, out, strict=True):
                fn(x, r, p, o)
            return out
        return _rows(fn, _ROWS_APPLY)(x, rows, p, self.d)

    def per_sample_grad_diffs(self, x, y, batch):
        rows = np.ascontiguousarray(np.asarray(batch, dtype=np.float64)[:, :self.diff_coordinates])
        x, y = np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64)
        fn, p = type(self).grad_diff_fn, self._params_array()
        if not _compiled(fn):
            out = np.empty((len(rows), self.d))
            for r, o in zip(rows, out, strict=True):
                fn(x, y, r, p, o)
            return out
        return _rows(fn, _ROWS_DIFF)(x, y, rows, p, self.d)

    def record_grad_bound(self, x):
        """The largest record's gradient norm at x over the whole support: the suite's, from
        the affine structure (`_BOUND_GRAD`), whatever `grad_bound_fn` says."""
        x, p, fn = np.ascontiguousarray(x, dtype=np.float64), self._params_array(), type(self).grad_fn
        low = np.ascontiguousarray(self.record_low, dtype=np.float64)
        high = np.ascontiguousarray(self.record_high, dtype=np.float64)
        if not _compiled(fn):
            return _py_bound(lambda z, o: fn(x, z, p, o), low, high, self.d)
        return float(load_generated(fn, _BOUND_GRAD).bound(x, p, low, high, self.d))

    def record_grad_diff_bound(self, x, y):
        """The same for the gradient difference at (x, y), over the record's first m
        coordinates (`_BOUND_DIFF`), whatever `grad_diff_bound_fn` says."""
        x, y = np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64)
        p, fn, m = self._params_array(), type(self).grad_diff_fn, self.diff_coordinates
        low = np.ascontiguousarray(self.record_low[:m], dtype=np.float64)
        high = np.ascontiguousarray(self.record_high[:m], dtype=np.float64)
        if not _compiled(fn):
            return _py_bound(lambda z, o: fn(x, y, z, p, o), low, high, self.d)
        return float(load_generated(fn, _BOUND_DIFF).bound(x, y, p, low, high, self.d))

    # --- counts mode: the batch mean from the mean record ---------------------------------
    def counts_grad(self, x, batch):
        check_counts_exact(self)
        z = self.mean_record(batch)[0]
        out = np.empty(self.d)
        type(self).grad_fn(np.ascontiguousarray(x, dtype=np.float64), z, self._params_array(), out)
        return out, self.record_grad_bound(x)

    def counts_grad_diff(self, x, y, batch):
        """The O2 map (the compiled steps' `MODE_MAP`, operation for operation): the support
        bound first (it reads no record), then the counts of the first m coordinates, then
        grad_diff_fn at the mean record's head."""
        check_counts_exact(self)
        x = np.ascontiguousarray(x, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64)
        p = self._params_array()
        bound = self.record_grad_diff_bound(x, y)
        zh = self._head(batch)
        out = np.empty(self.d)
        type(self).grad_diff_fn(x, y, zh, p, out)
        return out, bound

    def batch_mean_grad(self, x, batch):
        return self.counts_grad(x, batch)[0]

    def batch_mean_grad_diff(self, x, y, batch):
        return self.counts_grad_diff(x, y, batch)[0]

    def guarded_counts_grad(self, x, batch):
        mean, bound = self.counts_grad(x, batch)
        return mean, self.record_grad_bound(x) if _overrides(self, "record_grad_bound") else bound

    def guarded_counts_grad_diff(self, x, y, batch):
        mean, bound = self.counts_grad_diff(x, y, batch)
        if _overrides(self, "record_grad_diff_bound"):
            bound = self.record_grad_diff_bound(x, y)
        return mean, bound

    # --- population ---------------------------------------------------------------------------
    def population_grad(self, x):
        fn = type(self).pop_grad_fn
        if fn is None:
            raise NotImplementedError(f"{type(self).__name__} declares no pop_grad_fn: write "
                                      "population_grad")
        out = np.empty(self.d)
        fn(np.ascontiguousarray(x, dtype=np.float64), self._params_array(), out)
        return out


def _overrides(problem: Any, name: str) -> bool:
    return getattr(type(problem), name) is not getattr(CompiledTwoPointLoss, name)


#: (class, params bytes, d) -> None where checked exact, else why not
_EXACT: dict[tuple, str | None] = {}


def counts_exactness_problem(problem: CompiledTwoPointLoss, trials: int = 6) -> str | None:
    """None where the declared counts-mode oracles are the per-record ones on random points,
    else why not. On `trials` random (x, y) at three scales, with random batches of 1-40
    records materialized from random counts: grad_fn at the mean record against the mean of
    the per-record gradients, grad_diff_fn at the mean record's head against the mean of the
    per-record differences (with the coordinates past m drawn at random, so a difference that
    reads them is caught), each within 1e-9 of the largest term's scale; and every record's
    gradient (difference) norm within the declared support bound."""
    d, m = problem.d, problem.diff_coordinates
    width = len(problem.record_low)
    if not (isinstance(m, int) and 0 <= m <= width):
        return f"diff_coordinates={m!r} is not an int in [0, {width}] (the record's width)"
    gen = np.random.default_rng(20261206)
    for trial in range(trials):
        scale = (0.1, 1.0, 10.0)[trial % 3]
        x, y = gen.standard_normal(d) * scale, gen.standard_normal(d) * scale
        k = int(gen.integers(1, 41))
        counts = gen.integers(0, k + 1, size=width)
        batch = CountsBatch(k, counts)
        rows = problem.materialize(batch)
        gen.shuffle(rows, axis=0)
        grads = problem.per_sample_grads(x, rows)
        mean = _mean_at(problem, x, batch)
        tol = 1e-9 * max(1.0, float(np.abs(grads).max()))
        if not np.allclose(mean, grads.mean(axis=0), rtol=0, atol=tol):
            return ("grad_fn at the batch's mean record is not the mean of its per-record "
                    "gradients (the gradient is not affine in the record)")
        # the coordinates past m at random: a difference must not read them
        tail = np.where(gen.integers(0, 2, size=(k, width - m)).astype(bool),
                        problem.record_high[m:], problem.record_low[m:])
        rows = np.concatenate([rows[:, :m], tail], axis=1)
        full = problem.per_sample_grads(x, rows) - problem.per_sample_grads(y, rows)
        diffs = problem.per_sample_grad_diffs(x, y, rows)
        tol = 1e-9 * max(1.0, float(np.abs(full).max()), float(np.abs(diffs).max()))
        if not np.allclose(diffs, full, rtol=0, atol=tol):
            return (f"grad_diff_fn is not grad_fn(x) - grad_fn(y) on records whose coordinates "
                    f"past diff_coordinates={m} vary (it must read only the first {m})")
        head = problem.record_low[:m] + (problem.record_high[:m] - problem.record_low[:m]) \
            * (counts[:m] / k)
        out = np.empty(d)
        type(problem).grad_diff_fn(x, y, head, problem._params_array(), out)
        if not np.allclose(out, diffs.mean(axis=0), rtol=0, atol=tol):
            return ("grad_diff_fn at the batch's mean record is not the mean of its per-record "
                    "differences (the difference is not affine in the record)")
        # the support bounds: at the batch's records and at the worst support points an
        # ascent over the vertices finds (every vertex where the record is short enough)
        g_worst = max(float(np.linalg.norm(grads, axis=1).max()),
                      _worst_vertex(problem, lambda r, x=x: problem.per_sample_grads(x, r), gen))
        if g_worst > problem.record_grad_bound(x) * (1 + 1e-9):
            return "a record's gradient norm exceeds the support bound of its affine form"
        d_worst = max(float(np.linalg.norm(diffs, axis=1).max()),
                      _worst_vertex(problem, lambda r, x=x, y=y: problem.per_sample_grad_diffs(x, y, r),
                                    gen))
        if d_worst > problem.record_grad_diff_bound(x, y) * (1 + 1e-9):
            return ("a record's gradient difference norm exceeds the support bound of its "
                    "affine form")
        if not math.isfinite(problem.record_grad_diff_bound(x, y)):
            return "the gradient difference's support bound is not finite"
    return None


#: Records at most this wide: every vertex of the support is tried; wider: an ascent.
BRUTE_FORCE_WIDTH = 12


def _worst_vertex(problem: CompiledTwoPointLoss, rows_fn: Any, gen: np.random.Generator) -> float:
    """The largest row norm of `rows_fn` over the support's vertices: all of them for a record
    of at most BRUTE_FORCE_WIDTH coordinates, else the best of four coordinate ascents from
    random vertices (flip the coordinate that most increases the norm until none does; a
    convex norm of an affine map is largest at a vertex)."""
    lo, hi = problem.record_low, problem.record_high
    width = len(lo)
    if width <= BRUTE_FORCE_WIDTH:
        bits = (np.arange(2 ** width)[:, None] >> np.arange(width)[None, :]) & 1
        return float(np.linalg.norm(rows_fn(np.where(bits.astype(bool), hi, lo)), axis=1).max())
    best = 0.0
    for _ in range(4):
        v = gen.integers(0, 2, size=width).astype(bool)
        cur = float(np.linalg.norm(rows_fn(np.where(v, hi, lo)[None, :])[0]))
        for _sweep in range(4 * width):
            flips = np.repeat(v[None, :], width, axis=0)
            flips[np.arange(width), np.arange(width)] ^= True
            norms = np.linalg.norm(rows_fn(np.where(flips, hi, lo)), axis=1)
            j = int(np.argmax(norms))
            if not norms[j] > cur:
                break
            v, cur = flips[j], float(norms[j])
        best = max(best, cur)
    return best


def _mean_at(problem: CompiledTwoPointLoss, x: np.ndarray, batch: CountsBatch) -> np.ndarray:
    out = np.empty(problem.d)
    type(problem).grad_fn(np.ascontiguousarray(x, dtype=np.float64), problem.mean_record(batch)[0],
                          problem._params_array(), out)
    return out


def check_counts_exact(problem: CompiledTwoPointLoss) -> None:
    """Raise `CountsExactnessError` (one line) where `counts_exactness_problem` finds one; once
    per process, class, parameters and d."""
    key = (type(problem), problem._params_array().tobytes(), problem.d,
           problem.record_low.tobytes(), problem.record_high.tobytes(), problem.diff_coordinates)
    if key not in _EXACT:  # the check calls no counts-mode oracle (no recursion)
        _EXACT[key] = counts_exactness_problem(problem)
    why = _EXACT[key]
    if why is not None:
        raise CountsExactnessError(f"problem {problem.name!r} ({type(problem).__name__}) has no "
                                   f"exact counts mode: {why}; run it with data = 'records'")


__all__ = ["CompiledTwoPointLoss", "CountsExactnessError", "check_counts_exact",
           "counts_exactness_problem", "suite_bound_source"]
