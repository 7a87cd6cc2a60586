"""Smooth non-convex regularized logistic regression on a finite-support population.

f(x; (y, a)) = log(1 + exp(-y a.x)) + lam * sum_j x_j^2 / (1 + x_j^2), with |a| <= 1 and
y in {-1, +1}. The population is a fixed set of N atoms (a seeded synthetic set, or a real
data set that a package ships); records are drawn i.i.d. uniformly from the atoms, and the
population loss, gradient and Hessian are exact averages over all atoms. Finite atoms give an
exact counts mode (`problems.counts.stream`): a batch's mean gradient is the counts-weighted average of
the per-atom gradients.

Constants (on R^d), with s(t) = 1/(1+e^{-t}) and r(u) = u^2/(1+u^2):
  logistic part: |grad| = s(-y a.x) |a| <= 1; hess = s(1-s) a a^T <= 1/4; third derivative
  s(1-s)(1-2s) (a.v)^3 <= 1/(6 sqrt 3) = 0.09623.
  regularizer: r' = 2u/(1+u^2)^2 (max 3 sqrt(3)/8 = 0.64952), r'' = (2 - 6u^2)/(1+u^2)^3
  (max |r''| = 2 at 0), r''' = 24u(u^2-1)/(1+u^2)^4 (max |r'''| = 4.66856, numerically on a
  grid of 4e6 points); the regularizer is separable, so its gradient norm is at most
  0.64952 sqrt(d) and its Hessian is diagonal.
  G = 1 + 0.64952 lam sqrt(d),  M = 1/4 + 2 lam,  rho = 0.09623 + 4.66856 lam,
  B0 = F(0) - inf F <= log 2 (both parts are >= 0; x0 = 0).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from problems.base import Constants, Problem, check_nonneg, check_positive_int
from problems.finite_support import FiniteAtoms

R1_MAX, R2_MAX, R3_MAX = 3 * math.sqrt(3) / 8, 2.0, 4.66856
LOGISTIC3_MAX = 1 / (6 * math.sqrt(3))


class _LogisticBase(FiniteAtoms, Problem):
    """Shared oracles; subclasses set `self.atoms` (N, d+1): column 0 is y, the rest a."""

    atoms: np.ndarray

    def __init__(self, d: int, lam: float) -> None:
        super().__init__(d)
        self.lam = check_nonneg("lam", lam)

    @property
    def constants(self):
        lam = self.lam
        return Constants(G=1 + R1_MAX * lam * math.sqrt(self.d), M=0.25 + R2_MAX * lam,
                         rho=LOGISTIC3_MAX + R3_MAX * lam, B0=math.log(2))

    @property
    def x0(self):
        return np.zeros(self.d)

    # The regularizer is shared by all records.
    def _reg_grad(self, x):
        return self.lam * 2 * x / (1 + x * x) ** 2

    def per_sample_losses(self, x, batch):
        margins = batch[:, 0] * (batch[:, 1:] @ x)
        return np.logaddexp(0.0, -margins) + self.lam * np.sum(x * x / (1 + x * x))

    def _logistic_grads(self, x, batch):
        y, a = batch[:, 0], batch[:, 1:]
        return (-y * expit(-y * (a @ x)))[:, None] * a

    def per_sample_grads(self, x, batch):
        return self._logistic_grads(x, batch) + self._reg_grad(x)

    def per_sample_grad_diffs(self, x, y, batch):
        ya, a = batch[:, 0], batch[:, 1:]
        coef = -ya * (expit(-ya * (a @ x)) - expit(-ya * (a @ y)))
        return coef[:, None] * a + (self._reg_grad(x) - self._reg_grad(y))

    def population_loss(self, x):
        margins = self.atoms[:, 0] * (self.atoms[:, 1:] @ x)
        return float(np.mean(np.logaddexp(0.0, -margins)) + self.lam * np.sum(x * x / (1 + x * x)))

    def population_grad(self, x):
        return self._logistic_grads(x, self.atoms).mean(axis=0) + self._reg_grad(x)

    def _weights(self, x):
        s = expit(self.atoms[:, 1:] @ x)
        return s * (1 - s)

    def _reg_hess_diag(self, x):
        return self.lam * (2 - 6 * x * x) / (1 + x * x) ** 3

    def population_hessian(self, x):
        a = self.atoms[:, 1:]
        H = (a * self._weights(x)[:, None]).T @ a / len(a)
        H[np.diag_indices(self.d)] += self._reg_hess_diag(x)
        return H

    def population_hvp(self, x, v):
        a = self.atoms[:, 1:]
        return a.T @ (self._weights(x) * (a @ v)) / len(a) + self._reg_hess_diag(x) * v


class SyntheticLogistic(_LogisticBase):
    """Seeded synthetic population: N atoms, a = g / sqrt(d) projected to |a| <= 1 (g standard
    normal), y = sign(a.w* + 0.1 xi) flipped with probability `flip`, |w*| = sqrt(d)."""

    name = "logistic"
    character = "benign"
    description = "non-convex regularized logistic regression, seeded finite population"

    def __init__(self, d: int = 10, lam: float = 0.1, n_atoms: int = 2000, flip: float = 0.1,
                 atoms_seed: int = 0) -> None:
        super().__init__(d, lam)
        self.n_atoms = check_positive_int("n_atoms", n_atoms)
        if not 0 <= flip < 0.5:
            raise ValueError(f"flip={flip!r} is invalid: must be in [0, 0.5)")
        self.flip, self.atoms_seed = float(flip), int(atoms_seed)
        rng = np.random.default_rng(np.random.SeedSequence([self.atoms_seed, 104729]))
        a = rng.standard_normal((self.n_atoms, d)) / math.sqrt(d)
        a /= np.maximum(1.0, np.linalg.norm(a, axis=1))[:, None]
        w = rng.standard_normal(d)
        w *= math.sqrt(d) / np.linalg.norm(w)
        y = np.sign(a @ w + 0.1 * rng.standard_normal(self.n_atoms))
        y[y == 0] = 1.0
        y[rng.random(self.n_atoms) < self.flip] *= -1
        self.atoms = np.column_stack([y, a])
        self._init_atoms()

    def params(self):
        return {"d": self.d, "lam": self.lam, "n_atoms": self.n_atoms, "flip": self.flip,
                "atoms_seed": self.atoms_seed}


class BreastCancerLogistic(_LogisticBase):
    """Population = scikit-learn's bundled Wisconsin breast-cancer data (569 records, 30
    features; optional extra `dprates[data]`). Features are standardized, the first d kept,
    and rows scaled by the largest row norm so |a| <= 1; y = +1 for malignant."""

    name = "logistic_breast_cancer"
    character = "benign"
    description = "non-convex regularized logistic regression on sklearn's breast-cancer data"

    def __init__(self, d: int = 30, lam: float = 0.1) -> None:
        if not (isinstance(d, int) and 1 <= d <= 30):
            raise ValueError(f"d={d!r} is invalid: must be an integer in [1, 30] (the data's features)")
        super().__init__(d, lam)
        try:
            from sklearn.datasets import load_breast_cancer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "problem 'logistic_breast_cancer' needs scikit-learn: pip install 'dprates[data]'"
            ) from exc
        X, target = load_breast_cancer(return_X_y=True)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
        X = X[:, :d]
        X /= np.linalg.norm(X, axis=1).max()
        y = np.where(target == 0, 1.0, -1.0)
        self.atoms = np.column_stack([y, X])
        self._init_atoms()

    def params(self):
        return {"d": self.d, "lam": self.lam}


__all__ = ["BreastCancerLogistic", "SyntheticLogistic"]
