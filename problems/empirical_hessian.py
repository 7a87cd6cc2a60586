"""Exact second-order oracles of the empirical loss F_S on a finite data set S (records or
counts): grad F_S and lambda_min(hess F_S) at many iterates at once, in closed form.

Where they exist. The separable strict-saddle problems (`problems.separable`: strict_saddle,
hard_valley, hard_ramp) have the per-record loss

    f(x; z) = (1 + a1) c phi(x_1) + (1 + a2) mu h(x_{2:d}) + <g, x>,   z = (a1, a2, g),

affine in the record z, so F_S(x) = f(x; zbar) at the data set's mean record zbar, exact from
the records (their mean) or from the counts (`TwoPointCoordinates.mean_record`: a product
layout's per-coordinate counts give the mean exactly; no joint information is needed).
Hence, with (A1, A2) = (1 + abar1, 1 + abar2) > 0 (|a| <= s < 1) and r = sqrt(1 + |y|^2):

    grad F_S(x) = (A1 c phi'(x_1) + gbar_1, A2 mu y / r + gbar_{2:}),
    hess F_S(x) = diag-block(A1 c phi''(x_1), A2 mu (I / r - y y^T / r^3)),
    lambda_min(hess F_S(x)) = min(A1 c phi''(x_1), A2 mu / r^3)      (d >= 2; the block's
    eigenvalues are 1/r^3 along y and 1/r across it, and 1/r^3 <= 1/r).

The <g, x> term is linear: it moves the gradient and leaves the Hessian alone. Other problems
have no closed form here (`supports_empirical_hessian` is False): the empirical SOSP metric is
then NaN, said, never approximated.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from problems.counts.layouts import CountsBatch
from problems.separable import SeparableSaddle


def supports_empirical_hessian(problem: Any) -> bool:
    """Whether `empirical_oracles` has a closed form for this problem."""
    return isinstance(problem, SeparableSaddle)


def mean_record(problem: Any, sample: Any) -> np.ndarray:
    """The data set's mean record zbar (exact: from the counts, or the records' mean)."""
    if isinstance(sample, CountsBatch):
        return np.asarray(problem.mean_record(sample)[0], dtype=float)
    rows = np.asarray(sample, dtype=float)
    if rows.ndim != 2 or len(rows) == 0:
        raise ValueError(f"sample of shape {rows.shape} is invalid: must be a non-empty (n, "
                         "record_dim) array or a CountsBatch")
    return rows.mean(axis=0)


def empirical_oracles(problem: Any, X: np.ndarray, sample: Any) -> tuple[np.ndarray, np.ndarray]:
    """(||grad F_S(x)||, lambda_min(hess F_S(x))) at each row x of X (shape (k, d)), exactly
    (module docstring). ValueError for a problem without the closed form."""
    if not supports_empirical_hessian(problem):
        raise ValueError(f"problem {getattr(problem, 'name', problem)!r} has no closed-form "
                         "empirical Hessian (the empirical SOSP metric covers the separable "
                         "strict-saddle problems)")
    X = np.atleast_2d(np.asarray(X, dtype=float))
    z = mean_record(problem, sample)
    A1, A2, gbar = 1.0 + z[0], 1.0 + z[1], z[2:]
    prof = problem.profile
    u = X[:, 0]
    g1 = A1 * problem.c * prof.d1(u) + gbar[0]
    h1 = A1 * problem.c * prof.d2(u)
    if problem.d == 1:
        return np.abs(g1), np.asarray(h1, dtype=float)
    Y = X[:, 1:]
    r = np.sqrt(1.0 + np.einsum("ij,ij->i", Y, Y))
    G_rest = A2 * problem.mu * Y / r[:, None] + gbar[None, 1:]
    norms = np.sqrt(g1 * g1 + np.einsum("ij,ij->i", G_rest, G_rest))
    lam = np.minimum(h1, A2 * problem.mu / r**3)
    return norms, lam


def empirical_alpha(problem: Any, X: np.ndarray, sample: Any) -> dict[str, np.ndarray]:
    """alpha_SOSP of F_S at each row of X: max(||grad F_S||, max(0, -lambda_min)^2 / rho),
    rho the problem's stated Hessian-Lipschitz constant (a bound for F_S as for F: it bounds
    every record's). Keys alpha, grad_norm, lambda_min."""
    g, lam = empirical_oracles(problem, X, sample)
    rho = problem.constants.rho
    neg = np.maximum(0.0, -lam)
    curv = np.where(neg == 0, 0.0, neg**2 / rho if rho > 0 else math.inf)
    return {"alpha": np.maximum(g, curv), "grad_norm": g, "lambda_min": lam}


__all__ = ["empirical_alpha", "empirical_oracles", "mean_record", "supports_empirical_hessian"]
