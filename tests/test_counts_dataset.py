"""The data set in counts (issue 26, points 1-3): every read a family makes of its sample
(Poisson thinning, without replacement, disjoint chunks, shuffled passes) against its exact
law by chi-square, with planted wrong splitters that must fail; the exact empirical oracles;
per-atom maps (clip at any threshold, gradient-difference clip, ellipsoid projection, the JL
projection) against record mode on materialized records; the product layout's public guard,
and issue 30's neighbouring pair."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import problems
from algorithms import Privacy, get_algorithm
from algorithms.adaptive_noise.projections import project_ellipsoid, project_ellipsoid_euclidean
from algorithms.counts_maps import clipped_grad_diff_sum, clipped_grad_sum, mapped_grad_sum
from algorithms.privacy.mechanisms import clip_rows
from algorithms.sosp.engine import o1_leaf, o2_leaf
from problems.counts.dataset import (
    CountsModeError,
    TwinStream,
    disjoint_chunks,
    empirical_loss,
    poisson_subsample,
    shuffled_passes,
    split_chunks,
    thin,
    without_replacement,
)
from problems.counts.layouts import CountsBatch
from problems.counts.stream import CountsClipError

COUNTS = np.array([3000, 1500, 400, 100])  # a data set of 5000 records over 4 atoms
N = int(COUNTS.sum())
DRAWS = 2000


def _chi2_pvalue(samples: np.ndarray, dist) -> float:
    """Chi-square goodness of fit of integer samples to a frozen scipy discrete law, ~16 bins
    between its 1e-4 quantiles, outer bins taking the tails, bins with >= 5 expected."""
    lo, hi = dist.ppf(1e-4), dist.ppf(1 - 1e-4)
    edges = np.unique(np.linspace(lo, hi, 16).round())
    edges = np.concatenate([[-1], edges[1:-1], [max(hi, samples.max()) + 1]])
    expected = np.diff(dist.cdf(edges)) * len(samples)
    observed = np.histogram(samples, bins=edges + 0.5)[0]
    keep = expected >= 5
    obs, exp = observed[keep], expected[keep]
    exp = exp * obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


def _draws(fn, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([fn(rng) for _ in range(DRAWS)])


# ------------------------------------------------------------------ Poisson thinning
def _wrong_thinning(rng: np.random.Generator, q: float) -> np.ndarray:
    """Planted wrong splitter: the right total Binomial(n, q), then a multinomial over the
    values (sampling with replacement given the total)."""
    return rng.multinomial(rng.binomial(N, q), COUNTS / N)


@pytest.mark.slow
def test_poisson_thinning_is_binomial_per_value_and_a_multinomial_splitter_fails():
    q = 0.5
    batch = CountsBatch(N, COUNTS)
    got = _draws(lambda rng: thin(batch, q, rng).counts)
    wrong = _draws(lambda rng: _wrong_thinning(rng, q))
    # record mode's own Poisson draw on the records, for the same law
    rows = np.repeat(np.arange(len(COUNTS)), COUNTS)[:, None].astype(float)
    rec = _draws(lambda rng: np.bincount(poisson_subsample(rows, q, rng)[:, 0].astype(int),
                                         minlength=len(COUNTS)))
    for i, c in enumerate(COUNTS[:3]):
        law = stats.binom(int(c), q)
        assert _chi2_pvalue(got[:, i], law) > 1e-3, i
        assert _chi2_pvalue(rec[:, i], law) > 1e-3, i
        assert _chi2_pvalue(wrong[:, i], law) < 1e-3, i
    assert _chi2_pvalue(got.sum(axis=1), stats.binom(N, q)) > 1e-3
    r = np.corrcoef(got[:, :3].T)[np.triu_indices(3, 1)]  # values thinned independently
    assert np.all(np.abs(r) < 4 / math.sqrt(DRAWS))


# ------------------------------------------------------------------ without replacement
@pytest.mark.slow
def test_without_replacement_is_multivariate_hypergeometric_and_with_replacement_fails():
    k = N // 2
    batch = CountsBatch(N, COUNTS)
    got = _draws(lambda rng: without_replacement(batch, k, rng).counts)
    wrong = _draws(lambda rng: rng.multinomial(k, COUNTS / N))  # planted: with replacement
    rows = np.repeat(np.arange(len(COUNTS)), COUNTS)
    rec = _draws(lambda rng: np.bincount(without_replacement(rows, k, rng), minlength=len(COUNTS)))
    assert np.all(got.sum(axis=1) == k) and np.all(got <= COUNTS)
    for i, c in enumerate(COUNTS[:3]):
        law = stats.hypergeom(N, int(c), k)
        assert _chi2_pvalue(got[:, i], law) > 1e-3, i
        assert _chi2_pvalue(rec[:, i], law) > 1e-3, i
        assert _chi2_pvalue(wrong[:, i], law) < 1e-3, i


# ------------------------------------------------------------------ chunks and passes
@pytest.mark.slow
def test_disjoint_chunks_partition_and_independent_draws_fail():
    """Chunks 1 and 2 together are a without-replacement draw of 3000 (exact law); chunks
    drawn each from the whole data set (planted: not disjoint) fail there."""
    sizes = [1000, 2000, 1500]
    batch = CountsBatch(N, COUNTS)
    chunks = [split_chunks(batch, sizes, rng) for rng in
              (np.random.default_rng(s) for s in range(DRAWS))]
    first_two = np.array([c[0].counts + c[1].counts for c in chunks])
    assert all(sum(ch.counts.sum() for ch in c) == sum(sizes) for c in chunks)
    assert all(np.all(sum(ch.counts for ch in c) <= COUNTS) for c in chunks)
    assert all(c[1].k == 2000 for c in chunks)
    wrong = _draws(lambda rng: rng.multivariate_hypergeometric(COUNTS, 1000)
                   + rng.multivariate_hypergeometric(COUNTS, 2000))
    rows = np.repeat(np.arange(len(COUNTS)), COUNTS)
    rec = _draws(lambda rng: sum(np.bincount(c, minlength=len(COUNTS))
                                 for c in disjoint_chunks(rows, sizes, rng)[:2]))
    for i, c in enumerate(COUNTS[:3]):
        law = stats.hypergeom(N, int(c), 3000)
        assert _chi2_pvalue(first_two[:, i], law) > 1e-3, i
        assert _chi2_pvalue(rec[:, i], law) > 1e-3, i
        assert _chi2_pvalue(wrong[:, i], law) < 1e-3, i


def test_shuffled_passes_cover_the_data_set_each_pass_and_passes_are_independent():
    batch = CountsBatch(N, COUNTS)
    rng = np.random.default_rng(3)
    firsts = []
    for _ in range(400):
        out = list(shuffled_passes(batch, 1000, 2, rng))
        assert len(out) == 10
        np.testing.assert_array_equal(sum(b.counts for b in out[:5]), COUNTS)  # a pass = S
        np.testing.assert_array_equal(sum(b.counts for b in out[5:]), COUNTS)
        firsts.append((out[0].counts[0], out[5].counts[0]))
    r = np.corrcoef(np.array(firsts).T)[0, 1]
    assert abs(r) < 4 / math.sqrt(400)
    first = np.array(firsts)[:, 0]
    assert _chi2_pvalue(first, stats.hypergeom(N, int(COUNTS[0]), 1000)) > 1e-3


def test_reads_refuse_a_data_set_beyond_the_hypergeometric_limit():
    with pytest.raises(CountsModeError, match="too large"):
        without_replacement(CountsBatch(2 * 10**9, np.array([10**9, 10**9])), 5,
                            np.random.default_rng(0))
    # Poisson thinning has no such limit: exact at n = 1e12
    big = CountsBatch(10**12, np.array([6 * 10**11, 4 * 10**11]))
    out = thin(big, 1e-9, np.random.default_rng(0))
    assert out.k == out.counts.sum() and abs(out.k - 1000) < 200


# ------------------------------------------------------------------ the data set's oracles
@pytest.mark.parametrize("name,params", [("glm", {"d": 8}), ("logistic", {"d": 5}),
                                         ("scaled_regression", {"d": 12, "n_atoms": 300})])
def test_empirical_oracles_from_counts_equal_the_records(name, params):
    prob = problems.get_problem(name, **params)
    sample = prob.stream(np.random.SeedSequence([7, 1]), data="counts").take(20_000)
    rows = prob.materialize(sample)
    x = 0.3 * np.random.default_rng(2).standard_normal(prob.d)
    assert empirical_loss(prob, x, sample) == pytest.approx(
        float(np.mean(prob.per_sample_losses(x, rows))), rel=1e-12)
    np.testing.assert_allclose(prob.counts_grad(x, sample)[0],
                               prob.per_sample_grads(x, rows).mean(axis=0), rtol=1e-10, atol=1e-14)


def test_the_data_set_at_n_1e12_is_exact_and_cheap():
    """n = 1e12 records of glm: F_S and grad F_S from the counts are within the sampling error
    of F and grad F (a 1e12-record sample is that close), and a prefix of the data set is
    consistent with the whole (paired seeds keep pairing across n)."""
    prob = problems.get_problem("glm", d=10)
    seed = np.random.SeedSequence([7, 2])
    sample = prob.stream(seed, data="counts").take(10**12)
    x = 0.2 * np.ones(10)
    assert sample.k == 10**12
    assert abs(empirical_loss(prob, x, sample) - prob.population_loss(x)) < 1e-5
    gap = np.linalg.norm(prob.counts_grad(x, sample)[0] - prob.population_grad(x))
    assert gap < 1e-5
    head = prob.stream(seed, data="counts").take(10**9)
    assert np.all(head.counts <= sample.counts)


# ------------------------------------------------------------------ per-atom maps
ATOM_PROBLEMS = [("glm", {"d": 8}), ("glm", {"d": 8, "link": "sigmoid"}), ("logistic", {"d": 5}),
                 ("scaled_regression", {"d": 12, "n_atoms": 300})]


@pytest.mark.parametrize("name,params", ATOM_PROBLEMS)
def test_per_atom_clipping_at_any_threshold_equals_record_mode(name, params):
    prob = problems.get_problem(name, **params)
    batch = prob.stream(np.random.SeedSequence([8, 0]), data="counts").take(5000)
    rows = prob.materialize(batch)
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = rng.standard_normal(prob.d)
        y = x + 0.5 * rng.standard_normal(prob.d)
        norms = np.linalg.norm(prob.per_sample_grads(x, prob.atoms), axis=1)
        dnorms = np.linalg.norm(prob.per_sample_grad_diffs(x, y, prob.atoms), axis=1)
        for clip in (0.3 * norms.min(), float(np.median(norms)), math.inf):
            want = clip_rows(prob.per_sample_grads(x, rows), clip).sum(axis=0)
            np.testing.assert_allclose(clipped_grad_sum(prob, x, batch, clip), want,
                                       rtol=1e-10, atol=1e-10 * np.abs(want).max())
        for clip in (0.3 * dnorms.min() + 1e-12, float(np.median(dnorms)), math.inf):
            want = clip_rows(prob.per_sample_grad_diffs(x, y, rows), clip).sum(axis=0)
            np.testing.assert_allclose(clipped_grad_diff_sum(prob, x, y, batch, clip), want,
                                       rtol=1e-10, atol=1e-10 * np.abs(want).max())


def test_glm_structured_clipped_sum_equals_the_generic_per_atom_one():
    prob = problems.get_problem("glm", d=30, rank=4)
    batch = prob.stream(3, data="counts").take(777)
    x, y = np.full(30, 0.4), np.full(30, -0.1)
    present = np.flatnonzero(batch.counts)
    for clip in (0.05, 0.3, math.inf):
        generic = batch.counts[present] @ clip_rows(prob.per_sample_grads(x, prob.atoms[present]), clip)
        np.testing.assert_allclose(prob.counts_clipped_sum(x, None, batch, clip), generic,
                                   rtol=1e-12, atol=1e-13)
        gd = batch.counts[present] @ clip_rows(
            prob.per_sample_grad_diffs(x, y, prob.atoms[present]), clip)
        np.testing.assert_allclose(prob.counts_clipped_sum(x, y, batch, clip), gd, rtol=1e-12,
                                   atol=1e-13)


@pytest.mark.parametrize("projection", [project_ellipsoid, project_ellipsoid_euclidean])
def test_ellipsoid_projection_per_atom_equals_record_mode(projection):
    prob = problems.get_problem("scaled_regression", d=12, n_atoms=300)
    batch = prob.stream(5, data="counts").take(3000)
    rows = prob.materialize(batch)
    a = 40.0 * np.arange(1, 13) ** 1.5  # an ellipsoid that bites on most gradients
    x = np.random.default_rng(0).uniform(-1, 1, 12)
    want = projection(prob.per_sample_grads(x, rows), a).sum(axis=0)
    got = mapped_grad_sum(prob, x, batch, lambda g: projection(g, a), "ellipsoid projection")
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert np.linalg.norm(want - prob.per_sample_grads(x, rows).sum(axis=0)) > 1e-3 * np.linalg.norm(want)


def test_jl_projection_of_the_atoms_clips_per_atom():
    """A JL matrix that stretches atoms past the clip: per-atom clipping on the projected GLM
    equals record mode on the same records (the guard used to raise here)."""
    prob = problems.get_problem("glm", d=20, rank=5)
    phi = 3.0 * np.random.default_rng(1).standard_normal((6, 20)) / math.sqrt(6)
    proj = prob.project(phi)
    batch = proj.stream(2, data="counts").take(4000)
    rows = proj.materialize(batch)
    w = np.random.default_rng(2).standard_normal(6)
    clip = proj.constants.G
    assert proj.record_grad_bound(w) > clip  # the stretch bites
    want = clip_rows(proj.per_sample_grads(w, rows), clip).sum(axis=0)
    np.testing.assert_allclose(clipped_grad_sum(proj, w, batch, clip), want, rtol=1e-10)


# ------------------------------------------------------------------ the public guard
def test_product_layout_guard_reads_the_whole_support_not_the_batch():
    """hard_valley (two-point coordinates): a clip between the batch's own largest norm and
    the whole support's raises on every batch alike; at the support bound it releases."""
    prob = problems.get_problem("hard_valley", d=4)
    x = np.full(4, 0.3)
    bound = prob.record_grad_bound(x)
    low_only = CountsBatch(50, np.zeros(prob.layout.shape, dtype=np.int64))  # all at low values
    rows = prob.materialize(low_only)
    in_batch = float(np.linalg.norm(prob.per_sample_grads(x, rows), axis=1).max())
    clip = 0.5 * (in_batch + bound) if in_batch < bound else 0.99 * bound
    for batch in (low_only, prob.stream(0, data="counts").take(50)):
        with pytest.raises(CountsClipError, match="hard_valley"):
            clipped_grad_sum(prob, x, batch, clip)
        np.testing.assert_allclose(clipped_grad_sum(prob, x, batch, bound),
                                   prob.per_sample_grads(x, prob.materialize(batch)).sum(axis=0),
                                   rtol=1e-12, atol=1e-14)


def test_issue_30_neighbouring_batches_behave_identically():
    """glm at x = 3 B e1 with the clip 0.201 (the atoms' median norm; the support bound is
    0.953): 100 copies of the smallest-gradient atom and its neighbour with one record replaced
    by the largest-gradient atom both release (the guard used to raise on the neighbour only),
    each equal to the record-mode clipped mean."""
    prob = problems.get_problem("glm")
    x = 3 * prob.basis[:, 0]
    norms = np.abs(prob._coef(x, prob.atoms)) * prob._atom_norms
    assert prob.record_grad_bound(x) == pytest.approx(0.9526, abs=1e-3)
    small, large = int(np.argmin(norms)), int(np.argmax(norms))
    base = np.zeros(prob.n_atoms, dtype=np.int64)
    base[small] = 100
    neighbour = base.copy()
    neighbour[small], neighbour[large] = 99, 1
    y = x + 0.1 * prob.basis[:, 1]
    for counts in (base, neighbour):
        batch = CountsBatch(100, counts)
        rows = prob.materialize(batch)
        got = o1_leaf(prob, x, batch, 0.201)  # no CountsClipError for either
        np.testing.assert_allclose(got, clip_rows(prob.per_sample_grads(x, rows), 0.201).mean(axis=0),
                                   rtol=1e-12)
        got2 = o2_leaf(prob, x, y, batch, 0.01)
        np.testing.assert_allclose(
            got2, clip_rows(prob.per_sample_grad_diffs(x, y, rows), 0.01).mean(axis=0), rtol=1e-9)


# ------------------------------------------------------------------ refusals
def test_rereading_algorithms_refuse_product_layouts_before_any_work():
    prob = problems.get_problem("hard_valley", d=4)
    for alg in ("dp_sgd", "private_spiderboost"):
        rng = np.random.default_rng(0)
        before = rng.bit_generator.state
        stream = prob.stream(0, budget=10_000, data="counts")
        with pytest.raises(CountsModeError, match=f"{alg} on problem 'hard_valley'.*product layout"):
            get_algorithm(alg)(T=3).run(prob, stream, Privacy(1.0), rng)
        assert rng.bit_generator.state == before and stream.used == 0


def test_twin_stream_reads_draw_what_counts_reads_draw():
    prob = problems.get_problem("glm", d=6)
    seed = np.random.SeedSequence([9, 9])
    counts = prob.stream(seed, data="counts").take(3000)
    twin = TwinStream(prob.stream(seed, data="counts"), prob.materialize).take(3000)
    a = poisson_subsample(counts, 0.1, np.random.default_rng(5))
    b = poisson_subsample(twin, 0.1, np.random.default_rng(5))
    np.testing.assert_array_equal(prob.materialize(a), b)
    assert type(b) is np.ndarray or b.source is None  # a subsample is plain records


def test_reads_refuse_product_layout_counts():
    coords = CountsBatch(10, np.array([3, 7, 10]))  # per-coordinate counts: they sum to 20
    for read in (lambda: thin(coords, 0.5, np.random.default_rng(0)),
                 lambda: without_replacement(coords, 4, np.random.default_rng(0)),
                 lambda: split_chunks(coords, [5, 5], np.random.default_rng(0))):
        with pytest.raises(CountsModeError, match="atoms layout"):
            read()
