"""numpy's log-factorial and its ratio-of-uniforms constants (numpy/random/src/distributions),
shared by the port of numpy's hypergeometric sampler (`problems.counts.kernels`) and the
large-population sampler built on the same algorithm (`problems.counts.large_hypergeometric`).
`logfactorial` is compiled (numba); `logfactorial_py` is the same floats in Python."""

from __future__ import annotations

import math

import numpy as np

from problems.counts.philox import _jit


def _logfact_table() -> np.ndarray:
    """log(k!) for k < 126, correctly rounded (numpy's table holds the same doubles; the
    equality is checked in the tests through the sampler)."""
    import mpmath

    with mpmath.workdps(60):
        return np.array([float(mpmath.log(mpmath.factorial(k))) for k in range(126)])


LOGFACT = _logfact_table()
HALFLN2PI = 0.9189385332046728
D1 = 1.7155277699214135  # 2 sqrt(2 / e)
D2 = 0.8989161620588988  # 3 - 2 sqrt(3 / e)


@_jit
def logfactorial(k):
    """log(k!): the table below 126, Stirling's series to 1 / (360 k^3) above (numpy's)."""
    if k < 126:
        return LOGFACT[k]
    kf = np.float64(k)
    return (kf + 0.5) * math.log(kf) - kf + (HALFLN2PI + (1.0 / kf) * (1 / 12.0 - 1 / (360.0 * kf * kf)))


def logfactorial_py(k: int) -> float:
    """`logfactorial` in Python (the same floats)."""
    if k < 126:
        return float(LOGFACT[k])
    kf = float(k)
    return (kf + 0.5) * math.log(kf) - kf + (HALFLN2PI + (1.0 / kf) * (1 / 12.0 - 1 / (360.0 * kf * kf)))


__all__ = ["D1", "D2", "HALFLN2PI", "LOGFACT", "logfactorial", "logfactorial_py"]
