"""The empirical route (issue 29; `algorithms.sosp.empirical`, `problems.empirical_hessian`,
`analysis.empirical_route`): exact empirical SOSP oracles against finite differences, the
reconstruction's derived rules and chosen readings, the bounded domain on the hard instances,
counts = records, and the three privacy layers with planted bugs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import problems
from algorithms import Privacy, get_algorithm
from algorithms.privacy.accounting import gdp_eps, gdp_mu
from algorithms.sosp.empirical import (
    EmpiricalSospSpider,
    gamma_private,
    privacy_split,
    project_ball,
)
from analysis.empirical_route import statistical_reading
from problems.counts.dataset import TwinStream
from problems.empirical_hessian import empirical_alpha, empirical_oracles
from problems.evaluation.metrics import empirical_sosp_metrics

ALG = "empirical_sosp_spider"


def _run(prob, data, eps=1.0, seed=1, **kw):
    return get_algorithm(ALG)(**kw).run(prob, data, Privacy(eps, 1e-6), np.random.default_rng(seed))


# ------------------------------------------------------------------ exact empirical oracles
@pytest.mark.parametrize("name", ["hard_valley", "hard_ramp", "strict_saddle"])
def test_empirical_oracles_match_finite_differences_of_the_empirical_loss(name):
    """grad F_S and lambda_min(hess F_S) in closed form against central differences of F_S
    (the mean of the per-record losses over the records: an independent reference)."""
    prob = problems.get_problem(name, d=4)
    rng = np.random.default_rng(0)
    S = prob.sample(50, rng)

    def F(x):
        return float(np.mean(prob.per_sample_losses(x, S)))

    for x in (np.array([0.3, -0.2, 0.5, 0.1]), np.array([2.0, 1.0, -1.0, 0.4])):
        h = 1e-5
        E = np.eye(4)
        g = np.array([(F(x + h * e) - F(x - h * e)) / (2 * h) for e in E])
        hh = 1e-4
        H = np.array([[(F(x + hh * (a + b)) - F(x + hh * (a - b)) - F(x - hh * (a - b))
                        + F(x - hh * (a + b))) / (4 * hh * hh) for b in E] for a in E])
        norm, lam = empirical_oracles(prob, x[None, :], S)
        assert norm[0] == pytest.approx(np.linalg.norm(g), rel=1e-6)
        assert lam[0] == pytest.approx(np.linalg.eigvalsh((H + H.T) / 2)[0], abs=2e-5)


def test_empirical_oracles_from_counts_equal_the_records_they_count():
    prob = problems.get_problem("hard_valley", d=6)
    batch = prob.stream(3, budget=5000, data="counts").take(5000)
    rows = prob.materialize(batch)
    X = np.random.default_rng(1).normal(size=(7, 6))
    a, b = empirical_oracles(prob, X, batch), empirical_oracles(prob, X, rows)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12)
    # and F_S differs from F by the sample's own noise: grad F_S(0) = gbar != 0
    assert empirical_oracles(prob, np.zeros((1, 6)), rows)[0][0] > 0


def test_empirical_alpha_is_nan_free_and_refuses_problems_without_the_closed_form():
    prob = problems.get_problem("hard_valley", d=3)
    S = prob.sample(100, np.random.default_rng(0))
    out = empirical_alpha(prob, np.zeros((1, 3)), S)
    lam = out["lambda_min"][0]
    assert lam < 0 and out["alpha"][0] == pytest.approx(max(out["grad_norm"][0],
                                                            lam**2 / prob.constants.rho))
    with pytest.raises(ValueError, match="no closed-form empirical Hessian"):
        empirical_oracles(problems.get_problem("glm", d=4), np.zeros((1, 4)),
                          np.zeros((3, 5)))


# ------------------------------------------------------------------ the rules
def _params(n, eps, prob=None, **kw):
    prob = prob or problems.get_problem("hard_valley", d=10)
    return get_algorithm(ALG)(**kw).resolve_params(prob, n, Privacy(eps, 1e-6))


def test_private_accuracy_scales_as_the_claimed_two_thirds_power():
    """gamma_priv = (16 G B0 M x^2)^(1/3): slope 2/3 in x = sqrt(d)/(n mu), by the rules."""
    c = problems.get_problem("hard_valley", d=10).constants
    mu = gdp_mu(0.1, 1e-6)
    ns = np.array([1e5, 1e6, 1e7])
    g = [gamma_private(c, int(n), 10, mu) for n in ns]
    x = np.sqrt(10) / (ns * mu)
    assert np.polyfit(np.log(x), np.log(g), 1)[0] == pytest.approx(2 / 3, abs=1e-12)
    # Independently: gamma_priv is the smallest gamma whose feasible kappa range is non-empty,
    # [12 G^2 x^2 B0 / (M gamma^2 beta), gamma^4 (1 - beta) / (4 M^3 x^2 B0)] at beta = 3/4
    # (anchor noise and epoch noise both <= gamma over the run's A_max anchors and T steps).
    from scipy.optimize import brentq

    beta = 0.75
    for gv, xv in zip(g, x, strict=True):
        def gap(gam, xv=xv):
            lo = 12 * c.G**2 * xv**2 * c.B0 / (c.M * gam**2 * beta)
            hi = gam**4 * (1 - beta) / (4 * c.M**3 * xv**2 * c.B0)
            return math.log(hi) - math.log(lo)

        assert gv == pytest.approx(brentq(gap, 1e-12, 1e3, xtol=1e-16, rtol=1e-14), rel=1e-9)


def test_derived_noise_bounds_hold_at_the_rules_and_balance_at_three_quarters():
    """Derived: with T = B0 M / gamma^2, kappa = G gamma / M^2, A_max = 3 B0 / (M kappa) (+1)
    the anchor noise 2 G x sqrt(A_max / beta) and the epoch noise
    2 M x sqrt(kappa (T - 1) / (1 - beta)) are about gamma; they are equal at beta = 3/4."""
    p = _params(10**6, 0.1)
    d, n, c = 10, 10**6, problems.get_problem("hard_valley", d=10).constants
    anchor = math.sqrt(d) * 2 * c.G / (n * p["mu1"])
    epoch = math.sqrt(d) * 2 * c.M * math.sqrt(p["kappa"]) / (n * p["mu2"])
    assert anchor <= 1.05 * p["gamma"] and epoch <= 1.05 * p["gamma"]
    assert anchor == pytest.approx(epoch, rel=0.06)  # balanced (the ceilings and +1 aside)
    for share in (0.5, 0.9):  # off the balance one of them exceeds gamma
        q = _params(10**6, 0.1, anchor_share=share)
        a = math.sqrt(d) * 2 * c.G / (n * q["mu1"])
        e = math.sqrt(d) * 2 * c.M * math.sqrt(q["kappa"]) / (n * q["mu2"])
        assert max(a, e) > 1.05 * q["gamma"]


def test_the_gdp_filter_splits_the_budget_exactly_and_the_ledger_spends_eps():
    mu = gdp_mu(1.0, 1e-6)
    mu1, mu2 = privacy_split(mu, 7, 40, 0.75)
    assert 7 * mu1**2 + 39 * mu2**2 == pytest.approx(mu**2, rel=1e-12)
    assert privacy_split(mu, 3, 1, 0.75)[0] == pytest.approx(mu / math.sqrt(3))
    prob = problems.get_problem("hard_valley", d=4)
    tr = _run(prob, prob.sample(2000, np.random.default_rng(0)), T=30)
    assert tr.privacy_spent["eps"] == pytest.approx(1.0, rel=1e-9)
    assert gdp_eps(tr.params["privacy_mu"], 1e-6) == pytest.approx(1.0, rel=1e-9)


def test_the_filter_stops_before_one_anchor_too_many():
    """kappa below every drift: O1 at every step; A_max = 3 anchors, then the run stops (a
    public decision), having released no more than its accountant composed."""
    prob = problems.get_problem("hard_valley", d=4)
    tr = _run(prob, prob.sample(500, np.random.default_rng(0)), T=50, A_max=3, kappa=1e-300)
    assert tr.stop_reason == "anchors_exhausted" and tr.n_steps == 3
    assert (tr.records["oracle"] == 1).all() and tr.params["anchors_used"] == 3


def test_non_private_accuracy_is_theorem_a2_precision_and_target_alpha_replaces_it():
    """Chosen: gamma = alpha_mult max(gamma_priv, c_stat G sqrt(d/n)); eps = inf leaves the
    statistical precision; a direct target_alpha replaces the max."""
    c = problems.get_problem("hard_valley", d=10).constants
    p = _params(10**4, math.inf)
    assert p["gamma"] == pytest.approx(c.G * math.sqrt(10 / 1e4)) and p["gamma_priv"] == 0
    assert _params(10**4, math.inf, c_stat=0.5)["gamma"] == pytest.approx(p["gamma"] / 2)
    assert _params(10**4, 0.1, target_alpha=0.05)["gamma"] == pytest.approx(0.05)
    with pytest.raises(ValueError, match="anchor_share"):
        _params(10**4, 0.1, anchor_share=1.5)


# ------------------------------------------------------------------ the bounded domain
def test_projection_onto_the_ball():
    c = np.array([1.0, 0.0])
    assert np.allclose(project_ball(np.array([1.5, 0.0]), c, 1.0), [1.5, 0.0])
    assert np.allclose(project_ball(np.array([4.0, 4.0]), c, 1.0), c + np.array([3, 4]) / 5)
    prob = problems.get_problem("hard_valley", d=4)
    tr = _run(prob, prob.sample(2000, np.random.default_rng(0)), T=300, R=0.3)
    assert np.linalg.norm(tr.iterates - prob.x0, axis=1).max() <= 0.3 * (1 + 1e-12)


@pytest.mark.parametrize("n,eps", [(10**5, 0.1), (10**6, 0.1), (10**6, math.inf)])
def test_the_ball_holds_the_path_on_both_hard_instances(n, eps):
    """The docstring's statement, from the instances' closed forms: on hard_valley the walk to
    ||grad F|| = gamma (u = c / gamma) is inside B(x0, R) and on the sphere the valley's
    gradient is below gamma; on hard_ramp the minimum (u ~ L) is inside when gamma < k alpha."""
    valley = problems.get_problem("hard_valley", d=10)
    p = _params(n, eps, valley)
    R, gamma = p["R"], p["gamma"]
    assert valley.c / gamma < R < valley.minima()[0, 0]
    edge = np.zeros(10)
    edge[0] = R
    assert np.linalg.norm(valley.population_grad(edge)) < gamma
    ramp = problems.get_problem("hard_ramp", d=10)
    q = _params(n, eps, ramp)
    if q["gamma"] < ramp.k * ramp.alpha:
        assert ramp.minima()[0, 0] < q["R"]


# ------------------------------------------------------------------ counts = records
@pytest.mark.parametrize("name,params", [("hard_valley", {"d": 6}), ("hard_ramp", {"d": 6}),
                                         ("glm", {"d": 6})])
@pytest.mark.parametrize("eps", [1.0, math.inf])
def test_counts_run_equals_record_run_on_materialized_records(name, params, eps):
    """Product layout (the separable fast path) and atoms layout (counts_maps): the same
    releases, escapes, iterates and empirical metrics."""
    prob = problems.get_problem(name, **params)
    seed = np.random.SeedSequence([29, 1])
    kw = {"T": 400} if name == "glm" else {"T": 400, "target_alpha": 0.05}
    if name == "hard_ramp":
        kw = {"T": 400}
    a = _run(prob, prob.stream(seed, budget=20_000, data="counts"), eps, **kw)
    b = _run(prob, TwinStream(prob.stream(seed, budget=20_000, data="counts"), prob.materialize),
             eps, **kw)
    assert a.n_steps == b.n_steps == 400 and a.stop_reason == b.stop_reason
    np.testing.assert_array_equal(a.records["oracle"], b.records["oracle"])
    np.testing.assert_array_equal(a.records["escape"], b.records["escape"])
    np.testing.assert_allclose(a.records["est_norm"], b.records["est_norm"], rtol=1e-9)
    scale = max(1.0, float(np.abs(b.iterates).max()))
    np.testing.assert_allclose(a.iterates, b.iterates, rtol=0, atol=1e-9 * scale)
    assert a.privacy_spent == b.privacy_spent
    if name == "hard_valley":
        assert a.records["escape"].any() and (a.records["oracle"] == 1).sum() > 1
        ma, mb = empirical_sosp_metrics(prob, a), empirical_sosp_metrics(prob, b)
        for k, v in ma.items():
            assert v == pytest.approx(mb[k], rel=1e-7), k


def test_the_run_finds_an_empirical_sosp_and_the_metrics_say_so():
    prob = problems.get_problem("hard_valley", d=10)
    tr = _run(prob, prob.stream(0, budget=10**5, data="counts"), eps=0.1)
    m = empirical_sosp_metrics(prob, tr)
    gamma = tr.params["gamma"]
    assert m["emp_alpha_best"] < gamma < 0.5 * empirical_alpha(prob, prob.x0[None], tr.sample)["alpha"][0]
    assert m["emp_lambda_min_best"] > -math.sqrt(prob.constants.rho * gamma)  # left the saddle
    assert tr.records["escape"].any()  # the escape is what left it (x0 is a saddle of F_S too)


# ------------------------------------------------------------------ the statistical reading
def test_statistical_reading_says_which_exponent_the_ci_holds():
    readings = EmpiricalSospSpider.statistical_readings
    assert statistical_reading(readings, -0.56, -0.45).startswith("follows Theorem A.2")
    assert statistical_reading(readings, -1.1, -0.9).startswith("follows printed")
    assert statistical_reading(readings, -1.1, -0.4).startswith("cannot tell")
    assert statistical_reading(readings, -0.3, -0.2).startswith("follows neither")
    assert statistical_reading(readings, math.nan, 1.0) == ""


def test_both_claims_are_declared_and_listed(capsys):
    from bench.cli import main

    cls = get_algorithm(ALG)
    assert [(c.setting, c.metric) for c in cls.claims] == [("population", "alpha_sosp"),
                                                          ("empirical", "emp_alpha_sosp")]
    assert cls.claims[0].statistical_term.exponent("n") == -1.0
    assert cls.claims[0].privacy_exponent == cls.claims[1].privacy_exponent == pytest.approx(2 / 3)
    assert main(["claims"]) == 0
    out = capsys.readouterr().out
    assert out.count(ALG) >= 2 and "emp_alpha_sosp" in out


# ------------------------------------------------------------------ privacy: three layers
def _record(faults=(), **params):
    from algorithms.privacy.audit.layers import record_run

    return record_run(ALG, problem="hard_valley", d=4, n=3000, eps=1.0, seed=3,
                      params={"T": 60, **params}, faults=faults)


def test_layer1_every_release_within_its_told_sensitivity_and_no_more_than_composed():
    from algorithms.privacy.audit.layers import sensitivity_check

    run = _record()
    assert {e["oracle"] for e in run.events} == {1, 2}
    rep = sensitivity_check(ALG, run=run, max_releases=60)
    assert rep.ok, rep.violations
    assert 0.3 < rep.max_ratio <= 1 + 1e-9


@pytest.mark.parametrize("fault", ["no_clipping", "o2_wrong_step"])
def test_layer1_flags_planted_bugs(fault):
    from algorithms.privacy.audit.layers import sensitivity_check

    rep = sensitivity_check(ALG, run=_record((fault,)), max_releases=60)
    assert not rep.ok and any("told sensitivity" in v for v in rep.violations)


def test_layer1_same_seed_replay_and_noise_pass_on_an_anchor_only_run():
    """The plugin check (layer 1, a same-seed replay of the code with one record replaced, and
    the first release's noise against the budget) on a run whose releases are all anchors."""
    from algorithms.privacy.audit.plugin_checks import check_plugin

    r = check_plugin(ALG, problem="hard_valley", d=4, eps=1.0, n=2000,
                     params={"T": 20, "A_max": 20, "kappa": 1e-300})
    assert r.status == "passed" and r.releases == 20, r


def _noise(faults=()):
    """Zero gradients (mean estimation at its mean, no spread), tiny steps: every release is
    noise only. The std each value should have, from the accountant by hand."""
    prob = problems.get_problem("mean_estimation", d=4, spread=0.0, start_dist=1e-9)
    from algorithms.privacy.audit.layers import Recorder

    vals, scales = [], []
    mu = gdp_mu(1.0, 1e-6)
    for r in range(150):
        rec = Recorder()
        alg = get_algorithm(ALG)(planted_faults=faults, T=8, A_max=8, kappa=1e-300, eta=1e-12)
        data = prob.sample(64, np.random.default_rng([r, 0]))
        alg.run(prob, data, Privacy(1.0, 1e-6), np.random.default_rng([r, 1]), probe=rec)
        for e in rec.events:
            vals.append(e["released"] - e["leaf"])
            # A_max = T = 8 anchors, beta = 3/4: mu1 = mu sqrt(0.75 / 8); sensitivity 2G/n
            scales.append(np.full(4, (2 * prob.constants.G / 64) / (mu * math.sqrt(0.75 / 8))))
    return np.concatenate(vals), np.concatenate(scales)


def test_layer2_released_noise_has_the_calibrated_distribution_and_a_third_is_caught():
    v, s = _noise()
    assert stats.kstest(v / s, "norm").pvalue > 1e-3
    assert stats.kstest(v / (s * 2 / 3), "norm").pvalue < 1e-3
    assert stats.kstest(v / (s * 3 / 2), "norm").pvalue < 1e-3
    v3, s3 = _noise(("noise_third",))
    assert stats.kstest(v3 / s3, "norm").pvalue < 1e-3 and np.var(v3 / s3) < 0.2


@pytest.mark.slow
def test_layer3_audit_passes_and_catches_a_planted_third_of_the_noise():
    from algorithms.privacy.audit.audit import audit

    ok = audit(ALG, 1.0, runs=3000, seed=11, n_jobs=2)
    assert not ok.flagged and ok.eps_lb <= 1.0, ok
    assert ok.mu_low <= ok.mu_accountant <= ok.mu_high + 0.05, ok  # one release: tight
    bad = audit(ALG, 2.0, runs=4000, faults=("noise_third",), seed=11, n_jobs=2)
    assert bad.flagged and bad.mu_empirical > 2 * bad.mu_accountant, bad


# ------------------------------------------------------------------ the noise, by hand
def _o2_runs(faults=(), runs=120):
    """Mean estimation at zero spread from a start at distance 1, kappa huge: one anchor, then
    differences only. Per release the noise std by hand, from the budget alone: mu1 =
    mu sqrt(beta / A_max), mu2 = mu sqrt((1 - beta) / (T - 1)), sensitivities 2G/n and
    2 M ||x_t - x_{t-1}|| / n (the records' gradient differences are all x_t - x_{t-1})."""
    from algorithms.privacy.audit.layers import Recorder

    prob = problems.get_problem("mean_estimation", d=4, spread=0.0)
    T, A_max, n, beta = 10, 2, 64, 0.75
    mu = gdp_mu(1.0, 1e-6)
    mu1, mu2 = mu * math.sqrt(beta / A_max), mu * math.sqrt((1 - beta) / (T - 1))
    z = []
    for r in range(runs):
        rec = Recorder()
        alg = get_algorithm(ALG)(planted_faults=faults, T=T, A_max=A_max, kappa=1e9, eta=0.5)
        data = prob.sample(n, np.random.default_rng([r, 0]))
        alg.run(prob, data, Privacy(1.0, 1e-6), np.random.default_rng([r, 1]), probe=rec)
        spent = 0.0
        for e in rec.events:
            if e["oracle"] == 1:
                std = 2 * prob.constants.G / (n * mu1)
            else:
                std = 2 * prob.constants.M * float(np.linalg.norm(e["x"] - e["x_prev"])) / (n * mu2)
                z.append((e["released"] - e["leaf"]) / std)
            assert e["noise_std"] == pytest.approx(std, rel=1e-12)
            spent += (e["told"] / e["noise_std"]) ** 2
        assert spent <= mu**2 * (1 + 1e-12)  # the realised composition within the budget
    return np.concatenate(z)


def test_every_release_has_the_noise_its_budget_share_gives_by_hand():
    z = _o2_runs()
    assert len(z) == 120 * 9 * 4
    assert stats.kstest(z, "norm").pvalue > 1e-3  # the differences' noise is N(0, std^2)


def test_a_third_of_the_noise_fails_the_by_hand_check():
    with pytest.raises(AssertionError):
        z = _o2_runs(("noise_third",), runs=40)
        assert stats.kstest(z, "norm").pvalue > 1e-3


@pytest.mark.parametrize("key,value", [("T", 0), ("A_max", -2), ("kappa", 0.0), ("R", -1.0), ("eta", 0)])
def test_a_direct_parameter_at_or_below_zero_is_refused(key, value):
    prob = problems.get_problem("hard_valley", d=4)
    with pytest.raises(ValueError, match=f"parameter {key}="):
        get_algorithm(ALG)(**{key: value}).resolve_params(prob, 1000, Privacy(1.0, 1e-6))
