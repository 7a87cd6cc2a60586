"""The compiled Poisson thinning of atom counts (problems.counts.binomial_thin) draws numpy's
binomials: the same numbers and the generator left in the same state, on every branch of
numpy's sampler, and numpy's own call (and errors) wherever the kernel does not apply."""

from __future__ import annotations

import numpy as np
import pytest

from problems.counts import binomial_thin
from problems.counts.binomial_thin import _kernel, compiled_thin_matches_numpy, thin_counts
from problems.counts.dataset import thin
from problems.counts.layouts import CountsBatch


def _twins(seed, bit_generator=np.random.PCG64):
    return np.random.Generator(bit_generator(seed)), np.random.Generator(bit_generator(seed))


def _same_state(a, b):
    return binomial_thin._same_state(a.bit_generator.state, b.bit_generator.state)


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.Philox, np.random.SFC64])
def test_the_process_check_passes_for_numpys_generators(bit_generator):
    assert compiled_thin_matches_numpy(bit_generator)


@pytest.mark.parametrize("rate", [0.0, 1e-12, 1e-5, 2e-3, 0.01, 0.07, 0.31, 0.5,
                                  0.5000001, 0.8, 0.999, 1.0])
@pytest.mark.parametrize("scale", [3, 100, 3000, 10**6])
def test_thinning_draws_numpys_binomials_on_every_branch(rate, scale):
    """Random counts up to `scale` (zeros included): the kernel's inversion sampler (p' c <=
    30), its flipped form (rate > 1/2), numpy's own call where some atom takes BTPE (p' c >
    30), the tabled and untabled set-ups."""
    counts = np.random.default_rng(scale).integers(0, scale, 700).astype(np.int64)
    counts[::50] = 0
    a, b = _twins(int(rate * 1e9) + scale)
    for _ in range(3):
        assert np.array_equal(thin_counts(counts, rate, a), b.binomial(counts, rate))
    assert _same_state(a, b)
    assert np.array_equal(a.random(5), b.random(5))


@pytest.mark.parametrize("rate", [1e-9, 1e-6, 3e-4, 0.01, 0.3, 0.7, 0.99, 1.0])
@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.Philox, np.random.MT19937])
def test_kernel_itself_is_numpys_inversion(rate, bit_generator):
    """The compiled kernel called directly, on counts where every atom takes the inversion
    sampler, for several bit generators (their next_double by address)."""
    p = min(rate, 1 - rate)
    top = max(1, int(30 / p)) if p > 0 else 10**9
    counts = np.random.default_rng(3).integers(0, min(top, 10**9), 600).astype(np.int64)
    a, b = _twins(11, bit_generator)
    assert np.array_equal(_kernel(a, counts, rate), b.binomial(counts, rate))
    assert _same_state(a, b)


def test_kernel_with_counts_wider_than_the_table():
    counts = np.array([1, 2**20, 5, 2**17 + 3, 0, 9], dtype=np.int64)  # range > TABLE_MAX
    assert counts.max() - counts.min() + 1 > binomial_thin.TABLE_MAX
    a, b = _twins(3)
    assert np.array_equal(_kernel(a, counts, 1e-5), b.binomial(counts, 1e-5))
    assert _same_state(a, b)


@pytest.mark.parametrize("rate", [1e-4, 0.01, 0.2, 0.9])
def test_thin_counts_is_numpys_call(rate):
    counts = np.random.default_rng(1).multinomial(10**5, np.ones(1000) / 1000).astype(np.int64)
    a, b = _twins(17)
    got = [thin_counts(counts, rate, a) for _ in range(4)]
    want = [b.binomial(counts, rate) for _ in range(4)]
    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    assert _same_state(a, b)


def test_thin_on_a_counts_batch_keeps_its_law():
    """Through `problems.counts.dataset.thin`: the batch of the same draws, and a chi-square
    free check of the law: the kept total over many thinnings has mean q k and variance
    q (1 - q) k within 5 standard errors."""
    counts = np.random.default_rng(2).multinomial(5000, np.ones(200) / 200).astype(np.int64)
    batch = CountsBatch(5000, counts)
    a, b = _twins(5)
    sub = thin(batch, 0.03, a)
    assert np.array_equal(sub.counts, b.binomial(counts, 0.03)) and sub.k == int(sub.counts.sum())
    totals = np.array([thin(batch, 0.03, a).k for _ in range(4000)])
    mean, var = 0.03 * 5000, 0.03 * 0.97 * 5000
    assert abs(totals.mean() - mean) < 5 * np.sqrt(var / 4000)
    assert abs(totals.var() - var) < 5 * var * np.sqrt(2 / 4000)


@pytest.mark.parametrize("bad", [dict(rate=-0.1), dict(rate=1.5), dict(rate=float("nan")),
                                 dict(counts=np.array([3, -1, 2]))])
def test_invalid_arguments_get_numpys_error(bad):
    counts = bad.get("counts", np.array([3, 1, 2], dtype=np.int64))
    rate = bad.get("rate", 0.5)
    with pytest.raises(ValueError) as ours:
        thin_counts(counts, rate, np.random.default_rng(0))
    with pytest.raises(ValueError) as numpys:
        np.random.default_rng(0).binomial(counts, rate)
    assert str(ours.value) == str(numpys.value)


def test_a_failed_process_check_falls_back_to_numpy(monkeypatch):
    monkeypatch.setitem(binomial_thin._AGREES, np.random.PCG64, False)

    def boom(*args):
        raise AssertionError("the kernel ran although the check failed")

    monkeypatch.setattr(binomial_thin, "_thin_kernel", boom)
    counts = np.arange(50, dtype=np.int64)
    a, b = _twins(9)
    assert np.array_equal(thin_counts(counts, 0.1, a), b.binomial(counts, 0.1))
