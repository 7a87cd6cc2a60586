"""Page 1 of the main report answers the suite's two questions (issue 73, item 1), from the
committed CSVs: every number in the paragraphs is read from a row (checked against the rows
here), and a store's own report, without those CSVs, starts with its claims."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.report.answers_page import answers_page, practitioner_answer, spider_answer
from bench.cli.practitioners import practitioners_rows

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def test_the_spider_answer_reads_the_crossovers():
    c = pd.read_csv(REPORTS / "crossovers.csv")
    text = spider_answer(c)
    head = c[c["source"].str.startswith("headline4_law_eps") & (c["problem"] == "hard_valley")
             & (c["eps"] == 0.1)].iloc[0]
    assert f"alpha* = {head['alpha_star']:.3g} [{head['ci_low']:.3g}, {head['ci_high']:.3g}]" in text
    assert "adaptive tree Spider (claimed exponent 1/2) needs fewer samples" in text
    sens = c[c["source"].str.startswith("headline4_sensitivity") & (c["problem"] == "hard_valley")]
    inside = int((sens["where"] == "inside").sum())
    assert f"on hard_valley inside its bracket at {inside} of {len(sens)} settings" in text
    assert "the oracle's n*" in text and "calibrated tight" in text


def test_the_practitioner_answer_reads_the_atlas_and_states_its_scope():
    t = practitioners_rows([str(REPORTS / "practitioners.csv")], 2000, None)
    text = practitioner_answer(t)
    n = t[(t["metric"] == "alpha_sosp") & (t["algorithm"] == "dp_sgd")]
    assert f"dp_sgd needs fewer samples than the best Spider at {len(n)} of {len(n)} points" in text
    assert "d 10, 100; eps 0.1, 1" in text and "the oracle's n*" in text
    assert f"DP-SGD takes up to {t.loc[t['algorithm'] == 'dp_sgd', 'passes'].max():.3g} passes" in text


def test_the_page_is_drawn_only_with_its_data(tmp_path):
    with PdfPages(tmp_path / "a.pdf") as pdf:
        assert answers_page(pdf, None, None) is False
        assert answers_page(pdf, pd.read_csv(REPORTS / "crossovers.csv"),
                            practitioners_rows([str(REPORTS / "practitioners.csv")], 2000, None)) is True


def test_the_spider_answer_reads_its_direction_and_says_nothing_without_a_crossover():
    c = pd.read_csv(REPORTS / "crossovers.csv")
    head = (c["source"].str.startswith("headline4_law_eps") & (c["problem"] == "hard_valley")
            & (c["eps"] == 0.1))
    flipped = c.copy()
    flipped.loc[head, "paired_slope"] = -0.4
    assert "needs more samples than the Gaussian Spider (3/7) for targets below" \
        in spider_answer(flipped)
    outside = c.copy()
    outside.loc[head, "where"] = "below"
    assert spider_answer(outside) == ""
    assert spider_answer(None) == "" and practitioner_answer(None) == ""


def test_the_rates_answer_reads_the_measured_link():
    """The rates paragraph prints each Spider's deepest-decade slope and CI from its row, and
    says "not within m" / "not clear of the rival" where the row says so (planted rows)."""
    from analysis.report.answers_page import rates_answer

    rows = pd.DataFrame([
        {"algorithm": "gaussian_spider", "x": "alpha", "character": "hard",
         "problem": "hard_valley", "eps": 0.001, "d": 10.0, "predicted": -7 / 3,
         "rival_predicted": -2.0, "margin": 0.0972, "link_deep": -2.341, "link_deep_low": -2.362,
         "link_deep_high": -2.318, "link_deep_from": 9e-4, "link_deep_to": 9e-3,
         "link_reached": True, "link_excludes_rival": True},
        {"algorithm": "adaptive_tree_spider", "x": "alpha", "character": "hard",
         "problem": "hard_valley", "eps": 0.001, "d": 10.0, "predicted": -2.0,
         "rival_predicted": -7 / 3, "margin": 0.0833, "link_deep": -2.118, "link_deep_low": -2.131,
         "link_deep_high": -2.104, "link_deep_from": 9e-4, "link_deep_to": 9e-3,
         "link_reached": False, "link_excludes_rival": True},
    ])
    text = rates_answer(rows)
    assert "-2.341 [-2.362, -2.318] (within m of its claim -2.33" in text
    assert "-2.118 [-2.131, -2.104] (not within m of its claim -2" in text
    assert text.count("clear of the rival") == 2 and "not clear" not in text
    assert "At 2 of 2 of these settings the curve is clear of its rival's claim" in text
    flipped = rates_answer(rows.assign(link_excludes_rival=[True, False]))
    assert "At 1 of 2 settings the curve is not clear of its rival's claim" in flipped
    assert rates_answer(rows.drop(columns=["link_deep"])) == ""
    assert rates_answer(rows.assign(x="eps")) == ""


def test_the_practitioner_answer_says_what_the_own_output_costs():
    """With reports/output_gap.csv's rows, the practitioner's paragraph adds each algorithm's
    range of samples to its own output over the oracle's n* (planted rows), and nothing
    without them."""
    from analysis.report.answers_page import output_gap_sentence

    gap = pd.DataFrame([
        {"algorithm": "dp_sgd", "problem": "hard_valley start=1.0", "d": 10, "eps": 1.0,
         "target_alpha": 0.1, "ratio": 1.5},
        {"algorithm": "dp_sgd", "problem": "hard_valley start=1.0", "d": 10, "eps": 1.0,
         "target_alpha": 0.021, "ratio": 3.25},
        {"algorithm": "dp_gd", "problem": "hard_valley start=1.0", "d": 10, "eps": 1.0,
         "target_alpha": 0.021, "ratio": float("nan")},
    ])
    text = output_gap_sentence(gap)
    assert "dp_sgd: samples to its own output (last iterate) are 1.5-3.25x the oracle's n* at 2 of 2" in text
    assert "dp_gd: no setting with both medians finite (1 censored)" in text
    assert "targets 0.021-0.1" in text and output_gap_sentence(None) == ""
