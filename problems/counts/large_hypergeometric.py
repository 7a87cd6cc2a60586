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

Two loops over the one compiled arithmetic: `hypergeometric_large` (numba, the counts stream's
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

from problems.counts.logfactorial import hrua_accepts, hrua_hat, hrua_unfold, logfactorial
from problems.counts.philox import cached_njit, next_double

#: Terms whose arguments are all at least this use the Stirling difference, else numpy's
#: log-factorials.
STIRLING_MIN = 100_000
#: Populations above this go to this sampler (numpy's, and its port in `kernels`, below):
#: nodes of 2^30 records and more. 2^29 < 1e9 keeps every version-3 draw on numpy's sampler.
LARGE_POPULATION = 1 << 29


@cached_njit
def _r_diff(z, h):
    """r(z + h) - r(z), Stirling's remainder beyond (t - 1/2) log t - t."""
    w = z + h
    return ((1.0 / (12.0 * w) - 1.0 / (360.0 * w * w * w) + 1.0 / (1260.0 * w * w * w * w * w))
            - (1.0 / (12.0 * z) - 1.0 / (360.0 * z * z * z) + 1.0 / (1260.0 * z * z * z * z * z)))


@cached_njit
def _bracket(x, h):
    """D(x, h) - h log(x + 1) for x, x + h >= STIRLING_MIN (module docstring)."""
    z = np.float64(x + 1)
    hf = np.float64(h)
    return ((z + hf) - 0.5) * math.log1p(hf / z) - hf + _r_diff(z, hf)


@cached_njit
def _lf_diff(x, h):
    """D(x, h) = log((x + h)!) - log(x!)."""
    if h == 0:
        return 0.0
    if min(x, x + h) >= STIRLING_MIN:
        return np.float64(h) * math.log(np.float64(x + 1)) + _bracket(x, h)
    return logfactorial(x + h) - logfactorial(x)


@cached_njit
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


@cached_njit
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


@cached_njit
def hypergeometric_large(st, good, bad, sample):
    """Hypergeometric(good, bad, sample) at any population (module docstring), drawing numpy's
    doubles from the Philox state `st` (`problems.counts.philox`)."""
    computed, mingb, maxgb, a, h, b = hrua_hat(good, bad, sample)
    if computed == 0 or mingb == 0:
        return hrua_unfold(np.int64(0), good, bad, sample, computed)
    m = exact_mode(mingb, computed, maxgb)
    while True:
        U = next_double(st)
        V = next_double(st)
        X = a + h * (V - 0.5) / U
        if X < 0.0 or X >= b:
            continue
        K = np.int64(math.floor(X))
        if hrua_accepts(U, log_ratio(mingb, computed, maxgb, m, K)):
            return hrua_unfold(K, good, bad, sample, computed)


def hypergeometric_large_reference(rng: np.random.Generator, good: int, bad: int, sample: int) -> int:
    """`hypergeometric_large` with its loop in Python and its uniforms from `rng.random()` (the
    reference walk's numpy Generator); the arithmetic is the compiled functions' own."""
    good, bad, sample = int(good), int(bad), int(sample)
    computed, mingb, maxgb, a, h, b = hrua_hat(good, bad, sample)
    if computed == 0 or mingb == 0:
        return int(hrua_unfold(0, good, bad, sample, computed))
    m = int(exact_mode(mingb, computed, maxgb))
    while True:
        U = rng.random()
        V = rng.random()
        X = a + h * (V - 0.5) / U
        if X < 0.0 or X >= b:
            continue
        K = math.floor(X)
        if hrua_accepts(U, log_ratio(mingb, computed, maxgb, m, K)):
            return int(hrua_unfold(K, good, bad, sample, computed))


__all__ = ["LARGE_POPULATION", "STIRLING_MIN", "exact_mode", "hypergeometric_large",
           "hypergeometric_large_reference", "log_ratio"]
