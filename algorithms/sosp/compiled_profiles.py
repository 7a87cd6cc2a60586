"""The separable profiles' first derivative d1 inside the compiled O2 steps
(`algorithms.sosp.compiled_o2`), as the Python loop computes it.

hard_valley's `ValleyProfile.d1` is rational and square-root arithmetic: compiled, the same
operations in the same order. The other profiles (hard_ramp's exp and tanh, strict_saddle's
cosine) call numpy, whose exp / tanh are SIMD loops that the C library a compiled call uses
differs from (on this machine in 4.7% of exp and 28% of tanh values over 100,000 inputs), so
their d1 is computed by the profile itself in an object mode block: numpy's own floats.
"""

from __future__ import annotations

import math
import threading

import numba

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


@numba.njit(cache=True)  # not nogil: its object mode block holds the GIL anyway
def profile_d1(u, w, beta, in_python):
    """d1 of the run's profile at u: ValleyProfile's compiled, another one through Python."""
    if not in_python:
        return valley_d1(u, w, beta)
    with numba.objmode(v="float64"):
        v = _python_d1(u)
    return v


__all__ = ["PY_PROFILE", "profile_d1", "valley_d1"]
