"""Privacy verification in three layers (issue 6): sensitivity (property tests), noise
distribution (KS with power), black-box audit; every planted bug must be flagged."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from algorithms.privacy.audit.audit import audit, eps_lower_bound
from algorithms.privacy.audit.layers import check_releases, noise_check, record_run, sensitivity_check

ALGS = ["gaussian_spider", "tree_spider", "adaptive_tree_spider"]
RUNS = {}


#: Every registered problem (layer 1 runs on each in its own record layout).
PROBLEMS = ["strict_saddle", "hard_valley", "hard_ramp", "phase_retrieval", "logistic",
            "mean_estimation", "logistic_breast_cancer", "glm"]
DIMS = {"logistic_breast_cancer": 30}


def recorded(alg: str, problem: str, scope: str | None = None):
    key = (alg, problem, scope)
    if key not in RUNS:
        if problem == "logistic_breast_cancer":
            pytest.importorskip("sklearn")
        params = {"tree_scope": scope} if scope else {}
        RUNS[key] = record_run(alg, problem=problem, d=DIMS.get(problem, 4), n=60_000, eps=1.0,
                               seed=3, params=params)
    return RUNS[key]


# ---------------------------------------------------------------- layer 1: sensitivity
extreme = st.one_of(st.floats(-1e9, 1e9, allow_nan=False), st.sampled_from([-1e9, 1e9, 0.0]))


@pytest.mark.slow
@pytest.mark.parametrize("alg", ALGS)
@pytest.mark.parametrize("problem", PROBLEMS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_release_moves_at_most_its_told_sensitivity(alg, problem, data):
    """Any record of the problem's layout (huge values of either sign in any column) replacing
    one record of any release's batch, from the same state: the leaf moves by <= the
    sensitivity the accountant was told; for the tree the node changes stay within the told
    nodes and nodes x s^2."""
    run = recorded(alg, problem)
    width = run.data.shape[1]
    row = data.draw(st.lists(extreme, min_size=width, max_size=width))
    rep = check_releases(run, [np.array(row)], positions=2, max_releases=60)
    assert rep.ok, rep.violations
    assert rep.max_ratio <= 1 + 1e-9


@pytest.mark.parametrize("alg,scope", [("gaussian_spider", None), ("tree_spider", "global"),
                                       ("tree_spider", "epoch"), ("adaptive_tree_spider", "global"),
                                       ("adaptive_tree_spider", "epoch")])
def test_worst_case_adversary_nearly_reaches_the_bound(alg, scope):
    """The check has teeth: the built-in adversaries push some release to > 75% of its bound,
    and for the tree the touched nodes reach the told count's order."""
    run = recorded(alg, "strict_saddle", scope)
    rep = sensitivity_check(alg, run=run)
    assert rep.ok, rep.violations
    assert rep.max_ratio > 0.75
    assert rep.reused == 0
    if alg != "gaussian_spider":
        depth = run.traj.params["tree_depth"]
        told = run.traj.params["tree_nodes"]
        assert told == (2 * depth if scope == "global" else depth)
        assert depth <= rep.tree_nodes_touched <= told


@pytest.mark.slow
@pytest.mark.parametrize("alg", ALGS)
@pytest.mark.parametrize("problem", PROBLEMS)
def test_layer1_on_every_problem_with_its_own_adversaries(alg, problem):
    """Each problem's own extreme records (`Problem.adversarial_records`) against every release:
    within the told sensitivity, one pass over the data (by position: logistic and mean
    estimation repeat records legitimately), and with teeth: some release moves > 50% of its
    bound (> 5% for the fixed-batch tree Spider, whose leaf sensitivity 2 M D / B is set by
    the longest step D it allows, longer than the steps its runs take)."""
    run = recorded(alg, problem)
    rep = sensitivity_check(alg, run=run, max_releases=1000)
    assert rep.ok, rep.violations
    assert rep.reused == 0
    assert (0.05 if alg == "tree_spider" else 0.5) < rep.max_ratio <= 1 + 1e-9


#: The first-order family, each on a short run (multi-pass runs keep every batch in memory).
FO_PARAMS = {"dp_gd": {"T": 15}, "dp_sgd": {"T": 15, "b": 300}, "noisy_sgd": {"b": 100},
             "tree_private_spider": {"T": 2, "D": 3, "b": 48, "stop_rule": "none"},
             "private_spiderboost": {"T": 30, "q": 10, "b": 300}}


def fo_run(alg: str, problem: str, faults: tuple[str, ...] = ()):
    if problem == "logistic_breast_cancer":
        pytest.importorskip("sklearn")
    return record_run(alg, problem=problem, d=DIMS.get(problem, 4), n=3000, eps=1.0, seed=3,
                      params=FO_PARAMS[alg], faults=faults)


@pytest.mark.slow
@pytest.mark.parametrize("alg", list(FO_PARAMS))
@pytest.mark.parametrize("problem", PROBLEMS)
def test_layer1_first_order_family_on_every_problem(alg, problem):
    """The same replace-one check for the first-order family: every release within its told
    sensitivity (the clipped sum over the release's own divisor, recomputed), single-pass
    algorithms read each record once, multi-pass ones release no more often than their
    accountant composed; and the check has teeth (some release moves > 30% of its bound)."""
    rep = sensitivity_check(alg, run=fo_run(alg, problem), max_releases=200)
    assert rep.ok, rep.violations
    assert 0.3 < rep.max_ratio <= 1 + 1e-9, rep.max_ratio


@pytest.mark.parametrize("alg", list(FO_PARAMS))
def test_layer1_flags_a_missing_clip_in_the_first_order_family(alg):
    rep = sensitivity_check(alg, run=fo_run(alg, "hard_valley", ("no_clipping",)))
    assert not rep.ok and rep.max_ratio > 10, rep.violations


@pytest.mark.parametrize("fault,alg", [
    ("no_clipping", "gaussian_spider"), ("no_clipping", "adaptive_tree_spider"),
    ("o2_wrong_step", "gaussian_spider"), ("o2_wrong_step", "adaptive_tree_spider"),
    ("tree_depth_1", "tree_spider"), ("tree_depth_1", "adaptive_tree_spider"),
    ("tree_one_leaf", "tree_spider"),
    ("reuse_sample", "gaussian_spider"), ("reuse_sample", "tree_spider"),
])
def test_layer1_flags_planted_bugs(fault, alg):
    rep = sensitivity_check(alg, faults=(fault,), seed=3)
    assert not rep.ok
    expected = {"no_clipping": "told sensitivity", "o2_wrong_step": "told sensitivity",
                "tree_depth_1": "tree nodes changed", "tree_one_leaf": "tree nodes changed",
                "reuse_sample": "more than one release"}[fault]
    assert any(expected in v for v in rep.violations), rep.violations


def test_o2_wrong_step_is_harmless_with_a_bounded_step():
    """The fixed-batch tree Spider's step bound D makes its leaf sensitivity 2 M D / B hold
    whatever step the batch rule looked at: enforcement, not trust (so not a bug there)."""
    assert sensitivity_check("tree_spider", faults=("o2_wrong_step",), seed=3).ok


# ---------------------------------------------------------------- layer 2: noise
@pytest.mark.slow
@pytest.mark.parametrize("alg", ALGS)
def test_released_noise_has_the_calibrated_distribution_and_the_test_has_power(alg):
    rep = noise_check(alg, eps=1.0, runs=800, seed=5)
    assert rep.ok, rep  # KS p > 1e-3 at the calibrated sigma
    assert rep.has_power, rep  # and p < 1e-3 at 2/3 and 3/2 of it
    assert 0.9 < rep.variance_ratio < 1.1
    if alg != "gaussian_spider":  # tree prefix noise variance = popcount(t) sigma^2
        assert set(rep.popcount_variance) == {1, 2, 3, 4}
        for pop, ratio in rep.popcount_variance.items():
            assert 0.75 < ratio < 1.25, (pop, ratio)


@pytest.mark.parametrize("fault,alg", [("noise_third", "gaussian_spider"),
                                       ("noise_third", "adaptive_tree_spider"),
                                       ("tree_depth_1", "tree_spider"),
                                       ("tree_depth_1", "adaptive_tree_spider"),
                                       ("tree_one_leaf", "tree_spider")])
def test_layer2_flags_planted_bugs(fault, alg):
    rep = noise_check(alg, faults=(fault,), runs=200, seed=5)
    # the node std shrinks by 3 (noise_third), sqrt(nodes) (depth 1) or sqrt(2) (one leaf)
    assert not rep.ok and rep.variance_ratio < (0.6 if fault == "tree_one_leaf" else 0.2)


# ---------------------------------------------------------------- layer 3: audit
def test_eps_lower_bound_on_known_mechanisms():
    """Randomized response with known eps: the bound is below the truth and not vacuous;
    identical distributions give 0."""
    rng = np.random.default_rng(0)
    eps = 2.0
    p = math.exp(eps) / (1 + math.exp(eps))
    neg = (rng.random(20000) > p).astype(float)  # P(1) = 1 - p on D
    pos = (rng.random(20000) < p).astype(float)  # P(1) = p on D'
    lb = eps_lower_bound(neg, pos, 1e-6)["eps_lb"]
    assert 0.8 * eps < lb <= eps
    same = eps_lower_bound(rng.normal(size=5000), rng.normal(size=5000), 1e-6)["eps_lb"]
    assert same < 0.2


@pytest.mark.slow
@pytest.mark.parametrize("alg", ALGS)
def test_audit_passes_for_every_algorithm_at_several_eps(alg):
    for eps in (0.5, 1.0, 2.0):
        r = audit(alg, eps, runs=3000, seed=11, n_jobs=2)
        assert not r.flagged, r
        assert r.eps_lb <= eps
        assert r.mu_low <= r.mu_accountant <= r.mu_high + 0.05, r  # the instance is tight


@pytest.mark.slow
def test_audit_flags_planted_noise_and_clipping_bugs():
    third = audit("gaussian_spider", 2.0, runs=10000, faults=("noise_third",), seed=11, n_jobs=2)
    assert third.eps_flagged and third.mu_flagged, third
    noclip = audit("adaptive_tree_spider", 2.0, runs=3000, faults=("no_clipping",), seed=11, n_jobs=2)
    assert noclip.eps_flagged and noclip.eps_lb > 5, noclip


# ---------------------------------------------------------------- layer 3: several releases
def test_tree_prefix_covariance_by_hand():
    """T = 4: [1,1] = node (0,0); [1,2] = (1,0); [1,3] = (1,0) + (0,2); [1,4] = (2,0)."""
    from algorithms.privacy.audit.multi_release_audit import tree_prefix_cov

    expected = np.array([[1, 0, 0, 0], [0, 1, 1, 0], [0, 1, 2, 0], [0, 0, 0, 1]], dtype=float)
    np.testing.assert_array_equal(tree_prefix_cov(4), expected)
    # A canary entering leaf 1 and leaving at leaf 3 shifts releases 1 and 2; the optimal test
    # sees node (0,0) +1, node (1,0) +1 and, through release 3 - release 2, node (0,2) -1:
    # three unit shifts, mu^2 = 3.
    m = np.array([1.0, 1.0, 0.0, 0.0])
    assert m @ np.linalg.solve(expected, m) == pytest.approx(3.0, rel=1e-12)


@pytest.mark.slow
def test_multi_release_audit_of_a_tree_restart_in_global_scope():
    """A canary in the O1 batch of the restart at step 9 shifts releases 9..16 by its leaf move
    and the restart at 17 removes it; the optimal test sees sqrt(8) node shifts out of the
    accountant's 2 x depth = 12 (T = 32, depth 6), and the held-out linear test measures it."""
    from algorithms.privacy.audit.multi_release_audit import multi_release_audit

    r = multi_release_audit("tree_restart", eps=8.0, runs=4000, seed=3, n_jobs=2)
    window = r.shift_profile[8:16]
    outside = np.concatenate([r.shift_profile[:8], r.shift_profile[16:]])
    assert np.all(np.abs(window + 1) < 0.12), r.shift_profile  # moved by -told (the canary)
    assert abs(outside.mean()) < 0.08, r.shift_profile
    assert r.mu_exact == pytest.approx(math.sqrt(8 / 12) * r.mu_accountant, rel=1e-9)
    assert r.mu_low <= r.mu_exact <= r.mu_high, r  # the audit measures what the tree releases
    assert not r.flagged, r


@pytest.mark.slow
def test_multi_release_audit_catches_a_tree_that_miscounts_its_nodes():
    """Told depth nodes in global scope (the second leaf forgotten): the sequence's mu is
    sqrt(8/6) of the claim; told one node: sqrt(8) of it."""
    from algorithms.privacy.audit.multi_release_audit import multi_release_audit

    one_leaf = multi_release_audit("tree_restart", eps=8.0, runs=4000, faults=("tree_one_leaf",),
                                   seed=3, n_jobs=2)
    assert one_leaf.mu_exact == pytest.approx(math.sqrt(8 / 6) * one_leaf.mu_accountant, rel=1e-9)
    assert one_leaf.mu_low <= one_leaf.mu_exact <= one_leaf.mu_high, one_leaf
    assert one_leaf.flagged, one_leaf
    depth1 = multi_release_audit("tree_restart", eps=8.0, runs=1000, faults=("tree_depth_1",),
                                 seed=3, n_jobs=2)
    assert depth1.flagged and depth1.mu_empirical > 2.5 * depth1.mu_accountant, depth1


@pytest.mark.slow
def test_multi_release_audit_of_a_gaussian_epoch():
    """One O1 and seven O2 releases, the canary in the O1 batch: every later release carries
    its shift (the epoch's estimate accumulates), yet the composed mu is the O1 release's,
    which is the accountant's (this instance is tight); a third of the noise triples it."""
    from algorithms.privacy.audit.multi_release_audit import multi_release_audit

    r = multi_release_audit("gaussian_epoch", eps=8.0, runs=4000, seed=3, n_jobs=2)
    assert np.all(np.abs(r.shift_profile + 1) < 0.05), r.shift_profile
    assert r.mu_exact == pytest.approx(r.mu_accountant, rel=0.03)  # measured noise sd
    assert r.mu_low <= r.mu_accountant <= r.mu_high and not r.flagged, r
    third = multi_release_audit("gaussian_epoch", eps=8.0, runs=1000, faults=("noise_third",),
                                seed=3, n_jobs=2)
    assert third.flagged and third.mu_empirical > 2.5 * third.mu_accountant, third


@pytest.mark.slow
@pytest.mark.parametrize("alg", list(FO_PARAMS))
def test_audit_passes_for_the_first_order_family(alg):
    """Layer 3 on the one-release audit instance: eps_lb <= eps; where the output is one
    Gaussian shift the empirical mu's 95% interval holds the accountant's mu (tight)."""
    from algorithms.privacy.audit.audit import NON_GAUSSIAN_OUTPUT

    r = audit(alg, 1.0, runs=3000, seed=11, n_jobs=2)
    assert not r.flagged and r.eps_lb <= 1.0, r
    if alg not in NON_GAUSSIAN_OUTPUT:
        assert r.mu_low <= r.mu_accountant <= r.mu_high + 0.05, r


@pytest.mark.slow
def test_audit_flags_a_third_of_dp_gd_noise():
    r = audit("dp_gd", 2.0, runs=3000, faults=("noise_third",), seed=11, n_jobs=2)
    assert r.eps_flagged and r.mu_flagged and r.mu_empirical > 2 * r.mu_accountant, r
