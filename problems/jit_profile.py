"""Profiles declared by compiled 1-d functions: how an outside separable problem gets the
Spiders' compiled O2 steps (the guide: problems/README.md).

A `JitProfile` is a profile phi of `problems.separable.SeparableSaddle` (value, first and
second derivative, and the sup-norm constants G, M, rho and the drop phi(0) - inf phi) whose
three functions are f(u, p) -> float of a float u and a float64 parameter array p, compiled by
numba (`numba.njit` on plain scalar `math` / numpy code). Python calls them through this class
(the population oracles, records mode, the Python loop of the Spider engine); the compiled O2
steps of `algorithms.sosp.compiled_o2` call the *same* compiled d1 from compiled code, so the
two compute the same floats (checked once per process and profile, and the plugin's run falls
back to the Python loop, saying why in one line, where it cannot be shown:
`algorithms.sosp.compiled_profiles.o2_profile`). The shipped profiles (`problems.profiles`)
predate this class and are served by the compiled steps directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from problems.jit_cache import enable_disk_cache
from problems.profiles import Profile

#: The three functions a subclass sets (class attributes, each f(u, p) -> float).
FUNCTIONS = ("value_fn", "d1_fn", "d2_fn")


class JitProfile(Profile):
    """A separable profile from three numba-compiled functions of (u, p).

    Subclasses set the class attributes `value_fn`, `d1_fn` and `d2_fn` (phi, phi', phi'' as
    functions of a float u and the float64 array `params`; plain functions are stored as static
    methods) and call `super().__init__(params, G=..., M=..., rho=..., drop=...)` with the
    sup-norm constants of phi', phi'', phi''' and phi(0) - inf phi, which the problem's
    constants are built from (`SeparableSaddle.constants`). Only d1 runs in the compiled O2
    steps: it must be a `numba.njit` function without fastmath that returns a float64 and
    does not raise where the run goes (a raise hands the step back to Python, which raises
    it); value and d2 may be any Python functions of (u, p).
    """

    value_fn: Callable[[float, np.ndarray], float]
    d1_fn: Callable[[float, np.ndarray], float]
    d2_fn: Callable[[float, np.ndarray], float]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for name in FUNCTIONS:  # a function stored on the class is not bound to instances
            f = cls.__dict__.get(name)
            if f is not None and not isinstance(f, staticmethod):
                setattr(cls, name, staticmethod(f))
            enable_disk_cache(f)  # compiled once per machine (problems.jit_cache)

    def __init__(self, params, *, G: float, M: float, rho: float, drop: float) -> None:
        missing = [name for name in FUNCTIONS if not callable(getattr(type(self), name, None))]
        if missing:
            raise ValueError(f"profile class {type(self).__name__!r} is invalid: set "
                             f"{', '.join(missing)} (functions of (u, params))")
        self.params = params
        for name, value in (("G", G), ("M", M), ("rho", rho), ("drop", drop)):
            v = float(value)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name}={value!r} is invalid: must be a finite number >= 0")
            setattr(self, name, v)

    @property
    def params(self) -> np.ndarray:
        """The parameter array p every function receives (float64, one-dimensional, C order:
        the compiled steps read this very array)."""
        return self._params

    @params.setter
    def params(self, value) -> None:
        p = np.ascontiguousarray(np.asarray(value, dtype=np.float64))
        if p.ndim != 1:
            raise ValueError(f"params of shape {p.shape} is invalid: must be one-dimensional")
        self._params = p

    def _eval(self, fn: Callable[[float, np.ndarray], float], u):
        """fn at a scalar u (a float), or elementwise over an array u (a float array)."""
        if np.ndim(u) == 0:
            return fn(float(u), self._params)
        arr = np.asarray(u, dtype=np.float64)
        out = np.empty(arr.shape)
        flat = out.reshape(-1)
        for i, v in enumerate(arr.reshape(-1).tolist()):
            flat[i] = fn(v, self._params)
        return out

    def value(self, u):
        return self._eval(type(self).value_fn, u)

    def d1(self, u):
        return self._eval(type(self).d1_fn, u)

    def d2(self, u):
        return self._eval(type(self).d2_fn, u)


__all__ = ["FUNCTIONS", "JitProfile"]
