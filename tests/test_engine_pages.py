"""The report pages of the verdict engine: the local slopes of the rows still "than claimed"
and the budget-use table, on a hand-made claims table (the numbers are the table's own)."""

from __future__ import annotations

import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.report.budget_use_page import budget_use_table
from analysis.report.local_slopes_page import local_slopes_pages


def _claims() -> pd.DataFrame:
    base = {"problem": "hard_valley", "mode": "theory", "x": "alpha", "declared": True,
            "regime": "in regime", "predicted": -2.0, "rules_predicted": -2.2,
            "x_design": (1e-3, 1e-2, 1e-1), "y_design": (1e6, 5e3, 40.0), "exponent": -2.2,
            "ci_low": -2.3, "ci_high": -2.1, "log_power_low": 1.2, "log_power_high": 1.5,
            "verdict_reason": "planted"}
    return pd.DataFrame([
        {**base, "algorithm": "a", "fit": "f", "verdict": "slower than claimed even with logs",
         "rules_ratio": "0.5 0.6 0.7", "rules_ratio_trend": 0.15, "steps_per_horizon": "0.1 0.2 0.3",
         "private_share": 0.95, "bound_constant": 12.0},
        {**base, "algorithm": "b", "fit": "f", "verdict": "consistent", "rules_ratio": "",
         "rules_ratio_trend": float("nan"), "steps_per_horizon": "", "private_share": float("nan"),
         "bound_constant": 3.0},
        {**base, "algorithm": "c", "fit": "f", "verdict": "faster than claimed",
         "regime": "floor: ...", "rules_ratio": "", "rules_ratio_trend": float("nan"),
         "steps_per_horizon": "", "private_share": float("nan"), "bound_constant": float("nan")},
    ])


def test_local_slopes_pages_draw_only_in_regime_rows_still_than_claimed(tmp_path):
    with PdfPages(tmp_path / "x.pdf") as pdf:
        drawn = local_slopes_pages(pdf, _claims(), tmp_path)
    assert drawn == 1  # "a"; "b" is consistent, "c" is outside its regime
    assert [p.name for p in tmp_path.glob("local_slopes_*.png")] == ["local_slopes_a_f_theory.png"]


def test_budget_use_table_reports_the_window_ends_and_skips_rows_without_numbers():
    t = budget_use_table(_claims()).set_index("algorithm")
    assert list(t.index) == ["a", "b"]
    assert t.loc["a", "measured / rules"] == "0.5 .. 0.7"
    assert t.loc["a", "steps / T"] == "0.1 .. 0.3"
    assert t.loc["a", "trend"] == "+0.15" and t.loc["a", "private share"] == "0.95"
    assert t.loc["b", "measured / rules"] == "-" and t.loc["b", "C vs claim"] == "3"


def test_verdict_changes_cli_writes_the_table_and_refuses_a_missing_file(tmp_path, capsys):
    from bench.cli import main

    base = {"spec": "s", "fit": "f", "mode": "theory", "algorithm": "a", "problem": "p",
            "where": "", "eps": 0.1, "d": 10, "declared": True}
    pd.DataFrame([{**base, "verdict": "slower than claimed"}]).to_csv(tmp_path / "old.csv", index=False)
    pd.DataFrame([{**base, "verdict": "consistent up to logs", "verdict_reason": "t = 0.4"}]).to_csv(
        tmp_path / "new.csv", index=False)
    assert main(["verdict-changes", str(tmp_path / "old.csv"), str(tmp_path / "new.csv"),
                 "-o", str(tmp_path / "ch.md")]) == 0
    text = (tmp_path / "ch.md").read_text()
    assert "1 of 1 declared fit rows changed verdict." in text
    assert "| a | p | s/f (theory) | slower than claimed | consistent up to logs |" in text
    assert main(["verdict-changes", str(tmp_path / "nope.csv"), str(tmp_path / "new.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "OLD=" in err[0] and "no such file" in err[0]
