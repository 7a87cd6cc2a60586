"""Counts stream version 4 (one block of 2^50 records per coordinate, splits above 2^29 by the
large-population sampler) against independent references: the numpy walk with the Python
twin of the sampler (number for number), the binomial law of batches of 1e12 records read
through O2-like partial reads (chi-square, with power against half a standard deviation),
independence across coordinates and batches, prefix consistency whatever the take pattern;
and the version's plumbing: specs, stores, `dprates run`."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from bench.config import SpecError, parse_spec
from bench.store import Store, StoreError
from problems import get_problem
from problems.counts.coordinates import (
    CoordinateCountsStream,
    ReferenceCoordinateCountsStream,
    counts_stream,
)
from problems.counts.layouts import BinaryCoordinates
from problems.counts.stream import KEY_WORD_V4, STREAM_VERSION, SUPPORTED_STREAM_VERSIONS, TOP_LEVELS

P4 = np.array([0.5, 0.3, 0.9, 0.02])
V4 = {"block_levels": TOP_LEVELS, "blocks_per_super": 1, "key_word": KEY_WORD_V4}


def test_the_default_is_version_4_and_3_stays_drawable():
    assert STREAM_VERSION == 4 and SUPPORTED_STREAM_VERSIONS == (3, 4)
    v4, v3 = counts_stream(BinaryCoordinates(P4), 0), counts_stream(BinaryCoordinates(P4), 0, version=3)
    assert (v4.levels, v4.per_super, v4.key_word) == (TOP_LEVELS, 1, KEY_WORD_V4)
    assert (v3.levels, v3.per_super) == (29, 64)
    with pytest.raises(ValueError, match=r"counts_stream=5 is invalid: must be one of 3, 4"):
        counts_stream(BinaryCoordinates(P4), 0, version=5)


#: sha256 (first 32 hex digits) of a fixed take pattern on hard_valley (d = 4) and a prefix at
#: 1e13 + 5 (`_digest`). Version 3's was computed by the code before version 4 existed
#: (commit eb9d287): version 4's sampler and key leave version 3's numbers alone.
PINNED = {3: "f1bccac62c358da028c6610dd52d3d01", 4: "85e8ea09f66bfb27e6663859b076c948"}


def _digest(version: int) -> str:
    import hashlib

    pr = get_problem("hard_valley", d=4)
    st = pr.stream(np.random.SeedSequence([7, 4]), data="counts", counts_version=version)
    h = hashlib.sha256()
    for k in [1, 1000, 10**6, 10**9, 3 * 10**10, 10**12, 17]:
        b = st.take(k)
        h.update(b.counts_of(slice(0, 2)).tobytes())
        h.update(b.counts.tobytes())
    h.update(st.prefix_counts(10**13 + 5).tobytes())
    return h.hexdigest()[:32]


@pytest.mark.parametrize("version", [3, 4])
def test_pinned_numbers_of_each_version(version):
    assert _digest(version) == PINNED[version]


def test_versions_3_and_4_draw_independent_data():
    """Their own Philox keys: on one key version 4's small nodes in its first 2^29 records would
    reuse version 3's counters (batches of 1e3 records then equal in ~55% of seeds). Over 300
    seeds: equal batches as often as for independent Binomial(1000, 1/2) pairs (~1.8%), and the
    sizes of the deviations from the mean of batches of 1e6 uncorrelated."""
    equal, dev3, dev4 = 0, [], []
    for s in range(300):
        v3 = counts_stream(BinaryCoordinates([0.5, 0.3]), s, version=3)
        v4 = counts_stream(BinaryCoordinates([0.5, 0.3]), s)
        a, b = v3.take(1000).counts, v4.take(1000).counts
        equal += int(a[0] == b[0])
        dev3.append(np.abs(v3.take(10**6).counts - np.array([5e5, 3e5])))
        dev4.append(np.abs(v4.take(10**6).counts - np.array([5e5, 3e5])))
    assert equal <= 18  # binomial(300, 0.018): mean 5.4, P(> 18) < 1e-5
    dev3, dev4 = np.array(dev3), np.array(dev4)
    for j in range(2):
        assert abs(np.corrcoef(dev3[:, j], dev4[:, j])[0, 1]) < 4 / math.sqrt(300)


def test_nodes_above_2_to_the_29_take_the_large_sampler():
    """`split_half` routes a node of 2^30 records to the large-population sampler. The two
    samplers share HRUA and its uniforms, so they differ rarely at 2^30 (4 in 2e6 draws): a
    state where they differ, found by scanning keys, pins the routing."""
    from problems.counts import kernels as K
    from problems.counts import large_hypergeometric as L
    from problems.counts import philox as P

    def state():
        st = np.zeros(P.STATE_WORDS, dtype=np.uint64)
        st[4], st[5], st[10] = 12345, 409510, 4
        return st

    N, c = 2**30, 784814428
    large = L.hypergeometric_large(state(), c, N - c, N >> 1)
    assert large != K.hypergeometric(state(), c, N - c, N >> 1)
    assert K.split_half(state(), c, N) == large


def test_compiled_walk_equals_the_numpy_walk_up_to_1e13():
    """Random take sizes from 1 to 1e13 (crossing nodes of every level up to 2^43) and random
    column reads, against `ReferenceCoordinateCountsStream` (numpy's sampler to 2^29, the
    Python twin of the large-population one above)."""
    rs = np.random.default_rng(7)
    sizes = [0, 1, 17, 1000, 10**6, 10**9, 3 * 10**9, 10**11, 10**12, 10**13]
    for seed in range(3):
        a = counts_stream(BinaryCoordinates(P4), seed)
        b = ReferenceCoordinateCountsStream(BinaryCoordinates(P4), seed, **V4)
        for _ in range(40):
            k = int(rs.choice(sizes))
            ba, bb = a.take(k), b.take(k)
            cols = [slice(0, 2), slice(None), slice(3, 4)][rs.integers(3)]
            np.testing.assert_array_equal(ba.counts_of(cols), bb.counts_of(cols))
        assert a.digest() == b.digest()


def test_a_stream_longer_than_2_to_the_50_starts_another_block():
    a = counts_stream(BinaryCoordinates(P4), 3)
    b = ReferenceCoordinateCountsStream(BinaryCoordinates(P4), 3, **V4)
    for m in (2**50 - 1, 2**50, 2**50 + 12345, 3 * 2**50 + 7):
        np.testing.assert_array_equal(a.prefix_counts(m), b.prefix_counts(m))
    frac = a.prefix_counts(3 * 2**50) / (3 * 2**50)
    assert np.all(np.abs(frac - P4) < 1e-6)


def test_prefix_consistent_whatever_the_takes():
    layout = BinaryCoordinates(np.full(3, 0.4))
    for seed in range(3):
        pattern = np.random.default_rng(seed)
        stream = counts_stream(layout, seed)
        total, marks = np.zeros(3, dtype=np.int64), {}
        for _ in range(40):
            batch = stream.take(int(pattern.choice([1, 999, 10**7, 10**10, 4 * 10**11])))
            if pattern.random() < 0.5:  # one coordinate first (its path moves alone)
                batch.counts_of(slice(0, 1))
            total += batch.counts
            marks[stream.used] = total.copy()
        for m, want in marks.items():
            np.testing.assert_array_equal(counts_stream(layout, seed).prefix_counts(m), want)


def _binom_chi2(counts: np.ndarray, k: int, p: float) -> float:
    """Chi-square p-value of counts against Binomial(k, p), 16 bins of equal width over
    +-4 sd (normal cdf: at k = 1e12 its error is ~1e-7 of a bin)."""
    mean, sd = k * p, math.sqrt(k * p * (1 - p))
    edges = np.concatenate([[-np.inf], mean + sd * np.linspace(-3, 3, 15), [np.inf]])
    expected = np.diff(stats.binom.cdf(np.floor(edges), k, p)) * len(counts) if k < 10**8 else \
        np.diff(stats.norm.cdf((np.floor(edges) + 0.5 - mean) / sd)) * len(counts)
    observed = np.histogram(counts, bins=edges)[0]
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


@pytest.mark.slow
def test_batches_of_1e12_are_binomial_and_independent():
    """600 seeds: a batch of 1e12 records that starts at 3.3e12 (reached by O2-like reads of
    two coordinates), per coordinate Binomial(1e12, p_j) (chi-square; a shift of the mean by
    half a standard deviation is rejected), uncorrelated across coordinates and with the next
    batch of 1e12."""
    p = np.array([0.5, 0.3, 0.02])
    k, offset, seeds = 10**12, 33 * 10**11 + 12345, 600
    first, second = [], []
    for s in range(seeds):
        stream = counts_stream(BinaryCoordinates(p), np.random.SeedSequence([41, s]))
        pattern = np.random.default_rng(s)
        while stream.used < offset:
            stream.take(int(min(offset - stream.used, pattern.integers(1, offset // 3)))) \
                .counts_of(slice(0, 2))
        first.append(stream.take(k).counts)
        second.append(stream.take(k).counts)
    first, second = np.array(first), np.array(second)
    for j, pj in enumerate(p):
        assert _binom_chi2(first[:, j], k, pj) > 1e-3, j
        assert _binom_chi2(second[:, j], k, pj) > 1e-3, j
        shifted = pj + 0.5 * math.sqrt(pj * (1 - pj) / k)
        assert _binom_chi2(first[:, j], k, shifted) < 1e-3, j
    both = np.hstack([first, second])
    r = np.corrcoef(both.T)[np.triu_indices(6, 1)]
    assert np.all(np.abs(r) < 4 / math.sqrt(seeds)), r


def test_a_problem_stream_draws_the_version_asked_for():
    pr = get_problem("hard_valley", d=4)
    assert pr.stream(0, data="counts").levels == TOP_LEVELS
    assert pr.stream(0, data="counts", counts_version=3).levels == 29
    assert isinstance(pr.stream(0, data="counts"), CoordinateCountsStream)


SPEC = """
name = "v"
seed = 1
repetitions = 1
calibration = "theory"
data = "counts"
{extra}
[grid]
n = [100000]
d = [4]
eps = [1.0]
delta = [1e-6]

[[problem]]
name = "hard_valley"

[[algorithm]]
name = "tree_spider"
params = {{ T = 5 }}
"""


def test_a_spec_chooses_its_version_and_a_bad_one_is_one_line():
    assert parse_spec(SPEC.format(extra="")).counts_stream == STREAM_VERSION
    spec = parse_spec(SPEC.format(extra="counts_stream = 3"))
    assert spec.counts_stream == 3 and all(c.counts_stream == 3 for c in spec.cells())
    # not part of the key: a version-3 cell keeps the key stores made before versions were chosen
    assert spec.cells()[0].key == parse_spec(SPEC.format(extra="")).cells()[0].key
    for bad in ("counts_stream = 5", "counts_stream = true", 'counts_stream = "4"'):
        with pytest.raises(SpecError, match="counts_stream") as err:
            parse_spec(SPEC.format(extra=bad))
        assert "\n" not in str(err.value) and "3, 4" in str(err.value)


def test_a_store_of_one_version_refuses_a_spec_of_the_other(tmp_path):
    from bench.runner import run_sweep

    spec3 = parse_spec(SPEC.format(extra="counts_stream = 3"))
    out = tmp_path / "s.sqlite"
    run_sweep(spec3, out, jobs=1, progress=False)
    with Store(out, create=False) as st:
        assert st.meta()["counts_stream_version"] == "3"
        st.check_stream_version(3)
        with pytest.raises(StoreError, match=r"version 3; this spec draws version 4.*counts_stream = 3"):
            st.check_stream_version(4)
    with pytest.raises(StoreError, match="made by counts stream version 3"):
        run_sweep(parse_spec(SPEC.format(extra="")), out, jobs=1, progress=False)
    # a records-only spec neither checks nor rewrites the store's version
    records_only = parse_spec(SPEC.format(extra="").replace('data = "counts"', 'data = "records"'))
    run_sweep(records_only, out, jobs=1, progress=False)
    with Store(out, create=False) as st:
        assert st.meta()["counts_stream_version"] == "3"
    # the version reached the runs: the stored digest is that of version 3's first records
    with Store(out, create=False) as st:
        digest = st.conn.execute("SELECT data_digest FROM cells WHERE data = 'counts'").fetchone()[0]
    from bench.cells import Cell

    cell: Cell = spec3.cells()[0]
    pr = get_problem("hard_valley", d=4)
    assert digest == pr.stream(cell.data_seed(), budget=cell.n, data="counts", counts_version=3).digest(64)
    assert digest != pr.stream(cell.data_seed(), budget=cell.n, data="counts").digest(64)


def test_dprates_run_takes_the_version_and_refuses_a_bad_one():
    from tests.cli import run_clis

    exe = Path(sys.executable).parent / "dprates"  # the installed command, in this environment
    args = ["run", "tree_spider", "--problem", "hard_valley", "--n", "1e5", "--d", "4",
            "--eps", "1", "--param", "T=3", "--calibration", "theory"]
    bad, ok3, ok4 = run_clis([*args, "--counts-stream", "7"], [*args, "--counts-stream", "3", "--json"],
                             [*args, "--json"], cwd=Path.cwd(), exe=[str(exe)], env=None)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "counts_stream=7 is invalid: must be one of 3, 4" in bad.stderr
    assert ok3.returncode == 0 and ok4.returncode == 0, ok3.stderr + ok4.stderr
    import json

    d3, d4 = json.loads(ok3.stdout.splitlines()[0]), json.loads(ok4.stdout.splitlines()[0])
    assert d3["data_digest"] != d4["data_digest"]
    assert (d3["counts_stream"], d4["counts_stream"]) == (3, 4)
