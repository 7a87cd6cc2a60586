"""The release desk's gap sampler (algorithms/privacy/poisson_gaps.py) against the law of
Poisson sampling, independent Bernoulli(q) inclusions, at fixed seeds: the number kept against
Binomial(n, q), each index's rate, the first kept index against Geometric(q), pairs of indices
independent. Each check is shown able to fail: planted samplers (the gap one short, the rate
5% high, the second index tied to the first) are rejected by the same statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from algorithms import Privacy, get_algorithm
from algorithms.privacy.poisson_gaps import gap_indices, poisson_gap_subsample
from problems import get_problem

DRAWS = 20_000
ALPHA = 1e-4  # a fixed-seed test: the honest sampler's p-values are far above this


def _sample_sets(sampler, n: int, q: float, seed: int = 7) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    idx = np.empty(n, dtype=np.int64)
    out = []
    for _ in range(DRAWS):
        k = sampler(rng, n, q, idx)
        out.append(idx[:k].copy())
    return out


def _chi2_p(observed: np.ndarray, expected: np.ndarray) -> float:
    keep = expected >= 5  # pool the sparse tail into one bin
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    exp = exp * obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


def law_pvalues(sampler) -> dict[str, float]:
    """The four statistics' p-values for `sampler(rng, n, q, idx) -> k`."""
    n, q = 60, 0.08
    sets = _sample_sets(sampler, n, q)
    counts = np.array([len(s) for s in sets])
    ks = np.arange(n + 1)
    p_count = _chi2_p(np.bincount(counts, minlength=n + 1).astype(float),
                      DRAWS * stats.binom.pmf(ks, n, q))
    per_index = np.bincount(np.concatenate(sets), minlength=n).astype(float)
    p_index = float(stats.chisquare(per_index).pvalue) if per_index.sum() else 0.0
    rate = per_index.sum() / (n * DRAWS)
    p_rate = float(stats.binomtest(int(per_index.sum()), n * DRAWS, q).pvalue)
    first = np.array([s[0] if len(s) else n for s in sets])
    pmf = np.append(q * (1 - q) ** np.arange(n), (1 - q) ** n)  # n: none kept
    p_first = _chi2_p(np.bincount(first, minlength=n + 1).astype(float), DRAWS * pmf)
    both = np.array([(0 in s) and (1 in s) for s in sets]).sum()
    p_pair = float(stats.binomtest(int(both), DRAWS, q * q).pvalue)
    assert math.isfinite(rate)
    return {"count": p_count, "index": min(p_index, p_rate), "first": p_first, "pair": p_pair}


def test_the_gap_sampler_is_poisson_sampling():
    p = law_pvalues(gap_indices)
    assert min(p.values()) > ALPHA, p


def _planted_short_gap(rng, n, q, idx):
    """The gap one record short (i += floor(G) instead of 1 + floor(G)): every index repeats."""
    lq, k, i = math.log1p(-q), 0, -1
    while True:
        g = math.log(1.0 - rng.random()) / lq
        i += max(1, math.floor(g))  # 1 where the honest gap is 1 or 2
        if i >= n:
            return k
        idx[k] = i
        k += 1


def _planted_high_rate(rng, n, q, idx):
    return gap_indices(rng, n, 1.05 * q, idx)


def _planted_tied_pair(rng, n, q, idx):
    """Index 1 kept exactly when index 0 is (the pair dependent, each index's rate right)."""
    k = gap_indices(rng, n, q, idx)
    kept = set(idx[:k].tolist())
    kept.discard(1)
    if 0 in kept:
        kept.add(1)
    out = sorted(kept)
    idx[:len(out)] = out
    return len(out)


@pytest.mark.parametrize("planted,caught", [(_planted_short_gap, "first"),
                                            (_planted_high_rate, "index"),
                                            (_planted_tied_pair, "pair")])
def test_the_law_checks_reject_planted_samplers(planted, caught):
    assert law_pvalues(planted)[caught] < ALPHA


def test_edges():
    idx = np.empty(10, dtype=np.int64)
    rng = np.random.default_rng(1)
    assert gap_indices(rng, 10, 1.0, idx) == 10 and idx.tolist() == list(range(10))
    assert gap_indices(rng, 10, 0.0, idx) == 0
    assert gap_indices(rng, 0, 0.5, idx) == 0
    rows = np.arange(20.0).reshape(10, 2)
    kept = poisson_gap_subsample(rows, 0.5, np.random.default_rng(3))
    assert kept.shape[1] == 2 and np.all(np.diff(kept[:, 0]) > 0)  # record order


def test_dp_sgd_takes_the_sampler_as_a_choice():
    """`sampler` is DP-SGD's choice: another draw than the mask's, the same accounting; a
    wrong value is one clear line before any work."""
    pr = get_problem("hard_valley", d=5)
    runs = {}
    for sampler in ("mask", "gaps"):
        stream = pr.stream(np.random.SeedSequence([2, 5]), budget=3000, data="records")
        runs[sampler] = get_algorithm("dp_sgd")(T=50, sampler=sampler).run(
            pr, stream, Privacy(1.0), np.random.default_rng(2))
    assert runs["gaps"].privacy_spent == runs["mask"].privacy_spent
    assert runs["gaps"].params["sampler"] == "gaps" and "sampler" not in runs["mask"].params
    assert not np.array_equal(runs["gaps"].iterates, runs["mask"].iterates)
    with pytest.raises(ValueError, match=r"parameter sampler='gap' is invalid: must be one of"):
        get_algorithm("dp_sgd")(sampler="gap")
