"""Seed 002's stylized convex problem: a linear loss over the box with independent coordinate
scales (Asi, Duchi, Fallah, Javidbakht, Talwar 2021, *Private Adaptive Gradient Methods for
Convex Optimization*, ICML 2021, arXiv 2106.13756, Section 3 and the lower-bound family of
Section 5).

f(x; z) = <x, z> on X = [-1, 1]^d, with record coordinates z_j = mu_j + sigma_j s_j, s_j
independent signs (|z_j - mu_j| = sigma_j: the bounded family |z_j| <= sigma_j of the lower
bounds when mu = 0). Scales sigma_j = sigma0 j^-power (the seed's experiment: power 3/2) and a
mean mu_j = mean_frac sigma_j (so the problem has a unique minimizer over the box,
x* = -sign(mu), and the excess risk F(x) - F(x*) = <x, mu> + ||mu||_1 is exact). Two-point
coordinates give an exact counts mode. Constants: the gradient is the record itself, so
G = ||(|mu_j| + sigma_j)_j||_2, M = rho = 0; B0 = F(x0) - min_X F = ||mu||_1 at x0 = 0.
The loss is unbounded below on R^d: algorithms must keep their iterates in X (`box`).
"""

from __future__ import annotations

import numpy as np

from problems.base import Constants, Problem, check_nonneg, check_positive
from problems.box_domain import BoxDomain
from problems.finite_support import TwoPointCoordinates


class ScaledLinear(BoxDomain, TwoPointCoordinates, Problem):
    name = "scaled_linear"
    character = "benign"
    convex = True
    description = "linear loss <x, z> over [-1, 1]^d, coordinate scales sigma_j = j^-power (seed 002)"

    def __init__(self, d: int = 100, power: float = 1.5, sigma0: float = 1.0,
                 mean_frac: float = 0.5) -> None:
        super().__init__(d)
        self.power = check_nonneg("power", power)
        self.sigma0 = check_positive("sigma0", sigma0)
        self.mean_frac = check_nonneg("mean_frac", mean_frac)
        self.sigma = self.sigma0 * np.arange(1, d + 1, dtype=float) ** -self.power
        self.mu = self.mean_frac * self.sigma
        self.record_low = self.mu - self.sigma
        self.record_high = self.mu + self.sigma
        self._init_two_point()

    @property
    def constants(self) -> Constants:
        G = float(np.linalg.norm(np.abs(self.mu) + self.sigma))
        return self.box_constants(G, B0=float(np.abs(self.mu).sum()))

    def params(self) -> dict:
        return {"d": self.d, "power": self.power, "sigma0": self.sigma0, "mean_frac": self.mean_frac}

    def minimizer(self) -> np.ndarray:
        """argmin over the box of <x, mu>: -box sign(mu) (0 where mu_j = 0)."""
        return -self.box * np.sign(self.mu)

    def excess_risk(self, x: np.ndarray) -> float:
        """F(x) - min_X F, exact."""
        return float(x @ self.mu + self.box * np.abs(self.mu).sum())

    def per_sample_losses(self, x, batch):
        return batch @ x

    def per_sample_grads(self, x, batch):
        return np.array(batch, dtype=float, copy=True)

    def sum_grads(self, x, batch):
        """The sum of the records (each record is its own gradient), without the per-sample
        copy (the metrics' exact grad F_S over a whole sample)."""
        return np.asarray(batch, dtype=float).sum(axis=0)

    def population_loss(self, x):
        return float(x @ self.mu)

    def population_grad(self, x):
        return self.mu.copy()

    def record_grad_bound(self, x):
        return float(np.linalg.norm(np.maximum(np.abs(self.record_low), np.abs(self.record_high))))

    def record_grad_diff_bound(self, x, y):
        return 0.0
