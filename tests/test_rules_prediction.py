"""The rules' own prediction (analysis.verdict_engine.rules_curve): the slope of the implemented
rules' sample budget over a fit's design points, against the closed-form leading term and the
budgets theory_params gives at each point."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.sosp.noise_rules import effective_eps
from algorithms.sosp.spider import KNOB_DEFAULTS
from analysis.declarations import FitSpec
from analysis.verdict_engine.design import design_from_points
from analysis.verdict_engine.rules_curve import rules_curve
from problems import get_problem

ALPHAS = [0.009, 0.015, 0.025, 0.04, 0.06, 0.09]


def _sub(alg: str, eps: float = 0.1) -> pd.DataFrame:
    return pd.DataFrame({"algorithm": alg, "problem": "hard_valley", "problem_params": json.dumps({}),
                         "instance_params": json.dumps({}),
                         "d": 10, "eps": eps, "delta": 1e-6, "x": ALPHAS, "alpha": ALPHAS})


FIT = FitSpec(name="sc", view="sample_complexity", x="alpha", y="n_star", window=(0.009, 0.09))


def rules_prediction(sub: pd.DataFrame, fit: FitSpec, calibration: str) -> float:
    """The rules' slope over the points of `sub` (one seed each, y = 1: only the design counts)."""
    design = design_from_points(sub.assign(y=1.0, rep=0, combo="c"), x_name=fit.x)
    return rules_curve(design, fit.view, calibration).slope(design.x)


def test_adaptive_rules_slope_is_the_leading_term_with_its_tree_depth():
    """Privacy-dominated, the adaptive rules' budget is led by B0 M sqrt(d) / (alpha^2 eps_eff)
    with eps_eff ~ 1/sqrt(depth), depth = log2 T, T ~ alpha^-2: slope a little below -2."""
    got = rules_prediction(_sub("adaptive_tree_spider"), FIT, "theory")
    c = get_problem("hard_valley", d=10).constants
    privacy = Privacy(0.1, 1e-6, "theory")
    lead = []
    for a in ALPHAS:
        T = c.B0 * c.M / a**2
        eps_eff = effective_eps(privacy, "tree", int(T), "global", 1.0)
        lead.append(c.B0 * c.M * math.sqrt(10) / (a**2 * eps_eff))
    want = np.polyfit(np.log(ALPHAS), np.log(lead), 1)[0]
    assert -2.35 < want < -2.0
    assert got == pytest.approx(want, abs=0.06)


def test_gaussian_rules_slope_and_the_non_fits():
    got = rules_prediction(_sub("gaussian_spider"), FIT, "theory")
    assert -2.6 < got < -2.0
    assert math.isnan(rules_prediction(_sub("gaussian_spider").iloc[:1], FIT, "theory"))
    # The budget is what theory_params says at each point (not a fit to measurements).
    c = get_problem("hard_valley", d=10).constants
    rules = get_algorithm("gaussian_spider").theory_params
    b = [rules(c, None, 10, Privacy(0.1, 1e-6, "theory"), target_alpha=a,
               **KNOB_DEFAULTS)["theory_budget"] for a in ALPHAS]
    assert got == pytest.approx(np.polyfit(np.log(ALPHAS), np.log(b), 1)[0], rel=1e-9)


def test_theory_mode_uses_each_algorithm_s_own_knob_defaults():
    from analysis.points import at_defaults

    knobs = ["reset_drift_on_escape"]
    assert at_defaults({"reset_drift_on_escape": False}, knobs, "gaussian_spider")
    assert not at_defaults({"reset_drift_on_escape": True}, knobs, "gaussian_spider")
    assert at_defaults({"reset_drift_on_escape": True}, knobs, "adaptive_tree_spider")


def test_rules_slope_of_a_per_target_instance_uses_each_targets_instance():
    """hard_ramp is built per alpha: the rules' budget at each target must come from that
    target's instance (its own B0, M, rho), not from the default one. Reference: the budgets
    computed here from get_problem("hard_ramp", alpha=a) for each a."""
    from problems import instance_params

    sub = pd.DataFrame({"algorithm": "gaussian_spider", "problem": "hard_ramp",
                        "problem_params": json.dumps({}),
                        "instance_params": [json.dumps(instance_params("hard_ramp", {}, a))
                                            for a in ALPHAS],
                        "d": 10, "eps": 0.1, "delta": 1e-6, "x": ALPHAS, "alpha": ALPHAS})
    got = rules_prediction(sub, FIT, "theory")
    rules = get_algorithm("gaussian_spider").theory_params
    per_target = [rules(get_problem("hard_ramp", d=10, alpha=a).constants, None, 10,
                        Privacy(0.1, 1e-6, "theory"), target_alpha=a,
                        **KNOB_DEFAULTS)["theory_budget"] for a in ALPHAS]
    one = [rules(get_problem("hard_ramp", d=10).constants, None, 10,
                 Privacy(0.1, 1e-6, "theory"), target_alpha=a, **KNOB_DEFAULTS)["theory_budget"]
           for a in ALPHAS]
    want = np.polyfit(np.log(ALPHAS), np.log(per_target), 1)[0]
    wrong = np.polyfit(np.log(ALPHAS), np.log(one), 1)[0]
    assert got == pytest.approx(want, rel=1e-9)
    assert abs(want - wrong) > 0.01  # the instances differ enough for the check to bite


def test_a_fit_of_a_metric_the_algorithm_makes_no_claim_on_has_no_claimed_slope():
    """DP-GD claims the empirical ||grad F_S|| only: a fit of its population ||grad F|| has no
    claimed slope (so no verdict), not the empirical claim's 1/2 taken by default."""
    from algorithms import get_algorithm
    from analysis.declarations import FitSpec
    from analysis.verdict_engine.predictions import matching_claim, predicted_slope

    dp_gd = get_algorithm("dp_gd")
    pop = FitSpec("pop", "error", "privacy", "pop_grad_best", (1e-6, 1e-3), "theory")
    emp = FitSpec("emp", "error", "privacy", "emp_grad_best", (1e-6, 1e-3), "theory")
    assert matching_claim(dp_gd, "grad_norm") is None
    assert predicted_slope(dp_gd, pop, "grad_norm") is None
    assert predicted_slope(dp_gd, emp, "emp_grad_norm") == 0.5


def test_rules_paired_slope_is_the_difference_of_the_two_rules_budget_slopes():
    """The paired comparison's rules reference (issue 43): slope of log(budget A / budget B)
    with both budgets from theory_params at each target (computed here directly)."""
    from analysis.claims import _rules_paired_slope

    c = get_problem("hard_valley", d=10).constants
    budgets = {}
    for alg in ("adaptive_tree_spider", "gaussian_spider"):
        rules = get_algorithm(alg).theory_params
        budgets[alg] = [rules(c, None, 10, Privacy(0.1, 1e-6, "theory"), target_alpha=a,
                              **KNOB_DEFAULTS)["theory_budget"] for a in ALPHAS]
    want = np.polyfit(np.log(ALPHAS), np.log(np.array(budgets["adaptive_tree_spider"])
                                             / np.array(budgets["gaussian_spider"])), 1)[0]
    pa = _sub("adaptive_tree_spider").assign(y=1.0, rep=0, combo="c")
    pb = _sub("gaussian_spider").assign(y=1.0, rep=0, combo="c")
    got = _rules_paired_slope(pa, pb, {"problem": "hard_valley", "d": 10, "eps": 0.1},
                              "sample_complexity", "theory")
    assert got == pytest.approx(want, rel=1e-9)
    assert 0.1 < got < 0.3  # the valley window's 0.20-0.21, not the claims' 1/3


def test_rules_budget_against_eps_is_taken_at_the_cells_target():
    """A samples-to-target fit against eps (fixed target alpha 0.02): the rules' budget at each
    eps comes from theory_params at that target (computed here directly), not at alpha = x."""
    eps = [0.03, 0.1, 0.3, 1.0]
    sub = pd.DataFrame({"algorithm": "adaptive_tree_spider", "problem": "hard_valley",
                        "problem_params": json.dumps({}), "instance_params": json.dumps({}),
                        "d": 10, "eps": eps, "delta": 1e-6, "x": eps, "alpha": 0.02})
    fit = FitSpec(name="e", view="sample_complexity", x="eps", y="n_star", window=(0.03, 1.0))
    got = rules_prediction(sub, fit, "theory")
    c = get_problem("hard_valley", d=10).constants
    rules = get_algorithm("adaptive_tree_spider").theory_params
    b = [rules(c, None, 10, Privacy(e, 1e-6, "theory"), target_alpha=0.02,
               **KNOB_DEFAULTS)["theory_budget"] for e in eps]
    assert got == pytest.approx(np.polyfit(np.log(eps), np.log(b), 1)[0], rel=1e-9)
    assert -1.1 < got < -0.8  # the budget's privacy part goes as 1/eps


def test_the_rules_binding_size_of_a_staged_method_starts_where_its_rules_accept_n():
    """Recursive regularization (linear time) refuses n = 2 (each of its stages needs records):
    the binding size is still found, and agrees with a scan of its own rules' bound for the n
    where it first falls below a tenth of the start's gradient norm."""
    from analysis.verdict_engine.design import Design
    from analysis.verdict_engine.rules_curve import rules_binding_n

    ctx = pd.DataFrame([{"algorithm": "recursive_regularization_linear", "problem": "glm",
                         "instance_params": json.dumps({"link": "logistic", "rank": 10}), "n": 1e5,
                         "d": 10, "eps": 0.03, "delta": 1e-6, "alpha": 0.05, "x": 1e-3,
                         "n_steps": 100.0}])
    design = Design(np.array([1e-3]), (np.array([0.05]),), ctx, "privacy")
    start = 0.214
    got = rules_binding_n(design, "theory", start)
    cls = get_algorithm("recursive_regularization_linear")
    prob = get_problem("glm", d=10, link="logistic", rank=10)
    ns = np.geomspace(1e3, 1e12, 400)
    vals = [cls.rules_bound(prob, int(n), 10, Privacy(0.03, 1e-6, "theory")).total for n in ns]
    first = ns[np.argmax(np.array(vals) <= 0.1 * start)]
    assert math.isfinite(got) and got == pytest.approx(first, rel=0.06)
