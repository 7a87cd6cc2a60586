"""The three private Spiders: escape, batch rules, sensitivity, single use, determinism,
parameter rules against their closed-form limits."""

import math

import numpy as np
import pytest

import problems
from algorithms import Privacy, available, get_algorithm
from algorithms.privacy.mechanisms import TreeMechanism
from algorithms.sosp.spider import KNOB_DEFAULTS
from algorithms.sosp.spiders import best_kappa, fixed_batch_theory_params
from problems.evaluation.metrics import evaluate, samples_to_accuracy, sosp_alpha
from problems.streams import ArrayStream

ALGS = ["gaussian_spider", "tree_spider", "adaptive_tree_spider"]


def run(alg, prob, n, eps, seed=0, data_seed=1, **params):
    stream = prob.stream(data_seed, budget=n)
    traj = get_algorithm(alg)(**params).run(prob, stream, Privacy(eps, 1e-6),
                                            np.random.default_rng(seed))
    return traj


def test_registry_and_claims():
    assert available()[:3] == ALGS  # the SOSP Spiders first, then the first-order family
    assert set(available()[3:]) == {"dp_gd", "dp_sgd", "noisy_sgd", "tree_private_spider",
                                    "private_spiderboost", "recursive_regularization",
                                    "recursive_regularization_linear", "jl_dp_gd",
                                    "jl_private_spiderboost", "jl_recursive_regularization", "pasan", "pagan",
                                    "pagan_private_scales", "pagan_public_scales", "private_sgd_iso",
                                    "private_adagrad_iso", "pdp_sgd", "empirical_sosp_spider"}
    assert get_algorithm("gaussian_spider").claimed_exponent == pytest.approx(3 / 7)
    assert get_algorithm("adaptive_tree_spider").claimed_exponent == 0.5
    assert get_algorithm("tree_spider").claimed_exponent is None
    with pytest.raises(ValueError, match="algorithm='sgd'"):
        get_algorithm("sgd")


@pytest.mark.slow
@pytest.mark.parametrize("alg", ALGS)
def test_escapes_the_saddle_and_fails_without_saddle_noise(alg):
    """tau = 0: every per-sample gradient at the saddle is exactly 0, so only the escape
    perturbation can move a non-private run off it."""
    prob = problems.get_problem("strict_saddle", d=5, tau=0.0)
    rho = prob.constants.rho

    def ok(traj):
        best = traj.iterates[np.argmin([sosp_alpha(prob, x)["alpha"] for x in traj.iterates])]
        return sosp_alpha(prob, best)["lambda_min"] >= -math.sqrt(rho * traj.params["alpha"])

    with_noise = [ok(run(alg, prob, 200_000, math.inf, seed=s, data_seed=s)) for s in range(10)]
    without = [ok(run(alg, prob, 200_000, math.inf, seed=s, data_seed=s, saddle_noise=False))
               for s in range(10)]
    assert sum(with_noise) >= 9
    assert sum(without) <= 1


def test_adaptive_batch_follows_the_formula_and_uses_each_sample_once():
    prob = problems.get_problem("hard_valley", d=6)
    n = 300_000

    class Instrumented(ArrayStream):
        def __init__(self, data):
            super().__init__(data)
            self.ranges = []

        def take(self, k):
            self.ranges.append((self.used, self.used + k))
            return super().take(k)

    stream = Instrumented(prob.sample(n, np.random.default_rng(3)))
    traj = get_algorithm("adaptive_tree_spider")().run(prob, stream, Privacy(0.5, 1e-6),
                                                        np.random.default_rng(4))
    p, M, d = traj.params, prob.constants.M, prob.d
    assert p["keep_every"] == 1 and traj.n_steps > 10
    xs = traj.iterates
    assert np.array_equal(traj.steps, np.arange(traj.n_steps + 1))
    rec = traj.records
    for t in range(traj.n_steps):
        if rec["oracle"][t] == 1:
            assert rec["batch"][t] == p["b"]
            continue
        g = M * np.linalg.norm(xs[t] - xs[t - 1])
        expected = max(g * math.sqrt(d) / (p["alpha"] * p["eps_eff"]), g * p["kappa"] / p["alpha"] ** 2, 1)
        assert rec["batch"][t] == math.ceil(expected)
    # Disjoint, contiguous, in order, within the budget.
    starts = [a for a, _ in stream.ranges]
    ends = [b for _, b in stream.ranges]
    assert starts[0] == 0 and all(s == e for s, e in zip(starts[1:], ends[:-1], strict=False))
    assert ends[-1] == traj.samples_used <= n
    assert sum(rec["batch"]) == traj.samples_used
    assert traj.privacy_spent["eps"] <= 0.5 * (1 + 1e-9)


@pytest.mark.parametrize("alg", ALGS)
def test_a_planted_huge_record_moves_a_release_by_at_most_its_sensitivity(alg):
    prob = problems.get_problem("strict_saddle", d=5)
    data = prob.sample(400_000, np.random.default_rng(0))
    p = get_algorithm(alg)().resolve_params(prob, len(data), Privacy(1.0, 1e-6))
    b = p["b"]
    for pos, step in ((0, 1), (b + 1, 2)):  # in the O1 batch, then in the first O2 batch
        other = data.copy()
        other[pos, :2] = 0.99  # most extreme random curvature
        other[pos, 2:] = 1e6  # gradient of norm ~1e6 from the linear term
        t1 = get_algorithm(alg)().run(prob, data, Privacy(1.0, 1e-6), np.random.default_rng(9))
        t2 = get_algorithm(alg)().run(prob, other, Privacy(1.0, 1e-6), np.random.default_rng(9))
        assert t1.records["oracle"][step - 1] == step  # O1 at step 0, O2 at step 1
        eta = t1.params["eta"]
        moved = np.linalg.norm(t1.iterates[step] - t2.iterates[step]) / eta
        if alg == "gaussian_spider":
            dx = np.linalg.norm(t1.iterates[1] - t1.iterates[0])
            bound = 2 * prob.constants.G / b if step == 1 else 2 * prob.constants.M * dx / p["B"]
        else:
            bound = t1.params["leaf_sensitivity"]
        assert moved <= bound * (1 + 1e-9)
        if step == 1:  # the huge gradient really was there and was clipped to the bound
            assert moved > 0.2 * bound


@pytest.mark.parametrize("alg", ALGS)
def test_determinism_and_no_privacy_noise_at_infinite_eps(alg):
    prob = problems.get_problem("strict_saddle", d=4)
    a = run(alg, prob, 100_000, 0.7, seed=5)
    b = run(alg, prob, 100_000, 0.7, seed=5)
    c = run(alg, prob, 100_000, 0.7, seed=6)
    np.testing.assert_array_equal(a.iterates, b.iterates)
    assert not np.array_equal(a.iterates, c.iterates)
    assert np.all(a.records["noise_std"] > 0)
    inf = run(alg, prob, 100_000, math.inf, seed=5)
    assert np.all(inf.records["noise_std"] == 0) and inf.records["escape"].any()
    assert inf.privacy_spent["eps"] == math.inf


def test_noise_accumulation_gaussian_sqrt_k_tree_log_k():
    """Noise part of the estimator within an epoch with constant sensitivity: the Gaussian
    estimator sums k fresh draws (norm ~ sqrt(k)); the tree prefix holds popcount(k) nodes."""
    d, reps = 50, 200
    ks = np.array([2**j - 1 for j in range(2, 12)])
    gauss, tree = [], []
    rng = np.random.default_rng(11)
    for k in ks:
        gauss.append(np.mean([np.linalg.norm(rng.standard_normal((k, d)).sum(0)) for _ in range(reps)]))
    for _ in range(1):
        norms = {int(k): [] for k in ks}
        for r in range(reps):
            tm = TreeMechanism(d, 1.0, np.random.default_rng(1000 + r))
            for t in range(1, ks[-1] + 1):
                v = tm.next()
                if t in norms:
                    norms[t].append(np.linalg.norm(v))
        tree = [np.mean(norms[int(k)]) for k in ks]
    g_slope = np.polyfit(np.log(ks), np.log(gauss), 1)[0]
    assert g_slope == pytest.approx(0.5, abs=0.03)
    # k = 2^j - 1 has popcount j = log2(k+1): norm^2 ~ d log2(k+1) exactly in expectation.
    t_slope = np.polyfit(np.log(np.log2(ks + 1)), np.log(tree), 1)[0]
    assert t_slope == pytest.approx(0.5, abs=0.05)
    assert np.polyfit(np.log(ks), np.log(tree), 1)[0] < 0.2


def test_samples_to_accuracy_curve_matches_brute_force():
    prob = problems.get_problem("hard_valley", d=4)
    traj = run("gaussian_spider", prob, 300_000, 1.0)
    ev = evaluate(prob, traj)
    alphas = np.array([sosp_alpha(prob, x)["alpha"] for x in traj.iterates])
    run_min = np.minimum.accumulate(alphas)
    np.testing.assert_allclose(ev["metrics"]["alpha_best"], alphas.min())
    brute = samples_to_accuracy(traj.samples_at, run_min)
    np.testing.assert_array_equal(np.isnan(brute), np.isnan(ev["curve"]["samples"]))
    ok = ~np.isnan(brute)
    np.testing.assert_array_equal(brute[ok], ev["curve"]["samples"][ok])
    assert ok.sum() >= 3


def test_stop_reasons_and_budget_warnings():
    prob = problems.get_problem("strict_saddle", d=4)
    tiny = run("gaussian_spider", prob, 500, 0.1, target_alpha=0.01)
    assert tiny.n_steps == 0 and tiny.stop_reason == "data_exhausted" and tiny.warnings
    short = run("adaptive_tree_spider", prob, 10**6, 1.0, T=5)
    assert short.n_steps == 5 and short.stop_reason == "T_reached"
    starved = run("gaussian_spider", prob, 60_000, 1.0, horizon_mult=100.0)
    assert starved.stop_reason == "data_exhausted" and starved.samples_used <= 60_000


def test_fixed_batch_kappa_limits():
    G, M, B0, d = 2.0, 1.5, 8.0, 10
    for gamma in (0.1, 0.01):
        assert best_kappa(G, M, B0, d, gamma, math.inf) == pytest.approx(G * gamma / M**2, rel=1e-4)
    # Private regime: kappa ~ gamma^{4/3} (ganesh2023-notes.md).
    g1, g2 = 1e-3, 1e-4
    k1, k2 = best_kappa(G, M, B0, d, g1, 1e-7), best_kappa(G, M, B0, d, g2, 1e-7)
    assert math.log(k1 / k2) / math.log(g1 / g2) == pytest.approx(4 / 3, abs=0.02)


def test_gaussian_gamma_scales_as_three_sevenths_in_the_private_regime():
    const = problems.get_problem("strict_saddle", d=10).constants
    ns = [10**9, 10**10, 10**11]
    gammas = [fixed_batch_theory_params("gaussian", const, n, 10, Privacy(1e-3, 1e-6),
                                        **KNOB_DEFAULTS)["gamma"] for n in ns]
    slope = np.polyfit(np.log(ns), np.log(gammas), 1)[0]
    assert slope == pytest.approx(-3 / 7, abs=0.02)


@pytest.mark.parametrize(("params", "needle"), [
    ({"alpha_mult": 0}, "alpha_mult=0"), ({"budget_mult": -1}, "budget_mult=-1"),
    ({"bogus": 1}, "bogus=1"), ({"tree_scope": "forest"}, "tree_scope='forest'"),
    ({"omega": 2.0}, "omega=2.0"), ({"saddle_noise": "yes"}, "saddle_noise='yes'"),
])
def test_bad_overrides_are_rejected_before_any_work(params, needle):
    with pytest.raises(ValueError, match=needle):
        get_algorithm("adaptive_tree_spider")(**params)


def test_sigma_override_below_the_needed_noise_is_refused():
    prob = problems.get_problem("strict_saddle", d=4)
    with pytest.raises(ValueError, match="sigma=1e-09"):
        run("adaptive_tree_spider", prob, 100_000, 1.0, sigma=1e-9)


def test_privacy_arguments():
    with pytest.raises(ValueError, match="eps=0"):
        Privacy(0)
    with pytest.raises(ValueError, match="delta=1"):
        Privacy(1.0, 1)
    with pytest.raises(ValueError, match="calibration='loose'"):
        Privacy(1.0, 1e-6, "loose")


@pytest.mark.parametrize("alg", ALGS)
def test_stop_at_target_keeps_n_star(alg):
    """The benchmark's early stop ends a run at its first stored iterate with alpha_SOSP <=
    target: n* (and everything before it) equals the full run's."""
    from bench.single_run import run_cell

    for seed, target in ((1, 0.3), (2, 0.15)):
        full = run_cell(alg, "hard_valley", 2_000_000, 6, 1.0, seed=seed, params={"target_alpha": target})
        short = run_cell(alg, "hard_valley", 2_000_000, 6, 1.0, seed=seed,
                         params={"target_alpha": target}, stop_at_target=True)
        assert full["metrics"]["samples_to_target"] == short["metrics"]["samples_to_target"]
        assert np.isfinite(short["metrics"]["samples_to_target"])
        assert short["metrics"]["stop_reason"] == "target_reached"
        assert short["metrics"]["samples_used"] == short["metrics"]["samples_to_target"]
        k = len(short["trajectory"].iterates)
        np.testing.assert_array_equal(full["trajectory"].iterates[:k], short["trajectory"].iterates)


# ------------------------------------------------ drift across escapes (squared-step Spiders)
class _Steps:
    """A probe that keeps, per release, the oracle and the squared step that led to x."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, float, bool]] = []

    def release(self, **info) -> None:
        step = info["x"] - info["x_prev"]
        self.rows.append((info["oracle"], float(step @ step), info["escape"]))


@pytest.mark.parametrize("alg", ["gaussian_spider", "tree_spider"])
def test_squared_step_drift_counts_every_step_since_the_last_o1(alg):
    """Ganesh et al.'s restart rule: O1 when the squared steps since the last O1 reach kappa,
    escapes included (seed 000's line 10 reset is the adaptive Spider's reading only). So at
    every O2 release those squared steps, summed from the iterates, stay below kappa."""
    prob = problems.get_problem("hard_valley", d=4)
    probe = _Steps()
    algo = get_algorithm(alg)(target_alpha=0.1)
    traj = algo.run(prob, prob.stream(2, budget=3_000_000), Privacy(0.5, 1e-6),
                    np.random.default_rng(2), probe=probe)
    assert algo.knobs()["reset_drift_on_escape"] is False
    kappa, since = traj.params["kappa"], 0.0
    escapes_mid_epoch = 0
    for t, (oracle, _sq, escape) in enumerate(probe.rows):
        # rows[t] holds the step *into* x_t; the step out of x_t is rows[t + 1]'s.
        if oracle == 1:
            since = 0.0
        else:
            assert since < kappa * (1 + 1e-12), (t, since, kappa)
            escapes_mid_epoch += escape
        if t + 1 < len(probe.rows):
            since += probe.rows[t + 1][1] if not alg == "tree_spider" else min(
                probe.rows[t + 1][1], traj.params["D"] ** 2)
    assert escapes_mid_epoch > 0  # the property is exercised
    drift = traj.records["drift"]
    o2_escape = np.flatnonzero(traj.records["escape"] & (traj.records["oracle"] == 2))
    assert np.all(drift[o2_escape] > drift[o2_escape - 1])  # an escape adds, never resets


def test_adaptive_spider_keeps_the_literal_line_10_reset():
    prob = problems.get_problem("hard_valley", d=4)
    traj = run("adaptive_tree_spider", prob, 3_000_000, 0.5, seed=2, data_seed=2, target_alpha=0.1)
    esc = traj.records["escape"]
    assert esc.any()
    np.testing.assert_allclose(traj.records["drift"][esc], traj.records["est_norm"][esc])


@pytest.mark.slow
def test_gaussian_spider_reaches_its_target_well_before_its_horizon():
    """hard_valley, d = 10, eps = 0.1, target 0.05, 8 seeds (counts mode): with the drift reset
    on escape, 3 of 8 runs stalled until the horizon T; without it every run reaches the target
    within a quarter of T (measured 0.07-0.13 T)."""
    from problems.evaluation.metrics import target_monitor

    prob = problems.get_problem("hard_valley", d=10)
    for seed in range(1, 9):
        traj = get_algorithm("gaussian_spider")(target_alpha=0.05).run(
            prob, prob.stream(np.random.SeedSequence([seed, 0]), budget=10**12, data="counts"),
            Privacy(0.1, 1e-6), np.random.default_rng(seed), monitor=target_monitor(prob, 0.05))
        assert traj.stop_reason == "target_reached", seed
        assert traj.n_steps <= 0.25 * traj.params["T"], (seed, traj.n_steps, traj.params["T"])


@pytest.mark.parametrize("name", ["gaussian_spider", "tree_spider", "adaptive_tree_spider"])
def test_noise_overrides_are_validated_alike_and_used(name):
    """Every Spider takes the override of its own mechanism (the tree's node std sigma, the
    Gaussian releases' noise_multiplier), refuses a value below what (eps, delta) needs and
    refuses the other mechanism's key: nothing is accepted and silently ignored."""
    prob = problems.get_problem("hard_valley", d=4)
    privacy = Privacy(1.0, 1e-6)
    cls = get_algorithm(name)
    own, other = ("sigma", "noise_multiplier") if cls.noise == "tree" else ("noise_multiplier", "sigma")
    with pytest.raises(ValueError, match=f"{other}=5 is invalid for {name}"):
        cls(**{other: 5})
    with pytest.raises(ValueError, match=f"{own}=1e-09 is invalid: must be >= "):
        cls(**{own: 1e-9}).run(prob, prob.sample(50_000, np.random.default_rng(0)), privacy,
                               np.random.default_rng(1))
    base = cls().run(prob, prob.sample(50_000, np.random.default_rng(0)), privacy,
                     np.random.default_rng(1))
    needed = base.params[own]
    louder = cls(**{own: 3 * needed}).run(prob, prob.sample(50_000, np.random.default_rng(0)),
                                          privacy, np.random.default_rng(1))
    assert louder.params[own] == pytest.approx(3 * needed)
    # The first release (O1 at step 0, same batch) carries 3x the noise std.
    assert louder.records["noise_std"][0] == pytest.approx(3 * base.records["noise_std"][0])
