"""The atlas keeps, per algorithm and point, the row measured at the target: a one-pass method's
consumed samples from targeted runs, not the smallest budget n of another store's fixed-budget
runs whose error reached the target (a coarse upper bound read off a grid of n). The reference
stores hold both for the Spiders (headline2: targeted; headline3_error: budgets 1e7-4.6e9), and
a budget row whose seed paired with a rival's had displaced the measured one."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.comparisons.atlas import SAMPLES, atlas_table

A, B = "gaussian_spider", "adaptive_tree_spider"
T = 0.01


def _targeted(alg: str, n_star: float, seed: int) -> list[dict]:
    return [{"algorithm": alg, "problem": "hard_valley", "problem_params": {}, "params": {},
             "knobs": (), "d": 10, "eps": 0.1, "delta": 1e-6, "rep": r, "base_seed": seed,
             "data": "counts", "calibration": "theory", "status": "ok", "target_alpha": T,
             "target_metric": "alpha_sosp", "n": None, "n_steps": 100, "params_used": {},
             "samples_to_target": n_star * (1 + 0.01 * r), "censored": False,
             "n_star": n_star * (1 + 0.01 * r), "alpha_best": math.nan, "pop_grad_best": math.nan}
            for r in range(5)]


def _budgets(alg: str, reach_at: float, seed: int) -> list[dict]:
    """Fixed budgets n = 1e7, 1e8, 1e9: alpha_best falls through T at n = reach_at."""
    return [{"algorithm": alg, "problem": "hard_valley", "problem_params": {}, "params": {},
             "knobs": (), "d": 10, "eps": 0.1, "delta": 1e-6, "rep": r, "base_seed": seed,
             "data": "counts", "calibration": "theory", "status": "ok", "target_alpha": math.nan,
             "target_metric": None, "n": n, "n_steps": 100, "params_used": {},
             "samples_to_target": math.nan, "censored": False, "n_star": math.nan,
             "alpha_best": T * (reach_at / n) ** 0.5, "pop_grad_best": math.nan}
            for n in (1e7, 1e8, 1e9) for r in range(5)]


def test_a_one_pass_method_is_read_at_its_target_not_off_another_stores_budgets():
    # A: targeted n* 2e6 (store seed 1) and budget runs reaching T at ~3e8 (store seed 2);
    # B: budget runs only (seed 2), so A's budget row pairs with B and its targeted row does not.
    cells = pd.DataFrame(_targeted(A, 2e6, 1) + _budgets(A, 3e8, 2) + _targeted(B, 5e6, 3)
                         + _budgets(B, 1e8, 2))
    t = atlas_table(cells, n_boot=200)
    at = t[(t["view"] == SAMPLES) & np.isclose(t["x"], T)].set_index("algorithm")
    assert set(at.index) == {A, B}
    assert at.loc[A, "value"] == np.median([2e6 * (1 + 0.01 * r) for r in range(5)])
    assert at.loc[B, "value"] == np.median([5e6 * (1 + 0.01 * r) for r in range(5)])
    assert at.loc[A, "winner"] == A


def test_each_map_panel_is_drawn_where_its_axis_varies():
    """The reference has eps 0.01 / 0.03 / 0.1 / 0.3 at d 10 and d 5 / 10 / 20 / 40 at eps 0.03:
    the eps panel is drawn at d 10 and the d panel at eps 0.03 (not at the eps with the most
    points, where d never varies)."""
    from analysis.comparisons.atlas_map import _richest

    pts = pd.DataFrame([{"eps": e, "d": 10} for e in (0.01, 0.1) for _ in range(7)]
                       + [{"eps": 0.3, "d": 10}]
                       + [{"eps": 0.03, "d": d} for d in (5, 10, 20, 40)])
    assert _richest(pts, "d", "eps") == 10
    assert _richest(pts, "eps", "d") == 0.03


def test_one_algorithm_is_one_label_at_every_point():
    """A from two stores (seeds 1 and 2) where only store 1 reaches target 2T: its row there
    came labelled "... [seed 1]" and drew a second colour for the same algorithm on a map."""
    cells = pd.DataFrame(_targeted(A, 2e6, 1) + _targeted(B, 5e6, 1) + _targeted(A, 2.1e6, 2)
                         + [{**c, "target_alpha": 2 * T} for c in _targeted(A, 1e6, 1)
                            + _targeted(B, 3e6, 1)])
    t = atlas_table(cells, n_boot=200)
    assert set(t["algorithm"]) == {A, B}


def test_points_whose_winner_changes_within_the_constants_ranges_are_hatched():
    """A constants study (one source, several settings) puts alpha* between 2e-3 and 3e-3 at
    eps 0.1, d 10: targets inside are hatched, outside not, other (eps, d) untouched; a source
    at one setting (the law) hatches nothing; a setting with no crossing hatches its bracket."""
    from analysis.comparisons.atlas_map import ranges_from_crossovers

    table = pd.DataFrame([{"view": SAMPLES, "metric": "alpha_sosp", "problem": "hard_valley",
                           "instance": "", "d": 10.0, "eps": e, "x": x}
                          for e in (0.1, 0.3) for x in (1.4e-3, 2e-3, 2.8e-3, 4e-3)])
    base = {"problem": "hard_valley", "eps": 0.1, "d": 10,
            "bracket": "4 paired targets 0.002..0.0056, 3 seeds"}
    cx = pd.DataFrame([{**base, "source": "sens", "constants": "defaults", "alpha_star": 2.5e-3},
                       {**base, "source": "sens", "constants": "a=4", "alpha_star": 2e-3},
                       {**base, "source": "sens", "constants": "a=0.25", "alpha_star": 3e-3},
                       {**base, "source": "law", "constants": "knobs at 1", "alpha_star": 1e-3},
                       {**base, "eps": 0.3, "source": "law", "constants": "knobs at 1",
                        "alpha_star": 5e-3}])
    r = ranges_from_crossovers(table, cx)
    on = r[r["winner_changes"]]
    hatched = sorted(zip(on["eps"], on["x"], strict=True))
    assert hatched == [(0.1, 2e-3), (0.1, 2.8e-3)]
    cx.loc[1, "alpha_star"] = float("nan")  # one setting never crosses: its whole bracket
    r = ranges_from_crossovers(table, cx)
    assert sorted(r.loc[r["winner_changes"], "x"]) == [2e-3, 2.8e-3, 4e-3]


def test_an_upper_bound_reading_is_typed_and_the_fits_read_the_type_not_the_text():
    """A records row whose target is reached at the smallest design n reads n* <= n_min: its
    `at_most` is set (with the flag's text beside it), and the recommendation's fits leave it
    out by that field. A row whose text says "n* <=" but whose field is False is fitted; a row
    of an older atlas CSV (no field) is read off its text."""
    from analysis.comparisons.atlas_recommend import _fittable
    from analysis.comparisons.compare import _records_row

    cells = pd.DataFrame({"n": [100, 100, 1000, 1000, 10000, 10000], "rep": [0, 1] * 3,
                          "alpha_best": [0.01, 0.02, 0.005, 0.004, 0.001, 0.002],
                          "status": "ok", "params_used": [{}] * 6, "n_steps": 10})
    row = _records_row("a", "dp_gd", "alpha_best", (0, "records"), cells, target=0.05)
    assert row.at_most and any("n* <= 100" in f for f in row.flags)
    row = _records_row("a", "dp_gd", "alpha_best", (0, "records"), cells, target=0.0045)
    assert not row.at_most and not any("n* <=" in f for f in row.flags)
    g = pd.DataFrame({"value": [100.0, 200.0, 300.0, 400.0],
                      "at_most": [True, False, None, None],
                      "flags": ["", "n* <= a misleading text", "reached at the smallest n (300): "
                                "n* <= 300", ""]})
    assert _fittable(g).tolist() == [False, True, False, True]
