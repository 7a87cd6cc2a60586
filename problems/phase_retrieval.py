"""Noiseless phase retrieval with sensing vectors uniform on a sphere (bounded).

f(x; a) = 1/4 ((a.x)^2 - (a.x*)^2)^2 with a = r u, u uniform on the unit sphere S^{d-1}
(default r = sqrt(d), so E a a^T = I). Records are the rows a.

Population (closed form). For u uniform on S^{d-1}, E[(u.x)^2 (u.v)^2] =
(|x|^2 |v|^2 + 2 (x.v)^2) / (d (d+2)) and E[(u.x)^4] = 3 |x|^4 / (d (d+2)). With
k = r^4 / (d (d+2)):
  F(x)      = k/4 (3|x|^4 + 3|x*|^4 - 2|x|^2 |x*|^2 - 4 (x.x*)^2)     (F(x*) = 0 = inf F)
  grad F(x) = k (3|x|^2 x - |x*|^2 x - 2 (x.x*) x*)
  hess F(x) = k (3|x|^2 I + 6 x x^T - |x*|^2 I - 2 x* x*^T)
x0 = 0 is a strict saddle: grad F(0) = 0, hess F(0) = -k (|x*|^2 I + 2 x* x*^T), lambda_min =
-3 k |x*|^2.

Constants on the ball |x| <= R (x* has norm `signal` <= R; |a| = r):
  |a.x| <= r R and 0 <= (a.x)^2, (a.x*)^2 <= r^2 R^2, so
  G = r^4 R^3          (|((a.x)^2 - y)(a.x) a|)
  M = 3 r^4 R^2        (hess f = (3 (a.x)^2 - y) a a^T, with 3(a.x)^2 - y in [-r^2R^2, 3 r^2 R^2])
  rho = 6 r^4 R        (|3((a.x)^2 - (a.x')^2)| |a|^2 <= 3 (2 r R)(r |x - x'|) r^2)
  B0 = F(0) = 3 k |x*|^4 / 4.
The constants grow like d^2 with r = sqrt(d): that is the honest worst case of this model;
clipping keeps every run private regardless.
"""

from __future__ import annotations

import math

import numpy as np

from problems.base import Constants, Problem, check_positive


class PhaseRetrieval(Problem):
    name = "phase_retrieval"
    character = "benign"
    description = "phase retrieval, sensing vectors on a sphere; saddle at x0 = 0"

    def __init__(self, d: int = 10, signal: float = 1.0, radius: float = 2.0,
                 a_norm: float | None = None, signal_seed: int = 0) -> None:
        super().__init__(d)
        self.signal = check_positive("signal", signal)
        self.radius = check_positive("radius", radius)
        if self.signal > self.radius:
            raise ValueError(f"signal={signal!r} is invalid: must be <= radius={radius!r}")
        self.a_norm = math.sqrt(d) if a_norm is None else check_positive("a_norm", a_norm)
        self.signal_seed = int(signal_seed)
        v = np.random.default_rng(np.random.SeedSequence([self.signal_seed, 7919])).standard_normal(d)
        self.x_star = self.signal * v / np.linalg.norm(v)
        self.k = self.a_norm**4 / (d * (d + 2))

    @property
    def constants(self) -> Constants:
        r4 = self.a_norm**4
        R = self.radius
        return Constants(G=r4 * R**3, M=3 * r4 * R**2, rho=6 * r4 * R,
                         B0=0.75 * self.k * self.signal**4,
                         domain=f"ball |x| <= {R}", domain_radius=R)

    @property
    def x0(self):
        return np.zeros(self.d)

    def params(self):
        return {"d": self.d, "signal": self.signal, "radius": self.radius,
                "a_norm": self.a_norm, "signal_seed": self.signal_seed}

    def _draw(self, n, rng):
        a = rng.standard_normal((n, self.d))
        a *= (self.a_norm / np.linalg.norm(a, axis=1))[:, None]
        return a

    def per_sample_losses(self, x, batch):
        return 0.25 * ((batch @ x) ** 2 - (batch @ self.x_star) ** 2) ** 2

    def per_sample_grads(self, x, batch):
        ax = batch @ x
        return (((ax**2 - (batch @ self.x_star) ** 2) * ax)[:, None]) * batch

    def per_sample_grad_diffs(self, x, y, batch):
        ax, ay, y2 = batch @ x, batch @ y, (batch @ self.x_star) ** 2
        return (((ax**2 - y2) * ax - (ay**2 - y2) * ay)[:, None]) * batch

    def population_loss(self, x):
        xs, nx2, ns2 = self.x_star, x @ x, self.signal**2
        return float(self.k / 4 * (3 * nx2**2 + 3 * ns2**2 - 2 * nx2 * ns2 - 4 * (x @ xs) ** 2))

    def population_grad(self, x):
        xs = self.x_star
        return self.k * (3 * (x @ x) * x - self.signal**2 * x - 2 * (x @ xs) * xs)

    def population_hessian(self, x):
        xs = self.x_star
        return self.k * ((3 * (x @ x) - self.signal**2) * np.eye(self.d)
                         + 6 * np.outer(x, x) - 2 * np.outer(xs, xs))

    def population_hvp(self, x, v):
        xs = self.x_star
        return self.k * ((3 * (x @ x) - self.signal**2) * v + 6 * x * (x @ v) - 2 * xs * (xs @ v))
