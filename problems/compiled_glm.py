"""A user's GLM-form loss on the user's own finite data set, declared by numba functions (issue
72, item 1; problems/README.md, "A GLM-form loss on your own data").

The loss is f(w; (x, y)) = g(<w, x>, y) for records (x, y), x in R^d, y a number: robust
regression (Welsch, Huber, Cauchy), logistic or probit regression, any g of the margin. The
subclass declares scalar numba functions of (m, y, p) (m the margin <w, x>, p a float64 array
of its parameters, `fn_params`):

* `loss_fn(m, y, p)`: g(m, y);
* `dloss_fn(m, y, p)`: g'(m, y), the derivative in m: grad f(w; z) = g'(<w, x>, y) x;
* `d2loss_fn(m, y, p)`: g''(m, y): the population Hessian sum_a p_a g''(m_a, y_a) x_a x_a^T;

and the public bounds the theory's constants are built from (never read off the data):
`dloss_bound` >= sup |g'|, `d2loss_bound` >= sup |g''|, `d3loss_bound` >= sup |g'''|,
`feature_bound` >= every record's ||x|| (the suite checks it against the data and refuses a
data set that breaks it), and `loss_lower` <= inf g (B0 = F(x0) - loss_lower). G = dloss_bound
feature_bound, M = d2loss_bound feature_bound^2, rho = d3loss_bound feature_bound^3.

`records()` returns the data set: an (N, d + 1) float64 array, the features then the label.
The suite turns it into the atoms layout (`problems.finite_support.FiniteAtoms`): the distinct
records and their frequencies, the population the benchmark samples from (a run's n records are
drawn from it with replacement, in records mode by `rng.choice` with those frequencies, in
counts mode by the counts stream's exact multinomial splits: the same law). The population
oracles are exact sums over the atoms. Counts mode is exact by construction: a batch's clipped
sum is computed per atom by the suite (`algorithms.counts_maps`), each atom's gradient by the
same compiled row loop records mode uses; clipping is the suite's, so a wrong bound changes step
sizes, never privacy.

Speed: every per-record oracle is one compiled loop over rows (margin, g', scale), generated
around the user's function and cached on disk across processes (`problems.jit_cache`).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from problems.base import Constants, Problem
from problems.counts.layouts import Categorical
from problems.finite_support import FiniteAtoms
from problems.jit_cache import enable_disk_cache, load_generated

_GRADS = """
import numba
import numpy as np


@numba.njit("float64[:, ::1](float64[::1], float64[:, ::1], float64[::1])", cache=CACHE)
def rows(w, rows, p):
    n, d = rows.shape[0], w.shape[0]
    out = np.empty((n, d))
    for i in range(n):
        m = 0.0
        for j in range(d):
            m += w[j] * rows[i, j]
        g = fn(m, rows[i, d], p)
        for j in range(d):
            out[i, j] = g * rows[i, j]
    return out
"""
_DIFFS = """
import numba
import numpy as np


@numba.njit("float64[:, ::1](float64[::1], float64[::1], float64[:, ::1], float64[::1])",
            cache=CACHE)
def rows(w, v, rows, p):
    n, d = rows.shape[0], w.shape[0]
    out = np.empty((n, d))
    for i in range(n):
        mw = 0.0
        mv = 0.0
        for j in range(d):
            mw += w[j] * rows[i, j]
            mv += v[j] * rows[i, j]
        g = fn(mw, rows[i, d], p) - fn(mv, rows[i, d], p)
        for j in range(d):
            out[i, j] = g * rows[i, j]
    return out
"""
_SCALARS = """
import numba
import numpy as np


@numba.njit("float64[::1](float64[::1], float64[:, ::1], float64[::1])", cache=CACHE)
def rows(w, rows, p):
    n, d = rows.shape[0], w.shape[0]
    out = np.empty(n)
    for i in range(n):
        m = 0.0
        for j in range(d):
            m += w[j] * rows[i, j]
        out[i] = fn(m, rows[i, d], p)
    return out
"""
_CLIP_WEIGHTS = """
import numba
import numpy as np


@numba.njit("float64[::1](float64[::1], float64[::1], float64[::1], float64[::1], "
            "float64[::1], boolean, float64, float64[::1])", cache=CACHE)
def rows(mx, my, labels, norms, counts, has_y, clip, p):
    out = np.zeros(mx.shape[0])
    for i in range(mx.shape[0]):
        c = counts[i]
        if c == 0.0:
            continue
        coef = fn(mx[i], labels[i], p)
        if has_y:
            coef -= fn(my[i], labels[i], p)
        size = abs(coef) * norms[i]
        if not np.isfinite(size):
            continue  # a non-finite row contributes 0, as the generic clip zeroes it
        w = c * coef
        if size > clip:
            w *= clip / size
        out[i] = w
    return out
"""
FUNCTIONS = ("loss_fn", "dloss_fn", "d2loss_fn")


class DeclaredGLMLoss(FiniteAtoms, Problem):
    """Mixin: g(<w, x>, y) on the user's finite data set (module docstring). A subclass sets
    the three functions, the bounds, `name`, and `records()`; `fn_params` optional."""

    loss_fn: ClassVar[Any]
    dloss_fn: ClassVar[Any]
    d2loss_fn: ClassVar[Any]
    dloss_bound: ClassVar[float]
    d2loss_bound: ClassVar[float]
    d3loss_bound: ClassVar[float]
    feature_bound: ClassVar[float]
    loss_lower: ClassVar[float] = 0.0
    character = "benign"

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for name in FUNCTIONS:  # compiled once per machine, not per process
            enable_disk_cache(cls.__dict__.get(name))

    def records(self) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must define records(): its data set, "
                                  "an (N, d + 1) array of features then the label")

    def __init__(self, d: int | None = None, **params: Any) -> None:
        self._init_params = dict(params)
        self.fn_params = np.ascontiguousarray(getattr(self, "fn_params", np.zeros(0)), dtype=np.float64)
        data = np.ascontiguousarray(self.records(), dtype=np.float64)
        if data.ndim != 2 or data.shape[1] < 2 or len(data) < 1 or not np.all(np.isfinite(data)):
            raise ValueError(f"records() of shape {data.shape} is invalid: must be a finite "
                             "(N, d + 1) array, N >= 1, d >= 1 (the features, then the label)")
        dim = data.shape[1] - 1
        if d is not None and int(d) != dim:
            raise ValueError(f"d={d!r} is invalid for {self.name}: its records have {dim} features")
        super().__init__(dim)
        norms = np.linalg.norm(data[:, :-1], axis=1)
        worst = int(np.argmax(norms))
        if norms[worst] > float(self.feature_bound) * (1 + 1e-12):
            raise ValueError(f"feature_bound={self.feature_bound!r} of {self.name} is invalid: "
                             f"record {worst} has ||x|| = {norms[worst]:.6g} (the bound must "
                             "hold for every record)")
        self.atoms, counts = np.unique(data, axis=0, return_counts=True)
        self.atoms = np.ascontiguousarray(self.atoms)
        self._features = np.ascontiguousarray(self.atoms[:, :-1])
        self._labels = np.ascontiguousarray(self.atoms[:, -1])
        self._feature_norms = np.linalg.norm(self._features, axis=1)
        self.weights = counts / counts.sum()
        self.n_records = len(data)
        self.layout = Categorical(self.weights)

    # --- the data ------------------------------------------------------------------------
    def _draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.atoms[rng.choice(len(self.atoms), size=n, p=self.weights)]

    def params(self) -> dict:
        return {"d": self.d, **self._init_params}

    @property
    def x0(self) -> np.ndarray:
        return np.zeros(self.d)

    @property
    def constants(self) -> Constants:
        X = float(self.feature_bound)
        return Constants(G=float(self.dloss_bound) * X, M=float(self.d2loss_bound) * X**2,
                         rho=float(self.d3loss_bound) * X**3,
                         B0=max(0.0, self.population_loss(self.x0) - float(self.loss_lower)))

    # --- per record: compiled row loops around the user's functions --------------------------
    def _loop(self, name: str, template: str) -> Any:
        return load_generated(getattr(type(self), name), template).rows

    def _rows(self, batch: Any) -> np.ndarray:
        return np.ascontiguousarray(batch, dtype=np.float64)

    def per_sample_losses(self, x, batch):
        return self._loop("loss_fn", _SCALARS)(np.ascontiguousarray(x, dtype=np.float64),
                                               self._rows(batch), self.fn_params)

    def per_sample_grads(self, x, batch):
        return self._loop("dloss_fn", _GRADS)(np.ascontiguousarray(x, dtype=np.float64),
                                              self._rows(batch), self.fn_params)

    def per_sample_grad_diffs(self, x, y, batch):
        return self._loop("dloss_fn", _DIFFS)(np.ascontiguousarray(x, dtype=np.float64),
                                              np.ascontiguousarray(y, dtype=np.float64),
                                              self._rows(batch), self.fn_params)

    # --- counts mode: the suite's clipped sum per atom ---------------------------------------
    def counts_clipped_sum(self, x, y, batch, clip: float) -> np.ndarray:
        """sum over the batch of grad f(x; z_i) (y None) or grad f(x; z_i) - grad f(y; z_i),
        each clipped to norm `clip`, per atom: a row is coef_a x_a (coef_a = g'(<x, x_a>, y_a),
        or the difference of two), of norm |coef_a| ||x_a||, so the clip is a scalar per atom:
        the margins by one matrix product, each atom's clipped weight by one compiled pass, the
        sum X^T weights; no (atoms, d) array. The suite's code
        (`algorithms.counts_maps` calls it only while a subclass overrides none of the
        per-record oracles, `suite_clipped_sum`); a non-finite row contributes 0 (as the
        generic clip zeroes it)."""
        feats = self._features
        mx = feats @ np.asarray(x, dtype=np.float64)  # every margin by one matrix product
        my = mx if y is None else feats @ np.asarray(y, dtype=np.float64)
        weights = self._loop("dloss_fn", _CLIP_WEIGHTS)(
            mx, my, self._labels, self._feature_norms,
            np.ascontiguousarray(batch.counts, dtype=np.float64), y is not None, float(clip),
            self.fn_params)
        return feats.T @ weights

    # --- population: exact sums over the atoms ---------------------------------------------
    def population_loss(self, x):
        return float(self.weights @ self.per_sample_losses(x, self.atoms))

    def population_grad(self, x):
        return self.weights @ self.per_sample_grads(x, self.atoms)

    def population_hessian(self, x):
        curv = self._loop("d2loss_fn", _SCALARS)(np.ascontiguousarray(x, dtype=np.float64),
                                                 self.atoms, self.fn_params)
        feats = self.atoms[:, :-1]
        return (feats * (self.weights * curv)[:, None]).T @ feats


def suite_clipped_sum(problem: Any) -> Any:
    """`problem.counts_clipped_sum` where it is `DeclaredGLMLoss`'s own and the per-record
    oracles it must agree with are too (a subclass that overrides any of them gets the generic
    clipped sum from its per-record gradients), else None."""
    cls = type(problem)
    if not isinstance(problem, DeclaredGLMLoss):
        return None
    own = ("counts_clipped_sum", "per_sample_grads", "per_sample_grad_diffs", "_loop")
    if any(getattr(cls, a) is not getattr(DeclaredGLMLoss, a) for a in own):
        return None
    return problem.counts_clipped_sum


def welsch_bounds(c: float) -> dict[str, float]:
    """The Welsch loss g(m, y) = (c^2 / 2)(1 - exp(-r^2 / c^2)), r = m - y: its derivative
    bounds. g' = r e^-u, u = r^2 / c^2, is largest at r = c / sqrt 2: c / sqrt(2e). g'' =
    (1 - 2u) e^-u is largest at r = 0: 1. The third derivative -(2r / c^2)(3 - 2u) e^-u has
    magnitude (2 sqrt(u) / c)|3 - 2u| e^-u, largest where 2u^2 - 6u + 3/2 = 0, at the smaller
    root u = (3 - sqrt 6) / 2."""
    u = (3 - math.sqrt(6)) / 2  # r^2 / c^2 at the extremum of |g'''|
    d3 = 2 * math.sqrt(u) / c * abs(2 * u - 3) * math.exp(-u)
    return {"dloss_bound": c / math.sqrt(2 * math.e), "d2loss_bound": 1.0, "d3loss_bound": d3}


__all__ = ["DeclaredGLMLoss", "suite_clipped_sum", "welsch_bounds"]
