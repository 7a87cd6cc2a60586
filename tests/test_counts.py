"""Counts data mode (exact batch statistics): distribution of the counts, prefix consistency,
per-record bounds against brute force, the identity-clip guard, and the equivalence of a
counts-mode run with a record-mode run on the records materialized from the same counts."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import problems
from algorithms import Privacy, get_algorithm
from problems.counts.layouts import BinaryCoordinates, Categorical
from problems.counts.stream import CountsClipError, CountsStream, MaterializedStream
from problems.separable import HardValley


# ------------------------------------------------------------------ distribution
def _chi2_pvalue(counts: np.ndarray, k: int, p: float) -> float:
    """Chi-square goodness of fit of integer samples to Binomial(k, p), bins with >= 5 expected."""
    lo, hi = stats.binom.ppf(1e-4, k, p), stats.binom.ppf(1 - 1e-4, k, p)
    edges = np.unique(np.linspace(lo, hi, 16).round())
    edges[0], edges[-1] = -1, k  # outer bins take the tails
    cdf = stats.binom.cdf(edges, k, p)
    expected = np.diff(cdf) * len(counts)
    observed = np.histogram(counts, bins=edges + 0.5)[0]
    keep = expected >= 5
    obs, exp = observed[keep], expected[keep]
    exp *= obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


def _batches(layout, seeds: int, offset: int, k: int, **stream_kw) -> np.ndarray:
    """Counts of records [offset, offset + k) from `seeds` streams, each reached by its own
    random take pattern (so the construction's caching is exercised)."""
    out = []
    for s in range(seeds):
        stream = CountsStream(layout, np.random.SeedSequence([11, s]), **stream_kw)
        pattern = np.random.default_rng(s)
        while stream.used < offset:
            stream.take(int(min(offset - stream.used, pattern.integers(0, offset // 3 + 2))))
        out.append(stream.take(k).counts)
    return np.array(out)


@pytest.mark.slow
def test_binary_counts_are_binomial_across_blocks_and_reject_a_shifted_p():
    """Batches that cross block and superblock boundaries (blocks of 2^10, 4 per superblock)
    have Binomial(k, p_j) counts; the same test rejects p shifted by 1% (power)."""
    p = np.array([0.5, 0.3, 0.8])
    k, offset = 5000, 3 * 1024 + 700  # crosses the block at 4096 and the superblock boundary
    c = _batches(BinaryCoordinates(p), 400, offset, k, block_levels=10, blocks_per_super=4)
    for j, pj in enumerate(p):
        assert _chi2_pvalue(c[:, j], k, pj) > 1e-3, j
        assert _chi2_pvalue(c[:, j], k, pj * 1.01) < 1e-3, j  # power against a 1% shift
    # Coordinates are independent.
    r = np.corrcoef(c.T)[np.triu_indices(3, 1)]
    assert np.all(np.abs(r) < 4 / math.sqrt(len(c)))


@pytest.mark.slow
def test_binary_counts_with_the_shipped_block_size_are_binomial():
    """The shipped construction (blocks of 2^29): a batch straddling the first block boundary."""
    p = np.array([0.5])
    k = 2000
    out = []
    for s in range(400):
        stream = CountsStream(BinaryCoordinates(p), np.random.SeedSequence([12, s]))
        stream.take(2**29 - 900)
        out.append(stream.take(k).counts[0])
    assert _chi2_pvalue(np.array(out), k, 0.5) > 1e-3
    assert _chi2_pvalue(np.array(out), k, 0.505) < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("layout", [BinaryCoordinates(np.array([0.5, 0.3])),
                                    Categorical(np.array([0.5, 0.3, 0.2]))])
def test_small_batches_inside_and_across_leaves(layout):
    """Leaves (2^8 records) are arranged at once: batches inside one leaf and straddling two
    are Binomial(k, p) too (a wrong arrangement, e.g. ones first, fails here)."""
    for offset, k in ((40, 60), (200, 100)):
        c = _batches(layout, 1500, offset, k, block_levels=12)
        for j, pj in enumerate(layout.p[:2]):
            assert _chi2_pvalue(c[:, j], k, pj) > 1e-3, (offset, j)
            assert _chi2_pvalue(c[:, j], k, pj * 1.1) < 1e-3, (offset, j)


@pytest.mark.slow
def test_categorical_counts_are_multinomial():
    """Marginals Binomial(k, p_i), sum k, and the multinomial covariance -k p_i p_j."""
    p = np.array([0.1, 0.2, 0.3, 0.4])
    k, offset = 20_000, 2 * 4096 + 100  # crosses blocks of 2^12 and superblocks of 2 blocks
    c = _batches(Categorical(p), 600, offset, k, block_levels=12, blocks_per_super=2)
    assert np.all(c.sum(axis=1) == k)
    for i, pi in enumerate(p):
        assert _chi2_pvalue(c[:, i], k, pi) > 1e-3, i
        assert _chi2_pvalue(c[:, i], k, pi * 1.01 if pi < 0.4 else pi * 0.99) < 1e-3, i
    cov = np.cov(c[:, 0], c[:, 3])[0, 1]
    want = -k * p[0] * p[3]
    se = math.sqrt(k**2 * p[0] * p[3] * (1 - p[0]) * (1 - p[3]) / len(c)) * 1.5
    assert abs(cov - want) < 4 * se


def test_disjoint_batches_are_independent():
    layout = BinaryCoordinates(np.array([0.5]))
    pairs = []
    for s in range(600):
        stream = CountsStream(layout, s, block_levels=8, blocks_per_super=2)
        pairs.append((stream.take(300).counts[0], stream.take(300).counts[0]))
    r = np.corrcoef(np.array(pairs).T)[0, 1]
    assert abs(r) < 4 / math.sqrt(600)


# ------------------------------------------------------------------ prefix consistency
@pytest.mark.parametrize("layout", [BinaryCoordinates(np.full(4, 0.5)),
                                    Categorical(np.full(6, 1 / 6))])
@pytest.mark.parametrize("levels", [5, 29])
def test_prefix_consistent_under_random_take_patterns(layout, levels):
    """The counts of records [0, m) do not depend on how they were taken."""
    kw = {"block_levels": levels, "blocks_per_super": 3}
    for seed in range(5):
        pattern = np.random.default_rng(seed)
        stream = CountsStream(layout, seed, **kw)
        total, marks = np.zeros(layout.shape, dtype=np.int64), {}
        for _ in range(60):
            k = int(pattern.choice([0, 1, 7, 33, 200, 5000]))
            total += stream.take(k).counts
            marks[stream.used] = total.copy()
        for m, want in marks.items():
            np.testing.assert_array_equal(CountsStream(layout, seed, **kw).prefix_counts(m), want)
        one = CountsStream(layout, seed, **kw).take(stream.used).counts
        np.testing.assert_array_equal(one, total)


def test_prefix_counts_define_every_record():
    """Each single record is a valid record: its counts are a 0/1 vector (binary) or one atom."""
    for layout, check in ((BinaryCoordinates(np.array([0.5, 0.2])), lambda c: set(c) <= {0, 1}),
                          (Categorical(np.array([0.5, 0.25, 0.25])), lambda c: c.sum() == 1)):
        stream = CountsStream(layout, 3, block_levels=4, blocks_per_super=2)
        for _ in range(100):
            assert check(stream.take(1).counts)


def test_huge_prefixes_are_cheap_and_consistent():
    layout = BinaryCoordinates(np.full(12, 0.5))
    a = CountsStream(layout, 5)
    first = a.take(10**10).counts
    second = a.take(12345).counts
    b = CountsStream(layout, 5)
    np.testing.assert_array_equal(b.prefix_counts(10**10 + 12345), first + second)
    assert np.all(np.abs(first - 5e9) < 6 * math.sqrt(2.5e9))
    # Memory: one cached node per level (O(d log n)), not one per take.
    assert len(a._trail) <= a.levels + 1


def test_counts_stream_budget_and_validation():
    stream = problems.get_problem("hard_valley", d=3).stream(0, budget=100, data="counts")
    stream.take(60)
    with pytest.raises(problems.StreamExhausted):
        stream.take(41)
    with pytest.raises(ValueError, match="data='rows' is invalid"):
        problems.get_problem("hard_valley", d=3).stream(0, data="rows")
    with pytest.raises(ValueError, match="phase_retrieval"):
        problems.get_problem("phase_retrieval", d=3).stream(0, data="counts")
    with pytest.raises(ValueError, match="block_levels=30"):
        CountsStream(BinaryCoordinates([0.5]), 0, block_levels=30)


# ------------------------------------------------------------------ problems' counts oracles
COUNTS_PROBLEMS = ["strict_saddle", "hard_valley", "hard_ramp", "logistic", "mean_estimation"]


def _support(prob) -> np.ndarray:
    """Every record of the support, enumerated (the brute-force reference)."""
    if hasattr(prob, "atoms"):
        return prob.atoms
    lo, hi = prob.record_low, prob.record_high
    return np.array([np.where(bits, hi, lo)
                     for bits in itertools.product([False, True], repeat=len(lo))])


@pytest.mark.parametrize("name", COUNTS_PROBLEMS)
def test_counts_oracles_and_bounds_against_brute_force(name):
    prob = problems.get_problem(name, d=4)
    rng = np.random.default_rng(1)
    support = _support(prob)
    batch = prob.stream(2, data="counts").take(777)
    rows = prob.materialize(batch)
    assert len(rows) == 777
    for _ in range(5):
        x = rng.normal(size=4)
        y = x + 0.3 * rng.normal(size=4)
        np.testing.assert_allclose(prob.batch_mean_grad(x, batch),
                                   prob.per_sample_grads(x, rows).mean(axis=0), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(prob.batch_mean_grad_diff(x, y, batch),
                                   prob.per_sample_grad_diffs(x, y, rows).mean(axis=0),
                                   rtol=1e-12, atol=1e-14)
        brute = np.linalg.norm(prob.per_sample_grads(x, support), axis=1).max()
        assert prob.record_grad_bound(x) == pytest.approx(brute, rel=1e-12)
        brute_d = np.linalg.norm(prob.per_sample_grad_diffs(x, y, support), axis=1).max()
        assert prob.record_grad_diff_bound(x, y) == pytest.approx(brute_d, rel=1e-12)
        # The engine's guard bound covers every record of the batch (atoms: exactly its max).
        mean, bound = prob.counts_grad(x, batch)
        np.testing.assert_allclose(mean, prob.batch_mean_grad(x, batch), rtol=1e-12, atol=1e-15)
        in_batch = np.linalg.norm(prob.per_sample_grads(x, rows), axis=1).max()
        assert in_batch * (1 - 1e-12) <= bound <= brute * (1 + 1e-12)
        mean_d, bound_d = prob.counts_grad_diff(x, y, batch)
        np.testing.assert_allclose(mean_d, prob.batch_mean_grad_diff(x, y, batch), rtol=1e-12,
                                   atol=1e-15)
        in_batch_d = np.linalg.norm(prob.per_sample_grad_diffs(x, y, rows), axis=1).max()
        assert in_batch_d * (1 - 1e-12) <= bound_d <= brute_d * (1 + 1e-12)
        if name == "logistic":
            assert bound == pytest.approx(in_batch, rel=1e-12)
        # The bounds the engine clips at (G; M |x - y|) are at least the per-record bounds.
        assert brute <= prob.constants.G * (1 + 1e-12) or name == "mean_estimation"
        assert brute_d <= prob.constants.M * np.linalg.norm(x - y) * (1 + 1e-12)


def test_separable_records_are_two_point_with_the_stated_moments():
    prob = problems.get_problem("hard_valley", d=6)
    z = prob.sample(200_000, np.random.default_rng(0))
    half = prob.tau / math.sqrt(prob.d)
    assert set(np.unique(np.abs(z[:, :2]))) == {prob.noise}
    assert set(np.unique(np.abs(z[:, 2:]).round(15))) == {round(half, 15)}
    np.testing.assert_allclose(z.mean(axis=0), 0, atol=5 * prob.noise / math.sqrt(len(z)))
    assert np.var(z[:, 0]) == pytest.approx(prob.noise**2, rel=1e-2)  # s^2, not s^2/3


# ------------------------------------------------------------------ the clip guard
class _Understated(HardValley):
    """A problem whose stated constants are too small: clipping would bite."""

    def __init__(self, shrink_G: float = 1.0, shrink_M: float = 1.0) -> None:
        super().__init__(d=5)
        self._sG, self._sM = shrink_G, shrink_M

    @property
    def constants(self):
        c = super().constants
        return type(c)(G=c.G * self._sG, M=c.M * self._sM, rho=c.rho, B0=c.B0)


@pytest.mark.parametrize("alg", ["gaussian_spider", "adaptive_tree_spider"])
def test_clip_guard_raises_before_any_noise(alg):
    prob = _Understated(shrink_G=0.2)
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(CountsClipError, match=r"O1 clip threshold 0\.4\d+ is below the per-record "
                                              r"bound 0\.4\d+|O1 clip threshold .* is below"):
        get_algorithm(alg)(target_alpha=0.1).run(
            prob, prob.stream(0, budget=10**7, data="counts"), Privacy(0.5), rng)
    assert rng.bit_generator.state == before  # no noise was drawn
    # Record mode clips instead and runs.
    traj = get_algorithm(alg)(target_alpha=0.1).run(
        prob, prob.stream(0, budget=10**5), Privacy(0.5), np.random.default_rng(0))
    assert traj.n_steps > 0


def test_clip_guard_on_o2():
    prob = _Understated(shrink_M=0.05)
    with pytest.raises(CountsClipError, match="O2 clip threshold"):
        get_algorithm("gaussian_spider")(target_alpha=0.1).run(
            prob, prob.stream(0, budget=10**8, data="counts"), Privacy(math.inf),
            np.random.default_rng(0))


def test_privacy_verification_refuses_counts_mode():
    prob = problems.get_problem("hard_valley", d=3)
    with pytest.raises(ValueError, match="record mode"):
        get_algorithm("gaussian_spider")(planted_faults=("noise_third",), target_alpha=0.1).run(
            prob, prob.stream(0, budget=10**6, data="counts"), Privacy(1.0), np.random.default_rng(0))


# ------------------------------------------------------------------ equivalence
#: (problem, parameters, budget, target alpha): each run makes tens to thousands of steps.
EQUIV = {
    "strict_saddle": ({"d": 5}, 10**6, 0.1),
    "hard_valley": ({"d": 5}, 10**6, 0.3),
    "logistic": ({"d": 5, "n_atoms": 300}, 10**6, 0.05),
    "mean_estimation": ({"d": 5}, 10**6, 0.05),
    "logistic_breast_cancer": ({"d": 10}, 10**6, 0.05),  # needs scikit-learn (test extras)
}


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.1, math.inf])
@pytest.mark.parametrize("alg", ["gaussian_spider", "tree_spider", "adaptive_tree_spider"])
@pytest.mark.parametrize("name", list(EQUIV))
def test_counts_run_equals_record_run_on_materialized_records(name, alg, eps):
    params, budget, target = EQUIV[name]
    if name == "logistic_breast_cancer":
        pytest.importorskip("sklearn")
    prob = problems.get_problem(name, **params)
    seed = np.random.SeedSequence([4, 0])

    def run(data):
        algo = get_algorithm(alg)(target_alpha=target)
        return algo.run(prob, data, Privacy(eps), np.random.default_rng(9))

    counts = run(prob.stream(seed, budget=budget, data="counts"))
    records = run(MaterializedStream(prob.stream(seed, budget=budget, data="counts"),
                                     prob.materialize))
    assert counts.n_steps == records.n_steps >= 16
    assert counts.stop_reason == records.stop_reason
    np.testing.assert_array_equal(counts.samples_at, records.samples_at)
    np.testing.assert_array_equal(counts.records["batch"], records.records["batch"])
    scale = np.abs(records.iterates).max()
    np.testing.assert_allclose(counts.iterates, records.iterates, rtol=0, atol=1e-9 * scale)
    assert counts.samples_used == records.samples_used
