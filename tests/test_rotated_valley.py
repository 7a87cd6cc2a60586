"""hard_valley_rotated (problems/rotated.py): the valley composed with a fixed rotation Q.

Every check is against an independent reference: finite differences of the problem's own
losses, the unrotated valley at Q^T x, numpy's eigendecomposition, brute force over the
record support, record mode (a counts run against the same run on materialized records, and
a two-sample test of counts-mode batch gradients against record-mode ones), and a whole
private run through the library's single-run path."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import problems
from algorithms import Privacy, get_algorithm
from problems.counts.stream import MaterializedStream
from problems.evaluation.metrics import sosp_alpha
from tests.finite_differences import central_grad as _central_grad

NAME = "hard_valley_rotated"


def _pair(d: int, **kw):
    """(rotated instance, the valley with the same parameters)."""
    rot = problems.get_problem(NAME, d=d, **kw)
    kw.pop("rotation_seed", None)
    return rot, problems.get_problem("hard_valley", d=d, **kw)



def _points(rng, d, count=4):
    """Random points off the saddle: in the valley's reach (|x| up to 3) and near the saddle."""
    return [rng.standard_normal(d) * s for s in (0.05, 0.4, 1.0, 3.0)][:count]


def test_registered_with_data_modes_params_and_constants():
    assert NAME in problems.available()
    assert problems.character(NAME) == "hard"
    assert problems.data_modes(NAME) == ("counts", "records")
    rot, valley = _pair(10)
    assert rot.params() == {**valley.params(), "rotation_seed": 0}
    assert rot.constants == valley.constants  # rotation preserves every norm
    assert "rotation" in problems.describe()[NAME]
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match="rotation_seed"):
            problems.get_problem(NAME, d=4, rotation_seed=bad)


@pytest.mark.parametrize("d", [2, 5, 10])
def test_q_is_a_seeded_rotation(d):
    a = problems.get_problem(NAME, d=d, rotation_seed=3)
    b = problems.get_problem(NAME, d=d, rotation_seed=3)
    c = problems.get_problem(NAME, d=d, rotation_seed=4)
    np.testing.assert_array_equal(a.Q, b.Q)
    assert not np.allclose(a.Q, c.Q)
    np.testing.assert_allclose(a.Q @ a.Q.T, np.eye(d), atol=1e-13)
    assert np.linalg.det(a.Q) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("d", [5, 10])
def test_gradient_hessian_hvp_and_lambda_min_match_finite_differences(d):
    rot, _ = _pair(d, rotation_seed=7)
    rng = np.random.default_rng(11)
    for x in _points(rng, d):
        np.testing.assert_allclose(rot.population_grad(x), _central_grad(rot.population_loss, x),
                                   rtol=1e-5, atol=1e-7)
        H = rot.population_hessian(x)
        fd = np.array([_central_grad(lambda z, j=j: rot.population_grad(z)[j], x) for j in range(d)])
        np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(H, H.T, atol=1e-14)
        v = rng.standard_normal(d)
        np.testing.assert_allclose(rot.population_hvp(x, v), H @ v, rtol=1e-10, atol=1e-12)
        assert rot.population_lambda_min(x) == pytest.approx(np.linalg.eigvalsh(H)[0], abs=1e-10)


def test_per_sample_grads_match_finite_differences_and_average_to_the_population():
    rot, _ = _pair(6, rotation_seed=2)
    rng = np.random.default_rng(5)
    batch = rot.sample(5, rng)
    for x in _points(rng, 6, 3):
        grads = rot.per_sample_grads(x, batch)
        for i in range(len(batch)):
            fd = _central_grad(lambda z, i=i: rot.per_sample_losses(z, batch[i:i + 1])[0], x)
            np.testing.assert_allclose(grads[i], fd, rtol=1e-5, atol=1e-6)
        y = x + 0.3 * rng.standard_normal(6)
        np.testing.assert_allclose(rot.per_sample_grad_diffs(x, y, batch),
                                   grads - rot.per_sample_grads(y, batch), rtol=1e-10, atol=1e-12)
        # E z = 0 over the finite support (2^(d+2) equally likely records): the exact average
        support = _support(rot)
        np.testing.assert_allclose(rot.per_sample_grads(x, support).mean(axis=0),
                                   rot.population_grad(x), atol=1e-12)
        assert rot.per_sample_losses(x, support).mean() == pytest.approx(rot.population_loss(x),
                                                                          rel=1e-12, abs=1e-13)


@pytest.mark.parametrize("seed", [0, 1, 9])
def test_rotating_the_point_gives_the_valley_exactly(seed):
    """F_rot(Q x) = F(x), grad F_rot(Q x) = Q grad F(x), hess F_rot(Q x) = Q hess F(x) Q^T and
    the per-sample losses likewise (to rounding: Q^T Q = I in floating point)."""
    rot, valley = _pair(10, rotation_seed=seed)
    Q, rng = rot.Q, np.random.default_rng(seed)
    batch = valley.sample(8, rng)
    for x in _points(rng, 10):
        assert rot.population_loss(Q @ x) == pytest.approx(valley.population_loss(x), rel=1e-13,
                                                           abs=1e-13)
        np.testing.assert_allclose(rot.population_grad(Q @ x), Q @ valley.population_grad(x),
                                   atol=1e-13)
        np.testing.assert_allclose(rot.population_hessian(Q @ x),
                                   Q @ valley.population_hessian(x) @ Q.T, atol=1e-12)
        np.testing.assert_allclose(rot.per_sample_losses(Q @ x, batch),
                                   valley.per_sample_losses(x, batch), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(rot.per_sample_grads(Q @ x, batch),
                                   valley.per_sample_grads(x, batch) @ Q.T, atol=1e-13)
    np.testing.assert_allclose(rot.minima(), valley.minima() @ Q.T, rtol=1e-13)
    for m in rot.minima():
        assert np.linalg.norm(rot.population_grad(m)) < 1e-10


@pytest.mark.parametrize("start", [0.0, 2.0])
def test_alpha_sosp_at_x0_equals_the_valleys(start):
    rot, valley = _pair(10, rotation_seed=1, start=start)
    np.testing.assert_allclose(rot.x0, rot.Q @ valley.x0, atol=0)
    got, want = sosp_alpha(rot, rot.x0), sosp_alpha(valley, valley.x0)
    assert got["alpha"] == pytest.approx(want["alpha"], rel=1e-12)
    assert got["lambda_min"] == pytest.approx(want["lambda_min"], rel=1e-12)
    assert got["grad_norm"] == pytest.approx(want["grad_norm"], rel=1e-12, abs=1e-15)
    if start == 0.0:
        assert got["alpha"] == pytest.approx(0.915, abs=1e-3)  # the valley's documented value


@pytest.mark.parametrize("d,seed", [(10, 0), (10, 1), (10, 2), (10, 3), (20, 0), (50, 0)])
def test_negative_curvature_at_the_saddle_is_not_a_coordinate(d, seed):
    rot, valley = _pair(d, rotation_seed=seed)
    vals, vecs = np.linalg.eigh(rot.population_hessian(rot.x0))
    assert vals[0] < 0 < vals[1]  # one negative direction: a strict saddle
    v = vecs[:, 0]
    assert np.abs(v).max() < 0.9
    assert abs(v @ rot.Q[:, 0]) == pytest.approx(1.0, abs=1e-12)  # it is Q e_1
    # the separable valley's is the first axis
    assert np.abs(np.linalg.eigh(valley.population_hessian(valley.x0))[1][:, 0]).max() == 1.0


# ------------------------------------------------------------------ counts mode: exact
def _support(prob) -> np.ndarray:
    lo, hi = prob.record_low, prob.record_high
    return np.array([np.where(bits, hi, lo) for bits in itertools.product([False, True], repeat=len(lo))])


def test_counts_oracles_and_bounds_against_brute_force():
    """Counts mode is exact (the module docstring): the counts-mode means equal the means over
    the materialized records, the bounds equal the maxima over the whole support."""
    rot, _ = _pair(4, rotation_seed=5)
    rng = np.random.default_rng(1)
    support = _support(rot)
    batch = rot.stream(2, data="counts").take(777)
    rows = rot.materialize(batch)
    for _ in range(5):
        x = rng.normal(size=4)
        y = x + 0.3 * rng.normal(size=4)
        for mean, bound in (rot.counts_grad(x, batch), rot.guarded_counts_grad(x, batch)):
            np.testing.assert_allclose(mean, rot.per_sample_grads(x, rows).mean(axis=0),
                                       rtol=1e-12, atol=1e-14)
            assert bound == pytest.approx(np.linalg.norm(rot.per_sample_grads(x, support), axis=1).max(),
                                          rel=1e-12)
        np.testing.assert_allclose(rot.batch_mean_grad(x, batch), mean, rtol=1e-12, atol=1e-14)
        want_d = rot.per_sample_grad_diffs(x, y, rows).mean(axis=0)
        brute_d = np.linalg.norm(rot.per_sample_grad_diffs(x, y, support), axis=1).max()
        for mean_d, bound_d in (rot.counts_grad_diff(x, y, batch), rot.guarded_counts_grad_diff(x, y, batch)):
            np.testing.assert_allclose(mean_d, want_d, rtol=1e-12, atol=1e-14)
            assert bound_d == pytest.approx(brute_d, rel=1e-12)
        np.testing.assert_allclose(rot.batch_mean_grad_diff(x, y, batch), want_d, rtol=1e-12, atol=1e-14)
        assert rot.record_grad_bound(x) == pytest.approx(
            np.linalg.norm(rot.per_sample_grads(x, support), axis=1).max(), rel=1e-12)
        assert rot.record_grad_diff_bound(x, y) == pytest.approx(brute_d, rel=1e-12)
        assert rot.record_grad_bound(x) <= rot.constants.G * (1 + 1e-12)
        assert brute_d <= rot.constants.M * np.linalg.norm(x - y) * (1 + 1e-12)


def _mean_grads(prob, stream, x, k, reps, counts):
    out = np.empty((reps, prob.d))
    for i in range(reps):
        batch = stream.take(k)
        out[i] = prob.batch_mean_grad(x, batch) if counts else prob.per_sample_grads(x, batch).mean(axis=0)
    return out


def test_counts_mode_batch_gradients_have_record_modes_law():
    """Two-sample test at fixed seeds: 3,000 batch-mean gradients (k = 40) from the counts
    stream against 3,000 from the record stream, at a fixed off-saddle point, projected on each
    coordinate and on Q e_1: Kolmogorov-Smirnov p > 1e-3 on every projection; the same test has
    the power to reject the unrotated valley's counts-mode gradients."""
    rot, valley = _pair(6, rotation_seed=3)
    x = np.random.default_rng(0).standard_normal(6)
    k, reps = 40, 3000
    counts = _mean_grads(rot, rot.stream(123, data="counts"), x, k, reps, True)
    records = _mean_grads(rot, rot.stream(456, data="records"), x, k, reps, False)
    wrong = _mean_grads(valley, valley.stream(789, data="counts"), x, k, reps, True)
    dirs = [*np.eye(6), rot.Q[:, 0]]
    p_same = [stats.ks_2samp(counts @ u, records @ u).pvalue for u in dirs]
    assert min(p_same) > 1e-3, p_same
    assert min(stats.ks_2samp(wrong @ u, records @ u).pvalue for u in dirs) < 1e-6


@pytest.mark.parametrize("alg", ["gaussian_spider", "adaptive_tree_spider"])
def test_counts_run_equals_record_run_on_materialized_records(alg):
    """A counts-mode run and a record-mode run on the records materialized from the same counts
    make the same steps and iterates (so counts mode reproduces record mode's distribution)."""
    rot = problems.get_problem(NAME, d=5, rotation_seed=1)
    seed = np.random.SeedSequence([4, 0])

    def run(data):
        return get_algorithm(alg)(target_alpha=0.3).run(rot, data, Privacy(0.1), np.random.default_rng(9))

    counts = run(rot.stream(seed, budget=10**6, data="counts"))
    records = run(MaterializedStream(rot.stream(seed, budget=10**6, data="counts"), rot.materialize))
    assert counts.n_steps == records.n_steps >= 16
    assert counts.stop_reason == records.stop_reason
    np.testing.assert_array_equal(counts.samples_at, records.samples_at)
    scale = np.abs(records.iterates).max()
    np.testing.assert_allclose(counts.iterates, records.iterates, rtol=0, atol=1e-9 * scale)


# ------------------------------------------------------------------ end to end
def test_a_private_spider_reaches_the_target_through_the_single_run_path():
    """gaussian_spider on hard_valley_rotated (d 10, eps 0.1, counts mode, the default) through
    bench.single_run.run_cell: it escapes the saddle along +-Q e_1 and reaches alpha 0.05,
    with n* within a factor 4 of the same cell on the valley (the two are equal in law)."""
    from bench.single_run import run_cell

    kw = {"params": {"target_alpha": 0.05}, "calibration": "theory", "stop_at_target": True}
    got = run_cell("gaussian_spider", NAME, 10**12, 10, 0.1, seed=3, **kw)
    m = got["metrics"]
    assert m["stop_reason"] == "target_reached"
    assert math.isfinite(m["samples_to_target"]) and m["samples_to_target"] > 0
    rot = problems.get_problem(NAME, d=10)
    x = got["trajectory"].iterates[-1]
    assert sosp_alpha(rot, x)["alpha"] <= 0.05
    assert abs(x @ rot.Q[:, 0]) / np.linalg.norm(x) > 0.9  # walked the rotated valley
    ref = run_cell("gaussian_spider", "hard_valley", 10**12, 10, 0.1, seed=3, **kw)["metrics"]
    assert 0.25 < m["samples_to_target"] / ref["samples_to_target"] < 4


# ------------------------------------------------------------------ privacy: layer 1
@pytest.mark.slow
@pytest.mark.parametrize("alg", ["gaussian_spider", "adaptive_tree_spider"])
def test_every_release_stays_within_its_told_sensitivity(alg):
    """The valley's clipping analysis carries over: the problem's own extreme records (and the
    base adversaries) replacing one record of any release move it by at most the sensitivity
    the accountant was told, with teeth (some release moves > 50% of its bound)."""
    from algorithms.privacy.audit.layers import record_run, sensitivity_check

    run = record_run(alg, problem=NAME, d=4, n=60_000, eps=1.0, seed=3, params={})
    rep = sensitivity_check(alg, run=run, max_releases=1000)
    assert rep.ok, rep.violations
    assert rep.reused == 0
    assert 0.5 < rep.max_ratio <= 1 + 1e-9
