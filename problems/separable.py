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
counts mode (`problems.counts.stream`): a batch's mean gradient is the gradient at its mean record,
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
from typing import Any

import numpy as np

from problems.base import Constants, Problem, check_nonneg, check_positive
from problems.compiled_separable import record_grad_sum
from problems.finite_support import TwoPointCoordinates
from problems.profiles import CosineProfile, Profile, RampProfile, ValleyProfile

#: The coordinates of a record O2's map reads: the two noise factors (a1, a2).
_NOISE_FACTORS = slice(0, 2)


class SeparableSaddle(TwoPointCoordinates, Problem):
    """Shared machinery; see the module docstring for the loss, its constants and derivation."""

    profile: Profile

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

    def counts_grad(self, x, batch):
        return self._mean_grad_and_support_bound(x, batch)

    def _mean_grad_and_support_bound(self, x, batch):
        """Counts-mode O1 in one pass: `per_sample_grads` at the batch's mean record (the
        gradient is affine in the record) and `record_grad_bound`, sharing phi'(x1) and u(x)."""
        z = self.mean_record(batch)[0]
        d1 = self.c * float(self.profile.d1(x[0]))
        unit = self._block_unit(x)
        g = z[2:].copy()
        g[0] += (1 + z[0]) * d1
        g[1:] += ((1 + z[1]) * self.mu) * unit
        amp, half = 1 + self.noise, self.tau / math.sqrt(self.d)
        first = amp * abs(d1) + half
        rest = amp * self.mu * np.abs(unit) + half
        return g, math.sqrt(first * first + float(rest @ rest))

    def counts_grad_diff(self, x, y, batch):
        return self._mean_grad_diff_and_support_bound(x, y, batch)

    #: The last O2 call's ((dtype, shape, bytes) of x, phi'(x1), u(x)): see
    #: _mean_grad_diff_and_support_bound.
    _o2_memo: tuple = ((), 0.0, None)

    def _profile_and_unit(self, x: np.ndarray) -> tuple[Any, np.ndarray]:
        """(phi'(x1), u(x) = x_{2:} / sqrt(1 + ||x_{2:}||^2)): the two factors of O2's map."""
        xb = x[1:]
        return self.profile.d1(float(x[0])), xb / math.sqrt(1.0 + xb.dot(xb))

    def _mean_grad_diff_and_support_bound(self, x, y, batch):
        """Counts-mode O2 in one pass (the engine's hot path): the per-sample difference is
        affine in the record and its <g, x> term cancels, so the batch mean is
        ((1 + mean a1) c (phi'(x1) - phi'(y1)), (1 + mean a2) mu (u(x) - u(y))), u(x) = y/r;
        the bound is `record_grad_diff_bound`'s, from the same two factors. It reads the
        counts of the two noise factors only (`CountsBatch.counts_of`): a per-coordinate
        counts stream then walks 2 coordinates, not d + 2."""
        c1, c2 = batch.counts_of(_NOISE_FACTORS).tolist()
        s, k = self.noise, batch.k
        a1, a2 = -s + 2 * s * (c1 / k), -s + 2 * s * (c2 / k)  # low + (high - low) * count / k
        d1x, ux = self._profile_and_unit(x)
        # y is the engine's previous x, whose two factors the previous call computed: reused
        # when y's dtype, shape and bytes are x's of that call (the same floats as computing
        # them again)
        memo, ykey = self._o2_memo, (y.dtype.str, y.shape, y.tobytes())
        d1y, uy = memo[1:] if memo[0] == ykey else self._profile_and_unit(y)
        self._o2_memo = ((x.dtype.str, x.shape, x.tobytes()), d1x, ux)
        first = self.c * float(d1x - d1y)
        rest = np.subtract(ux, uy, out=np.empty_like(ux))  # in ux's dtype, as ux -= uy would
        rest *= self.mu  # mu (u(x) - u(y))
        out = np.empty(self.d)
        out[0] = (1 + a1) * first
        np.multiply(rest, 1 + a2, out=out[1:])
        return out, (1 + self.noise) * math.sqrt(first * first + float(rest.dot(rest)))

    def batch_mean_grad_diff(self, x, y, batch):
        return self.counts_grad_diff(x, y, batch)[0]

    # The clip guard's pair (mean, bound over the whole support at the public iterate). The
    # bound is computed in the same pass as the mean; a subclass that states its own
    # `record_grad_bound` / `record_grad_diff_bound` gets that one (the guard must read the
    # support bound the problem states, never a value a `counts_grad` override returns).
    def guarded_counts_grad(self, x, batch):
        mean, bound = self._mean_grad_and_support_bound(x, batch)
        if type(self).record_grad_bound is not SeparableSaddle.record_grad_bound:
            bound = self.record_grad_bound(x)
        return mean, bound

    def guarded_counts_grad_diff(self, x, y, batch):
        mean, bound = self._mean_grad_diff_and_support_bound(x, y, batch)
        if type(self).record_grad_diff_bound is not SeparableSaddle.record_grad_diff_bound:
            bound = self.record_grad_diff_bound(x, y)
        return mean, bound

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

    def sum_grads(self, x, batch):
        """sum_i grad f(x; z_i): `per_sample_grads(x, batch).sum(axis=0)`'s floats, compiled
        (`problems.compiled_separable`) where this class's rows are SeparableSaddle's and the
        batch is plain float64 records; else numpy's."""
        cls = type(self)
        if (cls.per_sample_grads is SeparableSaddle.per_sample_grads
                and cls._block_grads is SeparableSaddle._block_grads
                and isinstance(batch, np.ndarray) and batch.dtype == np.float64
                and batch.ndim == 2 and batch.shape[1] == self.d + 2
                and batch.flags.c_contiguous and x.dtype == np.float64):
            y = x[1:]
            return record_grad_sum(batch, self.c * float(self.profile.d1(x[0])), self.mu,
                                   y / math.sqrt(1.0 + y @ y))
        return super().sum_grads(x, batch)

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

    def hessian_lipschitz(self) -> float:
        """A bound on the population Hessian's Lipschitz constant (operator norm): the Hessian
        is c phi''(x_1) on the first coordinate and mu (I / r - y y^T / r^3) (r = sqrt(1 +
        ||y||^2)) on the block, block-diagonal, so it moves by at most max(c |phi'''|, 2 mu)
        times ||x - x'||: the stated rho without the records' (1 + noise). Read by
        problems.evaluation.curvature_screen to skip lambda_min where alpha = ||grad F||."""
        mu = self.mu if self.d > 1 else 0.0
        return max(self.c * self.profile.rho, 2 * mu)

    def population_lambda_min(self, x):
        first = float(self.c * self.profile.d2(x[0]))
        if self.d == 1:
            return first
        y = x[1:]
        return min(first, self.mu / math.sqrt(1.0 + y @ y) ** 3)

    def params(self):
        return {"d": self.d, "c": self.c, "mu": self.mu, "noise": self.noise, "tau": self.tau}

    # The batched gradient, row i bit for bit `population_grad(xs[i])` (problems.evaluation.metrics checks
    # it once per process): the block's squared norm is np.matmul over (1, k) x (k, 1) slices
    # (the BLAS dot that `y @ y` calls), the profile's ufuncs act on a contiguous column. No
    # batched lambda_min: the valley's d2 takes powers that numpy computes differently on
    # arrays and on scalars (an ulp apart), and the alpha screen calls it at few iterates.
    def _block_radius(self, xs: np.ndarray) -> np.ndarray:
        y = xs[:, 1:]
        return np.sqrt(1.0 + np.matmul(y[:, None, :], y[:, :, None])[:, 0, 0])

    def population_grads(self, xs: np.ndarray) -> np.ndarray:
        """grad F at each row of xs, shape (m, d): `population_grad` row by row."""
        xs = np.asarray(xs, dtype=float)
        g = np.empty_like(xs)
        g[:, 0] = self.c * self.profile.d1(np.ascontiguousarray(xs[:, 0]))
        g[:, 1:] = self.mu * xs[:, 1:] / self._block_radius(xs)[:, None]
        return g


class StrictSaddle(SeparableSaddle):
    """Benign strict saddle: phi(u) = cos(omega u); saddle at 0, minima at x_1 = +-pi/omega.

    Defaults c = 4, omega = 0.5, mu = 0.25, noise = 0.5, tau = 0.5 give lambda_min(hess F(x0))
    = -c omega^2 = -1, G = 3.52, M = 1.5, rho = 0.75, B0 = 8 and a saddle with
    alpha_SOSP(x0) = lambda_min^2 / rho = 1.33, far above the accuracies we measure. After the
    escape the minimum is well conditioned, so this problem is *benign*: it does not force the
    alpha^{-2} path of the worst-case analysis (README, the protocol, item 1).
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
                 mu: float = 0.5, noise: float = 0.5, tau: float = 0.5, start: float = 0.0) -> None:
        super().__init__(d, c, mu, noise, tau)
        self.w = check_positive("w", w)
        self.beta = check_positive("beta", beta)
        if self.beta >= 1:
            raise ValueError(f"beta={beta!r} is invalid: must be in (0, 1)")
        self.start = check_nonneg("start", start)
        self.profile = ValleyProfile(self.w, self.beta)

    def params(self):
        return {**super().params(), "w": self.w, "beta": self.beta, "start": self.start}

    @property
    def x0(self) -> np.ndarray:
        """(start, 0, ..., 0): the saddle by default; start > 0 puts x0 in the valley, where
        ||grad F|| ~ c / u (the first-order claims' hard instance: reaching ||grad F|| <= alpha
        means walking to u ~ c / alpha, ~alpha^-2 steps). F decreases along the valley, so B0
        still bounds F(x0) - inf F."""
        x = np.zeros(self.d)
        x[0] = self.start
        return x

    def minima(self) -> np.ndarray:
        """The two global minimizers x = (+-w sqrt(1/beta^2 - 1), 0, ..., 0)."""
        out = np.zeros((2, self.d))
        u = self.w * math.sqrt(1.0 / self.beta**2 - 1.0)
        out[:, 0] = [u, -u]
        return out


class HardRamp(SeparableSaddle):
    """Hard instance built per accuracy: after the saddle, a ramp whose gradient is k alpha all the way.

    The second hard family (the protocol's "per-alpha instance"). phi is `RampProfile`: the
    saddle bump a (exp(-u^2/2w^2) - 1) and a ramp of slope s = k alpha / c and length
    L = drop / s, so along the whole path from the saddle to the minimum at |u| ~ L the
    population gradient is k alpha (k > 1: no point of the ramp is alpha-stationary), the loss
    falls by `drop`, and gradient descent with step 1/M needs ~ L M / (k alpha) =
    drop M / (k alpha)^2 steps (test: slope -2 across instances). Unlike `hard_valley`, whose
    gradient decays like 1/u, every alpha sees the same geometry rescaled, with no
    log(1/alpha) along the path (on the valley the Gaussian rule's drift grows like
    log(1/alpha)). Because the instance depends on alpha, a sweep builds one per target: the
    parameter named by `per_target_param` ("alpha") is set to the cell's target_alpha unless
    the spec fixes it.
    Defaults c = 1, a = 1, w = 0.5, k = 2, drop = 4, ramp_width = 0.5, end_width = 1,
    mu = 0.5, noise = 0.5, tau = 0.5. At alpha = 0.03: lambda_min(hess F(x0)) = -4.1,
    G = 2.3, M = 6.2, rho = 16.7, B0 = 5.0, alpha_SOSP(x0) = 1.0 (11x above the largest
    accuracy we fit), L = 67. `start` (default 0, the saddle) moves x0 along the ramp: the
    first-order claims use start = 3 (= 6 w), where ||grad F(x0)|| = k alpha.
    """

    name = "hard_ramp"
    character = "hard"
    description = "hard instance per target alpha: saddle, then a ramp of gradient k*alpha (alpha^-2 path)"
    per_target_param = "alpha"

    def __init__(self, d: int = 10, alpha: float = 0.03, k: float = 2.0, drop: float = 4.0,
                 c: float = 1.0, a: float = 1.0, w: float = 0.5, ramp_width: float = 0.5,
                 end_width: float = 1.0, mu: float = 0.5, noise: float = 0.5,
                 tau: float = 0.5, start: float = 0.0) -> None:
        super().__init__(d, c, mu, noise, tau)
        self.alpha = check_positive("alpha", alpha)
        self.start = check_nonneg("start", start)
        self.k = check_positive("k", k)
        if self.k <= 1:
            raise ValueError(f"k={k!r} is invalid: must be > 1 (the ramp's gradient is k*alpha)")
        self.drop = check_positive("drop", drop)
        self.a = check_positive("a", a)
        self.w = check_positive("w", w)
        self.ramp_width = check_positive("ramp_width", ramp_width)
        self.end_width = check_positive("end_width", end_width)
        slope = self.k * self.alpha / self.c
        length = self.drop / slope
        if length < 10 * (self.w + self.end_width):
            raise ValueError(f"alpha={alpha!r} is invalid with drop={drop!r}, k={k!r}: the ramp "
                             f"(length {length:.3g}) must be >= 10 (w + end_width)")
        if self.start > length / 2:
            raise ValueError(f"start={start!r} is invalid: must be in [0, L/2 = {length / 2:.3g}] "
                             "(on the first half of the ramp)")
        self.profile = RampProfile(self.a, self.w, slope, length, self.ramp_width, self.end_width)

    def params(self):
        return {**super().params(), "alpha": self.alpha, "k": self.k, "drop": self.drop,
                "a": self.a, "w": self.w, "ramp_width": self.ramp_width,
                "end_width": self.end_width, "start": self.start}

    @property
    def x0(self) -> np.ndarray:
        """(start, 0, ..., 0): the saddle by default; start = 6 w puts x0 on the ramp, where
        ||grad F|| = k alpha, the hard first-order instance (every point of the path is
        (k alpha)-far from stationary, and the walk to the minimum is drop / (k alpha) long).
        F decreases along the ramp, so B0 = c drop still bounds F(x0) - inf F."""
        x = np.zeros(self.d)
        x[0] = self.start
        return x

    def minima(self) -> np.ndarray:
        """The two global minimizers x = (+-u_min, 0, ..., 0), u_min ~ L."""
        out = np.zeros((2, self.d))
        out[:, 0] = [self.profile.u_min, -self.profile.u_min]
        return out
