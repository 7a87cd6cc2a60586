"""The regime gate before the run (algorithms.regime_forecast), against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq

from algorithms import get_algorithm
from algorithms import regime_forecast as rf
from algorithms.claims import Claim, term
from problems import get_problem


def _claim(*terms) -> Claim:
    return Claim("x", "population", "grad_norm", tuple(terms), "paper", "thm")


def test_term_value_closed_forms():
    t = term("(sqrt(d)/(n eps))^(1/2)", privacy=0.5)
    assert rf.term_value(t, 1e6, 16, 0.5) == pytest.approx((4 / 5e5) ** 0.5, rel=1e-14)
    t2 = term("sqrt(rank)/(n eps)", rank=0.5, n=-1.0, eps=-1.0)
    assert rf.term_value(t2, 1e4, 100, 2.0, rank=9) == pytest.approx(3 / 2e4, rel=1e-14)
    # non-private: every term in 1/eps vanishes, the statistical one stays
    assert rf.term_value(t, 1e6, 16, math.inf) == 0.0
    assert rf.term_value(t2, 1e4, 100, math.inf, rank=9) == 0.0
    assert rf.term_value(term("n^-1/3", n=-1 / 3), 1e6, 16, math.inf) == pytest.approx(1e-2)
    with pytest.raises(ValueError, match="rank"):
        rf.term_value(t2, 1e4, 100, 2.0)


def test_binding_n_single_term_is_the_closed_form():
    # (sqrt(d)/(n eps))^p = 0.1 s  <=>  n = sqrt(d)/eps (0.1 s)^(-1/p)
    p, d, eps, s = 3 / 7, 100.0, 0.1, 0.915
    c = _claim(term("(sqrt(d)/(n eps))^(3/7)", privacy=p))
    want = math.sqrt(d) / eps * (0.1 * s) ** (-1 / p)
    assert rf.binding_n(c, d, eps, s) == pytest.approx(want, rel=1e-8)


def test_binding_n_two_terms_against_brentq():
    c = get_algorithm("adaptive_tree_spider").claims[0]  # n^-1/3 + (sqrt(d)/(n eps))^(1/2)
    d, eps, s = 10.0, 0.1, 0.915
    def f(logn: float) -> float:
        return math.exp(logn) ** (-1 / 3) + (math.sqrt(d) / (math.exp(logn) * eps)) ** 0.5 - 0.0915

    want = math.exp(brentq(f, 0.0, 200.0, xtol=1e-14))
    got = rf.binding_n(c, d, eps, s)
    assert got == pytest.approx(want, rel=1e-8)
    assert rf.claim_bound(c, got * (1 - 1e-6), d, eps) > 0.0915 >= rf.claim_bound(c, got, d, eps)
    # a term without n never falls: no n binds
    assert rf.binding_n(_claim(term("d", d=1.0)), 10.0, 0.1, 5.0) == math.inf
    with pytest.raises(ValueError, match="start"):
        rf.binding_n(c, d, eps, 0.0)


def test_crossover_n_closed_form():
    # n^-1/3 = (sqrt(d)/(n eps))^(1/2)  <=>  n = (sqrt(d)/eps)^3
    c = get_algorithm("adaptive_tree_spider").claims[0]
    assert rf.crossover_n(c, 16.0, 0.5) == pytest.approx((4 / 0.5) ** 3, rel=1e-9)
    # n^-1/2 = sqrt(rank)/(n eps)  <=>  n = rank / eps^2
    jl = get_algorithm("jl_recursive_regularization").claims[0]
    assert rf.crossover_n(jl, 50.0, 0.2, rank=5) == pytest.approx(5 / 0.04, rel=1e-9)
    assert rf.crossover_n(c, 16.0, math.inf) is None
    assert rf.crossover_n(get_algorithm("dp_gd").claims[0], 16.0, 0.5) is None


def test_start_metric_closed_forms():
    prob = get_problem("hard_valley", d=10)
    from problems.evaluation.metrics import sosp_alpha

    x0 = np.asarray(prob.x0, float)
    # hard_valley starts at a strict saddle: alpha = lambda_min^2 / rho (no gradient)
    lam = float(np.linalg.eigvalsh(prob.population_hessian(x0))[0])
    assert rf.start_metric(prob, "alpha_sosp") == pytest.approx(lam**2 / prob.constants.rho, rel=1e-9)
    assert rf.start_metric(prob, "alpha_sosp") == pytest.approx(sosp_alpha(prob, x0)["alpha"])
    # finite differences of F for the gradient norm
    h = 1e-6
    e = np.eye(prob.d)
    g = np.array([(prob.population_loss(x0 + h * e[i]) - prob.population_loss(x0 - h * e[i])) / (2 * h)
                  for i in range(prob.d)])
    assert rf.start_metric(prob, "grad_norm") == pytest.approx(np.linalg.norm(g), abs=1e-6)
    with pytest.raises(ValueError, match="metric"):
        rf.start_metric(prob, "loss")


def test_a_saturated_window_is_forecast_not_in_regime():
    c = get_algorithm("adaptive_tree_spider").claims[0]
    s = 0.915
    # error view on privacy: tiny n, the bound is above the start: ceiling at every point
    pts = [(math.sqrt(10) / (n * 0.1), n, 10.0, 0.1) for n in (1e2, 1e3, 1e4)]
    fc = rf.forecast_points(c, "error", pts, s)
    assert all(p.ceiling for p in fc)
    flags = rf.forecast_reason(fc, s, "alpha_sosp", private=True)
    assert [f.kind for f in flags] == [rf.FlagKind.CEILING] and "3 of 3" in flags[0].text
    assert rf.render_flags(flags).startswith("ceiling: the claim's bound (constants at 1)")
    # huge n at eps = 10: the statistical term n^-1/3 outweighs the privacy term: floor
    pts = [(math.sqrt(10) / (n * 10.0), n, 10.0, 10.0) for n in (1e10, 1e11)]
    fc = rf.forecast_points(c, "error", pts, s)
    assert not any(p.ceiling for p in fc) and all(p.statistical_dominates for p in fc)
    assert [f.kind for f in rf.forecast_reason(fc, s, "alpha_sosp", private=True)] == [rf.FlagKind.FLOOR]
    # in between (n where the bound is below s/10 and the privacy term dominates): passes
    lo = rf.binding_n(c, 10.0, 0.1, s)
    hi = rf.crossover_n(c, 10.0, 0.1)
    assert lo < hi
    ns = np.geomspace(lo * 1.01, hi * 0.99, 4)
    fc = rf.forecast_points(c, "error", [(math.sqrt(10) / (n * 0.1), n, 10.0, 0.1) for n in ns], s)
    assert rf.forecast_reason(fc, s, "alpha_sosp", private=True) == []


def test_sample_complexity_points_invert_the_bound():
    c = get_algorithm("gaussian_spider").claims[0]
    s = 0.915
    pts = [(0.01, math.nan, 10.0, 0.1), (0.5, math.nan, 10.0, 0.1)]
    fc = rf.forecast_points(c, "sample_complexity", pts, s)
    assert rf.claim_bound(c, fc[0].n, 10.0, 0.1) == pytest.approx(0.01, rel=1e-8)
    assert not fc[0].ceiling and fc[1].ceiling  # a target above a tenth of the start is a ceiling


def test_forecast_fit_over_spec_cells():
    """A whole fit: the headline's window passes on the Spiders' own budget rules; the same
    fit moved to targets near the start saddle is forecast "ceiling"; an algorithm without a
    claim on the metric says so; the folded x gives one row per curve."""
    from analysis.declarations import FitSpec
    from analysis.verdict_engine.predictions import fit_metric
    from bench.cells import Cell

    def cells(targets, algs=("adaptive_tree_spider", "gaussian_spider", "tree_spider")):
        return [Cell("hard_valley", (), a, (), None, 10, 0.1, 1e-6, r, "theory", 1, t)
                for a in algs for t in targets for r in range(2)]

    fit = FitSpec("f", "sample_complexity", "alpha", "samples_to_target", (0.009, 0.09), "theory")
    rows = {r["algorithm"]: r for r in rf.forecast_fit(fit, cells([0.09, 0.03, 0.009]), fit_metric)}
    assert rows["adaptive_tree_spider"]["forecast"] == "in regime"
    assert rows["adaptive_tree_spider"]["points"] == 3
    assert rows["adaptive_tree_spider"]["source"].startswith("the rules' sample budget")
    assert rows["tree_spider"]["forecast"].startswith("no claim")
    high = FitSpec("f", "sample_complexity", "alpha", "samples_to_target", (0.1, 0.4), "theory")
    rows = rf.forecast_fit(high, cells([0.4, 0.2, 0.1]), fit_metric)
    assert all(r["forecast"].startswith("ceiling") for r in rows if r["points"])
    # the error view against privacy folds n, d and eps into one curve per algorithm
    err = FitSpec("e", "error", "privacy", "alpha_best", (1e-12, 1.0), "theory")
    grid = [Cell("hard_valley", (), "adaptive_tree_spider", (), n, d, e, 1e-6, 0, "theory", 1)
            for n in (10**6, 10**8) for d in (10, 20) for e in (0.1, 1.0)]
    rows = rf.forecast_fit(err, grid, fit_metric)
    assert len(rows) == 1 and rows[0]["points"] == 8 and rows[0]["d"] is None


def test_rules_forecast_gates_a_verdict_and_a_claim_forecast_does_not():
    from analysis.verdict_engine.verdicts import NOT_IN_REGIME, apply_gate, flag_columns

    floor = rf.RegimeFlag(rf.FlagKind.FLOOR, "the rules' non-private sample budget outweighs "
                          "their privacy part at 2 of 5 design points")
    ceiling = rf.RegimeFlag(rf.FlagKind.CEILING, "the claim's bound (constants at 1) is above a "
                            "tenth of the start's alpha_sosp (0.915) at 1 of 5 design points")
    fails = rf.GroupForecast({}, (floor,), rf.ForecastSource.RULES_BUDGET)
    flags = rf.gate_flags(fails)
    assert [f.render() for f in flags] == [floor.render() + " (forecast from the rules)"]
    both = rf.GroupForecast({}, (ceiling, floor), rf.ForecastSource.RULES_BUDGET)
    assert rf.gate_flags(both) == flags  # the ceiling part is the claim's: advisory
    advisory = rf.GroupForecast({}, (floor,), rf.ForecastSource.CLAIM_TERMS)
    assert rf.gate_flags(advisory) == [] and rf.gate_flags(rf.GroupForecast({})) == []
    assert rf.gate_flags(rf.GroupForecast({}, (), rf.ForecastSource.RULES_BUDGET)) == []
    table = pd.DataFrame([{"verdict": "consistent", **flag_columns(flags)},
                          {"verdict": "consistent", **flag_columns([])}])
    gated = apply_gate(table)
    assert list(gated["verdict"]) == [NOT_IN_REGIME, "consistent"]
    assert gated["regime"].iloc[0].startswith("floor: the rules'")


def test_claims_summary_says_out_of_reach_with_the_computed_size():
    """A claim decided only by not-in-regime fits: "out of reach" when its bound binds past
    n = 1e12 (the size printed is the one computed), "not in regime" with the size otherwise."""
    from analysis.report.tables import claims_summary, reach_verdict
    from analysis.verdict_engine.verdicts import NOT_IN_REGIME, OUT_OF_REACH

    v, regime = reach_verdict(NOT_IN_REGIME, "ceiling: x", 3.3e13)
    assert v == OUT_OF_REACH and "3.3e+13" in regime
    v, regime = reach_verdict(NOT_IN_REGIME, "ceiling: x", 2.5e4)
    assert v == NOT_IN_REGIME and regime.endswith("binds from n = 2.5e+04")
    assert reach_verdict("consistent", "in regime", 3.3e13) == ("consistent", "in regime")
    c = get_algorithm("noisy_sgd").claims[0]
    big = rf.binding_n(c, 1e4, 1e-9, 0.8)  # eps tiny, d large: the privacy term binds late
    assert big > rf.N_BUDGET
    fits = pd.DataFrame([{"algorithm": "noisy_sgd", "metric": c.metric, "verdict": "slower than claimed",
                          "flags": "ceiling: runs in the window never halved ||grad F(x0)||",
                          "exponent": -3.0, "ci_low": -3.5, "ci_high": -2.5, "predicted": -3.0,
                          "binding_n": big, "mode": "theory", "fit": "f", "spec": "s",
                          "problem": "hard_valley", "x": "alpha", "view": "sample_complexity"}])
    row = claims_summary(fits).set_index("algorithm").loc["noisy_sgd"]
    assert row["verdict"] == OUT_OF_REACH and f"{big:.2g}" in row["regime"]


def test_dry_run_prints_the_forecast_of_every_fit(tmp_path, capsys):
    from bench.cli import main

    assert main(["sweep", "bench/configs/quick.toml", "--dry-run", "--out", str(tmp_path / "q.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "fit samples_vs_alpha (sample_complexity, x = alpha, window 0.025-0.09): regime forecast" in out
    lines = [ln for ln in out.splitlines() if ln.startswith("    ")]
    assert len(lines) == 6  # three Spiders x two problems
    assert sum("in regime; binds from n = " in ln for ln in lines) == 4
    assert sum("no claim of tree_spider" in ln for ln in lines) == 2


def test_error_view_balance_from_the_spiders_accuracy_rules():
    """Error view: the Spiders' balance comes from their own accuracy rule at n (alpha(n, eps)
    - alpha(n, inf) against alpha(n, inf)); at eps 0.1 the Gaussian rules' privacy part
    dominates at n = 1e8 and no longer at n = 1e11 (their non-private accuracy is larger)."""
    from algorithms import Privacy
    from algorithms.sosp.spider import KNOB_DEFAULTS
    from analysis.declarations import FitSpec
    from analysis.verdict_engine.predictions import fit_metric
    from bench.cells import Cell

    prob = get_problem("hard_valley", d=10)
    cls = get_algorithm("gaussian_spider")

    def alpha(n, e):
        return cls.theory_params(prob.constants, n, 10, Privacy(e, 1e-6, "theory"), **KNOB_DEFAULTS)["alpha"]

    for n, dominated in ((10**8, False), (10**11, True)):
        priv, stat = alpha(n, 0.1) - alpha(n, math.inf), alpha(n, math.inf)
        assert (stat > priv) is dominated
        fit = FitSpec("e", "error", "privacy", "alpha_best", (1e-12, 1.0), "theory")
        cells = [Cell("hard_valley", (), "gaussian_spider", (), n, 10, 0.1, 1e-6, 0, "theory", 1)]
        (row,) = rf.forecast_fit(fit, cells, fit_metric)
        assert row["source"].startswith("the rules' accuracy at n")
        assert (row["forecast"] != "in regime") is dominated


def test_every_committed_spec_has_a_forecast_for_every_fit():
    """The dry run's forecast runs on every spec in bench/configs (a metric or view it cannot
    forecast would stop `dprates sweep --dry-run` and `dprates fit`)."""
    from pathlib import Path

    from analysis.verdict_engine.predictions import fit_metric
    from bench.config import load_spec

    specs = sorted((Path(__file__).resolve().parents[1] / "bench" / "configs").glob("*.toml"))
    assert len(specs) >= 20
    for path in specs:
        spec = load_spec(path)
        cells = spec.cells()
        for fit in spec.fits:
            rows = rf.forecast_fit(fit, cells, fit_metric)
            assert rows, (path.name, fit.name)
            assert all(isinstance(r["forecast"], str) and r["forecast"] for r in rows)


def test_out_of_reach_for_this_algorithm_when_its_own_rules_never_bind_within_budget():
    """The claim binds from n = 6.1e4, but the algorithm's own rules (an output stalling at
    ~1/log n) reach a tenth of the start only past the 1e12 budget, or never: out of reach
    for this algorithm, with both sizes said."""
    from analysis.report.tables import reach_verdict
    from analysis.verdict_engine.verdicts import NOT_IN_REGIME, OUT_OF_REACH

    v, regime = reach_verdict(NOT_IN_REGIME, "ceiling: x", 6.1e4, 2e20)
    assert v == OUT_OF_REACH and "for this algorithm" in regime
    assert "claim binds from n = 6.1e+04" in regime and "at n = 2e+20" in regime
    v, regime = reach_verdict(NOT_IN_REGIME, "ceiling: x", 6.1e4, math.inf)
    assert v == OUT_OF_REACH and "no n up to 1e40" in regime
    v, regime = reach_verdict(NOT_IN_REGIME, "ceiling: x", 6.1e4, 2.2e9)  # within the budget
    assert v == NOT_IN_REGIME and regime.endswith(
        "the claim binds from n = 6.1e+04, this algorithm's own rules' bound from n = 2.2e+09")
