"""README Results as tables (analysis.report.readme_results): the committed README's block is the
one the committed CSVs generate, and each table's numbers and sentence follow planted rows (a
Spider that does not follow its rules, a rules test that does not exclude the rival, a bracket
below the share gate, a known atlas winner)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.report.readme_results import (
    HEADLINE_FIT,
    HEADLINE_SPEC,
    atlas_summary,
    crossover_table,
    headline_table,
)
from tests.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_results_tables_are_the_committed_csvs():
    from bench.cli.claims import RESULTS_BEGIN, RESULTS_END, readme_results_block

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(RESULTS_BEGIN, 1)[1].split(RESULTS_END, 1)[0].strip()
    reports = ROOT / "reports"
    assert block == readme_results_block(str(reports / "reference_exponents.csv"),
                                         str(reports / "crossovers.csv"),
                                         str(reports / "crossover_laws.csv"),
                                         str(reports / "atlas_fair.csv")), \
        "README Results tables differ from the CSVs: run `make readme-claims`"


def _headline(**over: object) -> pd.DataFrame:
    base = {"spec": HEADLINE_SPEC, "fit": HEADLINE_FIT, "mode": "theory", "eps": 0.1, "d": 10,
            "design_points": 10, "window": "0.0028..0.09", "n_points": 100, "n_design": 10,
            "rules_verdict": "follows its rules", "private_share_source": "measured: ...",
            "untestable": "", "margin": 0.09, "rules_residual_low": -0.07,
            "rules_residual_high": -0.03, "rules_accepts_low": -2.52, "rules_accepts_high": -2.36,
            "accepts_low": -2.55, "accepts_high": -2.22, "private_share": 0.913}
    rows = [{**base, "algorithm": "gaussian_spider", "predicted": -7 / 3, "exponent": -2.491,
             "ci_low": -2.502, "ci_high": -2.478, "rules_predicted": -2.439,
             "rules_residual": -0.0525, "separates_rival": "yes: ..."},
            {**base, "algorithm": "adaptive_tree_spider", "predicted": -2.0, "exponent": -2.139,
             "ci_low": -2.145, "ci_high": -2.132, "rules_predicted": -2.171,
             "rules_residual": 0.0316, "separates_rival": "yes: ...", **over}]
    return pd.DataFrame(rows)


def test_the_headline_table_reads_each_spiders_row_and_says_what_they_show():
    lines = headline_table(_headline())
    assert lines[0].startswith("Samples n* to reach alpha on `hard_valley` (eps 0.1, d 10, "
                               "10 targets over alpha 0.0028..0.09, 10 paired seeds")
    assert "both Spiders follow their own rules" in lines[0]
    assert "tells 3/7 from 1/2 through the rules" in lines[0]
    gauss = next(line for line in lines if line.startswith("| Gaussian"))
    assert "| -2.33 | -2.49 [-2.5, -2.48] | -2.44 | -0.05 [-0.07, -0.03], m 0.09 |" in gauss
    assert gauss.endswith("| 0.91 |")


def test_the_headline_sentence_changes_with_the_rows():
    lines = headline_table(_headline(rules_verdict="slower than its rules by 0.16",
                                     separates_rival="no: the rules test accepts the rival's",
                                     untestable="the rival claim's -2.33 is inside"))
    assert "not every Spider follows its own rules" in lines[0]
    assert "do not both exclude the rival's slope" in lines[0]
    assert "the O~ test alone cannot" in lines[0]
    assert any("(untestable)" in line for line in lines)


def _crossovers(share_g: float) -> pd.DataFrame:
    return pd.DataFrame([{
        "problem": "hard_valley", "source": "headline4_law_eps (tight)", "eps": 0.1, "d": 10,
        "constants": "knobs at 1", "alpha_star": 3.78e-3, "ci_low": 3.72e-3, "ci_high": 3.85e-3,
        "where": "inside", "paired_slope": 0.499, "paired_ci_low": 0.485, "paired_ci_high": 0.513,
        "rules_paired_slope": 0.4, "share_adaptive": 0.97, "share_gaussian": share_g,
        "paired_gate": "in regime" if share_g >= 0.9 else
        f"not in regime: measured private share Gaussian {share_g:.2f} < 0.9; the paired ..."},
        {"problem": "hard_valley", "source": "headline4_sensitivity (tight)", "eps": 0.1,
         "d": 10, "constants": "defaults", "alpha_star": 1.0, "where": "inside"}])


LAWS = pd.DataFrame([{"problem": "hard_valley", "sources": "...", "conditions": 5, "fitted": 5,
                      "eps_exp": 0.370734, "eps_ci_low": 0.346434, "eps_ci_high": 0.404621,
                      "d_exp": -0.27247, "d_ci_low": -0.288063, "d_ci_high": -0.260909,
                      "pred_eps_exp": 0.44586, "pred_d_exp": -0.293503}])


def test_the_crossover_table_keeps_the_law_rows_and_gates_the_paired_slope():
    lines = crossover_table(_crossovers(0.8), LAWS)
    rows = [line for line in lines if line.startswith("| `hard_valley`")]
    assert len(rows) == 1  # the sensitivity study's row is not a law condition
    assert rows[0] == ("| `hard_valley` | 0.1 | 10 | 0.00378 [0.00372, 0.00385] | inside | "
                       "0.499 [0.485, 0.513] | 0.4 | 0.97 / 0.80 | not in regime: measured "
                       "private share Gaussian 0.80 < 0.9 |")
    assert crossover_table(_crossovers(0.95), LAWS)[4].endswith("| 0.97 / 0.95 | in regime |")
    law = next(line for line in lines if line.startswith("Law on"))
    assert law == ("Law on `hard_valley`: alpha* ~ eps^0.371 [0.346, 0.405] d^-0.272 [-0.288, "
                   "-0.261] (through 5 of 5 crossovers; the rules scaled by each Spider's "
                   "measured budget use predict 0.446 and -0.294).")


def test_the_atlas_summary_names_the_winner_at_both_ends_with_the_losers_ratio():
    rows = []
    for x, (win, ratio) in ((0.008, ("gaussian_spider", 1.6)), (0.0014, ("adaptive_tree_spider", 1.29))):
        lose = "adaptive_tree_spider" if win == "gaussian_spider" else "gaussian_spider"
        rows += [{"view": "samples to target", "problem": "hard_valley", "d": 10.0, "eps": 0.1,
                  "x": x, "algorithm": win, "ratio": 1.0, "ratio_low": 1.0, "ratio_high": 1.0,
                  "winner": win, "reading": "winner"},
                 {"view": "samples to target", "problem": "hard_valley", "d": 10.0, "eps": 0.1,
                  "x": x, "algorithm": lose, "ratio": ratio, "ratio_low": ratio - 0.05,
                  "ratio_high": ratio + 0.05, "winner": win, "reading": "winner"}]
    rows += [{**rows[0], "x": 0.004, "reading": "no significant winner"}]
    lines = atlas_summary(pd.DataFrame(rows))
    assert lines[-1] == ("| `hard_valley` | 10 | 0.1 | 0.0014..0.008 (3) | Gaussian, 1.6 [1.55, "
                         "1.65]x fewer | adaptive, 1.29 [1.24, 1.34]x fewer |")


def test_the_atlas_summary_gives_a_censored_runner_up_as_a_lower_bound():
    """Issue 57, item 2: the README never prints an 'inf x' margin."""
    base = {"view": "samples to target", "problem": "hard_valley", "d": 10.0, "eps": 0.1,
            "x": 0.002, "winner": "gaussian_spider", "reading": "winner"}
    rows = [{**base, "algorithm": "gaussian_spider", "value": 1e8, "bound": math.nan,
             "ratio": 1.0, "ratio_low": 1.0, "ratio_high": 1.0},
            {**base, "algorithm": "adaptive_tree_spider", "value": math.inf, "bound": 5e8,
             "ratio": math.inf, "ratio_low": math.inf, "ratio_high": math.inf}]
    line = atlas_summary(pd.DataFrame(rows))[-1]
    assert "Gaussian, more than 5x fewer (runner-up censored)" in line and "inf" not in line


def test_update_readme_needs_all_three_results_csvs(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("x\n", encoding="utf-8")
    out = run_cli("claims", "--measured", "reports/reference_exponents.csv", "--update-readme",
                  str(readme), "--crossovers", "reports/crossovers.csv")
    assert out.returncode == 2 and "go together" in out.stderr.strip()
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", [math.nan, None, "x"])
def test_a_missing_number_prints_a_dash(value):
    from analysis.report.readme_results import _num

    assert _num(value) == "-"
