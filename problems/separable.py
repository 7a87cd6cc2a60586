"""Separable strict-saddle problems: a 1-d non-convex profile plus a smooth convex block.

Both `strict_saddle` and `hard_valley` have the per-sample loss

    f(x; z) = (1 + a1) * c * phi(x_1) + (1 + a2) * mu * h(x_{2:d}) + <g, x>,
    h(y) = sqrt(1 + ||y||^2) - 1,

with z = (a1, a2, g): a1, a2 = +-s and g_j = +-tau/sqrt(d), every sign an independent fair
coin (so ||g|| = tau exactly). The random factors (1 + a1), (1 + a2) make both gradients and
gradient *differences* random, so Spider's O2 oracle has non-zero variance; g adds bounded
gradient noise in every coordinate. E a = 0, E g = 0, hence

    F(x) = c * phi(x_1) + mu * h(x_{2:d}).

Two-point coordinates (not uniform ones, as in dprates <= 0.1) make every record one of
2^(d+2) values and the per-sample gradient affine in z, so these problems have an exact
counts mode (`problems.counts`): a batch's mean gradient is the gradient at its mean record,
which the coordinate counts give. The bounds |a| <= s, |g_j| <= tau/sqrt(d) and F are those of
the uniform version, so are the constants below; the variances grow by 3: Var a = s^2 (was
s^2/3), E||g||^2 = tau^2 (was tau^2/3).

Derivation of the constants (valid on all of R^d):
* Lipschitz: the gradient is (1+a1) c phi'(x1) e_1 + (1+a2) mu y/sqrt(1+|y|^2) + g; the first
  two parts are orthogonal and |y|/sqrt(1+|y|^2) < 1, so
  G = (1+s) sqrt((c G_phi)^2 + mu^2) + tau, with G_phi = sup |phi'|. At a given x the largest
  per-record norm over the support (`record_grad_bound`, the counts-mode clip guard) is
  sqrt(((1+s)|c phi'(x1)| + tau/sqrt d)^2 + sum_j ((1+s) mu |y_j|/r + tau/sqrt d)^2) <= G.
* Smooth: the Hessian is block diagonal: (1+a1) c phi''(x1) and (1+a2) mu H_h(y) with
  H_h(y) = I/r - y y^T/r^3 (r = sqrt(1+|y|^2)), whose eigenvalues 1/r^3 and 1/r lie in
  (0, 1]; so M = (1+s) max(c M_phi, mu).
* Hessian-Lipschitz: block diagonal again, so ||H(x) - H(x')|| <= max of the blocks'
  Lipschitz constants times ||x - x'||. For h, the third derivative along unit v and u is
  -(y.v)/r^3 - 2(v.u)(y.u)/r^3 + 3(y.v)(y.u)^2/r^5, bounded by 3|y|/r^3 + 3|y|^3/r^5 <= 1.72
  (maxima 1.155 at |y| = 1/sqrt 2 and 0.558 at |y| = sqrt(3/2)); we state 2. Hence
  rho = (1+s) max(c rho_phi, 2 mu).
* B0 = F(x0) - inf F = c (phi(0) - inf phi) since h >= 0 = h(0) and x0 = 0.

x0 = 0 is a strict saddle: grad F(0) = 0 (phi'(0) = 0) and lambda_min(hess F(0)) = c phi''(0) < 0.
"""

from __future__ import annotations

import math

import numpy as np

from problems.base import Constants, Problem, check_nonneg, check_positive
from problems.finite_support import TwoPointCoordinates


class _Profile:
    """A 1-d profile phi with derivatives and the sup-norm constants of phi', phi'', phi'''."""

    G: float
    M: float
    rho: float
    drop: float  # phi(0) - inf phi

    def value(self, u: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def d1(self, u: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def d2(self, u: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class CosineProfile(_Profile):
    """phi(u) = cos(omega u): maximum at 0 (phi'' = -omega^2), minima at u = +-pi/omega."""

    def __init__(self, omega: float) -> None:
        self.omega = omega
        self.G, self.M, self.rho, self.drop = omega, omega**2, omega**3, 2.0

    def value(self, u):
        return np.cos(self.omega * u)

    def d1(self, u):
        return -self.omega * np.sin(self.omega * u)

    def d2(self, u):
        return -(self.omega**2) * np.cos(self.omega * u)


class ValleyProfile(_Profile):
    """phi(u) = p(u / w), p(v) = -1/2 log(1 + v^2) + beta (sqrt(1 + v^2) - 1).

    p'(v) = -v/(1+v^2) + beta v/sqrt(1+v^2) ~ -1/v for 1 << v << 1/beta, so the gradient
    decays like 1/distance: gradient descent with step 1/M moves u^2 up by ~2/M per step and
    needs ~M/(2 alpha^2) steps to reach |phi'| = alpha (the alpha^{-2} path of the rate
    analyses, seed 000 Lemma 3.9). The beta term turns the valley into a minimum at
    sqrt(1+v^2) = 1/beta, so F is bounded below: inf p = log(beta) + 1 - beta.
    Bounds: |p'| <= 1/2 + beta; p'' = (v^2-1)/(1+v^2)^2 + beta/(1+v^2)^{3/2} in [-1, 1/8 + beta],
    so |p''| <= 1; p''' = 2v(3-v^2)/(1+v^2)^3 - 3 beta v/(1+v^2)^{5/2}, whose first term peaks at
    v = tan(pi/8) with 1.45711 and whose second is at most 0.85865 beta. With the width w the
    constants scale as 1/w, 1/w^2, 1/w^3 while the tail -1/u does not depend on w.
    """

    def __init__(self, w: float, beta: float) -> None:
        self.w, self.beta = w, beta
        self.G = (0.5 + beta) / w
        self.M = 1.0 / w**2
        self.rho = (1.45712 + 0.85866 * beta) / w**3
        self.drop = -math.log(beta) - 1.0 + beta

    def value(self, u):
        v2 = (u / self.w) ** 2
        return -0.5 * np.log1p(v2) + self.beta * (np.sqrt(1.0 + v2) - 1.0)

    def d1(self, u):
        v = u / self.w
        return (-v / (1.0 + v * v) + self.beta * v / np.sqrt(1.0 + v * v)) / self.w

    def d2(self, u):
        v2 = (u / self.w) ** 2
        return ((v2 - 1.0) / (1.0 + v2) ** 2 + self.beta / (1.0 + v2) ** 1.5) / self.w**2


class SeparableSaddle(TwoPointCoordinates, Problem):
    """Shared machinery; see the module docstring for the loss, its constants and derivation."""

    profile: _Profile

    def __init__(self, d: int, c: float, mu: float, noise: float, tau: float) -> None:
        super().__init__(d)
        self.c = check_positive("c", c)
        self.mu = check_positive("mu", mu)
        self.noise = check_nonneg("noise", noise)
        if self.noise >= 1:
            raise ValueError(f"noise={noise!r} is invalid: must be in [0, 1)")
        self.tau = check_nonneg("tau", tau)
        half = self.tau / math.sqrt(d)
        self.record_high = np.array([self.noise, self.noise, *([half] * d)])
        self.record_low = -self.record_high
        self._init_two_point()

    @property
    def constants(self) -> Constants:
        p, s = self.profile, self.noise
        mu = self.mu if self.d > 1 else 0.0
        return Constants(
            G=(1 + s) * math.hypot(self.c * p.G, mu) + self.tau,
            M=(1 + s) * max(self.c * p.M, mu),
            rho=(1 + s) * max(self.c * p.rho, 2 * mu),
            B0=self.c * p.drop,
        )

    @property
    def x0(self) -> np.ndarray:
        return np.zeros(self.d)

    # --- counts mode: the per-record bounds over the support (see the module docstring) ----
    def _block_unit(self, x: np.ndarray) -> np.ndarray:
        y = x[1:]
        return y / math.sqrt(1.0 + y @ y)

    def record_grad_bound(self, x):
        amp, half = 1 + self.noise, self.tau / math.sqrt(self.d)
        first = amp * abs(self.c * float(self.profile.d1(x[0]))) + half
        rest = amp * self.mu * np.abs(self._block_unit(x)) + half
        return math.sqrt(first * first + float(rest @ rest))

    def record_grad_diff_bound(self, x, y):
        first = self.c * float(self.profile.d1(x[0]) - self.profile.d1(y[0]))
        rest = self.mu * (self._block_unit(x) - self._block_unit(y))
        return (1 + self.noise) * math.sqrt(first * first + float(rest @ rest))

    # --- per sample -----------------------------------------------------------------------
    def per_sample_losses(self, x, batch):
        y = x[1:]
        h = math.sqrt(1.0 + y @ y) - 1.0
        return (
            (1 + batch[:, 0]) * self.c * float(self.profile.value(x[0]))
            + (1 + batch[:, 1]) * self.mu * h
            + batch[:, 2:] @ x
        )

    def _block_grads(self, x: np.ndarray, batch: np.ndarray, out: np.ndarray) -> np.ndarray:
        y = x[1:]
        out[:, 0] += (1 + batch[:, 0]) * (self.c * float(self.profile.d1(x[0])))
        out[:, 1:] += np.outer((1 + batch[:, 1]) * self.mu, y / math.sqrt(1.0 + y @ y))
        return out

    def per_sample_grads(self, x, batch):
        return self._block_grads(x, batch, batch[:, 2:].copy())

    def per_sample_grad_diffs(self, x, y, batch):
        out = np.zeros((len(batch), self.d))
        self._block_grads(x, batch, out)
        out[:, 0] -= (1 + batch[:, 0]) * (self.c * float(self.profile.d1(y[0])))
        yr = y[1:]
        out[:, 1:] -= np.outer((1 + batch[:, 1]) * self.mu, yr / math.sqrt(1.0 + yr @ yr))
        return out

    # --- population (closed form) ---------------------------------------------------------
    def population_loss(self, x):
        y = x[1:]
        return float(self.c * self.profile.value(x[0]) + self.mu * (math.sqrt(1.0 + y @ y) - 1.0))

    def population_grad(self, x):
        y = x[1:]
        g = np.empty(self.d)
        g[0] = self.c * self.profile.d1(x[0])
        g[1:] = self.mu * y / math.sqrt(1.0 + y @ y)
        return g

    def population_hessian(self, x):
        y = x[1:]
        r = math.sqrt(1.0 + y @ y)
        H = np.zeros((self.d, self.d))
        H[0, 0] = self.c * self.profile.d2(x[0])
        H[1:, 1:] = self.mu * (np.eye(self.d - 1) / r - np.outer(y, y) / r**3)
        return H

    def population_hvp(self, x, v):
        y = x[1:]
        r = math.sqrt(1.0 + y @ y)
        out = np.empty(self.d)
        out[0] = self.c * self.profile.d2(x[0]) * v[0]
        out[1:] = self.mu * (v[1:] / r - y * (y @ v[1:]) / r**3)
        return out

    def population_lambda_min(self, x):
        first = float(self.c * self.profile.d2(x[0]))
        if self.d == 1:
            return first
        y = x[1:]
        return min(first, self.mu / math.sqrt(1.0 + y @ y) ** 3)

    def params(self):
        return {"d": self.d, "c": self.c, "mu": self.mu, "noise": self.noise, "tau": self.tau}


class StrictSaddle(SeparableSaddle):
    """Benign strict saddle: phi(u) = cos(omega u); saddle at 0, minima at x_1 = +-pi/omega.

    Defaults c = 4, omega = 0.5, mu = 0.25, noise = 0.5, tau = 0.5 give lambda_min(hess F(x0))
    = -c omega^2 = -1, G = 3.52, M = 1.5, rho = 0.75, B0 = 8 and a saddle with
    alpha_SOSP(x0) = lambda_min^2 / rho = 1.33, far above the accuracies we measure. After the
    escape the minimum is well conditioned, so this problem is *benign*: it does not force the
    alpha^{-2} path of the worst-case analysis (DESIGN.md Scientific protocol, item 1).
    """

    name = "strict_saddle"
    character = "benign"
    description = "benign strict saddle cos(omega x1) + convex block; noisy gradients and O2"

    def __init__(self, d: int = 10, c: float = 4.0, omega: float = 0.5, mu: float = 0.25,
                 noise: float = 0.5, tau: float = 0.5) -> None:
        super().__init__(d, c, mu, noise, tau)
        self.omega = check_positive("omega", omega)
        self.profile = CosineProfile(self.omega)

    def params(self):
        return {**super().params(), "omega": self.omega}

    def minima(self) -> np.ndarray:
        """The two global minimizers x = (+-pi/omega, 0, ..., 0), shape (2, d)."""
        out = np.zeros((2, self.d))
        out[:, 0] = [math.pi / self.omega, -math.pi / self.omega]
        return out


class HardValley(SeparableSaddle):
    """Hard instance: a strict saddle at 0 opening into a valley whose gradient decays like 1/u.

    phi is `ValleyProfile(w, beta)`: F(x) = c p(x_1/w) + mu h(x_{2:}). Gradient descent from
    the saddle's neighbourhood walks the valley; reaching ||grad F|| <= alpha takes about
    c M / (2 alpha^2) steps for beta/w << alpha << c/w (test: slope of log steps against
    log alpha is -2), so the path length the rate analyses pay for (~B0 M / alpha^2) is
    really walked. The unique minima are at x_1 = +-w sqrt(1/beta^2 - 1).
    Defaults c = 1, w = 0.5, beta = 5e-5, mu = 0.5, noise = 0.5, tau = 0.5 give
    lambda_min(hess F(x0)) = -(1 - beta)/w^2 = -4, G = 2.18, M = 6, rho = 17.49, B0 = 8.90 and
    alpha_SOSP(x0) = 0.915 (10x above the largest accuracy we fit, protocol item 6); gradient
    descent needs ~3/alpha^2 steps.
    """

    name = "hard_valley"
    character = "hard"
    description = "hard instance: saddle at 0, valley with gradient ~1/u (alpha^-2 path)"

    def __init__(self, d: int = 10, c: float = 1.0, w: float = 0.5, beta: float = 5e-5,
                 mu: float = 0.5, noise: float = 0.5, tau: float = 0.5) -> None:
        super().__init__(d, c, mu, noise, tau)
        self.w = check_positive("w", w)
        self.beta = check_positive("beta", beta)
        if self.beta >= 1:
            raise ValueError(f"beta={beta!r} is invalid: must be in (0, 1)")
        self.profile = ValleyProfile(self.w, self.beta)

    def params(self):
        return {**super().params(), "w": self.w, "beta": self.beta}

    def minima(self) -> np.ndarray:
        """The two global minimizers x = (+-w sqrt(1/beta^2 - 1), 0, ..., 0)."""
        out = np.zeros((2, self.d))
        u = self.w * math.sqrt(1.0 / self.beta**2 - 1.0)
        out[:, 0] = [u, -u]
        return out
