"""`dprates atlas` (analysis.comparisons: atlas, atlas_map, atlas_recommend; report.atlas_page;
bench.cli.atlas):
which algorithm wins where. Synthetic cells with planted truths, as tests/test_compare.py builds
them: a winner whose n* is 3x smaller on every seed (paired: every draw gives 3 exactly), a tie
(the same values on permuted seeds: the interval covers 1), points one algorithm or no store
covers ("not measured"), a planted crossover, the CSV round trip, the recommendation line
(measured at a design point, extrapolated beyond it along the planted power law) and the
command's one-line refusals."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from analysis.comparisons.atlas import (
    ERROR,
    NO_WINNER,
    SAMPLES,
    WINNER,
    atlas_table,
    points_table,
)
from analysis.comparisons.atlas_csv import read_csv, write_csv
from tests.synthetic_cells import budgets, targeted, write_store

A, B, SGD, GD = "gaussian_spider", "adaptive_tree_spider", "dp_sgd", "dp_gd"
SPREAD = [0.9, 0.95, 1.0, 1.05, 1.1]  # per-seed factors: five seeds around the law


def one_pass(alg: str, n_star: list[float], target: float, d: int = 10, eps: float = 0.5,
             seed: int = 1) -> list[dict]:
    """Targeted cells: repetition r read n_star[r] samples to reach `target`."""
    return targeted(alg, n_star, target, d=d, eps=eps, base_seed=seed, pop_grad_best=math.nan)


def records(alg: str, ns: list[float], err, reps: int = 5, d: int = 10, eps: float = 0.5) -> list[dict]:
    """Untargeted cells of a method on n records: emp_grad_best = pop_grad_best = err(n, rep)."""
    return budgets(alg, ns, err, reps, ("pop_grad_best", "emp_grad_best"), problem="glm",
                   data="records", d=d, eps=eps, params_used={"sampling": "poisson", "b": 100})


def law(target: float, k: float = 1.0) -> list[float]:
    """n* = k 100 / target^2 on each seed, times the seed's factor."""
    return [k * 100 / target ** 2 * f for f in SPREAD]


def planted() -> list[dict]:
    """A wins 3x on every seed at targets 0.1, 0.05, 0.02 (eps 0.5); a tie at eps 1, target 0.1
    (the same values on permuted seeds); at target 0.01 only A ran; at eps 1, target 0.05 no
    store has anything."""
    rows = []
    for t in (0.1, 0.05, 0.02):
        rows += one_pass(A, law(t), t) + one_pass(B, law(t, 3.0), t)
    rows += one_pass(A, law(0.01), 0.01)
    rows += one_pass(A, law(0.1), 0.1, eps=1.0) + one_pass(B, law(0.1)[::-1], 0.1, eps=1.0)
    rows += one_pass(A, law(0.02), 0.02, eps=1.0) + one_pass(B, law(0.02, 3.0), 0.02, eps=1.0)
    return rows


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return atlas_table(pd.DataFrame(planted()), n_boot=400)


def _point(points: pd.DataFrame, eps: float, x: float) -> pd.Series:
    hit = points[np.isclose(points["eps"], eps) & np.isclose(points["x"], x)]
    assert len(hit) == 1
    return hit.iloc[0]


def test_a_planted_winner_reads_winner_with_the_paired_ratio_3(table):
    """n*_B = 3 n*_A seed by seed: every paired draw is 3, so the interval is [3, 3]."""
    p = _point(points_table(table), 0.5, 0.05)
    assert p["reading"] == WINNER and p["best"] == A and p["runner_up"] == B
    assert p["margin"] == pytest.approx(3.0)
    assert (p["margin_low"], p["margin_high"]) == (pytest.approx(3.0), pytest.approx(3.0))
    assert p["pairing"] == "paired (5 seeds)" and p["view"] == SAMPLES
    assert p["metric"] == "alpha_sosp"


def test_a_planted_tie_reads_no_significant_winner(table):
    """The same five values on permuted seeds: ratio 1, the interval covers 1."""
    p = _point(points_table(table), 1.0, 0.1)
    assert p["reading"] == NO_WINNER
    assert p["margin"] == pytest.approx(1.0) and p["margin_low"] < 1 < p["margin_high"]
    assert p["best"] in (A, B)
    assert set(table[np.isclose(table["eps"], 1.0) & np.isclose(table["x"], 0.1)]["winner"]) == {""}
    from analysis.comparisons.atlas_map import crossovers

    assert crossovers(table).empty  # a tie of medians has no best, so no crossover into it


def test_points_one_algorithm_or_no_store_covers_read_not_measured(table):
    points = points_table(table)
    only = _point(points, 0.5, 0.01)
    assert only["reading"] == f"not measured (only {A})" and only["best"] == ""
    assert only["runner_up"] == "" and math.isnan(only["margin"])
    empty = _point(points, 1.0, 0.05)
    assert empty["reading"] == "not measured (no store covers it)"
    # the grid: 2 eps x 4 targets, one instance and metric
    assert len(points) == 8 and set(points["view"]) == {SAMPLES}


def test_never_across_metrics_or_instances():
    """The same algorithms on two instances, and an error-view metric: separate comparisons."""
    rows = planted()
    other = [{**r, "problem_params": {"width": 2}} for r in one_pass(B, law(0.1, 0.1), 0.1)]
    other += [{**r, "problem_params": {"width": 2}} for r in one_pass(A, law(0.1), 0.1)]
    t = atlas_table(pd.DataFrame(rows + other), n_boot=200)
    p = points_table(t)
    wide = p[p["instance"] == '{"width": 2}']
    assert len(wide) == 1 and wide.iloc[0]["best"] == B and wide.iloc[0]["margin"] == pytest.approx(10)
    assert _point(p[p["instance"] == ""], 0.5, 0.1)["best"] == A


def test_error_view_lowest_error_at_n_and_its_x():
    """The gradient norm 1/sqrt(n) (DP-GD) against 2/sqrt(n) (DP-SGD) seed by seed: DP-GD wins
    2x at every n. Compared on the metric both claim (emp_grad_norm), not on every column their
    cells store, unless a metric is asked for."""
    ns = [1e3, 1e4, 1e5]
    rows = records(GD, ns, lambda n, r: SPREAD[r] / math.sqrt(n)) + \
        records(SGD, ns, lambda n, r: 2 * SPREAD[r] / math.sqrt(n))
    t = atlas_table(pd.DataFrame(rows), n_boot=200)
    p = points_table(t)
    assert set(p["view"]) == {ERROR} and set(p["metric"]) == {"emp_grad_norm"}
    assert (p["best"] == GD).all() and (p["reading"] == WINNER).all()
    assert p["margin"].to_numpy() == pytest.approx(2.0)
    assert sorted(p["x"]) == ns
    asked = points_table(atlas_table(pd.DataFrame(rows), n_boot=200, metrics=["grad_norm"]))
    assert set(asked["metric"]) == {"grad_norm"} and (asked["best"] == GD).all()


def test_csv_round_trip_gives_the_same_table(table, tmp_path):
    path = write_csv(table, tmp_path / "atlas.csv")
    back = read_csv(path)
    pd.testing.assert_frame_equal(back, table, check_dtype=False)
    pd.testing.assert_frame_equal(points_table(back), points_table(table), check_dtype=False)


def test_a_planted_crossover_is_located_between_its_points():
    """A wins 3x at target 0.1, B wins 3x at 0.01 (paired): log(B/A) goes from log 3 to -log 3,
    so the crossing is at the geometric middle, sqrt(0.1 x 0.01)."""
    from analysis.comparisons.atlas_map import atlas_figures, crossovers

    rows = one_pass(A, law(0.1), 0.1) + one_pass(B, law(0.1, 3.0), 0.1)
    rows += one_pass(A, law(0.01, 3.0), 0.01) + one_pass(B, law(0.01), 0.01)
    t = atlas_table(pd.DataFrame(rows), n_boot=200)
    cx = crossovers(t)
    assert len(cx) == 1
    c = cx.iloc[0]
    assert (c["from"], c["to"]) == (B, A) and c["significant"]  # sorted by x: 0.01 first, B best
    assert c["x_cross"] == pytest.approx(math.sqrt(0.1 * 0.01))
    assert c["x_low"] == pytest.approx(c["x_cross"]) and c["x_high"] == pytest.approx(c["x_cross"])
    # the sensitivity hook hatches the points it names
    ranges = points_table(t)[["view", "metric", "problem", "instance", "d", "eps", "x"]].assign(
        winner_changes=[True, False])
    (name, fig), = atlas_figures(t, ranges)
    assert name == "atlas_alpha_sosp_hard_valley"
    assert any(getattr(c, "get_hatch", lambda: None)() == "///" for c in fig.axes[0].collections)


def test_recommendation_measured_and_extrapolated(table):
    from analysis.comparisons.atlas_recommend import recommend

    (rec,) = recommend(table, {"n": 1e8, "d": 10, "eps": 0.5}, target=0.05, n_boot=400)
    assert rec.status == "measured" and rec.winner == A and rec.reading == WINNER
    assert rec.margin == pytest.approx(3.0) and len(rec.rests_on) == 2
    assert "n=1e+08 covers" in rec.budget
    (rec,) = recommend(table, {"n": 1e5, "d": 10, "eps": 0.5}, target=1e-3, n_boot=400)
    assert rec.status == "extrapolated" and rec.winner == A and rec.reading == WINNER
    assert rec.margin == pytest.approx(3.0, rel=1e-6) and 2 < rec.margin_low < 3 < rec.margin_high < 4.5
    assert "beyond that range" in rec.how and "target^-2" in rec.how
    assert rec.winner_value == pytest.approx(100 / 1e-6) and "is below" in rec.budget
    # eps 0.3 is not measured: the nearest setting is eps 0.5, and the line says the fits
    # do not model the change
    (rec,) = recommend(table, {"d": 10, "eps": 0.3}, target=0.05, n_boot=400)
    assert rec.status == "extrapolated" and "eps=0.5, the nearest" in rec.how
    assert "eps=0.3 requested" in rec.how


def test_the_command_on_stores_and_its_csv(tmp_path, capsys):
    from bench.cli import main

    rows = planted()
    a = write_store(tmp_path / "a.sqlite", [r for r in rows if r["algorithm"] == A])
    b = write_store(tmp_path / "b.sqlite", [r for r in rows if r["algorithm"] == B])
    assert main(["atlas", a, b, "--boot", "200"]) == 0
    out = capsys.readouterr().out
    assert f"d=10 eps=0.5 target alpha_sosp=0.05: {A} wins, 3x [3, 3] fewer samples than {B} " \
           "(paired over 5 seeds)" in out
    assert "d=10 eps=1 target alpha_sosp=0.1: no significant winner" in out
    assert "d=10 eps=1 target alpha_sosp=0.05: not measured (no store covers it)" in out
    csv = tmp_path / "atlas.csv"
    assert main(["atlas", a, b, "--boot", "200", "--format", "csv", "-o", str(csv)]) == 0
    capsys.readouterr()
    assert main(["atlas", str(csv)]) == 0
    assert capsys.readouterr().out == out
    assert main(["atlas", str(csv), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert f"| hard_valley | alpha_sosp | {SAMPLES} | 10 | 0.5 | target alpha_sosp 0.05 | {A} |" in md
    argv = [str(csv), "--at", "n=1e8,d=10,eps=0.5", "--target", "0.05"]
    assert main(["atlas", *argv]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert f": run {A}, 3x [3, 3] fewer samples than {B}" in line and line.endswith("; measured")
    assert main(["atlas", str(csv), "--at", "n=1e8,d=10,eps=0.5", "--target", "1e-3"]) == 0
    assert "; extrapolated: per-algorithm log-log fits" in capsys.readouterr().out
    from bench.cli.atlas import write_atlas_csv

    again = write_atlas_csv([a, b], tmp_path / "ref" / "atlas.csv", n_boot=200)
    assert again.read_text() == csv.read_text()  # `make reference`'s call: the same file
    maps = tmp_path / "maps"
    assert main(["atlas", str(csv), "--maps", str(maps)]) == 0
    assert [p.name for p in maps.iterdir()] == ["atlas_alpha_sosp_hard_valley.png"]


def test_bad_input_gets_one_line_and_exit_2(tmp_path, capsys):
    from bench.cli import main

    csv = str(write_csv(atlas_table(pd.DataFrame(planted()), n_boot=200), tmp_path / "atlas.csv"))
    for argv, msg in (
            ([csv, "--at", "x=1", "--target", "0.1"],
             "--at key 'x' (in 'x=1') is invalid: allowed keys are n, d, eps"),
            ([csv, "--at", "n=lots"], "--at n='lots' is invalid: must be a number > 0, e.g. n=1e8"),
            ([csv, "--at", "d=-3", "--target", "0.1"], "--at d='-3' is invalid: must be a number > 0"),
            ([csv, "--at", "n1e8"], "--at 'n1e8' is invalid: must be KEY=VALUE pairs"),
            ([csv, "--metric", "excess_risk"],
             "--metric='excess_risk' is invalid: the atlas holds metric alpha_sosp"),
            ([csv, "--metric", "nope"], "--metric='nope' is invalid: must be a claim metric, one of "
             "alpha_sosp, emp_alpha_sosp, emp_grad_norm, excess_risk, grad_norm"),
            ([csv, "--problem", "nope"], "--problem='nope' is invalid: the atlas holds problem hard_valley"),
            ([csv, "--at", "d=10,eps=0.5"], "--at needs n=VALUE when no --target is given"),
            ([csv, "--target", "0.1"], "--target=0.1 is used with --at"),
            ([str(tmp_path / "missing.sqlite")], "no such file")):
        assert main(["atlas", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert main(["atlas", str(tmp_path / "other.csv")]) == 2
    assert "not an atlas CSV" in capsys.readouterr().err


def test_the_report_page(tmp_path, table):
    """The page the report builder calls: a text page and a map, nothing off the page."""
    from matplotlib.backends.backend_pdf import PdfPages

    from analysis.report.atlas_page import atlas_page
    from analysis.report.layout import LayoutCheckedPdf

    class Data:  # the StoreData fields the page reads
        cells = pd.DataFrame(planted())
        path = "synthetic.sqlite"

    problems: list[str] = []
    with PdfPages(tmp_path / "atlas.pdf") as raw:
        pdf = LayoutCheckedPdf(raw, problems)
        out = atlas_page(pdf, [Data()], n_boot=200)
        pages = raw.get_pagecount()
    assert pages == 2 and problems == [] and len(out) == len(table)
    assert set(out["source"]) == {"synthetic.sqlite"}
    with PdfPages(tmp_path / "none.pdf") as raw:  # one algorithm: a note, no map
        Data.cells = pd.DataFrame(one_pass(A, law(0.1), 0.1))
        atlas_page(raw, [Data()], n_boot=200)
        assert raw.get_pagecount() == 1


def test_stdout_csv_reads_back(tmp_path, capsys, table):
    from bench.cli import main

    csv = write_csv(table, tmp_path / "atlas.csv")
    assert main(["atlas", str(csv), "--format", "csv"]) == 0
    again = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(again) == len(table)


def test_a_points_intervals_do_not_depend_on_what_else_is_loaded(table):
    """Each point draws its own bootstrap stream (keyed by the point): the atlas of the eps 0.5
    cells alone has the same rows there as the atlas of everything."""
    cells = pd.DataFrame(planted())
    alone = atlas_table(cells[cells["eps"] == 0.5], n_boot=400)
    part = table[table["eps"] == 0.5].reset_index(drop=True)
    pd.testing.assert_frame_equal(alone, part, check_dtype=False)


def test_the_same_algorithm_from_two_stores_is_not_its_own_rival():
    """A from a second store (another base seed, 2x the samples) beside A and B paired on seed
    1: the point keeps one A (the row that pairs with B) and reads A over B by 3x."""
    cells = pd.DataFrame(one_pass(A, law(0.05), 0.05) + one_pass(B, law(0.05, 3.0), 0.05)
                         + one_pass(A, law(0.05, 2.0), 0.05, seed=7))
    t = atlas_table(cells, n_boot=400)
    assert sorted(t["algorithm"]) == sorted([A, B])
    p = _point(points_table(t), 0.5, 0.05)
    assert p["reading"] == WINNER and p["best"] == A and p["runner_up"] == B
    assert p["margin"] == pytest.approx(3.0) and p["pairing"] == "paired (5 seeds)"


def test_a_per_target_instance_family_is_one_map():
    """hard_ramp is built per alpha (problem parameter alpha = the target): its targets form one
    map, not one single-point map per instance."""
    rows = []
    for t in (0.1, 0.05):
        for r in one_pass(A, law(t), t) + one_pass(B, law(t, 3.0), t):
            rows.append({**r, "problem": "hard_ramp", "problem_params": {"alpha": t}})
    t = atlas_table(pd.DataFrame(rows), n_boot=200)
    assert set(t["instance"]) == {"{}"} or set(t["instance"]) == {""}
    assert sorted(set(t["x"])) == [0.05, 0.1]


def _censored_atlas(win_n: float, rival_budget: float) -> pd.DataFrame:
    """A reaches target 0.05 with `win_n` samples on every seed; B never does, each of its runs
    stopping after reading `rival_budget` samples (censored). At target 0.1 both reach it, B
    first (3x fewer), so the best median changes between the two targets."""
    rows = one_pass(A, [win_n * f for f in SPREAD], 0.05)
    rows += targeted(B, [math.inf] * 5, 0.05, d=10, eps=0.5, base_seed=1,
                     pop_grad_best=math.nan, samples_used=rival_budget)
    rows += one_pass(A, law(0.1, 3.0), 0.1) + one_pass(B, law(0.1), 0.1)
    return atlas_table(pd.DataFrame(rows), n_boot=300)


def test_a_censored_runner_up_is_a_lower_bound_never_an_infinite_margin():
    """Issue 57, item 2: B censored after 1e6 samples where A needs 1e5: A wins by more than
    10x (a lower bound, the pairing says why), never "inf x"; B censored after 1e4 where A
    needs 1e5 decides nothing. The crossover toward the censored point has no position, only
    its bracket of measured targets."""
    from analysis.comparisons.atlas import CENSORED_RIVAL, CENSORED_UNDECIDED, text_lines
    from analysis.comparisons.atlas_map import crossover_lines, crossovers

    table = _censored_atlas(1e5, 1e6)
    p = _point(points_table(table), 0.5, 0.05)
    assert p["reading"] == WINNER and p["best"] == A and p["pairing"] == CENSORED_RIVAL
    assert math.isnan(p["margin"]) and p["margin_low"] == pytest.approx(10.0)  # 1e6 / 1e5
    rival = table[(table["algorithm"] == B) & np.isclose(table["x"], 0.05)].iloc[0]
    assert math.isinf(rival["value"]) and rival["bound"] == 1e6
    lines = "\n".join(text_lines(points_table(table)))
    assert "more than 10x fewer samples than adaptive_tree_spider (censored" in lines
    assert "infx" not in lines and "inf [" not in lines
    cx = crossovers(table)
    assert len(cx) == 1 and bool(cx["censored"].iloc[0]) and math.isnan(cx["x_cross"].iloc[0])
    assert (cx["x_low"].iloc[0], cx["x_high"].iloc[0]) == (0.05, 0.1)
    assert "crossing somewhere in target [0.05, 0.1] (a censored median at one end: not " \
           "interpolated)" in crossover_lines(cx)[0]
    short = points_table(_censored_atlas(1e5, 1e4))
    q = _point(short, 0.5, 0.05)
    assert q["reading"] == CENSORED_UNDECIDED and math.isnan(q["margin_low"])


def test_a_censored_runner_up_survives_the_csv_and_an_old_csv_without_bounds(tmp_path):
    from analysis.comparisons.atlas import CENSORED_RIVAL

    table = _censored_atlas(1e5, 1e6)
    back = read_csv(write_csv(table, tmp_path / "atlas.csv"))
    p = _point(points_table(back), 0.5, 0.05)
    assert p["pairing"] == CENSORED_RIVAL and p["margin_low"] == pytest.approx(10.0)
    old = tmp_path / "old.csv"  # an atlas CSV written before the bound column
    table.drop(columns=["bound"]).to_csv(old, index=False)
    q = _point(points_table(read_csv(old)), 0.5, 0.05)
    assert q["reading"] != WINNER and q["pairing"] == CENSORED_RIVAL  # no bound: no win claimed


def test_one_or_two_seeds_never_name_a_winner():
    """A one-seed probe read "dp_gd wins, 1.19x [1.19, 1.19]": the bootstrap over one seed is a
    point. With 1 or 2 seeds the same planted 3x margin is undecided; with 3 it is a winner."""
    from analysis.comparisons.atlas import FEW_SEEDS

    for reps, want in ((1, FEW_SEEDS), (2, FEW_SEEDS), (3, WINNER)):
        rows = one_pass(A, law(0.05)[:reps], 0.05) + one_pass(B, law(0.05, 3.0)[:reps], 0.05)
        p = _point(points_table(atlas_table(pd.DataFrame(rows), n_boot=200)), 0.5, 0.05)
        assert p["reading"] == want, (reps, p["reading"])
        assert p["margin"] == pytest.approx(3.0)
