"""The slopes and the law files of the crossover law (analysis.comparisons.crossover_law, analysis.crossover_
files) on planted curves: n*_A ~ alpha^-2, n*_B ~ alpha^(-7/3) (paired slope 1/3), power-law
budgets whose paired slope is their exponents' difference; the references are the planted
exponents."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.comparisons.crossover_files import (
    CROSSOVER_COLUMNS,
    LAW_COLUMNS,
    crossovers_csv,
    law_row,
    merge_crossovers,
    merge_laws,
    read_crossovers,
    read_laws,
)
from analysis.comparisons.crossover_law import (
    ADAPTIVE,
    conditions_from_points,
    law_fit,
    law_markdown,
    rules_paired_slope,
)
from tests.test_crossover_law import A_EPS, B_D, CROSS, _points


def _law(conds=CROSS, seed=11, problem="hard_valley"):
    pts = _points(conds, 8, 0.05, seed).assign(problem=problem, source="spec (tight)")
    return law_fit(conditions_from_points(pts), n_boot=400, rng=np.random.default_rng(seed))


def test_each_condition_carries_the_planted_slopes_with_cis_that_cover_them():
    """Planted: log n*_A = c - 2 log alpha, log n*_B = c' - 7/3 log alpha, plus a shared
    per-seed shift (0.3) and independent noise (0.05); the sides' slopes carry the shared
    shift's noise, the paired one does not (its CI is the narrower)."""
    t = _law().table
    assert t["paired_slope"].to_numpy() == pytest.approx(np.full(5, 1 / 3), abs=0.06)  # 3.5 SE
    assert t["slope_adaptive"].to_numpy() == pytest.approx(np.full(5, -2.0), abs=0.25)
    assert t["slope_gaussian"].to_numpy() == pytest.approx(np.full(5, -7 / 3), abs=0.25)
    for name, truth in (("paired", 1 / 3), ("slope_adaptive", -2.0), ("slope_gaussian", -7 / 3)):
        lo, hi = t[f"{name}_ci_low"], t[f"{name}_ci_high"]
        assert ((lo <= truth) & (truth <= hi)).mean() >= 0.8, name
    width = lambda k: (t[f"{k}_ci_high"] - t[f"{k}_ci_low"]).to_numpy()  # noqa: E731
    assert (width("paired") < width("slope_adaptive")).all()
    # the sides' slopes differ by the paired slope (same pairs, same OLS)
    assert (t["slope_adaptive"] - t["slope_gaussian"]).to_numpy() == pytest.approx(
        t["paired_slope"].to_numpy(), abs=1e-12)


def test_the_rules_paired_slope_is_the_budgets_exponent_gap():
    """Budgets 1e4 alpha^-2 / eps and 3e3 alpha^-2.5 / eps: the log ratio's slope on log alpha
    is -2 - (-2.5) = 0.5 exactly; a budget with no value (NaN) gives no slope."""
    def budgets(alg, eps, d):
        return (lambda a: 1e4 * a ** -2 / eps) if alg == ADAPTIVE else (lambda a: 3e3 * a ** -2.5 / eps)

    (cond,) = conditions_from_points(_points([(0.1, 10)], 3, 0.0, 1), budgets)
    assert rules_paired_slope(cond) == pytest.approx(0.5, abs=1e-12)
    (none,) = conditions_from_points(_points([(0.1, 10)], 3, 0.0, 1),
                                     lambda alg, eps, d: lambda a: math.nan)
    assert math.isnan(rules_paired_slope(none))


def test_the_laws_file_holds_one_row_per_family(tmp_path):
    path = str(tmp_path / "laws.csv")
    valley = law_row(_law())
    assert list(valley.columns) == LAW_COLUMNS and len(valley) == 1
    assert valley["eps_exp"].iloc[0] == pytest.approx(A_EPS, abs=0.05)
    assert valley["d_exp"].iloc[0] == pytest.approx(B_D, abs=0.05)
    assert (valley["conditions"].iloc[0], valley["fitted"].iloc[0]) == (5, 5)
    merge_laws(path, valley)
    merge_laws(path, law_row(_law(CROSS[:3], 12, "hard_ramp")))
    newer = law_row(_law(seed=13))
    again = merge_laws(path, newer)  # the valley's law replaced, not added
    assert list(again["problem"]) == ["hard_valley", "hard_ramp"]  # in place, not moved last
    # written to six digits: the value read back rounds to what page 2 prints
    back_valley = read_laws(path, "--laws").set_index("problem").loc["hard_valley"]
    assert back_valley["eps_exp"] == pytest.approx(newer["eps_exp"].iloc[0], rel=1e-5)
    assert f"{back_valley['d_exp']:.3g}" == f"{newer['d_exp'].iloc[0]:.3g}"
    assert newer["eps_exp"].iloc[0] != valley["eps_exp"].iloc[0]
    back = read_laws(path, "--laws")
    assert math.isnan(back.set_index("problem").loc["hard_ramp", "d_exp"])
    assert law_row(_law([(0.1, 10)])).empty  # one condition: no law


def test_an_old_crossovers_file_reads_and_merges_with_nan_slopes(tmp_path):
    """A file written before the slope columns: read back with NaN slopes, its rows kept when a
    new source is merged in."""
    path = tmp_path / "crossovers.csv"
    old = crossovers_csv(_law()).assign(source="old (tight)")[CROSSOVER_COLUMNS[:14]]
    old.to_csv(path, index=False)
    assert read_crossovers(str(path), "--crossovers")["paired_slope"].isna().all()
    merged = merge_crossovers(str(path), crossovers_csv(_law(CROSS[:2], 14)))
    assert list(merged.columns) == CROSSOVER_COLUMNS and len(merged) == 7
    assert merged.loc[merged["source"] == "old (tight)", "paired_slope"].isna().all()
    assert merged.loc[merged["source"] == "spec (tight)", "paired_slope"].notna().all()


def test_page_two_gives_each_family_its_law_and_central_slopes():
    from analysis.report.headline_page import observed_crossover_lines

    law = _law()
    lines = observed_crossover_lines(crossovers_csv(law), law_row(law))
    (line,) = [v for v in lines if v.startswith("  hard_valley")]
    r = law.table.set_index(["eps", "d"]).loc[(0.1, 10)]
    assert (f"Law through the 5 crossovers inside their brackets: alpha* ~ eps^{law.eps_exp:.3g} "
            f"[{law.eps_ci[0]:.3g}, {law.eps_ci[1]:.3g}] d^{law.d_exp:.3g}") in line
    assert (f"At eps 0.1, d 10: paired slope {r.paired_slope:.3g} [{r.paired_ci_low:.3g}, "
            f"{r.paired_ci_high:.3g}]; slopes of log n*: adaptive {r.slope_adaptive:.3g}") in line


def test_report_refuses_a_bad_laws_file_in_one_line(tmp_path, capsys):
    from bench.cli import main

    path = tmp_path / "laws.csv"
    pd.DataFrame({"problem": ["hard_valley"]}).to_csv(path, index=False)
    crossovers = tmp_path / "crossovers.csv"
    crossovers_csv(_law(CROSS[:2])).to_csv(crossovers, index=False)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n3,4,5,6\n")
    for args, why in (([str(path)], "invalid without --crossovers"),
                      ([str(path), "--crossovers", str(crossovers)], "lacks the columns ['sources'"),
                      ([str(ragged), "--crossovers", str(crossovers)], "Expected 2 fields")):
        assert main(["report", str(tmp_path / "none.sqlite"), "-o", str(tmp_path / "r.pdf"),
                     "--laws", *args]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--laws=" in err[0] and why in err[0], err


def test_a_merge_refuses_a_foreign_file_and_leaves_it_as_it_was(tmp_path):
    path = tmp_path / "laws.csv"
    path.write_text("problem,other\nhard_ramp,1\n")
    with pytest.raises(ValueError, match=r"^--law-csv=.* lacks the columns"):
        merge_laws(str(path), law_row(_law()))
    assert path.read_text() == "problem,other\nhard_ramp,1\n"
    reordered = law_row(_law(CROSS[:3], 12, "hard_ramp"))[LAW_COLUMNS[::-1]]
    reordered.to_csv(path, index=False)  # the same columns in another order: merged
    assert sorted(merge_laws(str(path), law_row(_law()))["problem"]) == ["hard_ramp", "hard_valley"]


def test_a_law_without_an_exponent_is_neither_written_nor_printed():
    """Two conditions with only one crossover inside its bracket: no plane, no law row, and
    page 2 prints no "Law" sentence."""
    from analysis.report.headline_page import _law_text, observed_crossover_lines

    pts = _points(CROSS[:2], 8, 0.02, 15)
    pts.loc[(pts["eps"] == 0.03) & (pts["algorithm"] == "gaussian_spider"), "y"] *= math.exp(2.0)
    law = law_fit(conditions_from_points(pts.assign(problem="hard_valley", source="s (tight)")),
                  n_boot=100, rng=np.random.default_rng(16))
    assert list(law.table["where"]) == ["above", "inside"]
    assert law_row(law).empty
    assert law_markdown(law).endswith("No law: fewer than two crossovers inside their brackets.\n")
    nan_law = pd.DataFrame([dict.fromkeys(LAW_COLUMNS, math.nan) | {"problem": "hard_valley",
                                                                     "sources": "s (tight)"}])
    assert _law_text(next(nan_law.itertuples())) == ""
    (line,) = observed_crossover_lines(crossovers_csv(law), nan_law)[1:]
    assert "Law" not in line and "no crossing inside the bracket at eps 0.03, d 10;" in line
    assert line.count("alpha* = ") == 1  # the extrapolated one is not printed


def test_a_study_keeps_its_defaults_out_of_the_family_line():
    """A family's law rows and a constants study of the same family: the study's defaults
    appear in its own line only, and the family line names only the law's sources."""
    from analysis.report.headline_page import observed_crossover_lines

    law = _law(CROSS[:2])
    fam = crossovers_csv(law)
    study = fam.iloc[[1, 1]].assign(source="sens (tight)", constants=["defaults", "a c_zeta=4"],
                                    bracket="3 paired targets, 2 seeds")
    lines = observed_crossover_lines(pd.concat([fam, study], ignore_index=True), law_row(law))
    assert len(lines) == 3
    assert "sens" not in lines[1] and "3 paired targets" not in lines[1]
    assert lines[2].startswith("  hard_valley constants study (sens; tight; 3 paired targets, 2 "
                               "seeds): defaults alpha* = ")
