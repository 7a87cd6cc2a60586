"""Clipping and the tree mechanism (in the style of TensorFlow Privacy's tree tests)."""

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms.privacy.mechanisms import TreeMechanism, clip_rows


class UnitNodes:
    """A stand-in Generator whose every node is a vector of ones."""

    def standard_normal(self, d):
        return np.ones(d)


def test_prefix_sums_popcount_nodes_with_unit_node_values():
    tm = TreeMechanism(3, 1.0, UnitNodes())
    for t in range(1, 2000):
        np.testing.assert_array_equal(tm.next(), np.full(3, bin(t).count("1")))
    tm.restart()
    np.testing.assert_array_equal(tm.next(), np.ones(3))


def test_consecutive_prefixes_share_exactly_the_common_nodes():
    """TREE(t) - TREE(t-1) for t = 2^k is minus the k older nodes plus one new node."""
    tm = TreeMechanism(1, 1.0, np.random.default_rng(1))
    vals = [tm.next()[0] for _ in range(8)]
    # TREE(3) = node(0,3) + node(1,1) and TREE(2) = node(1,1): so TREE(3) - TREE(2) is fresh,
    # and TREE(4) = node(2,1) is independent of both.
    assert vals[2] != vals[1] and vals[3] not in vals[:3]


@pytest.mark.slow
def test_prefix_variance_is_popcount_sigma_squared():
    d, sigma, reps = 4000, 0.7, 8
    ts = [1, 3, 7, 8, 15, 21, 31]
    samples = {t: [] for t in ts}
    for r in range(reps):
        tm = TreeMechanism(d, sigma, np.random.default_rng(r))
        for t in range(1, 32):
            v = tm.next()
            if t in samples:
                samples[t].append(v)
    for t in ts:
        x = np.concatenate(samples[t])
        expected = bin(t).count("1") * sigma**2
        # Sample variance of 32000 normals: relative standard error sqrt(2/32000) = 0.8%.
        assert x.var() == pytest.approx(expected, rel=0.04)


def test_same_seed_same_stream():
    a = TreeMechanism(5, 1.0, np.random.default_rng(7))
    b = TreeMechanism(5, 1.0, np.random.default_rng(7))
    for _ in range(100):
        np.testing.assert_array_equal(a.next(), b.next())


@pytest.mark.slow
def test_memory_does_not_grow_with_T():
    # T = 2^17 (was 1e6, 60 s of the suite under tracemalloc): what is measured is unchanged.
    # Any per-step leak is at least 8 bytes (one list slot): 1 MB over these 1.3e5 steps,
    # 13x the allowed growth, (8 + 2) levels x d x 8 = 80 kB; an array of all nodes would be 2 GB.
    d, T = 1000, 2**17
    tm = TreeMechanism(d, 1.0, np.random.default_rng(0))
    tracemalloc.start()
    for _ in range(1000):
        tm.next()
    early = tracemalloc.get_traced_memory()[0]
    for _ in range(T - 1000):
        tm.next()
    late, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # O(d log T): one node per level (18 levels at T = 2^17) plus the prefix, 160 kB. From
    # T = 1e3 to 2^17 only the 8 extra levels are added.
    levels = TreeMechanism.depth(T)
    assert levels == 18 and len(tm._nodes) == levels
    assert late <= (levels + 3) * d * 8 and peak <= (levels + 6) * d * 8
    assert late - early <= (levels - TreeMechanism.depth(1000) + 2) * d * 8
    print(f"tree memory at T=2^17, d=1000: {late} bytes (peak {peak})")


def test_depth_counts_levels():
    assert TreeMechanism.depth(1) == 1
    assert TreeMechanism.depth(7) == 3 and TreeMechanism.depth(8) == 4


def test_clip_rows_bounds_every_row_and_keeps_short_ones():
    rows = np.array([[3.0, 4.0], [0.3, 0.4], [np.nan, 1.0], [0.0, 0.0]])
    out = clip_rows(rows.copy(), 1.0)
    np.testing.assert_allclose(out[0], [0.6, 0.8])
    np.testing.assert_allclose(out[1], [0.3, 0.4])
    np.testing.assert_array_equal(out[2], [0.0, 0.0])
    assert np.all(np.linalg.norm(out, axis=1) <= 1.0 + 1e-12)


def test_bad_arguments():
    with pytest.raises(ValueError, match="sigma=-1"):
        TreeMechanism(3, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="d=0"):
        TreeMechanism(0, 1.0, np.random.default_rng(0))


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), mag=st.integers(-300, 300), bmag=st.integers(-300, 300),
       d=st.sampled_from([1, 3, 100, 10_000]))
def test_clip_rows_is_exact_at_every_scale(seed, mag, bmag, d):
    """Rows of magnitude 1e-300 to 1e300 and bounds of 1e-300 to 1e300 in dimensions up to 1e4:
    against math.hypot (scaled, exact), every clipped row has norm <= bound, a row within the
    bound is untouched and a longer one ends at the bound (sqrt(sum x^2) underflows at 1e-154
    and overflows at 1e154, so the naive clip failed both ways)."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((3, d)) * 10.0**mag
    bound = float(rng.uniform(0.5, 2.0) * 10.0**bmag)
    before = [math.hypot(*r) for r in rows]
    out = clip_rows(rows.copy(), bound)
    for r0, r, n0 in zip(rows, out, before, strict=True):
        n = math.hypot(*r)
        assert n <= bound * (1 + 1e-14)
        if n0 <= bound:
            assert np.array_equal(r, r0)
        else:
            assert n == pytest.approx(bound, rel=1e-12)
            np.testing.assert_allclose(r / n, r0 / n0, rtol=1e-12, atol=1e-15)  # same direction


def test_clip_rows_zeroes_non_finite_rows():
    rows = np.array([[np.nan, 1.0], [np.inf, 0.0], [1e200, 1e200], [3.0, 4.0]])
    out = clip_rows(rows.copy(), 1.0)
    assert np.array_equal(out[:2], np.zeros((2, 2)))
    np.testing.assert_allclose(out[2], [2**-0.5, 2**-0.5], rtol=1e-15)  # 1e200 entries: clipped
    np.testing.assert_allclose(out[3], [0.6, 0.8], rtol=1e-15)
