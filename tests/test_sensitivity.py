"""The constant-sensitivity analysis (analysis.comparisons.sensitivity) on planted cells: each setting's n*
curve is a known power law, so each comparison's crossover is known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.comparisons.sensitivity import (
    ADAPTIVE,
    GAUSSIAN,
    KNOBS,
    MOVE_FACTOR,
    knob_summary,
    sensitivity_markdown,
    sensitivity_table,
)

TARGETS = [0.0056, 0.004, 0.0028, 0.002]


def _cells(settings: list[tuple[str, dict, float]], reps: int = 4, seed: int = 0) -> pd.DataFrame:
    """(algorithm, knob params, level c): n*_A = c alpha^-2, n*_G = c alpha^(-7/3); each (target,
    seed) shares a data effect across algorithms and settings (the pairing), plus 2% noise."""
    rng = np.random.default_rng(seed)
    shared = {(t, r): 0.3 * rng.standard_normal() for t in TARGETS for r in range(reps)}
    rows = []
    for alg, params, c in settings:
        p = -2.0 if alg == ADAPTIVE else -7 / 3
        for t in TARGETS:
            for r in range(reps):
                rows.append({"status": "ok", "algorithm": alg, "params": params, "target_alpha": t,
                             "rep": r, "d": 10, "eps": 0.1,
                             "samples_to_target": c * t ** p * math.exp(shared[(t, r)] + 0.02 *
                                                                         rng.standard_normal())})
    return pd.DataFrame(rows)


def _star(ca: float, cg: float) -> float:
    """Where ca alpha^-2 = cg alpha^(-7/3): alpha = (cg / ca)^3."""
    return (cg / ca) ** 3


BASE_A, BASE_G = 1.0, 0.15  # central crossover (0.15)^3 = 3.4e-3, inside the targets


def test_each_comparison_crosses_where_its_levels_put_it():
    cells = _cells([(ADAPTIVE, {}, BASE_A), (GAUSSIAN, {}, BASE_G),
                    (ADAPTIVE, {"c_zeta": 4.0}, BASE_A * 1.02),  # barely moves
                    (GAUSSIAN, {"alpha_mult": 0.25}, BASE_G * 0.8)])  # moves 0.8^3 = 0.51x
    t = sensitivity_table(cells, n_boot=300).set_index("setting")
    assert t.loc["defaults", "alpha_star"] == pytest.approx(_star(BASE_A, BASE_G), rel=0.05)
    assert t.loc["c_zeta=4", "alpha_ratio"] == pytest.approx(1 / 1.02 ** 3, rel=0.05)
    assert t.loc["alpha_mult=0.25", "alpha_ratio"] == pytest.approx(0.8 ** 3, rel=0.05)
    assert t.loc["alpha_mult=0.25", "spider"] == GAUSSIAN
    assert t.loc["defaults", "slope"] == pytest.approx(1 / 3, abs=0.03)
    s = knob_summary(sensitivity_table(cells, n_boot=300)).set_index("knob")
    assert s.loc["c_zeta", "answer"] == "robust" and s.loc["alpha_mult", "answer"] == "moves"


def test_joint_points_pair_every_adaptive_point_with_every_gaussian_point():
    joint = dict.fromkeys(KNOBS, 2.0)
    cells = _cells([(ADAPTIVE, {}, BASE_A), (GAUSSIAN, {}, BASE_G),
                    (ADAPTIVE, joint, 1.1), (ADAPTIVE, {**joint, "c_Gamma": 0.5}, 0.9),
                    (GAUSSIAN, joint, 0.16), (GAUSSIAN, {**joint, "c_zeta": 3.0}, 0.14)])
    t = sensitivity_table(cells, n_boot=300)
    j = t[t["kind"] == "joint"]
    assert len(j) == 4  # 2 adaptive points x 2 Gaussian points
    want = sorted(_star(a, g) for a in (1.1, 0.9) for g in (0.16, 0.14))
    assert sorted(j["alpha_star"]) == pytest.approx(want, rel=0.06)
    s = knob_summary(t).set_index("knob")
    worst = max(want) / _star(BASE_A, BASE_G)  # (0.16 / 0.9)^3 / 0.15^3 = 1.66 > MOVE_FACTOR
    assert worst > MOVE_FACTOR and s.loc["joint", "answer"] == "moves"
    assert s.loc["joint", "alpha_ratio_max"] == pytest.approx(worst, rel=0.08)
    md = sensitivity_markdown(t, knob_summary(t))
    assert md.startswith("Central (both Spiders at their defaults): alpha* = ")


def test_a_setting_that_never_reaches_its_targets_counts_as_moving():
    cells = _cells([(ADAPTIVE, {}, BASE_A), (GAUSSIAN, {}, BASE_G),
                    (ADAPTIVE, {"horizon_mult": 0.25}, BASE_A)])
    cells.loc[(cells["params"].map(bool)) & (cells["target_alpha"] < 0.005), "samples_to_target"] = np.nan
    t = sensitivity_table(cells, n_boot=200)
    row = t[t["setting"] == "horizon_mult=0.25"].iloc[0]
    assert row["censored"] == 12 and not math.isfinite(row["alpha_star"])
    assert knob_summary(t).set_index("knob").loc["horizon_mult", "answer"] == "moves"


def test_the_comparisons_merge_into_one_crossovers_file(tmp_path):
    """`dprates crossover-law --csv` and `dprates sensitivity --csv` write one file: each
    replaces its own source's rows and keeps the other's."""
    from analysis.comparisons.crossover_files import CROSSOVER_COLUMNS, merge_crossovers
    from analysis.comparisons.sensitivity import crossover_rows

    cells = _cells([(ADAPTIVE, {}, BASE_A), (GAUSSIAN, {}, BASE_G),
                    (GAUSSIAN, {"alpha_mult": 0.25}, BASE_G * 0.8)])
    table = sensitivity_table(cells, n_boot=200)
    rows = crossover_rows(table, "sens (tight)", eps=0.1, d=10, bracket="4 paired targets")
    assert list(rows.columns) == CROSSOVER_COLUMNS
    # the paired slope and its CI travel to the file; each side's own slope is the law's
    assert rows["paired_slope"].tolist() == table["slope"].tolist()
    assert rows["paired_ci_low"].tolist() == table["slope_ci_low"].tolist()
    assert rows["slope_adaptive"].isna().all()
    assert list(rows["constants"]) == ["defaults", f"{GAUSSIAN} alpha_mult=0.25"]
    path = tmp_path / "crossovers.csv"
    law = pd.DataFrame([dict.fromkeys(CROSSOVER_COLUMNS, 1.0) | {"source": "law (tight)"},
                        dict.fromkeys(CROSSOVER_COLUMNS, 2.0) | {"source": "sens (tight)"}])
    law.to_csv(path, index=False)
    merged = merge_crossovers(str(path), rows)
    assert sorted(merged["source"]) == ["law (tight)", "sens (tight)", "sens (tight)"]
    back = pd.read_csv(path)
    assert len(back) == 3 and back.loc[back["constants"] == "defaults", "alpha_star"].iloc[0] \
        == pytest.approx(_star(BASE_A, BASE_G), rel=0.05)


def test_a_setting_censored_at_every_target_is_a_row_not_an_error():
    """alpha_mult = 4 aims the rules at 4x the target: no run reaches any target (measured on
    headline4_sensitivity, 12 of 12 censored); the comparison is a row with no crossing."""
    cells = _cells([(ADAPTIVE, {}, BASE_A), (GAUSSIAN, {}, BASE_G),
                    (GAUSSIAN, {"alpha_mult": 4.0}, BASE_G)])
    cells.loc[cells["params"].map(bool), "samples_to_target"] = np.nan
    t = sensitivity_table(cells, n_boot=200)
    row = t[t["setting"] == "alpha_mult=4"].iloc[0]
    assert row["censored"] == 16 and row["pairs"] == 0 and row["where"] == "none"
    s = knob_summary(t).set_index("knob")
    assert s.loc["alpha_mult", "no_crossing"] == 1 and s.loc["alpha_mult", "answer"] == "moves"
