"""Per-record maps from value counts, exactly: clipped sums of gradients and of gradient
differences, and the sum of any row map (the ellipsoid projection), over records, a counts
batch, or a record twin (`problems.counts.dataset`).

Atoms layout (`problems.counts.stream.Categorical`): a batch is c_a copies of atom a, so the sum over
its records of map(grad f(x; z_i)) is sum_a c_a map(grad f(x; atom_a)): exact for any
per-record map, at any clip threshold, in O(atoms present x d) (a built-in problem may supply
a structured form, `counts_clipped_sum`, e.g. the GLM's O(atoms x rank + d rank); a plugin
problem's is never called: the suite clips each atom's gradient itself, issue 71). The JL
projection needs nothing more: the projected GLM is a GLM over the same atoms.

Product layout (`problems.counts.stream.BinaryCoordinates`): the counts give the batch's mean record
only, so a per-record map is exact only where it is the identity on every record. The guard
(`require_identity_clip`) decides that from public values only: the clip against the largest
per-record norm over the *whole support* at the public iterate (`record_grad_bound`,
`record_grad_diff_bound`), never over the values a batch happens to hold (issue 30: a guard on
the batch's own atoms made "raise or release" an un-noised function of the data). A map that
is not the identity there raises `CountsClipError` before the release is made or noised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from algorithms.privacy.mechanisms import clip_rows
from problems import is_builtin
from problems.compiled_glm import suite_clipped_sum
from problems.compiled_loss import CompiledTwoPointLoss
from problems.counts.dataset import CountsModeError, layout_kind
from problems.counts.layouts import CountsBatch
from problems.counts.stream import CountsClipError, require_identity_clip
from problems.separable import SeparableSaddle


def _present(problem: Any, batch: CountsBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    present = np.flatnonzero(batch.counts)
    return present, problem.atoms[present], batch.counts[present].astype(float)


def _guard(problem: Any, oracle: str, clip: float, bound: float) -> None:
    """The product layout's guard on the whole-support bound (public), naming the problem."""
    try:
        require_identity_clip(oracle, clip, bound)
    except CountsClipError as exc:
        raise CountsClipError(f"problem {problem.name!r} (product layout): {exc}") from None


def clipped_grad_sum(problem: Any, x: np.ndarray, batch: Any, clip: float,
                     oracle: str = "O1") -> np.ndarray:
    """sum over the batch of grad f(x; z_i) scaled to norm at most `clip` (module docstring)."""
    return _clipped_sum(problem, x, None, batch, clip, oracle)


def clipped_grad_diff_sum(problem: Any, x: np.ndarray, y: np.ndarray, batch: Any, clip: float,
                          oracle: str = "O2") -> np.ndarray:
    """sum over the batch of (grad f(x; z_i) - grad f(y; z_i)) scaled to norm at most `clip`."""
    return _clipped_sum(problem, x, y, batch, clip, oracle)


def _clipped_sum(problem: Any, x: np.ndarray, y: np.ndarray | None, batch: Any, clip: float,
                 oracle: str) -> np.ndarray:
    """The two functions above: per-record gradients (y None) or gradient differences at
    (x, y), clipped, summed over records or exactly from counts."""
    if isinstance(batch, CountsBatch):
        if batch.k == 0:
            return np.zeros(problem.d)
        kind = getattr(problem, "counts_layout_kind", None) or layout_kind(problem)
        if kind == "atoms":
            # a problem's own structured sum only from a built-in (tested) class: a plugin
            # problem's clipped sum is the suite's, from its atoms' per-record gradients
            fast = getattr(problem, "counts_clipped_sum", None) if is_builtin(problem) else \
                suite_clipped_sum(problem)  # a declared GLM loss: the suite's own sum
            if fast is not None:
                return fast(x, y, batch, clip)
            _, atoms, c = _present(problem, batch)
            rows = problem.per_sample_grads(x, atoms) if y is None else \
                problem.per_sample_grad_diffs(x, y, atoms)
            return c @ clip_rows(rows, clip)
        # One pass: the mean and the whole-support bound at the public iterate (never the
        # batch's); the guard raises before anything is released. A plugin's declared loss
        # (or separable saddle) gets at least the suite's bound from its structure, whatever
        # its methods say.
        mean, bound = problem.guarded_counts_grad(x, batch) if y is None else \
            problem.guarded_counts_grad_diff(x, y, batch)
        base = next((c for c in (CompiledTwoPointLoss, SeparableSaddle) if isinstance(problem, c)),
                    None)
        if base is not None and not is_builtin(problem):  # at least the suite's: a plugin
            suite = base.record_grad_bound(problem, x) if y is None else \
                base.record_grad_diff_bound(problem, x, y)  # may state a wider bound, never
            if not bound >= suite:  # a narrower one (nor a NaN)
                bound = suite
        _guard(problem, oracle, clip, bound)
        return mean * batch.k
    rows = np.asarray(batch)
    if len(rows) == 0:
        return np.zeros(problem.d)
    per_record = problem.per_sample_grads(x, rows) if y is None else \
        problem.per_sample_grad_diffs(x, y, rows)
    return clip_rows(per_record, clip).sum(axis=0)


def mapped_grad_sum(problem: Any, x: np.ndarray, batch: Any,
                    rowmap: Callable[[np.ndarray], np.ndarray], what: str) -> np.ndarray:
    """sum over the batch of rowmap(grad f(x; z_i)), rowmap acting row by row on a (b, d)
    array (e.g. the ellipsoid projection). From counts on an atoms layout only: a general map
    has no guard on a product layout (`what` names it in the refusal)."""
    if not isinstance(batch, CountsBatch):
        rows = np.asarray(batch)
        if len(rows) == 0:
            return np.zeros(problem.d)
        return rowmap(problem.per_sample_grads(x, rows)).sum(axis=0)
    if batch.k == 0:
        return np.zeros(problem.d)
    if layout_kind(problem) != "atoms":
        raise CountsModeError(f"the {what} is exact from counts only on an atoms layout; problem "
                              f"{problem.name!r} has a product layout: run with data='records'")
    _, atoms, c = _present(problem, batch)
    return c @ rowmap(problem.per_sample_grads(x, atoms))


def mapped_rows_mean(problem: Any, x: np.ndarray, batch: Any,
                     rowmap: Callable[[np.ndarray], np.ndarray], what: str) -> tuple[np.ndarray, int]:
    """(mean over the batch of rowmap(grad f(x; z_i)), batch size); rowmap may change the row
    width (e.g. squared coordinates capped: the private second moments)."""
    if not isinstance(batch, CountsBatch):
        rows = np.asarray(batch)
        return rowmap(problem.per_sample_grads(x, rows)).mean(axis=0), len(rows)
    if layout_kind(problem) != "atoms":
        raise CountsModeError(f"the {what} is exact from counts only on an atoms layout; problem "
                              f"{problem.name!r} has a product layout: run with data='records'")
    _, atoms, c = _present(problem, batch)
    return c @ rowmap(problem.per_sample_grads(x, atoms)) / batch.k, batch.k


__all__ = ["clipped_grad_diff_sum", "clipped_grad_sum", "mapped_grad_sum", "mapped_rows_mean"]
