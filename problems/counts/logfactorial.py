"""numpy's log-factorial and the parts of its ratio-of-uniforms hypergeometric sampler (HRUA,
numpy/random/src/distributions) that do not depend on how the pmf's log-ratio is computed: the
hat, the squeezes and the unfolding of the draw. Shared, compiled (numba), by the port of
numpy's sampler (`problems.counts.kernels`) and the large-population sampler built on the same
algorithm (`problems.counts.large_hypergeometric`, also from Python for its reference twin)."""

from __future__ import annotations

import math

import numpy as np

from problems.counts.philox import cached_njit


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


@cached_njit
def logfactorial(k):
    """log(k!): the table below 126, Stirling's series to 1 / (360 k^3) above (numpy's)."""
    if k < 126:
        return LOGFACT[k]
    kf = np.float64(k)
    return (kf + 0.5) * math.log(kf) - kf + (HALFLN2PI + (1.0 / kf) * (1 / 12.0 - 1 / (360.0 * kf * kf)))


@cached_njit
def hrua_hat(good, bad, sample):
    """(computed, mingb, maxgb, a, h, b): the draw reduced to the smaller kind and sample, the
    hat's centre a and width h, and the bound b past which X is rejected at once."""
    popsize = good + bad
    computed = min(sample, popsize - sample)
    mingb, maxgb = min(good, bad), max(good, bad)
    p = np.float64(mingb) / popsize
    q = np.float64(maxgb) / popsize
    mu = computed * p
    a = mu + 0.5
    var = np.float64(popsize - computed) * computed * p * q / (popsize - 1)
    c = math.sqrt(var + 0.5)
    h = D1 * c + D2
    b = min(np.float64(min(computed, mingb) + 1), math.floor(a + 16 * c))
    return computed, mingb, maxgb, a, h, b


@cached_njit
def hrua_accepts(U, T):
    """HRUA's test of a candidate whose log pmf ratio to the mode is T (its squeezes first)."""
    if (U * (4.0 - U) - 3.0) <= T:
        return True
    if U * (U - T) >= 1:
        return False
    return 2.0 * math.log(U) <= T


@cached_njit
def hrua_unfold(K, good, bad, sample, computed):
    """The draw of the reduced problem back to the count of goods among `sample`."""
    if good > bad:
        K = computed - K
    if computed < sample:
        K = good - K
    return K


__all__ = ["D1", "D2", "HALFLN2PI", "LOGFACT", "hrua_accepts", "hrua_hat", "hrua_unfold", "logfactorial"]
