"""The 1-d non-convex profiles phi of the separable strict-saddle problems
(`problems.separable`): a cosine (`strict_saddle`), the valley (`hard_valley`) and the ramp
(`hard_ramp`), each with its value, first and second derivative in closed form and the
sup-norm constants (G_phi, M_phi, rho_phi) the problems' constants are built from."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq


class Profile:
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



class CosineProfile(Profile):
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



class ValleyProfile(Profile):
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



def _log_cosh(x: np.ndarray) -> np.ndarray:
    """log cosh x without overflow: |x| + log1p(exp(-2|x|)) - log 2."""
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2.0 * ax)) - math.log(2.0)



def _sech2(z: np.ndarray) -> np.ndarray:
    return 1.0 - np.tanh(z) ** 2



class RampProfile(Profile):
    """phi(u) = a (exp(-u^2 / (2 w^2)) - 1) + r(u): a saddle bump, then a long ramp of slope s.

    The ramp's derivative is the odd function
        r'(u) = s (-tanh(u/w_r) + tanh((u - L)/w_e) + tanh((u + L)/w_e)),
    which is -s sign(u) for w_r << |u| << L (a straight descent of slope s), rises to 0 at
    |u| ~ L (the minimum, curvature ~ s/w_e) and is +s sign(u) beyond (F grows linearly, so it
    is bounded below). Integrated with log cosh, r(0) = 0.
    Bounds (w_r <= w_e is required): for u >= 0, tanh((u-L)/w_e) <= tanh(u/w_e) <= tanh(u/w_r),
    so r' <= s, and r' > -2s; the bump's derivative peaks at u = w with a e^{-1/2}/w and has
    the same sign as r' near 0, hence G_phi = a e^{-1/2}/w + 2s. The bump's second derivative
    is at most a/w^2 (at 0) and |tanh'| <= 1, so M_phi = a/w^2 + s (1/w_r + 2/w_e). The bump's
    third derivative a |3v - v^3| e^{-v^2/2} / w^3 peaks at v = sqrt(3 - sqrt 6) with
    1.38062 a/w^3, and |tanh''| <= 4/(3 sqrt 3), so
    rho_phi = 1.38063 a/w^3 + 0.76981 s (1/w_r^2 + 2/w_e^2). The drop phi(0) - inf phi is
    computed: the minimum is the root of phi' near L, found by Brent's method at construction.
    """

    def __init__(self, a: float, w: float, s: float, L: float, w_r: float, w_e: float) -> None:
        if w_r > w_e:
            raise ValueError(f"ramp_width={w_r!r} is invalid: must be <= end_width={w_e!r}")
        self.a, self.w, self.s, self.L, self.w_r, self.w_e = a, w, s, L, w_r, w_e
        self.G = a * math.exp(-0.5) / w + 2.0 * s
        self.M = a / w**2 + s * (1.0 / w_r + 2.0 / w_e)
        self.rho = 1.38063 * a / w**3 + 0.76981 * s * (1.0 / w_r**2 + 2.0 / w_e**2)
        # The minimum sits near L; the bracket must exclude the saddle at 0 (also a root of
        # phi'), which L - 20 w_e reaches on short ramps (alpha >= 0.1 at the defaults).
        self.u_min = float(brentq(lambda u: float(self.d1(np.float64(u))), max(L - 20 * w_e, L / 2),
                                  L + 20 * w_e, xtol=1e-13))
        self.drop = -float(self.value(np.float64(self.u_min)))

    def value(self, u):
        s, L, w_r, w_e = self.s, self.L, self.w_r, self.w_e
        ramp = s * (-w_r * _log_cosh(u / w_r) + w_e * _log_cosh((u - L) / w_e)
                    + w_e * _log_cosh((u + L) / w_e) - 2.0 * w_e * _log_cosh(np.float64(L / w_e)))
        return self.a * np.expm1(-0.5 * (u / self.w) ** 2) + ramp

    def d1(self, u):
        s, L, w_r, w_e = self.s, self.L, self.w_r, self.w_e
        bump = -self.a * u / self.w**2 * np.exp(-0.5 * (u / self.w) ** 2)
        return bump + s * (-np.tanh(u / w_r) + np.tanh((u - L) / w_e) + np.tanh((u + L) / w_e))

    def d2(self, u):
        s, L, w_r, w_e = self.s, self.L, self.w_r, self.w_e
        v2 = (u / self.w) ** 2
        bump = self.a / self.w**2 * (v2 - 1.0) * np.exp(-0.5 * v2)
        return bump + s * (-_sech2(u / w_r) / w_r + _sech2((u - L) / w_e) / w_e
                           + _sech2((u + L) / w_e) / w_e)
