"""Private mean estimation: the calibration problem whose private error law is known exactly.

f(x; z) = 1/2 |x - z|^2 with z = m + (signs) * spread / sqrt(d), signs i.i.d. Rademacher, so
|z - m| = spread exactly and E z = m. Records have two-point coordinates and an affine gradient,
so the problem has an exact counts mode (`problems.counts.stream`); at x the largest per-record
gradient norm over the support is sqrt(sum_j (|x_j - m_j| + spread/sqrt d)^2). Then
  F(x) = 1/2 |x - m|^2 + spread^2 / 2,  grad F(x) = x - m,  hess F(x) = I.
The Gaussian mechanism on the mean gradient at any x has error N(0, sigma^2 I) with
sigma proportional to (sensitivity / eps): the error norm scales exactly as sqrt(d)/(n eps).

Constants on the ball |x - m| <= R: G = R + spread (|x - z| <= |x - m| + |z - m|), M = 1,
rho = 0 (quadratic: no saddle, every stationary point is the minimum), B0 = F(x0) - inf F =
|x0 - m|^2 / 2. The start x0 = m + start_dist * (1, ..., 1)/sqrt(d).
"""

from __future__ import annotations

import math

import numpy as np

from problems.base import Constants, Problem, check_nonneg, check_positive
from problems.finite_support import TwoPointCoordinates


class MeanEstimation(TwoPointCoordinates, Problem):
    name = "mean_estimation"
    character = "calibration"
    convex = True
    description = "private mean estimation 1/2|x - z|^2 (calibration: error ~ sqrt(d)/(n eps))"

    def __init__(self, d: int = 10, spread: float = 1.0, start_dist: float = 1.0,
                 radius: float = 2.0) -> None:
        super().__init__(d)
        self.spread = check_nonneg("spread", spread)
        self.start_dist = check_nonneg("start_dist", start_dist)
        self.radius = check_positive("radius", radius)
        if self.start_dist > self.radius:
            raise ValueError(f"start_dist={start_dist!r} is invalid: must be <= radius={radius!r}")
        self.mean = np.zeros(d)
        self.record_high = self.mean + self.spread / math.sqrt(d)
        self.record_low = self.mean - self.spread / math.sqrt(d)
        self._init_two_point()

    @property
    def constants(self):
        return Constants(G=self.radius + self.spread, M=1.0, rho=0.0,
                         B0=0.5 * self.start_dist**2,
                         domain=f"ball |x - m| <= {self.radius}", domain_radius=self.radius)

    @property
    def x0(self):
        return self.mean + self.start_dist / math.sqrt(self.d)

    def params(self):
        return {"d": self.d, "spread": self.spread, "start_dist": self.start_dist,
                "radius": self.radius}

    def record_grad_bound(self, x):
        far = np.abs(x - self.mean) + self.spread / math.sqrt(self.d)
        return float(np.sqrt(far @ far))

    def record_grad_diff_bound(self, x, y):
        return float(np.linalg.norm(x - y))

    def per_sample_losses(self, x, batch):
        diff = x - batch
        return 0.5 * np.einsum("ij,ij->i", diff, diff)

    def per_sample_grads(self, x, batch):
        return x - batch

    def per_sample_grad_diffs(self, x, y, batch):
        return np.broadcast_to(x - y, (len(batch), self.d)).copy()

    def population_loss(self, x):
        diff = x - self.mean
        return float(0.5 * diff @ diff + 0.5 * self.spread**2)

    def population_grad(self, x):
        return x - self.mean

    def enforce_domain(self, batch: np.ndarray) -> np.ndarray:
        """The identity: hess f(x; z) = I for every z, so every record's loss is convex and
        1-smooth (clipping bounds the gradient)."""
        return batch

    def population_minimizer(self) -> np.ndarray:
        """argmin F = m (the population mean)."""
        return self.mean.copy()

    def population_hessian(self, x):
        return np.eye(self.d)

    def population_hvp(self, x, v):
        return np.array(v, dtype=float)

    def population_lambda_min(self, x):
        return 1.0
