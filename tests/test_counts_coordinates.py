"""Counts stream version 3 (`problems.counts.coordinates`): one counts tree per coordinate of a
product layout, read lazily (version 4, the same trees in one block of 2^50 records:
tests/test_counts_stream_v4.py). Held against independent references: the numpy walk of one
`ReferenceCountsStream` per coordinate (number for number), the binomial law (chi-square, with
power against a 1% shift), independence across coordinates (with a planted shared counter
caught), and prefix consistency whatever the take pattern and whichever coordinates are read
when."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import problems
from problems.counts.coordinates import (
    CoordinateCountsStream,
    ReferenceCoordinateCountsStream,
    counts_stream,
)
from problems.counts.layouts import BinaryCoordinates, Categorical
from problems.counts.stream import CountsStream

P4 = np.array([0.5, 0.3, 0.9, 0.5])
COLS = [slice(0, 2), slice(None), slice(2, 4), slice(1, 2), None]


@pytest.mark.parametrize("kw", [{}, {"block_levels": 8, "blocks_per_super": 2},
                                {"block_levels": 12, "blocks_per_super": 3}, {"block_levels": 3}],
                         ids=["shipped", "b8", "b12", "b3"])
def test_compiled_coordinates_equal_the_numpy_walk(kw):
    """Random take sizes and random column reads (some batches never read, some read late):
    every read equal to the per-coordinate numpy walk's, and the digests equal."""
    rs = np.random.default_rng(4)
    sizes = [0, 1, 3, 15, 16, 17, 100, 255, 1000, 10**5]
    if not kw:
        sizes += [10**7, 10**9, 10**10]  # several blocks and superblocks of 2^29
    for seed in range(3):
        a = CoordinateCountsStream(BinaryCoordinates(P4), seed, **kw)
        b = ReferenceCoordinateCountsStream(BinaryCoordinates(P4), seed, **kw)
        held = []
        for _ in range(60):
            k = int(rs.choice(sizes))
            ba, bb = a.take(k), b.take(k)
            cols = COLS[rs.integers(len(COLS))]
            if cols is None:
                held.append((ba, bb))  # read later, after the streams moved on
                continue
            np.testing.assert_array_equal(ba.counts_of(cols), bb.counts_of(cols))
        for ba, bb in held:
            np.testing.assert_array_equal(ba.counts, bb.counts)
        assert a.digest() == b.digest()
        np.testing.assert_array_equal(a.take(5).counts, b.take(5).counts)  # still equal after it


def test_prefix_consistent_whatever_the_takes_and_the_columns_read():
    """The counts of records [0, m) are a fixed function of (seed, m): the sum of any take
    pattern's batches, read column by column at any time, equals one fresh prefix query."""
    layout = BinaryCoordinates(np.full(5, 0.5))
    for levels in (5, 29):
        kw = {"block_levels": levels, "blocks_per_super": 3}
        for seed in range(4):
            pattern = np.random.default_rng(seed)
            stream = CoordinateCountsStream(layout, seed, **kw)
            total = np.zeros(5, dtype=np.int64)
            marks = {}
            late = []  # batches whose other coordinates are read after the loop
            for _ in range(50):
                batch = stream.take(int(pattern.choice([0, 1, 7, 33, 200, 5000])))
                if pattern.random() < 0.5:  # some coordinates now, the rest at the end
                    total[:2] += batch.counts_of(slice(0, 2))
                    late.append((stream.used, batch))
                else:
                    total += batch.counts
                marks[stream.used] = total.copy()
            for i in pattern.permutation(len(late)):  # in shuffled order, the stream moved on
                used, batch = late[i]
                rest = batch.counts_of(slice(2, 5))
                for m in marks:
                    if m >= used:
                        marks[m][2:] += rest
            for m, want in marks.items():
                fresh = CoordinateCountsStream(layout, seed, **kw)
                np.testing.assert_array_equal(fresh.prefix_counts(m), want)


def _coordinate_batches(p, seeds: int, offset: int, k: int, **kw) -> np.ndarray:
    out = []
    for s in range(seeds):
        stream = CoordinateCountsStream(BinaryCoordinates(p), np.random.SeedSequence([13, s]), **kw)
        pattern = np.random.default_rng(s)
        while stream.used < offset:  # O2-like reads of two coordinates on the way
            stream.take(int(min(offset - stream.used, pattern.integers(1, offset // 3 + 2)))) \
                .counts_of(slice(0, 2))
        out.append(stream.take(k).counts)
    return np.array(out)


def _chi2_pvalue(counts: np.ndarray, k: int, p: float) -> float:
    lo, hi = stats.binom.ppf(1e-4, k, p), stats.binom.ppf(1 - 1e-4, k, p)
    edges = np.unique(np.linspace(lo, hi, 16).round())
    edges[0], edges[-1] = -1, k
    expected = np.diff(stats.binom.cdf(edges, k, p)) * len(counts)
    observed = np.histogram(counts, bins=edges + 0.5)[0]
    keep = expected >= 5
    obs, exp = observed[keep], expected[keep]
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


@pytest.mark.slow
def test_coordinates_are_binomial_and_independent_across_blocks():
    """Batches crossing block and superblock boundaries (blocks of 2^10, 4 per superblock),
    reached through partial reads: Binomial(k, p_j) per coordinate (a 1% shift is rejected),
    and uncorrelated across coordinates."""
    p = np.array([0.5, 0.3, 0.8])
    k, offset = 5000, 3 * 1024 + 700
    c = _coordinate_batches(p, 400, offset, k, block_levels=10, blocks_per_super=4)
    for j, pj in enumerate(p):
        assert _chi2_pvalue(c[:, j], k, pj) > 1e-3, j
        assert _chi2_pvalue(c[:, j], k, pj * 1.01) < 1e-3, j
    r = np.corrcoef(c.T)[np.triu_indices(3, 1)]
    assert np.all(np.abs(r) < 4 / math.sqrt(len(c)))


def test_a_shared_counter_across_coordinates_is_caught():
    """Planted bug: two coordinates with the same node tag draw their splits from the same
    numbers. The deviation of each coordinate's first half from half its block's count
    (C(2048) - C(4096) / 2 in blocks of 2^12) then has nearly the same size in both (numpy's
    sampler flips its sign with the side of the half the count is on, so the sizes are
    compared); with the shipped tags the sizes are uncorrelated."""
    def deviations(tags_equal: bool) -> np.ndarray:
        out = []
        for s in range(300):
            stream = CoordinateCountsStream(BinaryCoordinates([0.5, 0.5]), s, block_levels=12)
            if tags_equal:
                stream.tags[1] = stream.tags[0]
            half = stream.take(2048).counts
            out.append(np.abs(half - stream.prefix_counts(4096) / 2))
        return np.array(out)

    assert abs(np.corrcoef(deviations(False).T)[0, 1]) < 4 / math.sqrt(300)
    assert np.corrcoef(deviations(True).T)[0, 1] > 0.5


def test_every_node_counter_is_distinct():
    """Structural: the level words of all coordinates' nodes (leaf to top, any block size up
    to version 4's 2^50) and of the root draws are pairwise distinct, so no two draws share a
    Philox counter (a stride of 1 would make coordinate 0's level 12 coordinate 1's level 11)."""
    from problems.counts.coordinates import TAG_STRIDE
    from problems.counts.stream import TOP_LEVELS

    m = 50
    words = [0]  # the root draws' level word
    for j in range(m):
        words += [TAG_STRIDE * (j + 1) + level for level in range(TOP_LEVELS + 1)]
    assert len(words) == len(set(words))
    assert min(words[1:]) >= 64  # above every version-2 node's level word
    stream = CoordinateCountsStream(BinaryCoordinates(np.full(m, 0.5)), 0)
    np.testing.assert_array_equal(stream.tags, TAG_STRIDE * (np.arange(m) + 1))


def test_problem_streams_use_one_tree_per_coordinate_on_product_layouts():
    valley = problems.get_problem("hard_valley", d=10)
    assert isinstance(valley.stream(0, data="counts"), CoordinateCountsStream)
    logistic = problems.get_problem("logistic")
    assert type(logistic.stream(0, data="counts")) is CountsStream
    assert type(counts_stream(Categorical([0.5, 0.5]), 0)) is CountsStream

    class OwnSplit(BinaryCoordinates):  # a layout with its own draws keeps the numpy walk
        def split(self, rng, counts, size):
            return super().split(rng, counts, size)

    assert type(counts_stream(OwnSplit([0.5]), 0)) is CountsStream


def test_an_o2_reads_two_coordinates_only():
    """The separable problems' O2 reads the counts of the two noise factors: the other d
    coordinates' trees are not walked (their last read stays at record 0), and the mean equals
    the per-sample differences of the same batch's records."""
    prob = problems.get_problem("hard_valley", d=10)
    stream = prob.stream(3, data="counts")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=10), rng.normal(size=10)
    batch = stream.take(10**5)
    mean, _ = prob.counts_grad_diff(x, y, batch)
    assert np.all(stream._meta[2:, 2] == 0) and np.all(stream._meta[:2, 2] == 10**5)
    rows = prob.materialize(batch)
    np.testing.assert_allclose(mean, prob.per_sample_grad_diffs(x, y, rows).mean(axis=0),
                               rtol=1e-10, atol=1e-13)


def test_o2_reuses_the_previous_x_only_when_its_bytes_match():
    """The O2 map reuses phi'(y1) and u(y) from its previous call when y is that call's x
    (the engine's chain x_t -> x_{t+1}); an array mutated in place after the call is not
    served stale: every mean equals the per-sample differences of the batch's records, and
    the chained call gives bit for bit what a problem with no memo gives."""
    prob = problems.get_problem("hard_valley", d=8)
    fresh = problems.get_problem("hard_valley", d=8)
    batch = prob.stream(4, data="counts").take(10**4)
    rows = prob.materialize(batch)
    rng = np.random.default_rng(2)
    x0, x1 = rng.normal(size=8), rng.normal(size=8)

    def records_mean(x, y):
        return prob.per_sample_grad_diffs(x, y, rows).mean(axis=0)

    prob.counts_grad_diff(x1, x0, batch)  # memo: x1
    x2 = x1 - 0.1 * rng.normal(size=8)
    chained = prob.counts_grad_diff(x2, x1, batch)  # y = x1: reused
    fresh_value = problems.get_problem("hard_valley", d=8).counts_grad_diff(x2, x1, batch)
    assert np.array_equal(chained[0], fresh_value[0]) and chained[1] == fresh_value[1]
    np.testing.assert_allclose(chained[0], records_mean(x2, x1), rtol=1e-10, atol=1e-13)
    x2[:] = rng.normal(size=8)  # the memo's x mutated in place, then passed as y
    x3 = rng.normal(size=8)
    mean, _ = prob.counts_grad_diff(x3, x2, batch)
    np.testing.assert_allclose(mean, records_mean(x3, x2), rtol=1e-10, atol=1e-13)
    assert np.array_equal(mean, fresh.counts_grad_diff(x3, x2, batch)[0])
    ints = np.arange(8, dtype=np.int64)  # the memo's x: integers ...
    prob.counts_grad_diff(ints, x3, batch)
    same_bytes = ints.view(np.float64)  # ... and floats with the same bytes as y: no reuse
    mean, _ = prob.counts_grad_diff(x3, same_bytes, batch)
    assert np.array_equal(mean, fresh.counts_grad_diff(x3, same_bytes, batch)[0])


def test_the_guard_reads_the_support_bound_the_problem_states():
    """The one-pass guard bound equals `record_grad_diff_bound` / `record_grad_bound`, and a
    subclass stating a larger support bound is refused at a clip below its own bound (the
    guard reads the stated bound, not the one-pass value)."""
    from algorithms.counts_maps import clipped_grad_diff_sum, clipped_grad_sum
    from problems.counts.stream import CountsClipError
    from problems.separable import HardValley

    prob = problems.get_problem("hard_valley", d=6)
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=6), rng.normal(size=6)
    batch = prob.stream(2, data="counts").take(1000)
    assert prob.guarded_counts_grad_diff(x, y, batch)[1] == prob.record_grad_diff_bound(x, y)
    assert prob.guarded_counts_grad(x, batch)[1] == prob.record_grad_bound(x)

    class Wider(HardValley):
        def record_grad_bound(self, x):
            return 10 * super().record_grad_bound(x)

        def record_grad_diff_bound(self, x, y):
            return 10 * super().record_grad_diff_bound(x, y)

    wide = Wider(d=6)
    clip_d = 2 * prob.record_grad_diff_bound(x, y)  # enough for HardValley, not for Wider
    clip = 2 * prob.record_grad_bound(x)
    clipped_grad_diff_sum(prob, x, y, batch, clip_d)
    clipped_grad_sum(prob, x, batch, clip)
    with pytest.raises(CountsClipError):
        clipped_grad_diff_sum(wide, x, y, batch, clip_d)
    with pytest.raises(CountsClipError):
        clipped_grad_sum(wide, x, batch, clip)


def test_bad_column_reads_are_refused():
    stream = CoordinateCountsStream(BinaryCoordinates(P4), 0)
    with pytest.raises(ValueError, match="step 1"):
        stream.take(10).counts_of(slice(0, 4, 2))
    with pytest.raises(ValueError, match="must be BinaryCoordinates"):
        CoordinateCountsStream(Categorical([0.5, 0.5]), 0)


def test_an_interrupted_root_read_leaves_no_stale_block_roots():
    """A read interrupted while a block's roots are being written (Ctrl-C inside the superblock
    sums) must not leave the rows named for a block they do not hold: every later read equals
    an uninterrupted twin's."""
    from problems.counts.coordinates import CoordinateCountsStream

    layout = BinaryCoordinates([0.3, 0.6])
    kw = {"block_levels": 4, "blocks_per_super": 2}
    hit, twin = CoordinateCountsStream(layout, 1, 10**9, **kw), CoordinateCountsStream(layout, 1, 10**9, **kw)
    hit.prefix_counts(5), twin.prefix_counts(5)

    def interrupted(s):
        raise KeyboardInterrupt

    hit._before_super = interrupted
    with pytest.raises(KeyboardInterrupt):
        hit.prefix_counts(16 * 7 + 3)  # block 7's roots: interrupted half written
    del hit._before_super
    for start in range(16):
        for stream in (hit, twin):  # fresh paths and leaves, as a read after a jump would walk
            stream._meta[:, 0] = stream._meta[:, 2] = -1
            stream._meta[:, 6] = 0
        np.testing.assert_array_equal(hit.counts_between(start, 16, None),
                                      twin.counts_between(start, 16, None))
