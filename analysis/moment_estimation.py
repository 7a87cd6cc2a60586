"""Private second-moment estimation against its guarantee (seed 002's Algorithm 3 as
reconstructed in `algorithms.adaptive_noise.private_moments`; Asi, Duchi, Fallah, Javidbakht,
Talwar 2021, arXiv 2106.13756).

The estimate of s_j = E g_j^2 (gradients at x0) from m records, each squared coordinate capped
at tau^2, one Gaussian release of std ||tau^2||_2 / (m mu(eps, delta)), floored. Its sup-norm
error is at most, with probability >= 1 - beta (union bound over d coordinates and the two
sources):

    bias + std * Phi^-1(1 - beta / (4 d)) + tau^2 sqrt(log(4 d / beta) / (2 m)),

the capping bias max_j E[(g_j^2 - tau^2)_+] (0 when the cap covers every gradient), the
Gaussian noise, and the sampling error of a mean of m values in [0, tau^2] (Hoeffding). The
floor only moves an estimate toward s_j when s_j >= floor, so it is left out of the bound and
clipped estimates are compared as released.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from algorithms.adaptive_noise.private_moments import moment_noise_std, private_second_moments
from problems.base import Problem


def exact_second_moments(problem: Problem, x: np.ndarray) -> np.ndarray:
    """E g_j(x; z)^2 under the population, exact: the mean over a finite population's atoms, or
    E z_j^2 = mu_j^2 + sigma_j^2 for the stylized linear problem."""
    atoms = getattr(problem, "atoms", None)
    if atoms is not None:
        return np.mean(problem.per_sample_grads(x, atoms) ** 2, axis=0)
    if hasattr(problem, "mu") and hasattr(problem, "sigma"):
        return np.asarray(problem.mu) ** 2 + np.asarray(problem.sigma) ** 2
    raise ValueError(f"problem {problem.name!r} is invalid here: its second moments are not known "
                     "in closed form (a finite population or the stylized linear problem)")


def capping_bias(problem: Problem, x: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """E[(g_j^2 - tau_j^2)_+] per coordinate, exact: the mean over a finite population's atoms,
    or the two-point records' closed form."""
    tau2 = np.asarray(tau, dtype=float) ** 2
    atoms = getattr(problem, "atoms", None)
    if atoms is not None:
        return np.mean(np.maximum(problem.per_sample_grads(x, atoms) ** 2 - tau2, 0.0), axis=0)
    if hasattr(problem, "record_low") and hasattr(problem, "record_high"):  # linear: g = z
        return 0.5 * (np.maximum(np.asarray(problem.record_low) ** 2 - tau2, 0.0)
                      + np.maximum(np.asarray(problem.record_high) ** 2 - tau2, 0.0))
    raise ValueError(f"problem {problem.name!r} is invalid here: its capping bias is not known in "
                     "closed form")


def error_bound(tau: np.ndarray, m: int, eps: float, delta: float, beta: float = 0.05,
                bias: float = 0.0) -> float:
    """The sup-norm error bound of the module docstring (probability >= 1 - beta)."""
    tau2 = np.asarray(tau, dtype=float) ** 2
    d = len(tau2)
    noise = moment_noise_std(tau, m, eps, delta) * float(stats.norm.ppf(1 - beta / (4 * d)))
    sampling = float(tau2.max()) * math.sqrt(math.log(4 * d / beta) / (2 * m))
    return bias + noise + sampling


def moment_error_table(problem: Problem, ms: list[int], epss: list[float], delta: float = 1e-6,
                       cap: float = 1.0, reps: int = 30, seed: int = 0,
                       beta: float = 0.05) -> pd.DataFrame:
    """Per (eps, m): the sup-norm error of the private estimate over `reps` draws (fresh
    records and noise each; median and the 1 - beta quantile), the bound, how often the bound
    held, and how many coordinates the median draw resolves (s_j above twice its error)."""
    x0 = np.asarray(problem.x0, dtype=float)
    exact = exact_second_moments(problem, x0)
    tau = np.full(problem.d, float(cap))
    bias = float(np.max(capping_bias(problem, x0, tau)))
    rows = []
    for k, (eps, m) in enumerate((e, m) for e in epss for m in ms):
        errs = []
        for r in range(reps):
            rng = np.random.default_rng([seed, k, r])
            grads = problem.per_sample_grads(x0, problem.sample(m, rng))
            est, _ = private_second_moments(grads, tau, eps, delta, rng, floor=-math.inf)
            errs.append(float(np.max(np.abs(est - exact))))
        errs = np.array(errs)
        bound = error_bound(tau, m, eps, delta, beta, bias)
        med = float(np.median(errs))
        rows.append({"eps": eps, "m": m, "noise_std": moment_noise_std(tau, m, eps, delta),
                     "median_error": med, "q_error": float(np.quantile(errs, 1 - beta)),
                     "bound": bound, "held": float(np.mean(errs <= bound)),
                     "resolved": int(np.sum(exact > 2 * med))})
    return pd.DataFrame(rows)
