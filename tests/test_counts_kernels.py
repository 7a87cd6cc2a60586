"""The compiled counts kernels against numpy itself (the independent reference): raw Philox
words, the samplers bit for bit on random arguments, and whole compiled streams against the
numpy walk (`ReferenceCountsStream`) on the same seed; and the store's stream-version check."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from bench.store import Store, StoreError
from problems.counts import kernels as K
from problems.counts import philox as P
from problems.counts.layouts import BinaryCoordinates, Categorical
from problems.counts.stream import STREAM_VERSION, CountsStream, ReferenceCountsStream


def _pair(key: np.ndarray, counter: np.ndarray) -> tuple[np.random.Generator, np.ndarray]:
    """numpy's Philox generator and the kernels' state, both at (key, counter)."""
    bg = np.random.Philox(key=key)
    state = bg.state
    state["state"]["counter"][:] = counter
    bg.state = state
    st = np.zeros(P.STATE_WORDS, dtype=np.uint64)
    st[0:4], st[4:6], st[10] = counter, key, 4
    return np.random.Generator(bg), st


def _random_pair(rs: np.random.Generator):
    return _pair(rs.integers(0, 2**63, 2, dtype=np.uint64), rs.integers(0, 2**62, 4, dtype=np.uint64))


def test_philox_words_match_numpy_across_a_counter_carry():
    rs = np.random.default_rng(0)
    key = rs.integers(0, 2**63, 2, dtype=np.uint64)
    for counter in (np.array([0, 5, 7, 9], np.uint64), np.array([2**64 - 2, 2**64 - 1, 3, 0], np.uint64)):
        g, st = _pair(key, counter)
        want = g.bit_generator.random_raw(41)
        np.testing.assert_array_equal(np.array([P.next_uint64(st) for _ in range(41)], np.uint64), want)


def test_hypergeometric_matches_numpy_bit_for_bit():
    """Random (good, bad, sample) over 1 .. 2^29: both branches (sequential below 10 and HRUA),
    the 32- and 64-bit interval paths, and the complement branches."""
    rs = np.random.default_rng(1)
    for _ in range(2000):
        good = int(rs.integers(0, 2 ** int(rs.integers(1, 30))))
        bad = int(rs.integers(0, 2 ** int(rs.integers(1, 30))))
        if good + bad == 0:
            continue
        sample = int(rs.choice([rs.integers(0, 12), rs.integers(0, good + bad + 1),
                                good + bad - rs.integers(0, min(12, good + bad + 1))]))
        sample = min(max(sample, 0), good + bad)
        g, st = _random_pair(rs)
        want = [int(g.hypergeometric(good, bad, sample)) for _ in range(3)]
        assert [K.hypergeometric(st, good, bad, sample) for _ in range(3)] == want, (good, bad, sample)


def test_marginals_permuted_and_permutation_match_numpy():
    rs = np.random.default_rng(2)
    for _ in range(300):
        colors = rs.integers(0, 2 ** int(rs.integers(1, 20)), int(rs.integers(2, 9)))
        nsample = int(rs.integers(0, colors.sum() + 1))
        g, st = _random_pair(rs)
        out = np.empty(len(colors), dtype=np.int64)
        K.multivariate_hypergeometric_marginals(st, colors.astype(np.int64), nsample, out)
        np.testing.assert_array_equal(out, g.multivariate_hypergeometric(colors, nsample, method="marginals"))
    for _ in range(100):
        rows, size = int(rs.integers(1, 13)), int(rs.integers(1, 300))
        g, st = _random_pair(rs)
        np.testing.assert_array_equal(K.permute_rows(st, rows, size),
                                      g.permuted(np.broadcast_to(np.arange(size), (rows, size)), axis=1))
        values = rs.integers(0, 7, size)
        g, st = _random_pair(rs)
        mine = values.astype(np.int64)
        K.shuffle_1d(st, mine)
        np.testing.assert_array_equal(mine, g.permutation(values))


LAYOUTS = [BinaryCoordinates(np.array([0.5, 0.3, 0.8, 0.5])), Categorical(np.array([0.1, 0.2, 0.3, 0.4])),
           BinaryCoordinates(np.full(12, 0.5))]


@pytest.mark.parametrize("layout", LAYOUTS, ids=["binary", "categorical", "binary12"])
@pytest.mark.parametrize("kw", [{}, {"block_levels": 5, "blocks_per_super": 3},
                                {"block_levels": 12, "blocks_per_super": 2}, {"leaf_levels": 8},
                                {"block_levels": 3}], ids=["shipped", "b5", "b12", "leaf8", "b3"])
def test_compiled_stream_equals_the_numpy_walk(layout, kw):
    """Same seed, same random take pattern: every batch equal, the same nodes drawn, the
    same digest (the compiled walk draws the numpy walk's numbers, not just their law)."""
    rs = np.random.default_rng(3)
    sizes = [0, 1, 3, 15, 16, 17, 100, 255, 256, 1000, 10**5]
    if not kw:
        sizes += [10**7, 10**9, 10**10]  # several blocks and superblocks of 2^29
    for seed in range(3):
        a, b = CountsStream(layout, seed, **kw), ReferenceCountsStream(layout, seed, **kw)
        assert a._kind is not None and b._kind is None
        for _ in range(80):
            k = int(rs.choice(sizes))
            np.testing.assert_array_equal(a.take(k).counts, b.take(k).counts)
        assert a.nodes_drawn == b.nodes_drawn
        assert a.digest() == b.digest()
        assert a.take(5).counts.tolist() == b.take(5).counts.tolist()  # digest left the path alone


def test_a_layout_subclass_with_its_own_split_runs_the_numpy_walk():
    class Halves(BinaryCoordinates):
        def split(self, rng, counts, size):
            return super().split(rng, counts, size)

    assert CountsStream(Halves([0.5]), 0)._kind is None
    assert CountsStream(BinaryCoordinates([0.5]), 0)._kind is not None


def test_a_sweep_refuses_a_store_of_another_counts_stream_version(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        st.set_spec("x", "", "", ["k"], "now")
        st.write({"key": "k", "data": "counts", "status": "ok"})
        st.check_stream_version()  # its own version: fine
    assert Store(path).meta()["counts_stream_version"] == str(STREAM_VERSION)
    with sqlite3.connect(path) as conn:  # a store written before the version was recorded
        conn.execute("DELETE FROM meta WHERE key = 'counts_stream_version'")
    with Store(path) as st, pytest.raises(StoreError, match="counts stream version 1; this spec "
                                                           f"draws version {STREAM_VERSION}.*--out.$"):
        st.check_stream_version()
    from bench.config import load_spec
    from bench.runner import plan_sweep

    with pytest.raises(StoreError, match="rerun the sweep into a new store"):
        plan_sweep(load_spec(Path(__file__).parent.parent / "bench/configs/headline2.toml"), path)
