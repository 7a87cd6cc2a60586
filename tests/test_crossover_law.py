"""The crossover law (analysis.comparisons.crossover_law) on planted curves: known crossovers, a known law in
eps and d, known budget uses; the references are the planted formulas."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from analysis.comparisons.crossover_law import (
    ADAPTIVE,
    GAUSSIAN,
    conditions_from_points,
    law_fit,
    law_markdown,
    predicted_crossover,
)

TARGETS = np.geomspace(1.4e-3, 8e-3, 6)
#: The planted law: alpha* = 2.5e-3 (eps / 0.1)^0.2 (d / 10)^-0.1.
A_EPS, B_D = 0.2, -0.1


def star(eps: float, d: int) -> float:
    return 2.5e-3 * (eps / 0.1) ** A_EPS * (d / 10) ** B_D


def _points(conds: list[tuple[float, int]], reps: int, sigma: float, seed: int) -> pd.DataFrame:
    """n*_A = 1e4 alpha^-2 / eps, n*_B = c alpha^(-7/3) / eps with c putting the crossover at
    star(eps, d); each seed's data shift both sides alike (paired) plus independent noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for eps, d in conds:
        c = 1e4 * star(eps, d) ** (1 / 3)
        for x in TARGETS:
            for r in range(reps):
                shared = 0.3 * rng.standard_normal()
                for alg, val in ((ADAPTIVE, 1e4 * x ** -2 / eps), (GAUSSIAN, c * x ** (-7 / 3) / eps)):
                    rows.append({"algorithm": alg, "eps": eps, "d": d, "x": float(x), "rep": r,
                                 "y": val * math.exp(shared + sigma * rng.standard_normal())})
    return pd.DataFrame(rows)


CROSS = [(0.03, 10), (0.1, 10), (0.3, 10), (0.1, 30), (0.1, 100)]


def test_each_condition_crosses_where_it_was_planted():
    conds = conditions_from_points(_points(CROSS, 8, 0.02, 1))
    assert [(c.eps, c.d) for c in conds] == sorted(CROSS)
    for c in conds:
        assert c.crossover() == pytest.approx(star(c.eps, c.d), rel=0.05)


def test_the_law_recovers_the_planted_exponents_with_cis_that_cover_them():
    law = law_fit(conditions_from_points(_points(CROSS, 8, 0.05, 2)), n_boot=400,
                  rng=np.random.default_rng(3))
    assert law.eps_exp == pytest.approx(A_EPS, abs=0.05)
    assert law.d_exp == pytest.approx(B_D, abs=0.05)
    assert law.eps_ci[1] - law.eps_ci[0] < 0.2 and law.d_ci[1] - law.d_ci[0] < 0.2
    assert (law.table["where"] == "inside").all()
    md = law_markdown(law)
    # five rows in each of the crossovers and the slopes tables
    assert "log alpha* = c + a log eps + b log d" in md and md.count("\n| 0.") == 10
    assert "(through the 5 of 5 crossovers inside their brackets)" in md


def test_the_law_cis_cover_the_planted_exponents_in_most_datasets():
    """Coverage of the joint bootstrap over 40 planted datasets (8 seeds a point): the
    percentile bootstrap of a mean of 8 pairs under-covers a little (measured 0.92-0.93 for eps
    over 60 datasets); 0.85 leaves room for 40 draws (binomial sd 0.04 at 0.93)."""
    hits = np.zeros(2)
    for s in range(40):
        law = law_fit(conditions_from_points(_points(CROSS, 8, 0.05, 100 + s)), n_boot=200,
                      rng=np.random.default_rng(s))
        hits += [law.eps_ci[0] <= A_EPS <= law.eps_ci[1], law.d_ci[0] <= B_D <= law.d_ci[1]]
    assert (hits / 40 >= 0.85).all(), hits


def test_a_law_over_eps_alone_leaves_d_out():
    law = law_fit(conditions_from_points(_points(CROSS[:3], 6, 0.03, 4)), n_boot=200,
                  rng=np.random.default_rng(5))
    assert law.eps_exp == pytest.approx(A_EPS, abs=0.06)
    assert math.isnan(law.d_exp)


def test_the_predicted_crossover_scales_the_rules_budgets_by_their_measured_use():
    """Budgets B_A = 1e4 alpha^-2 / eps and B_B = 3e3 alpha^(-7/3) / eps: alone they cross at
    (3e3 / 1e4)^3 = 0.027; with measured n* = 0.5 B_A and 2 B_B the crossover is where
    0.5 B_A = 2 B_B: alpha = (4 * 3e3 / 1e4)^3 = 1.728."""
    pts = _points([(0.1, 10)], 3, 0.0, 6)
    pts.loc[pts["algorithm"] == ADAPTIVE, "y"] = [0.5 * 1e4 * x ** -2 / 0.1 for x in
                                                   pts.loc[pts["algorithm"] == ADAPTIVE, "x"]]
    pts.loc[pts["algorithm"] == GAUSSIAN, "y"] = [2 * 3e3 * x ** (-7 / 3) / 0.1 for x in
                                                   pts.loc[pts["algorithm"] == GAUSSIAN, "x"]]

    def budgets(alg: str, eps: float, d: int):
        if alg == ADAPTIVE:
            return lambda a: 1e4 * a ** -2 / eps
        return lambda a: 3e3 * a ** (-7 / 3) / eps

    (cond,) = conditions_from_points(pts, budgets)
    assert cond.budget_use() == pytest.approx((0.5, 2.0), rel=1e-9)
    assert predicted_crossover(cond, (1.0, 1.0)) == pytest.approx(0.3 ** 3, rel=1e-6)
    assert math.isnan(predicted_crossover(cond))  # 1.728 is above ALPHA_MAX: no crossing
    assert predicted_crossover(cond, (0.5, 1.0)) == pytest.approx((2 * 0.3) ** 3, rel=1e-6)


def test_the_crossovers_csv_round_trips_to_the_headline_page_lines(tmp_path):
    from analysis.comparisons.crossover_files import CROSSOVER_COLUMNS, crossovers_csv
    from analysis.report.headline_page import observed_crossover_lines

    conds = conditions_from_points(_points(CROSS[:2], 6, 0.02, 7).assign(
        problem="hard_valley", source="spec (tight)"))
    table = crossovers_csv(law_fit(conds, n_boot=200, rng=np.random.default_rng(8)))
    assert list(table.columns) == CROSSOVER_COLUMNS and len(table) == 2
    path = tmp_path / "crossovers.csv"
    table.to_csv(path, index=False)
    lines = observed_crossover_lines(pd.read_csv(path))
    assert len(lines) == 2  # the heading and one line for the family
    line = lines[1]
    assert line.startswith("  hard_valley (spec; tight; knobs at 1; 6 paired targets "
                           "0.0014..0.008, 6 seeds): alpha* = ")
    got = re.findall(r"alpha\* = ([0-9.e-]+) \[[^\]]*\] at eps ([0-9.]+), d (\d+)", line)
    assert [(float(e), int(d)) for _, e, d in got] == CROSS[:2]
    for v, e, d in got:
        assert float(v) == pytest.approx(star(float(e), int(d)), rel=0.05)
    assert observed_crossover_lines(None) == []


def test_report_refuses_a_crossovers_file_without_its_columns(tmp_path, capsys):
    from bench.cli import main

    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    assert main(["report", str(tmp_path / "none.sqlite"), "-o", str(tmp_path / "r.pdf"),
                 "--crossovers", str(bad)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--crossovers=" in err[0] and "lacks the columns" in err[0]


def test_two_families_at_one_eps_and_d_are_two_conditions():
    """The valley's points and a second family's (its crossover planted 2x higher) at the same
    (eps, d) never pair: one condition each, each where it was planted."""
    a = _points([(0.1, 10)], 6, 0.02, 9).assign(problem="hard_valley")
    b = _points([(0.1, 10)], 6, 0.02, 10).assign(problem="hard_ramp")
    shift = (1 / 3) * math.log(2)  # n*_B scaled by 2^(1/3): alpha* x 2
    b.loc[b["algorithm"] == GAUSSIAN, "y"] *= math.exp(shift)
    conds = conditions_from_points(pd.concat([a, b], ignore_index=True))
    assert sorted(c.problem for c in conds) == ["hard_ramp", "hard_valley"]
    got = {c.problem: c.crossover() for c in conds}
    assert got["hard_valley"] == pytest.approx(star(0.1, 10), rel=0.05)
    assert got["hard_ramp"] == pytest.approx(2 * star(0.1, 10), rel=0.05)


class _Spec:
    def __init__(self, name: str) -> None:
        from analysis.declarations import FitSpec

        self.name, self.calibration = name, "tight"
        self.fits = [FitSpec(name="f", view="sample_complexity", x="alpha", y="n_star",
                             window=(1e-3, 1e-2), mode="theory")]


class _Data:
    """A store as conditions_from_stores reads it: its fit points (`pts`, handed out by a
    patched fit_points_table) and its cells (the eps = inf controls, if any)."""

    def __init__(self, name: str, pts: pd.DataFrame, cells: pd.DataFrame | None = None) -> None:
        self.spec, self.pts = _Spec(name), pts
        self.cells = cells if cells is not None else pd.DataFrame(
            {"key": [], "status": [], "eps": [], "algorithm": [], "params": []})
        self.controls = None


def _store_points(monkeypatch, problem: str, per_target: bool) -> pd.DataFrame:
    import json

    import analysis.points

    pts = _points([(0.1, 10)], 3, 0.02, 11).assign(problem=problem, delta=1e-6)
    pts["instance_params"] = [json.dumps({"alpha": x} if per_target else {}) for x in pts["x"]]
    pts = pts.assign(key=[f"p{i}" for i in range(len(pts))], alpha=pts["x"],
                     target_alpha=pts["x"], n=10**13)
    monkeypatch.setattr(analysis.points, "fit_points_table", lambda data, fit, mode: data.pts)
    return pts


def test_a_per_target_family_prices_each_alpha_on_its_own_instance(monkeypatch):
    """hard_ramp builds one instance per target alpha: the rules' budget at alpha is the one
    theory_params gives on the instance built for alpha, not on the first cell's instance."""
    from algorithms import Privacy, get_algorithm
    from algorithms.sosp.spider import KNOB_DEFAULTS
    from analysis.comparisons.crossover_law import conditions_from_stores
    from problems import get_problem

    pts = _store_points(monkeypatch, "hard_ramp", per_target=True)
    (cond,) = conditions_from_stores([_Data("ramp_law", pts)])
    cls = get_algorithm(ADAPTIVE)

    def reference(alpha: float, instance_alpha: float) -> float:
        prob = get_problem("hard_ramp", d=10, alpha=instance_alpha)
        return float(cls.theory_params(prob.constants, None, 10, Privacy(0.1, 1e-6, "tight"),
                                       target_alpha=alpha, **KNOB_DEFAULTS)["theory_budget"])

    for alpha in (2e-3, 5e-3):
        assert cond.budget_a(alpha) == pytest.approx(reference(alpha, alpha), rel=1e-9)
    # the first cell's instance (alpha 1.4e-3) would price 5e-3 differently
    assert reference(5e-3, TARGETS[0]) != pytest.approx(reference(5e-3, 5e-3), rel=1e-3)


def test_stores_of_two_families_are_refused_in_one_line(monkeypatch):
    from analysis.comparisons.crossover_law import conditions_from_stores

    a = _store_points(monkeypatch, "hard_valley", per_target=False)
    b = a.assign(problem="hard_valley_rotated")
    with pytest.raises(ValueError, match="a law is one family's"):
        conditions_from_stores([_Data("a", a), _Data("b", b)])


def test_a_constants_study_is_one_line_on_the_headline_page():
    """Page 2 sums up each constants study in one line: its defaults' crossover, then
    how many of its other settings cross inside the targets (with their range as a multiple of
    the defaults'), outside them, and never."""
    from analysis.comparisons.crossover_files import CROSSOVER_COLUMNS
    from analysis.report.headline_page import observed_crossover_lines

    def row(constants: str, star: float, where: str) -> dict:
        return {"problem": "hard_ramp", "source": "sens (tight)", "eps": 0.1, "d": 10,
                "constants": constants, "alpha_star": star, "ci_low": star * 0.9,
                "ci_high": star * 1.1, "where": where, "bracket": "3 paired targets",
                "use_adaptive": math.nan, "use_gaussian": math.nan, "predicted": math.nan,
                "rules_alone": math.nan}

    table = pd.DataFrame([row("defaults", 2e-3, "inside"), row("a c_zeta=4", 1.6e-3, "inside"),
                          row("a c_zeta=0.25", 2.5e-3, "inside"), row("a budget_mult=4", 9e-3, "above"),
                          row("a alpha_mult=4", math.nan, "none")]).reindex(columns=CROSSOVER_COLUMNS)
    lines = observed_crossover_lines(table)
    assert len(lines) == 2
    assert lines[1] == ("  hard_ramp constants study (sens; tight; 3 paired targets): defaults "
                        "alpha* = 0.002 [0.0018, 0.0022]; 4 other settings of the constants: 2 "
                        "cross inside the targets, alpha* 0.0016 to 0.0025 (0.80-1.25x the "
                        "defaults'); 1 outside them, 1 never")


def test_page_two_prints_no_extrapolated_crossover_on_a_family_with_observed_ones():
    """Issue 43, item 6: where a family has measured crossovers, a paired line whose crossover
    falls outside its window says so instead of printing the extrapolated value; inside the
    window, or on a family without measured ones, the value stays."""
    from types import SimpleNamespace

    from analysis.report.headline_page import _crossover_line

    def pair(where: str) -> dict:
        res = SimpleNamespace(slope=0.34, slope_ci_low=0.32, slope_ci_high=0.37, crossover=6.8e-4,
                              crossover_ci_low=5.1e-4, crossover_ci_high=8.5e-4,
                              crossover_where=where)
        return {"result": res, "group": {"problem": "hard_valley", "eps": 0.1, "d": 10},
                "a": ADAPTIVE, "b": GAUSSIAN, "predicted_slope": 1 / 3}

    seen = frozenset({"hard_valley"})
    assert "0.00068" not in _crossover_line(pair("below"), seen)
    assert "outside the window (below it), not printed: an extrapolation is not a measurement" \
        in _crossover_line(pair("below"), seen)
    assert "equal samples at alpha = 0.00068" in _crossover_line(pair("below"))
    assert "equal samples at alpha = 0.00068" in _crossover_line(pair("below"), frozenset({"hard_ramp"}))
    assert "inside the window." in _crossover_line(pair("inside"), seen)
    # crossovers.csv measures the two Spiders: another pair on the family keeps its value
    other = {**pair("below"), "a": "noisy_sgd", "b": "tree_private_spider"}
    assert "an extrapolation below the window" in _crossover_line(other, seen)


def test_a_per_target_family_has_no_budget_where_it_has_no_instance(monkeypatch):
    """hard_ramp at alpha 0.14 (drop 4, k 2) is too short to build: its budget there is NaN,
    so the predicted crossover's search skips it instead of stopping the command."""
    from analysis.comparisons.crossover_law import conditions_from_stores

    pts = _store_points(monkeypatch, "hard_ramp", per_target=True)
    (cond,) = conditions_from_stores([_Data("ramp_law", pts)])
    assert math.isnan(cond.budget_a(0.14)) and math.isfinite(cond.budget_a(0.01))


def test_a_crossover_outside_its_bracket_is_listed_not_fitted():
    """d 100's Gaussian side scaled by e^2 puts its crossover far above its targets: the row
    says "above", and the law through the other four still has the planted exponents."""
    pts = _points(CROSS, 8, 0.02, 12)
    pts.loc[(pts["d"] == 100) & (pts["algorithm"] == GAUSSIAN), "y"] *= math.exp(2.0)
    law = law_fit(conditions_from_points(pts), n_boot=200, rng=np.random.default_rng(13))
    assert law.table.set_index("d").loc[100, "where"] == "above"
    assert law.eps_exp == pytest.approx(A_EPS, abs=0.05)
    assert law.d_exp == pytest.approx(B_D, abs=0.05)
    assert law.d_ci[0] <= B_D <= law.d_ci[1]
    assert ("(through the 4 of 5 crossovers inside their brackets; 1 not inside, listed above, not "
            "fitted)") in law_markdown(law)


def test_each_bracket_gets_its_sides_measured_private_share_and_the_paired_slope_its_gate(
        monkeypatch):
    """eps = inf controls planted at a known fraction of each side's private median n*: the
    adaptive side's controls at 2% (share 0.98), the Gaussian side's at 20% (share 0.80, below
    the gate's 0.9). The condition carries both shares, and its paired slope is read as not in
    regime naming the Gaussian side; with controls at 2% for both it is in regime; with none,
    "no control". alpha* is reported in every case."""
    from analysis.comparisons.crossover_law import conditions_from_stores

    pts = _store_points(monkeypatch, "hard_valley", per_target=False)

    def controls(fraction: dict[str, float]) -> pd.DataFrame:
        rows = []
        for (alg, x), g in pts.groupby(["algorithm", "x"]):
            med = float(g["y"].median())
            for r in range(3):
                rows.append({"key": f"c{alg}{x}{r}", "status": "ok", "eps": math.inf,
                             "algorithm": alg, "problem": "hard_valley", "params": {},
                             "problem_params": {}, "n": 10**13, "d": 10, "target_alpha": x,
                             "samples_to_target": fraction[alg] * med})
        return pd.DataFrame(rows)

    (low,) = conditions_from_stores([_Data("law", pts, controls({ADAPTIVE: 0.02, GAUSSIAN: 0.2}))])
    assert low.share_a == pytest.approx(0.98) and low.share_b == pytest.approx(0.80)
    law = law_fit([low], n_boot=50)
    row = law.table.iloc[0]
    assert row["paired_gate"].startswith("not in regime: measured private share Gaussian 0.80")
    assert "adaptive" not in row["paired_gate"] and math.isfinite(row["alpha_star"])
    assert "0.98 / 0.80" in law_markdown(law)
    (high,) = conditions_from_stores([_Data("law", pts, controls({ADAPTIVE: 0.02, GAUSSIAN: 0.02}))])
    assert law_fit([high], n_boot=50).table.iloc[0]["paired_gate"] == "in regime"
    (none,) = conditions_from_stores([_Data("law", pts)])
    assert math.isnan(none.share_a)
    assert law_fit([none], n_boot=50).table.iloc[0]["paired_gate"].startswith("no control")
