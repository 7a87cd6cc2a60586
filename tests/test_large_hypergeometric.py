"""The large-population hypergeometric sampler (counts stream version 4) against independent
references: its log-ratios against mpmath's 40-digit log-gamma, its law against the exact pmf
(math.comb at small populations, mpmath's log-gamma integrated over bins at 2^30 .. 2^50), the
compiled sampler against its Python loop number for number, and numpy's range against numpy."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from problems.counts import large_hypergeometric as L
from tests.test_counts_kernels import _random_pair


def _pair(seed: int) -> tuple[np.random.Generator, np.ndarray]:
    """A numpy Philox Generator and the kernels' state at the same random key and counter."""
    return _random_pair(np.random.default_rng(seed))


def _mp_log_ratio(G: int, n: int, B: int, m: int, K: int) -> float:
    lf = lambda k: mpmath.loggamma(k + 1)  # noqa: E731
    with mpmath.workdps(40):
        val = (lf(m) + lf(G - m) + lf(n - m) + lf(B - n + m)) - (lf(K) + lf(G - K) + lf(n - K)
                                                                 + lf(B - n + K))
        return float(val)


@pytest.mark.parametrize("N", [2**30, 2**40, 2**50])
def test_log_ratio_matches_mpmath_to_1e7(N):
    """The Stirling differences against 40-digit log-gamma, out to 16 standard deviations."""
    rs = np.random.default_rng(N % 997)
    worst = 0.0
    for _ in range(60):
        G = int(rs.integers(1, N // 2 + 1)) if rs.random() < 0.8 else int(rs.integers(1, 10**6))
        B, n = N - G, N // 2
        G, B = min(G, B), max(G, B)
        m = int(L.exact_mode(G, n, B))
        sd = math.sqrt(n * (G / N) * (B / N) * (N - n) / (N - 1))
        for z in (-16, -5, -1, 0.3, 1, 5, 16):
            K = min(max(m + int(z * sd), 0), min(n, G))
            got = L.log_ratio(G, n, B, m, K)
            want = _mp_log_ratio(G, n, B, m, K)
            worst = max(worst, abs(got - want))
    assert worst < 1e-7, worst


def test_exact_mode_is_the_mode():
    rs = np.random.default_rng(3)
    for _ in range(300):
        N = int(rs.integers(2, 2**50))
        G = int(rs.integers(0, N + 1))
        n = int(rs.integers(0, N + 1))
        G, B = min(G, N - G), max(G, N - G)
        n = min(n, N - n)
        m = int(L.exact_mode(G, n, B))
        assert 0 <= m <= min(n, G)
        # f(m + 1) <= f(m) >= f(m - 1), from 40-digit log-gamma
        if m < min(n, G):
            assert _mp_log_ratio(G, n, B, m, m + 1) >= -1e-9
        if m > 0:
            assert _mp_log_ratio(G, n, B, m, m - 1) >= -1e-9


def test_compiled_matches_python_twin_bit_for_bit():
    rs = np.random.default_rng(4)
    for i in range(400):
        N = int(rs.integers(2**29, 2**51))
        good = int(rs.integers(0, N + 1)) if rs.random() < 0.7 else int(rs.integers(0, 50))
        if rs.random() < 0.3:
            good = N - good
        sample = N // 2 if rs.random() < 0.6 else int(rs.integers(0, N + 1))
        g, st = _pair(i)
        want = [L.hypergeometric_large_reference(g, good, N - good, sample) for _ in range(3)]
        got = [int(L.hypergeometric_large(st, good, N - good, sample)) for _ in range(3)]
        assert got == want, (good, N - good, sample)


def _chi2_p(draws: np.ndarray, edges: np.ndarray, probs: np.ndarray) -> float:
    """Chi-square p-value of integer draws against bins [edges[i], edges[i + 1])."""
    observed = np.array([np.sum((draws >= edges[i]) & (draws < edges[i + 1]))
                         for i in range(len(edges) - 1)])
    expected = probs * len(draws)
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


@pytest.mark.parametrize("good,bad,sample", [(30, 70, 50), (3, 997, 500), (600, 400, 500),
                                             (5000, 5000, 5000), (10, 10**4, 4000), (1, 99, 50)])
def test_law_at_small_populations_against_math_comb(good, bad, sample):
    """Exact pmf from binomial coefficients; every value with expected count >= 5 its own bin."""
    g, _ = _pair(good + bad)
    draws = np.array([L.hypergeometric_large_reference(g, good, bad, sample) for _ in range(4000)])
    _, st = _pair(good * 7 + bad)
    draws = np.concatenate([draws, [L.hypergeometric_large(st, good, bad, sample) for _ in range(60000)]])
    ks = np.arange(max(0, sample - bad), min(sample, good) + 1)
    total = math.comb(good + bad, sample)
    pmf = np.array([math.comb(good, int(k)) * math.comb(bad, sample - int(k)) / total for k in ks])
    # merge tails into bins of expected count >= 5
    edges, probs, acc = [int(ks[0])], [], 0.0
    for k, p in zip(ks, pmf, strict=True):
        acc += p
        if acc * len(draws) >= 5:
            edges.append(int(k) + 1)
            probs.append(acc)
            acc = 0.0
    probs[-1] += acc
    edges[-1] = int(ks[-1]) + 1
    assert _chi2_p(draws, np.array(edges), np.array(probs)) > 1e-3


def _mp_bin_probs(G: int, n: int, B: int, edges: np.ndarray) -> np.ndarray:
    """P(edges[i] <= K < edges[i + 1]) from 40-digit log-gamma, the sum over each bin by
    quadrature of the pmf's continuation (bins ~ a tenth of a standard deviation wide or
    more; the pmf is smooth on that scale: relative error ~ 1 / var)."""
    with mpmath.workdps(40):
        m = int(L.exact_mode(G, n, B))
        base = (mpmath.loggamma(m + 1) + mpmath.loggamma(G - m + 1) + mpmath.loggamma(n - m + 1)
                + mpmath.loggamma(B - n + m + 1))

        def f(x):
            return mpmath.exp(base - (mpmath.loggamma(x + 1) + mpmath.loggamma(G - x + 1)
                                      + mpmath.loggamma(n - x + 1) + mpmath.loggamma(B - n + x + 1)))

        lf = lambda k: mpmath.loggamma(k + 1)  # noqa: E731
        N = G + B  # the pmf at the mode, C(G, m) C(B, n - m) / C(N, n), scales the integrals
        at_mode = mpmath.exp(lf(G) - lf(m) - lf(G - m) + lf(B) - lf(n - m) - lf(B - n + m)
                             - (lf(N) - lf(n) - lf(N - n)))
        out = [float(at_mode * mpmath.quad(f, [float(a) - 0.5, float(b) - 0.5]))
               for a, b in itertools.pairwise(edges)]
    return np.array(out)


@pytest.mark.parametrize("N,frac", [(2**30, 0.5), (2**36, 0.3), (2**44, 1e-6), (2**50, 0.5),
                                    (2**50, 0.01), (2**47 + 12345, 0.999)])
def test_law_at_large_populations_against_mpmath(N, frac):
    """A node of N records holding round(frac N) ones, split in halves (the stream's draw):
    120,000 draws in 24 bins of equal width over +-4 sd (tails merged into the end bins)
    against the pmf from mpmath's log-gamma."""
    good = round(frac * N)
    bad, sample = N - good, N // 2
    _, st = _pair(N % 1009)
    draws = np.array([L.hypergeometric_large(st, good, bad, sample) for _ in range(120_000)])
    G, B = min(good, bad), max(good, bad)
    mean = sample * good / N
    sd = math.sqrt(sample * (good / N) * (bad / N) * (N - sample) / (N - 1))
    inner = np.unique(np.round(mean + sd * np.linspace(-4, 4, 23)).astype(np.int64))
    lo, hi = max(0, sample - bad), min(sample, good)
    edges = np.concatenate([[lo], inner[(inner > lo) & (inner <= hi)], [hi + 1]])
    # the pmf in the smaller-kind variable: K_small = draws of G's kind
    if good > bad:
        e_small = np.sort(sample - edges + 1)
        probs = _mp_bin_probs(G, sample, B, e_small)[::-1]
    else:
        probs = _mp_bin_probs(G, sample, B, edges)
    assert abs(probs.sum() - 1) < 1e-6
    assert _chi2_p(draws, edges, probs) > 1e-3
    z = (draws.mean() - mean) / (sd / math.sqrt(len(draws)))
    assert abs(z) < 4.5


def test_degenerate_nodes():
    _, st = _pair(9)
    assert L.hypergeometric_large(st, 0, 2**40, 2**39) == 0
    assert L.hypergeometric_large(st, 2**40, 0, 2**39) == 2**39
    assert L.hypergeometric_large(st, 2**40, 2**40, 0) == 0
    assert L.hypergeometric_large(st, 2**40, 2**40, 2**41) == 2**40
    assert L.hypergeometric_large(st, 1, 2**40 - 1, 2**39) in (0, 1)


def test_below_numpys_limit_it_draws_numpys_numbers():
    """The same HRUA on the same uniforms: where numpy's sampler runs (populations below 2^29,
    samples of 10 or more), the large-population one returns numpy's draws, which checks the
    transcription against numpy itself (the log-ratios differ in rounding only)."""
    rs = np.random.default_rng(11)
    for i in range(1500):
        N = int(rs.integers(40, 2 ** int(rs.integers(6, 30))))
        good = int(rs.integers(0, N + 1))
        sample = int(rs.integers(10, N - 9)) if rs.random() < 0.5 else N // 2
        g, st = _pair(1000 + i)
        want = [int(g.hypergeometric(good, N - good, sample)) for _ in range(2)]
        assert [int(L.hypergeometric_large(st, good, N - good, sample)) for _ in range(2)] == want, \
            (good, N - good, sample)
