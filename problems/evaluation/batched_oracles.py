"""Population oracles at many iterates at once, bit for bit the single-point ones.

A run's evaluation reads ||grad F|| at every stored iterate and lambda_min(hess F) wherever the
alpha screen lets an iterate through: up to ~10^6 points a cell, each a dozen small numpy calls.
A problem may declare batched forms, `population_grads(xs)` (shape (m, d)) and
`population_lambda_mins(xs)` (shape (m,)), whose row i must equal `population_grad(xs[i])` /
`population_lambda_min(xs[i])` exactly: the stored metrics do not change when evaluation is
batched (`problems.glm` and `problems.separable` say how theirs keep the floats). Two guards:

* a batched form is used only where it is declared on the class that declares the single-point
  oracle or on a subclass of it (a subclass that rewrites `population_grad` without
  `population_grads` keeps the loop);
* once per process and problem class, the first call is compared with the single-point loop on
  up to `CHECK_ROWS` of its own rows; any difference (numpy may evaluate a ufunc on an array
  an ulp apart from on a scalar on some CPUs) turns the batched form off for that class, with
  one warning, and every later call loops.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

#: Rows compared with the single-point loop at a class's first batched call.
CHECK_ROWS = 64

#: Iterates per batched call: bounds the temporaries (a GLM's margins are chunk x atoms).
CHUNK = 256

_PAIRS = {"population_grads": "population_grad", "population_lambda_mins": "population_lambda_min"}
_verdicts: dict[tuple[type, str], bool] = {}


def _owner(cls: type, name: str) -> type | None:
    return next((k for k in cls.__mro__ if name in vars(k)), None)


def declares(problem: object, batched: str) -> bool:
    """Whether `problem` has the batched form `batched` on the class of its single-point oracle
    or below it (a subclass that rewrites the single-point oracle alone keeps the loop)."""
    cls = type(problem)
    many, one = _owner(cls, batched), _owner(cls, _PAIRS[batched])
    return many is not None and one is not None and issubclass(many, one)


def _single(problem: object, batched: str, xs: np.ndarray) -> np.ndarray:
    one = getattr(problem, _PAIRS[batched])
    return np.array([one(x) for x in xs], dtype=float)


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def batched(problem: object, name: str) -> Callable[[np.ndarray], np.ndarray]:
    """`name` ("population_grads" or "population_lambda_mins") of `problem` at the rows of an
    (m, d) array, in chunks of `CHUNK`: the declared batched form where it is declared and
    checked, else the single-point oracle row by row (same floats either way)."""
    key = (type(problem), name)

    def call(xs: np.ndarray) -> np.ndarray:
        xs = np.asarray(xs, dtype=float)
        if not declares(problem, name) or _verdicts.get(key) is False or len(xs) == 0:
            return _single(problem, name, xs)
        fn = getattr(problem, name)
        parts = []
        for i in range(0, len(xs), CHUNK):
            part = np.asarray(fn(xs[i:i + CHUNK]), dtype=float)
            if key not in _verdicts:
                rows = np.unique(np.linspace(0, len(part) - 1, min(CHECK_ROWS, len(part))).astype(int))
                _verdicts[key] = _identical(part[rows], _single(problem, name, xs[i:i + CHUNK][rows]))
                if not _verdicts[key]:
                    warnings.warn(f"{type(problem).__name__}.{name} differs from "
                                  f"{_PAIRS[name]} in the last bits on this machine: evaluating "
                                  "point by point", RuntimeWarning, stacklevel=2)
                    return _single(problem, name, xs)
            parts.append(part)
        return np.concatenate(parts)

    return call


def row_norms(g: np.ndarray) -> np.ndarray:
    """np.linalg.norm of each row of g, the same floats: its sqrt(x.dot(x)) as a stack of
    (1, d) x (d, 1) BLAS dots."""
    g = np.ascontiguousarray(g, dtype=float)
    return np.sqrt(np.matmul(g[:, None, :], g[:, :, None])[:, 0, 0])


def reset_checks() -> None:
    """Forget every class's identity check (tests)."""
    _verdicts.clear()
