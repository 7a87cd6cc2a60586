"""Seed 002's synthetic experiment, reconstructed: absolute-loss regression with coordinate
scales (Asi, Duchi, Fallah, Javidbakht, Talwar 2021, arXiv 2106.13756, Section 6.1; the seed
does not state its data model, so this is a [CHOICE] documented here).

f(x; (a, y)) = |<a, x> - y| on X = [-1, 1]^d, features a_j = sigma_j z_j with z_j independent
signs and sigma_j = j^-power (the seed: power 3/2), targets y = <a, x_true> + tau s with s a
sign (the seed's tau = 0.01) and x_true a seeded point of the box. The population is a seeded
set of N atoms (`FiniteAtoms`: exact averages, counts mode), so F and its minimum over the box
are exact: min_X F is a linear program (`scipy.optimize.linprog`, HiGHS) solved once per
instance. Subgradients: sign(<a, x> - y) a (0 at the kink), so G = ||sigma||_2, M = rho = 0.
Records are rows [y, a_1..a_d].
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from problems.base import Constants, Problem, check_nonneg, check_positive, check_positive_int
from problems.box_domain import BoxDomain
from problems.finite_support import FiniteAtoms

_MIN_LOSS: dict[tuple, float] = {}


class ScaledRegression(BoxDomain, FiniteAtoms, Problem):
    name = "scaled_regression"
    character = "benign"
    convex = True
    description = "absolute-loss regression over [-1, 1]^d, feature scales j^-power (seed 002's experiment)"

    def __init__(self, d: int = 100, power: float = 1.5, tau: float = 0.01, n_atoms: int = 2000,
                 seed: int = 0) -> None:
        super().__init__(d)
        self.power = check_nonneg("power", power)
        self.tau = check_nonneg("tau", tau)
        self.n_atoms = check_positive_int("n_atoms", n_atoms)
        self.seed = int(seed)
        self.sigma = np.arange(1, d + 1, dtype=float) ** -self.power
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 2106]))
        self.x_true = rng.uniform(-0.5, 0.5, d)
        a = self.sigma * rng.choice([-1.0, 1.0], size=(self.n_atoms, d))
        y = a @ self.x_true + self.tau * rng.choice([-1.0, 1.0], size=self.n_atoms)
        self.atoms = np.column_stack([y, a])
        self._init_atoms()
        check_positive("sigma norm", float(np.linalg.norm(self.sigma)))

    @property
    def constants(self) -> Constants:
        return self.box_constants(float(np.linalg.norm(self.sigma)),
                                  B0=self.population_loss(self.x0) - self.min_loss)

    def params(self) -> dict:
        return {"d": self.d, "power": self.power, "tau": self.tau, "n_atoms": self.n_atoms,
                "seed": self.seed}

    @property
    def min_loss(self) -> float:
        """min over the box of F, by a linear program (`_solve_min_loss`), solved once per
        instance and process."""
        key = tuple(sorted(self.params().items()))
        if key not in _MIN_LOSS:
            _MIN_LOSS[key] = self._solve_min_loss()
        return _MIN_LOSS[key]

    def _solve_min_loss(self) -> float:
        # min (1/N) sum (u_i + v_i) s.t. A x - u + v = y, u, v >= 0, x in the box: the
        # equality form with sparse constraints, interior point (with crossover): ~1 s at
        # N = 2000, d = 100, against ~6 s for the dense two-sided inequality form
        A, y = self.atoms[:, 1:], self.atoms[:, 0]
        N, d = A.shape
        eye = sparse.identity(N, format="csr")
        A_eq = sparse.hstack([sparse.csr_matrix(A), -eye, eye], format="csr")
        c = np.concatenate([np.zeros(d), np.full(2 * N, 1.0 / N)])
        bounds = [(-self.box, self.box)] * d + [(0, None)] * (2 * N)
        res = linprog(c, A_eq=A_eq, b_eq=y, bounds=bounds, method="highs-ipm")
        if not res.success:
            raise RuntimeError(f"the LP for min F failed: {res.message}")
        return float(res.fun)

    def excess_risk(self, x: np.ndarray) -> float:
        return self.population_loss(x) - self.min_loss

    def per_sample_losses(self, x, batch):
        return np.abs(batch[:, 1:] @ x - batch[:, 0])

    def per_sample_grads(self, x, batch):
        return np.sign(batch[:, 1:] @ x - batch[:, 0])[:, None] * batch[:, 1:]

    def population_loss(self, x):
        return float(np.mean(self.per_sample_losses(x, self.atoms)))

    def population_grad(self, x):
        A = self.atoms[:, 1:]
        return np.sign(A @ x - self.atoms[:, 0]) @ A / len(A)
