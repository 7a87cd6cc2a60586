"""A declared loss's O2 map inside the compiled O2 steps (`algorithms.sosp.compiled_o2`,
MODE_MAP): the C wrappers of a `problems.compiled_loss.CompiledTwoPointLoss`'s compiled
functions and the checks that make its compiled steps the Python loop's, float for float.

The compiled steps call the very functions Python calls (the suite's support bound on
`grad_diff_fn`, `grad_diff_fn`, `pop_grad_fn`), through C wrappers compiled once per machine and function
(cached on disk: `problems.jit_cache`) and called by address (`call_map`, an intrinsic: an
address is a plain int64, so `o2_steps` keeps one cached signature for every loss).
Every wrapper has the one C signature

    double f(double *x, double *y, double *zh, double *p, double *out,
             intp d, intp m, intp n_params, int64 *err)

(the bound returns its value; the difference and the population gradient write `out` and
return 0); a raise in the user's function sets err[0] and the kernel hands the step back to
Python, which raises it as the Python loop does. Before a run uses them, `map_profile` checks
that each function is a plain `numba.njit` one (no fastmath), compiles for the argument types
the Python side passes, and gives Python's floats through its wrapper at 24 random points
(bit for bit; once per process, function, parameters and d), and that the class overrides
none of the map's methods. Anything else runs the Python loop, and a plugin problem says why
once per process (`compiled_profiles.report_fallback`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic

from problems.compiled_loss import CompiledTwoPointLoss, suite_bound_source
from problems.jit_cache import load_generated


@intrinsic
def call_map(typingctx, addr, x, y, zh, p, out, err):
    """The C signature of the module docstring at address addr, with the arrays' data and
    lengths (d = len(x), m = len(zh), n_params = len(p))."""
    sig = types.float64(types.int64, x, y, zh, p, out, err)

    def codegen(context, builder, signature, args):
        arrays = [context.make_array(t)(context, builder, v)
                  for t, v in zip(signature.args[1:], args[1:], strict=True)]
        dbl, i64 = ir.DoubleType(), ir.IntType(64)
        dp = dbl.as_pointer()
        fnty = ir.FunctionType(dbl, [dp, dp, dp, dp, dp, i64, i64, i64, i64.as_pointer()])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        ax, ay, az, ap, ao, ae = arrays
        return builder.call(fn, [ax.data, ay.data, az.data, ap.data, ao.data,
                                 builder.extract_value(ax.shape, 0),
                                 builder.extract_value(az.shape, 0),
                                 builder.extract_value(ap.shape, 0), ae.data])

    return sig, codegen


_F8P, _I8P = types.CPointer(types.float64), types.CPointer(types.int64)
_C_SIG = types.float64(_F8P, _F8P, _F8P, _F8P, _F8P, types.intp, types.intp, types.intp, _I8P)
_VEC = types.Array(types.float64, 1, "C")
#: What each role's function is called with from Python (and must compile for).
_ARGS = {"grad_diff_bound_fn": (_VEC, _VEC, _VEC), "grad_diff_fn": (_VEC, _VEC, _VEC, _VEC, _VEC),
         "pop_grad_fn": (_VEC, _VEC, _VEC)}


_HEADER = """
import math

import numba
from numba import types

_F8P, _I8P = types.CPointer(types.float64), types.CPointer(types.int64)
SIG = types.float64(_F8P, _F8P, _F8P, _F8P, _F8P, types.intp, types.intp, types.intp, _I8P)


@numba.cfunc(SIG, cache=CACHE)
def wrapped(xp, yp, zp, pp, op, d, m, n_p, err):
    try:
"""
#: Each role's call in its wrapper; a raise sets err[0] and the kernel hands the step to
#: Python, which raises it. The parameters the kernel passes are the user's p followed by the
#: head's low and high (2 m values, `map_profile`): the user's functions see p alone, the
#: suite's bound (`problems.compiled_loss.suite_bound_source`, the source Python runs) all.
_BODIES = {
    "suite_diff_bound": """        n_u = n_p - 2 * m
        q = numba.carray(pp, (n_p,))
        return bound(numba.carray(xp, (d,)), numba.carray(yp, (d,)), q[:n_u].copy(),
                     q[n_u:n_u + m].copy(), q[n_u + m:].copy(), d)
    except Exception:
        err[0] = 1
        return math.nan
""",
    "grad_diff_fn": """        fn(numba.carray(xp, (d,)), numba.carray(yp, (d,)), numba.carray(zp, (m,)),
           numba.carray(pp, (n_p - 2 * m,)), numba.carray(op, (d,)))
    except Exception:
        err[0] = 1
    return 0.0
""",
    "pop_grad_fn": """        fn(numba.carray(xp, (d,)), numba.carray(pp, (n_p - 2 * m,)),
           numba.carray(op, (d,)))
    except Exception:
        err[0] = 1
    return 0.0
""",
}
#: The user's function each role's wrapper calls (the suite's bound calls grad_diff_fn).
_CALLS = {"suite_diff_bound": "grad_diff_fn", "grad_diff_fn": "grad_diff_fn",
          "pop_grad_fn": "pop_grad_fn"}


def _wrap(role: str, fn: Any) -> Any:
    """The C wrapper of one role's function (a numba cfunc of `_C_SIG`), generated as a module
    of its own and cached on disk, keyed on the function's file content
    (`problems.jit_cache`): compiled once per machine, not per process."""
    prefix = suite_bound_source("diff") if role == "suite_diff_bound" else ""
    return load_generated(fn, prefix + _HEADER + _BODIES[role]).wrapped


@numba.njit(cache=True)
def _through(addr, x, y, zh, p, out):
    err = np.zeros(1, dtype=np.int64)
    v = call_map(addr, x, y, zh, p, out, err)
    return v, err[0]


_WRAPPED: dict[tuple, Any] = {}  # (role, function) -> its C wrapper, or why it has none
_CHECKED: dict[tuple, str | None] = {}


def _wrapper(cls: type, role: str) -> Any:
    name = _CALLS[role]
    fn = getattr(cls, name)
    if not isinstance(fn, CPUDispatcher):
        return f"{cls.__name__}.{name} is not a numba.njit function"
    if fn.targetoptions.get("fastmath"):
        return f"{cls.__name__}.{name} is compiled with fastmath (its floats may differ by call site)"
    key = (role, fn)
    if key not in _WRAPPED:
        try:
            fn.compile(_ARGS[name])
            _WRAPPED[key] = _wrap(role, fn)
        except Exception as exc:  # numba's typing and lowering errors
            first = (str(exc).strip().splitlines() or [""])[0]
            _WRAPPED[key] = (f"{cls.__name__}.{name} does not compile for float64 arrays: "
                             f"{type(exc).__name__}: {first}")
    return _WRAPPED[key]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _check(problem: CompiledTwoPointLoss, addrs: dict[str, int]) -> str | None:
    """None where Python's calls and the addressed ones give the same floats at 24 points; a
    function that raises at one of them (in Python) is a reason to run the Python loop, which
    may never meet that point, not an error of the run."""
    try:
        return _compare_at_points(problem, addrs)
    except Exception as exc:  # the user's function, called from Python
        return (f"one of its functions raises at a check point ({type(exc).__name__}: "
                f"{(str(exc).splitlines() or [''])[0]})")


def _compare_at_points(problem: CompiledTwoPointLoss, addrs: dict[str, int]) -> str | None:
    cls, d, m = type(problem), problem.d, problem.diff_coordinates
    p = problem._params_array()
    gen = np.random.default_rng(20261206)
    lo, hi = problem.record_low[:m], problem.record_high[:m]
    q = kernel_params(problem)  # what the kernel passes: p, the head's low and high
    for i in range(24):
        scale = 10.0 ** (i % 6 - 3)
        x, y = gen.standard_normal(d) * scale, gen.standard_normal(d) * scale
        if i == 0:
            x, y = np.zeros(d), np.zeros(d)
        zh = lo + (hi - lo) * (gen.integers(0, 9, size=m) / 8)
        want = problem.record_grad_diff_bound(x, y)
        got, err = _through(addrs["suite_diff_bound"], x, y, zh.copy(), q, np.empty(d))
        if err or np.float64(want).tobytes() != np.float64(got).tobytes():
            return ("the suite's support bound on its grad_diff_fn gives other floats through "
                    f"its C wrapper at point {i}")
        want_out, got_out = np.empty(d), np.empty(d)
        cls.grad_diff_fn(x, y, zh, p, want_out)
        _, err = _through(addrs["grad_diff_fn"], x, y, zh, q, got_out)
        if err or not _same(want_out, got_out):
            return f"its grad_diff_fn gives other floats through its C wrapper at point {i}"
        if "pop_grad_fn" in addrs:
            cls.pop_grad_fn(x, p, want_out)
            _, err = _through(addrs["pop_grad_fn"], x, x, zh, q, got_out)
            if err or not _same(want_out, got_out):
                return f"its pop_grad_fn gives other floats through its C wrapper at point {i}"
    return None


def kernel_params(problem: CompiledTwoPointLoss) -> np.ndarray:
    """The parameters the compiled steps pass every wrapper: the user's p, then the record
    head's low and high (the suite's bound reads them; the user's functions see p alone)."""
    m = int(problem.diff_coordinates)
    return np.ascontiguousarray(np.concatenate([problem._params_array(), problem.record_low[:m],
                                                problem.record_high[:m]]), dtype=np.float64)


#: The methods of the map the compiled steps compute; a class overriding one runs Python's.
MAP_METHODS = ("counts_grad_diff", "guarded_counts_grad_diff", "record_grad_diff_bound", "_head",
               "_params_array", "mean_record")


@dataclass
class MapProfile:
    """A declared loss's map for the compiled steps: addresses (bound, difference, population
    gradient or 0), parameters, the head's low and span, and the wrappers kept alive."""

    addrs: np.ndarray
    params: np.ndarray
    low: np.ndarray
    span: np.ndarray
    m: int
    screen: bool
    keep: tuple


def map_profile(problem: Any) -> MapProfile | str:
    """The compiled map of a `CompiledTwoPointLoss`, or why it has none (module docstring)."""
    cls = type(problem)
    for name in MAP_METHODS:
        if getattr(cls, name) is not getattr(CompiledTwoPointLoss, name):
            return f"it overrides CompiledTwoPointLoss.{name}"
    if getattr(problem, "counts_layout_kind", None) == "atoms":
        return "its counts layout is of atoms"
    roles = ["suite_diff_bound", "grad_diff_fn"]
    screen = cls.pop_grad_fn is not None and cls.population_grad is CompiledTwoPointLoss.population_grad
    if screen:
        roles.append("pop_grad_fn")
    wrappers = {}
    for role in roles:
        w = _wrapper(cls, role)
        if isinstance(w, str):
            if role == "pop_grad_fn":  # no screen: the monitor runs at every stored iterate
                screen = False
                continue
            return w
        wrappers[role] = w
    addrs = {r: w.address for r, w in wrappers.items()}
    key = (tuple(getattr(cls, _CALLS[r]) for r in roles), problem._params_array().tobytes(), problem.d,
           problem.record_low.tobytes(), problem.record_high.tobytes(), problem.diff_coordinates)
    if key not in _CHECKED:
        _CHECKED[key] = _check(problem, addrs)
    if _CHECKED[key] is not None:
        return _CHECKED[key]
    m = int(problem.diff_coordinates)
    low = np.ascontiguousarray(problem.record_low[:m], dtype=np.float64)
    span = np.ascontiguousarray(problem.record_high[:m] - problem.record_low[:m], dtype=np.float64)
    return MapProfile(np.array([addrs["suite_diff_bound"], addrs["grad_diff_fn"],
                                addrs.get("pop_grad_fn", 0)], dtype=np.int64),
                      kernel_params(problem), low, span, m, screen,
                      tuple(wrappers.values()))


__all__ = ["MAP_METHODS", "MapProfile", "call_map", "kernel_params", "map_profile"]
