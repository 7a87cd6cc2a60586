# my_scaled_valley.py: a two-point loss whose gradient difference reads m = d - 1 record
# coordinates (issue 72, item 2): each coordinate's curvature scaled by its own record
# coordinate. Loaded as a plugin by bench/benchmarks/test_many_coordinate_speed.py and
# tests/test_compiled_loss_cache.py.
import math

import numba
import numpy as np

import problems
from problems.base import Constants
from problems.compiled_loss import CompiledTwoPointLoss

# p = (c, w, beta, a, v, h): f(x; z) = c phi(x1) + a/2 sum_{j >= 2} (1 + v z_{j-1}) x_j^2 + <xi, x>,
# z = (z_1, ..., z_{d-1}, xi) with z_j = +-1, xi_j = +-h; phi the valley (problems/README.md).


@numba.njit
def phi_d1(u, p):
    v = u / p[1]
    return (-v / (1.0 + v * v) + p[2] * v / math.sqrt(1.0 + v * v)) / p[1]


@numba.njit
def loss(x, z, p):
    d = x.shape[0]
    v2 = (x[0] / p[1]) ** 2
    total = p[0] * (-0.5 * math.log1p(v2) + p[2] * (math.sqrt(1.0 + v2) - 1.0))
    for j in range(1, d):
        total += 0.5 * p[3] * (1.0 + p[4] * z[j - 1]) * x[j] * x[j]
    return total + np.dot(z[d - 1:], x)


@numba.njit
def grad(x, z, p, out):
    d = x.shape[0]
    out[0] = p[0] * phi_d1(x[0], p) + z[d - 1]
    for j in range(1, d):
        out[j] = p[3] * (1.0 + p[4] * z[j - 1]) * x[j] + z[d - 1 + j]


@numba.njit
def grad_diff(x, y, zh, p, out):  # reads zh = (z_1, ..., z_{d-1}): <xi, x> drops out
    out[0] = p[0] * (phi_d1(x[0], p) - phi_d1(y[0], p))
    for j in range(1, x.shape[0]):
        out[j] = p[3] * (1.0 + p[4] * zh[j - 1]) * (x[j] - y[j])


@numba.njit
def grad_bound(x, p):  # z_j = +1, xi aligned
    first = p[0] * abs(phi_d1(x[0], p)) + p[5]
    total = first * first
    for j in range(1, x.shape[0]):
        r = p[3] * (1.0 + p[4]) * abs(x[j]) + p[5]
        total += r * r
    return math.sqrt(total)


@numba.njit
def grad_diff_bound(x, y, p):  # z_j = +1
    first = p[0] * abs(phi_d1(x[0], p) - phi_d1(y[0], p))
    total = first * first
    for j in range(1, x.shape[0]):
        r = p[3] * (1.0 + p[4]) * (x[j] - y[j])
        total += r * r
    return math.sqrt(total)


@numba.njit
def pop_grad(x, p, out):  # grad F(x): E z = 0
    out[0] = p[0] * phi_d1(x[0], p)
    for j in range(1, x.shape[0]):
        out[j] = p[3] * x[j]


@problems.register
class ScaledValley(CompiledTwoPointLoss):
    """The valley along x_1, each other coordinate's curvature scaled by its own record
    coordinate (1 + v z_j), a linear term <xi, x>; two-point records, m = d - 1."""
    name, character = "scaled_valley", "hard"
    description = "plugin: valley + per-coordinate record-scaled curvature (m = d - 1)"
    grad_fn, grad_diff_fn, loss_fn = grad, grad_diff, loss
    grad_bound_fn, grad_diff_bound_fn, pop_grad_fn = grad_bound, grad_diff_bound, pop_grad

    def __init__(self, d=10, c=1.0, w=0.5, beta=5e-5, a=0.5, v=0.5, tau=0.5, R=2.0):
        super().__init__(d)
        self.c, self.w, self.beta = float(c), float(w), float(beta)
        self.a, self.v, self.tau, self.R = float(a), float(v), float(tau), float(R)
        self.diff_coordinates = d - 1  # grad_diff reads z_1, ..., z_{d-1}
        h = self.tau / math.sqrt(d)
        self.fn_params = np.array([self.c, self.w, self.beta, self.a, self.v, h])
        self.record_high = np.array([*([1.0] * (d - 1)), *([h] * d)])
        self.record_low = -self.record_high
        self._init_two_point()

    @property
    def constants(self):  # on the domain |x_2:d| <= R (the clip guard refuses a step past it)
        w, beta, top = self.w, self.beta, self.a * (1 + self.v)
        return Constants(G=self.c * (0.5 + beta) / w + top * self.R + self.tau,
                         M=max(self.c / w**2, top),
                         rho=self.c * (1.45712 + 0.85866 * beta) / w**3,
                         B0=self.c * (-math.log(beta) - 1.0 + beta))

    @property
    def x0(self):
        return np.zeros(self.d)

    def params(self):
        return {"d": self.d, "c": self.c, "w": self.w, "beta": self.beta, "a": self.a,
                "v": self.v, "tau": self.tau, "R": self.R}

    def population_loss(self, x):
        v2 = (x[0] / self.w) ** 2
        phi = -0.5 * math.log1p(v2) + self.beta * (math.sqrt(1.0 + v2) - 1.0)
        return float(self.c * phi + 0.5 * self.a * (x[1:] @ x[1:]))

    def population_hessian(self, x):
        v2 = (x[0] / self.w) ** 2
        H = self.a * np.eye(self.d)
        H[0, 0] = self.c * ((v2 - 1.0) / (1.0 + v2) ** 2 + self.beta / (1.0 + v2) ** 1.5) / self.w**2
        return H
