"""An exact hypergeometric sampler for populations beyond numpy's 1e9, up to 2^53 (where the
int-to-float conversions stop being exact; counts stream version 4 needs 2^50).

numpy's `Generator.hypergeometric` refuses ngood or nbad >= 1e9: its ratio-of-uniforms sampler
(HRUA: Stadlober, "The ratio of uniforms approach for generating discrete random variates",
J. Comput. Appl. Math. 31, 1990) compares log-factorials computed one by one, log(k!) for
k ~ 1e9 is ~2e10 and a double holds it to ~2e-6, so beyond that the log-ratios the test needs
drown in rounding. The same algorithm stays exact at larger populations if the log-ratio
log f(K) / f(m) (f the pmf, m its mode) is computed as a *difference*, never through two
log-factorials:

    log f(K) - log f(m) = -[D(m, h) + D(G - m, -h) + D(n - m, -h) + D(B - n + m, h)],  h = K - m,

with f(k) proportional to 1 / (k! (G - k)! (n - k)! (B - n + k)!) (G = min(good, bad),
B = max(good, bad), n = min(sample, population - sample)) and D(x, h) = log((x + h)!) - log(x!).
With z = x + 1 and Stirling's series r(t) = 1/(12 t) - 1/(360 t^3) + 1/(1260 t^5) (error below
1e-37 for t >= 1e5),

    D(x, h) = h log z + [(z + h - 1/2) log1p(h / z) - h + r(z + h) - r(z)],

where the bracket is O(h^2 / z) (computed as a product minus h, it keeps an error of ~ulp(h):
~3e-8 at |h| = 2^27, the largest term of the error budget), and the four h log z terms
combine into h log((m + 1)(B - n + m + 1) / ((G - m + 1)(n - m + 1))), the log of a ratio
that is ~1 at the mode: the log-ratio is then good to ~1e-7 absolute even at |K - m| = 16
standard deviations of a population of 2^50 (against ~2e-6 for numpy's own sampler at its
1e9 limit). A term with an argument below 1e5 is the plain difference of numpy's
log-factorials (a table below 126, Stirling to 1 / (360 k^3) above: error below 1e-13).

Everything else is numpy's HRUA, step for step (`problems.counts.kernels._hyp_hrua`): the same
hat (a = mean + 1/2, c = sqrt(var + 1/2), h = D1 c + D2), the same uniforms (numpy's 53-bit
doubles, two per trial), the same squeezes and the same complement rules; the mode m is the
float estimate floor((n + 1)(G + 1) / (N + 2)) moved to the exact mode by the pmf's ratio of
neighbours (the float product can be off by one at N ~ 2^50).

Two implementations of the one algorithm: `hypergeometric_large` (numba, the counts stream's
walk, drawing from `problems.counts.philox`'s state) and `hypergeometric_large_reference`
(Python, drawing `rng.random()` from a numpy Generator: the reference walk). They draw the same
numbers from the same Philox stream (tests/test_large_hypergeometric.py), and the law is tested
against the exact pmf (binomial coefficients at small populations, mpmath's 40-digit log-gamma
at 2^30 .. 2^50); below 2^29 it draws numpy's own numbers (the same HRUA on the same uniforms:
0 differences in 80,000 draws, an independent review's check).
"""

from __future__ import annotations

import math

import numpy as np

from problems.counts.logfactorial import D1 as _D1
from problems.counts.logfactorial import D2 as _D2
from problems.counts.logfactorial import logfactorial, logfactorial_py
from problems.counts.philox import _jit, next_double

#: Terms whose arguments are all at least this use the Stirling difference, else numpy's
#: log-factorials.
STIRLING_MIN = 100_000
#: Populations above this go to this sampler (numpy's, and its port in `kernels`, below):
#: nodes of 2^30 records and more. 2^29 < 1e9 keeps every version-3 draw on numpy's sampler.
LARGE_POPULATION = 1 << 29


@_jit
def _r_diff(z, h):
    """r(z + h) - r(z), Stirling's remainder beyond (t - 1/2) log t - t."""
    w = z + h
    return ((1.0 / (12.0 * w) - 1.0 / (360.0 * w * w * w) + 1.0 / (1260.0 * w * w * w * w * w))
            - (1.0 / (12.0 * z) - 1.0 / (360.0 * z * z * z) + 1.0 / (1260.0 * z * z * z * z * z)))


@_jit
def _bracket(x, h):
    """D(x, h) - h log(x + 1) for x, x + h >= STIRLING_MIN (module docstring)."""
    z = np.float64(x + 1)
    hf = np.float64(h)
    return ((z + hf) - 0.5) * math.log1p(hf / z) - hf + _r_diff(z, hf)


@_jit
def _lf_diff(x, h):
    """D(x, h) = log((x + h)!) - log(x!)."""
    if h == 0:
        return 0.0
    if min(x, x + h) >= STIRLING_MIN:
        return np.float64(h) * math.log(np.float64(x + 1)) + _bracket(x, h)
    return logfactorial(x + h) - logfactorial(x)


@_jit
def log_ratio(G, n, B, m, K):
    """log f(K) - log f(m) of the hypergeometric pmf f over k (G goods of the smaller kind, B of
    the larger, n drawn, n <= (G + B) / 2)."""
    h = K - m
    x1, x2, x3, x4 = m, G - m, n - m, B - n + m
    if (min(x1, x1 + h) >= STIRLING_MIN and min(x2, x2 - h) >= STIRLING_MIN
            and min(x3, x3 - h) >= STIRLING_MIN and min(x4, x4 + h) >= STIRLING_MIN):
        if h == 0:
            return 0.0
        lead = np.float64(h) * math.log((np.float64(x1 + 1) * np.float64(x4 + 1))
                                        / (np.float64(x2 + 1) * np.float64(x3 + 1)))
        return -(lead + _bracket(x1, h) + _bracket(x2, -h) + _bracket(x3, -h) + _bracket(x4, h))
    return -(_lf_diff(x1, h) + _lf_diff(x2, -h) + _lf_diff(x3, -h) + _lf_diff(x4, h))


@_jit
def exact_mode(G, n, B):
    """The mode of the pmf: the float estimate, then moved while a neighbour is larger
    (f(k + 1) / f(k) = (G - k)(n - k) / ((k + 1)(B - n + k + 1)))."""
    N = G + B
    m = np.int64(math.floor(np.float64(n + 1) * np.float64(G + 1) / np.float64(N + 2)))
    m = max(np.int64(0), min(m, min(n, G)))
    while m < min(n, G) and (np.float64(G - m) * np.float64(n - m)
                             > np.float64(m + 1) * np.float64(B - n + m + 1)):
        m += 1
    while m > 0 and (np.float64(G - m + 1) * np.float64(n - m + 1)
                     < np.float64(m) * np.float64(B - n + m)):
        m -= 1
    return m


@_jit
def hypergeometric_large(st, good, bad, sample):
    """Hypergeometric(good, bad, sample) at any population (module docstring), drawing numpy's
    doubles from the Philox state `st` (`problems.counts.philox`)."""
    popsize = good + bad
    computed = min(sample, popsize - sample)
    mingb, maxgb = min(good, bad), max(good, bad)
    if computed == 0 or mingb == 0:
        K = np.int64(0)
    else:
        p = np.float64(mingb) / popsize
        q = np.float64(maxgb) / popsize
        mu = computed * p
        a = mu + 0.5
        var = np.float64(popsize - computed) * computed * p * q / (popsize - 1)
        c = math.sqrt(var + 0.5)
        h = _D1 * c + _D2
        m = exact_mode(mingb, computed, maxgb)
        b = min(np.float64(min(computed, mingb) + 1), math.floor(a + 16 * c))
        K = np.int64(0)
        while True:
            U = next_double(st)
            V = next_double(st)
            X = a + h * (V - 0.5) / U
            if X < 0.0 or X >= b:
                continue
            K = np.int64(math.floor(X))
            T = log_ratio(mingb, computed, maxgb, m, K)
            if (U * (4.0 - U) - 3.0) <= T:
                break
            if U * (U - T) >= 1:
                continue
            if 2.0 * math.log(U) <= T:
                break
    if good > bad:
        K = computed - K
    if computed < sample:
        K = good - K
    return K


# -- the same algorithm in Python, drawing from a numpy Generator (the reference walk's) -------
def _r_diff_py(z: float, h: float) -> float:
    w = z + h
    return ((1.0 / (12.0 * w) - 1.0 / (360.0 * w * w * w) + 1.0 / (1260.0 * w * w * w * w * w))
            - (1.0 / (12.0 * z) - 1.0 / (360.0 * z * z * z) + 1.0 / (1260.0 * z * z * z * z * z)))


def _bracket_py(x: int, h: int) -> float:
    z, hf = float(x + 1), float(h)
    return ((z + hf) - 0.5) * math.log1p(hf / z) - hf + _r_diff_py(z, hf)


def _lf_diff_py(x: int, h: int) -> float:
    if h == 0:
        return 0.0
    if min(x, x + h) >= STIRLING_MIN:
        return float(h) * math.log(float(x + 1)) + _bracket_py(x, h)
    return logfactorial_py(x + h) - logfactorial_py(x)


def _log_ratio_py(G: int, n: int, B: int, m: int, K: int) -> float:
    h = K - m
    x1, x2, x3, x4 = m, G - m, n - m, B - n + m
    if (min(x1, x1 + h) >= STIRLING_MIN and min(x2, x2 - h) >= STIRLING_MIN
            and min(x3, x3 - h) >= STIRLING_MIN and min(x4, x4 + h) >= STIRLING_MIN):
        if h == 0:
            return 0.0
        lead = float(h) * math.log((float(x1 + 1) * float(x4 + 1)) / (float(x2 + 1) * float(x3 + 1)))
        return -(lead + _bracket_py(x1, h) + _bracket_py(x2, -h) + _bracket_py(x3, -h)
                 + _bracket_py(x4, h))
    return -(_lf_diff_py(x1, h) + _lf_diff_py(x2, -h) + _lf_diff_py(x3, -h) + _lf_diff_py(x4, h))


def _exact_mode_py(G: int, n: int, B: int) -> int:
    N = G + B
    m = math.floor(float(n + 1) * float(G + 1) / float(N + 2))
    m = max(0, min(m, min(n, G)))
    while m < min(n, G) and float(G - m) * float(n - m) > float(m + 1) * float(B - n + m + 1):
        m += 1
    while m > 0 and float(G - m + 1) * float(n - m + 1) < float(m) * float(B - n + m):
        m -= 1
    return m


def hypergeometric_large_reference(rng: np.random.Generator, good: int, bad: int, sample: int) -> int:
    """`hypergeometric_large` in Python: the same floats, the uniforms from `rng.random()`."""
    good, bad, sample = int(good), int(bad), int(sample)
    popsize = good + bad
    computed = min(sample, popsize - sample)
    mingb, maxgb = min(good, bad), max(good, bad)
    if computed == 0 or mingb == 0:
        K = 0
    else:
        p = float(mingb) / popsize
        q = float(maxgb) / popsize
        a = computed * p + 0.5
        var = float(popsize - computed) * computed * p * q / (popsize - 1)
        c = math.sqrt(var + 0.5)
        h = _D1 * c + _D2
        m = _exact_mode_py(mingb, computed, maxgb)
        b = min(float(min(computed, mingb) + 1), math.floor(a + 16 * c))
        while True:
            U = rng.random()
            V = rng.random()
            X = a + h * (V - 0.5) / U
            if X < 0.0 or X >= b:
                continue
            K = math.floor(X)
            T = _log_ratio_py(mingb, computed, maxgb, m, K)
            if (U * (4.0 - U) - 3.0) <= T:
                break
            if U * (U - T) >= 1:
                continue
            if 2.0 * math.log(U) <= T:
                break
    if good > bad:
        K = computed - K
    if computed < sample:
        K = good - K
    return K


__all__ = ["LARGE_POPULATION", "STIRLING_MIN", "exact_mode", "hypergeometric_large",
           "hypergeometric_large_reference", "log_ratio"]
