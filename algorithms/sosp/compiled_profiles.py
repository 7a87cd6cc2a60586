"""The separable profiles' first derivative d1 inside the compiled O2 steps
(`algorithms.sosp.compiled_o2`), as the Python loop computes it, and which problems' O2 map
those steps compute (`o2_profile`).

hard_valley's `ValleyProfile.d1` is rational and square-root arithmetic: compiled, the same
operations in the same order (MODE_VALLEY). The other shipped profiles (hard_ramp's exp and
tanh, strict_saddle's cosine) call numpy, whose exp / tanh are SIMD loops that the C library a
compiled call uses differs from (on this machine in 4.7% of exp and 28% of tanh values over
100,000 inputs), so their d1 is computed by the profile itself in an object mode block: numpy's
own floats (MODE_PYTHON).

An outside problem's profile (`problems.jit_profile.JitProfile`, MODE_ADDRESS) declares d1 as a
numba-compiled function of (u, params); Python calls that compiled function, and so do the
compiled steps: through a C wrapper compiled once per machine and function (`_c_wrapper`,
cached on disk: `problems.jit_cache`),
called by its address (`_call_address`, an intrinsic: an address is a plain int64 argument, so
`o2_steps` keeps one cached signature for every profile, and a call costs no unboxing). The
wrapper catches a raise and flags it; the kernel then hands that step to Python, which raises
it as the Python loop does. Before a run uses it, `o2_profile` checks that the function is a
plain `numba.njit` one (no fastmath), returns float64 for (float64, float64 array) and gives
Python's floats at 60 points (bit for bit; once per process, function and parameters).
Anything else runs the Python loop, and a plugin problem says so once per process in one line
on stderr naming the problem and the reason (`report_fallback`).
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic

from algorithms.sosp.compiled_maps import map_profile
from problems import BUILTIN
from problems.compiled_loss import CompiledTwoPointLoss
from problems.jit_cache import load_generated
from problems.jit_profile import JitProfile
from problems.profiles import CosineProfile, RampProfile, ValleyProfile
from problems.separable import SeparableSaddle

#: How a compiled step computes d1: compiled valley, numpy's through Python, by address; or no
#: d1 at all: a declared loss's whole O2 map by address (`compiled_maps`).
MODE_VALLEY, MODE_PYTHON, MODE_ADDRESS, MODE_MAP = 0, 1, 2, 3

#: The profile whose d1 a compiled call computes through Python (`_python_d1`), per thread
#: (a Dask worker runs cells in threads, and the compiled steps release the GIL); set by
#: `O2Kernel.run` around each call.
PY_PROFILE = threading.local()


def _python_d1(u: float) -> float:
    """`SeparableSaddle._profile_and_unit`'s d1, numpy's own floats."""
    return float(PY_PROFILE.profile.d1(float(u)))


@numba.njit(cache=True, nogil=True)
def valley_d1(u, w, beta):
    """ValleyProfile.d1, the same operations in the same order."""
    v = u / w
    return (-v / (1.0 + v * v) + beta * v / math.sqrt(1.0 + v * v)) / w


@intrinsic
def _call_address(typingctx, addr, u, params, err):
    """double f(double u, double *params, intp n, int64 *err) at address addr (a C wrapper of
    `_c_wrapper`), called with params' data and length and err's data."""
    sig = types.float64(types.int64, types.float64, params, err)

    def codegen(context, builder, signature, args):
        a, uv, pv, ev = args
        p = context.make_array(signature.args[2])(context, builder, pv)
        e = context.make_array(signature.args[3])(context, builder, ev)
        dbl, i64 = ir.DoubleType(), ir.IntType(64)
        fnty = ir.FunctionType(dbl, [dbl, dbl.as_pointer(), i64, i64.as_pointer()])
        fn = builder.inttoptr(a, fnty.as_pointer())
        return builder.call(fn, [uv, p.data, builder.extract_value(p.shape, 0), e.data])

    return sig, codegen


@numba.njit(cache=True)  # not nogil: its object mode block holds the GIL anyway
def profile_d1(u, w, beta, mode, addr, params, err):
    """d1 of the run's profile at u (MODE_*); a raise in an addressed d1 sets err[0]."""
    if mode == MODE_VALLEY:
        return valley_d1(u, w, beta)
    if mode == MODE_ADDRESS:
        return _call_address(addr, u, params, err)
    with numba.objmode(v="float64"):
        v = _python_d1(u)
    return v


@numba.njit(cache=True)
def _d1_at_points(addr, us, params):
    """An addressed d1 at each point and whether it raised there (the check of `_check`)."""
    out, raised = np.empty(us.shape[0]), np.zeros(us.shape[0], dtype=np.int64)
    err = np.zeros(1, dtype=np.int64)
    for i in range(us.shape[0]):
        err[0] = 0
        out[i] = _call_address(addr, us[i], params, err)
        raised[i] = err[0]
    return out, raised


_C_SIG = types.float64(types.float64, types.CPointer(types.float64), types.intp,
                       types.CPointer(types.int64))
_ARGS = (types.float64, types.Array(types.float64, 1, "C"))


_C_WRAPPER = """
import math

import numba
from numba import types

SIG = types.float64(types.float64, types.CPointer(types.float64), types.intp,
                    types.CPointer(types.int64))


@numba.cfunc(SIG, cache=CACHE)
def wrapped(u, p_ptr, n, err):
    p = numba.carray(p_ptr, (n,))
    try:
        return fn(u, p)
    except Exception:  # the kernel hands the step to Python, which raises it
        err[0] = 1
        return math.nan
"""


def _c_wrapper(fn: Any) -> Any:
    """A C-callable wrapper of the compiled d1 fn (a numba cfunc of `_C_SIG`), generated as a
    module of its own and cached on disk, keyed on fn's file content (`problems.jit_cache`):
    compiled once per machine, not per process."""
    fn.compile(_ARGS)  # Python's own overload (from numba's disk cache where it is there)
    return load_generated(fn, _C_WRAPPER).wrapped


#: The checks' points: 0 and -0, tiny, the usual range of the iterates and beyond, inf, nan.
_POINTS = np.array([0.0, -0.0, 5e-324, 1e-300, *np.geomspace(1e-8, 1e8, 25), math.inf, math.nan])
_POINTS = np.concatenate([_POINTS, -_POINTS[2:]])

_WRAPPED: dict[Any, Any] = {}  # d1 function -> its C wrapper, or why it has none
_CHECKED: dict[tuple, str | None] = {}  # (function, params bytes) -> None or why not


def _same_float(a: Any, b: float) -> bool:
    return isinstance(a, float) and np.float64(a).tobytes() == np.float64(b).tobytes()


def _check(profile: JitProfile, fn: Any, addr: int) -> str | None:
    """None where Python's d1 and the addressed one agree, float for float, at `_POINTS`."""
    params = profile.params
    got, raised = _d1_at_points(addr, _POINTS, params)
    for u, g, r in zip(_POINTS.tolist(), got.tolist(), raised.tolist(), strict=True):
        try:
            want = profile.d1(u)
        except Exception:
            want = None
        if (want is None) != bool(r):
            return f"its d1 raises at u={u!r} {'compiled only' if r else 'in Python only'}"
        if want is not None and not _same_float(want, g):
            return (f"its d1 at u={u!r} is {want!r} ({type(want).__name__}) in Python but {g!r} "
                    "compiled")
    return None


def _jit_d1(profile: JitProfile) -> tuple[int, Any] | str:
    """(address of the C wrapper of the profile's d1, the wrapper), or why there is none."""
    cls = type(profile)
    if cls.d1 is not JitProfile.d1 or "d1" in vars(profile):
        return f"its profile {cls.__name__} overrides JitProfile.d1"
    fn = cls.d1_fn
    if not isinstance(fn, CPUDispatcher):
        return f"{cls.__name__}.d1_fn is not a numba.njit function"
    if fn.targetoptions.get("fastmath"):
        return f"{cls.__name__}.d1_fn is compiled with fastmath (its floats may differ by call site)"
    if fn not in _WRAPPED:
        try:
            wrapper = _c_wrapper(fn)
            ret = fn.overloads[_ARGS].signature.return_type
            _WRAPPED[fn] = wrapper if ret == types.float64 else \
                f"{cls.__name__}.d1_fn returns {ret}, not float64"
        except Exception as exc:  # numba's typing and lowering errors
            first = (str(exc).strip().splitlines() or [""])[0]
            _WRAPPED[fn] = (f"{cls.__name__}.d1_fn does not compile for (float64, float64 "
                            f"array): {type(exc).__name__}: {first}")
    wrapper = _WRAPPED[fn]
    if isinstance(wrapper, str):
        return wrapper
    key = (fn, profile.params.tobytes())
    if key not in _CHECKED:
        _CHECKED[key] = _check(profile, fn, wrapper.address)
    return _CHECKED[key] or (wrapper.address, wrapper)


@dataclass
class O2Profile:
    """How the compiled steps compute a problem's d1 (MODE_*), with what it needs."""

    mode: int
    w: float = 0.0
    beta: float = 0.0
    addr: int = 0
    params: np.ndarray = field(default_factory=lambda: np.zeros(1))
    profile: Any = None  # the profile whose d1 runs in Python (MODE_PYTHON)
    keep: Any = None  # the C wrapper at addr (kept alive with the kernel)
    map: Any = None  # a declared loss's `compiled_maps.MapProfile` (MODE_MAP)


#: The shipped profiles whose d1 runs through Python (numpy's floats).
_NUMPY_PROFILES = (RampProfile, CosineProfile)
#: The O2 map's methods; a problem overriding one runs the Python loop.
MAP_METHODS = ("guarded_counts_grad_diff", "_mean_grad_diff_and_support_bound",
               "record_grad_diff_bound", "counts_grad_diff", "_profile_and_unit")


def o2_profile(problem: Any) -> O2Profile | str:
    """How the compiled steps compute this problem's O2 map, or why they cannot (its floats
    would not be established to be the Python loop's)."""
    if isinstance(problem, CompiledTwoPointLoss):
        mp = map_profile(problem)
        return mp if isinstance(mp, str) else O2Profile(MODE_MAP, map=mp, keep=mp.keep)
    if not isinstance(problem, SeparableSaddle):
        return ("its O2 map is neither problems.separable.SeparableSaddle's nor declared by "
                "problems.compiled_loss.CompiledTwoPointLoss (see problems/README.md)")
    cls = type(problem)
    for name in MAP_METHODS:
        if getattr(cls, name) is not getattr(SeparableSaddle, name):
            return f"it overrides SeparableSaddle.{name}"
    if problem.d < 2:
        return f"d={problem.d} (the compiled steps need d >= 2)"
    if getattr(problem, "counts_layout_kind", None) == "atoms":
        return "its counts layout is of atoms"
    prof = problem.profile
    if type(prof) is ValleyProfile:
        return O2Profile(MODE_VALLEY, w=prof.w, beta=prof.beta)
    # the shipped classes only (a subclass's d1 could return, e.g., float32, whose difference
    # Python takes before converting)
    if type(prof) in _NUMPY_PROFILES:
        return O2Profile(MODE_PYTHON, profile=prof)
    if not isinstance(prof, JitProfile):
        return (f"its profile class {type(prof).__name__} is not a "
                "problems.jit_profile.JitProfile")
    got = _jit_d1(prof)
    if isinstance(got, str):
        return got
    return O2Profile(MODE_ADDRESS, addr=got[0], params=prof.params, keep=got[1])


_REPORTED: set[tuple] = set()


def report_fallback(problem: Any, reason: str) -> None:
    """One line on stderr, once per process, problem class and reason: a plugin problem's
    Spider runs its O2 steps in the Python loop, and why (built-in problems say nothing)."""
    name = getattr(problem, "name", "")
    key = (type(problem), reason)
    if name in BUILTIN or key in _REPORTED:
        return
    _REPORTED.add(key)
    print(f"dprates: problem {name!r} ({type(problem).__name__}) runs its Spider O2 steps in the "
          f"Python loop, not compiled: {reason} (see problems/README.md)", file=sys.stderr,
          flush=True)


__all__ = ["MODE_ADDRESS", "MODE_MAP", "MODE_PYTHON", "MODE_VALLEY", "PY_PROFILE", "O2Profile", "o2_profile",
           "profile_d1", "report_fallback", "valley_d1"]
