"""The ellipsoid geometry of seed 002's methods: the diagonal A that Pagan's scales give, and the
projection of per-record gradients onto {g : g^T A g <= 1} (radial, and the Euclidean one for
comparison). Reconstructed as `algorithms.adaptive_noise.ellipsoid` explains."""

from __future__ import annotations

import numpy as np


def optimal_diagonal(sigma: np.ndarray, method: str) -> np.ndarray:
    """The stylized case's optimal C, normalized so that sum_j c_j sigma_j^2 = 1 (the gradients'
    expected C-norm is 1): Pasan sigma^-1 / sum sigma, Pagan sigma^-4/3 / sum sigma^(2/3)."""
    sigma = np.asarray(sigma, dtype=float)
    if method == "pasan":
        return sigma**-1 / sigma.sum()
    if method == "pagan":
        return sigma ** (-4 / 3) / (sigma ** (2 / 3)).sum()
    raise ValueError(f"method={method!r} is invalid: must be pasan or pagan")



def project_ellipsoid_euclidean(grads: np.ndarray, a_diag: np.ndarray, iters: int = 60) -> np.ndarray:
    """Each row g outside E_A = {h : sum_j a_j h_j^2 <= 1} mapped to its Euclidean projection
    h = g / (1 + lambda a) (elementwise), lambda > 0 the root of
    phi(lambda) = sum_j a_j g_j^2 / (1 + lambda a_j)^2 = 1 (the KKT conditions of
    min ||h - g||^2 s.t. h in E_A); rows inside are kept. phi is convex and decreasing, so
    Newton from lambda = 0 rises monotonically to the root; a final radial rescale absorbs
    the last rounding so every row is in E_A exactly (privacy needs only that). Rows whose
    A-norm is not finite become 0, as in `project_ellipsoid`."""
    radial = project_ellipsoid(grads, a_diag)  # zeroes bad rows, keeps rows inside
    with np.errstate(over="ignore", invalid="ignore"):
        norms2 = np.einsum("ij,j,ij->i", grads, a_diag, grads)
    outside = np.isfinite(norms2) & (norms2 > 1.0)
    if not outside.any():
        return radial
    g = grads[outside]
    w = a_diag * g * g  # a_j g_j^2
    lam = np.zeros(len(g))
    for _ in range(iters):
        den = 1.0 + lam[:, None] * a_diag
        phi = (w / den**2).sum(axis=1) - 1.0
        dphi = (-2.0 * w * a_diag / den**3).sum(axis=1)
        step = phi / dphi
        lam = lam - step
        if np.all(np.abs(step) <= 1e-13 * np.maximum(lam, 1e-300)):
            break
    h = g / (1.0 + lam[:, None] * a_diag)
    out = radial.copy()
    out[outside] = project_ellipsoid(h, a_diag)
    return out



def pagan_diagonal_from_moments(second_moments: np.ndarray, r: float = 1.0) -> np.ndarray:
    """C from estimated scales: the stylized optimum with sigma_hat_j = sqrt(estimate) (Pagan's
    c_j proportional to sigma_hat_j^(-4/3); the seed's (r sigma_hat_j)^(-4/3) / 4 differs by a
    constant factor, which the trace normalization and B absorb)."""
    return optimal_diagonal(np.sqrt(np.asarray(second_moments, dtype=float)) * r, "pagan")



def project_ellipsoid(grads: np.ndarray, a_diag: np.ndarray) -> np.ndarray:
    """Each row g scaled by min(1, 1/||g||_A), ||g||_A = sqrt(sum_j a_j g_j^2): the radial
    projection onto {g : g^T A g <= 1}. A row whose A-norm is not finite (a non-finite entry,
    or an overflow) becomes 0."""
    with np.errstate(over="ignore", invalid="ignore"):  # such rows are dropped just below
        norms = np.sqrt(np.einsum("ij,j,ij->i", grads, a_diag, grads))
        bad = ~np.isfinite(norms)
        scale = np.where(norms > 1.0, 1.0 / np.where(norms > 1.0, norms, 1.0), 1.0)
        scale[bad] = 0.0
        out = grads * scale[:, None]
    if bad.any():
        out[bad] = 0.0  # 0 * inf and 0 * nan are nan
    return out
