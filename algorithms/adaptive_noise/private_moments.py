"""Private second-moment estimation (Asi, Duchi, Fallah, Javidbakht, Talwar 2021, arXiv
2106.13756, Algorithm 3, reconstructed: the seed lost its body; see the tags).

Estimate the coordinate scales sigma_j^2 = E g_j^2 of the gradients from m records held out for
it, privately [SEED: Algorithm 3 under a bounded moments ratio assumption; Pagan then uses
C_j = (r sigma_hat_j)^(-4/3) / 4]. Our reconstruction [CHOICE]: each record's squared
coordinates capped at tau_j^2 (a public cap), averaged over the m records; replacing one record
moves that mean by at most ||tau^2||_2 / m in L2 [DERIVED], so Gaussian noise of std
||tau^2||_2 / (m mu(eps, delta)) makes the release (eps, delta)-DP (one Gaussian release,
`accounting.gdp_mu`) [DERIVED]; estimates below `floor_j` are raised to it (post-processing).
Error: each coordinate's noise has std ||tau^2||_2 / (m mu), plus the capping bias
E[g_j^2 1{g_j^2 > tau_j^2}] [DERIVED].
"""

from __future__ import annotations

import math

import numpy as np

from algorithms.privacy.accounting.gdp import gdp_mu


def moment_noise_std(tau: np.ndarray, m: int, eps: float, delta: float) -> float:
    """The release's noise std ||tau^2||_2 / (m mu(eps, delta)) (0 when eps is inf)."""
    if not math.isfinite(eps):
        return 0.0
    return float(np.linalg.norm(np.asarray(tau, dtype=float) ** 2)) / (m * gdp_mu(eps, delta))


def capped_squares(grads: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Each row's squared coordinates capped at tau_j^2 (a non-finite entry counts as the cap)."""
    grads = np.asarray(grads, dtype=float)
    return np.minimum(np.where(np.isfinite(grads), grads, np.inf) ** 2, np.asarray(tau, float) ** 2)


def noisy_second_moments(mean: np.ndarray, m: int, tau: np.ndarray, eps: float, delta: float,
                         rng: np.random.Generator, floor: np.ndarray | float = 0.0,
                         noise_factor: float = 1.0) -> tuple[np.ndarray, float]:
    """The release: `mean` (the capped squares' mean over m records) plus Gaussian noise of
    std `moment_noise_std`, floored (post-processing); (estimates, noise std)."""
    std = moment_noise_std(np.asarray(tau, dtype=float), m, eps, delta)
    noisy = mean + noise_factor * std * rng.standard_normal(len(mean))
    return np.maximum(noisy, floor), std


def private_second_moments(grads: np.ndarray, tau: np.ndarray, eps: float, delta: float,
                           rng: np.random.Generator, floor: np.ndarray | float = 0.0,
                           noise_factor: float = 1.0) -> tuple[np.ndarray, float]:
    """(estimates of E g_j^2 from the rows of `grads` (m x d), the noise std used).

    `tau` (d,) public caps; `noise_factor` < 1 only for a planted fault in tests."""
    grads = np.asarray(grads, dtype=float)
    tau2 = np.asarray(tau, dtype=float) ** 2
    if grads.ndim != 2 or grads.shape[1] != len(tau2):
        raise ValueError(f"grads of shape {grads.shape} is invalid: must be (m, {len(tau2)})")
    if not np.all(tau2 > 0):
        raise ValueError("tau is invalid: every cap must be > 0")
    m = len(grads)
    if m < 1:
        raise ValueError("grads is invalid: at least one held-out record is needed")
    mean = capped_squares(grads, tau).mean(axis=0)
    return noisy_second_moments(mean, m, tau, eps, delta, rng, floor, noise_factor)
