"""Issue 73, item 3: the practitioners' atlas in the main report: each algorithm's n* as a
multiple of the point's fewest (hand-computed), drawn with no text off the page or on other
text (the report's layout check)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.report.layout import layout_problems
from analysis.report.practitioners_page import multiples, practitioners_page

ROOT = Path(__file__).resolve().parent.parent


def _rows() -> pd.DataFrame:
    base = {"view": "samples to target", "metric": "alpha_sosp", "problem": "hard_valley",
            "d": 10.0, "eps": 0.1}
    rows = [(0.1, "dp_sgd", 200.0), (0.1, "dp_gd", 100.0), (0.1, "gaussian_spider", 3000.0),
            (0.2, "dp_sgd", 50.0), (0.2, "gaussian_spider", 75.0)]
    return pd.DataFrame([{**base, "x": x, "algorithm": a, "value": v} for x, a, v in rows])


def test_multiples_are_each_point_over_its_fewest():
    ratio, algs = multiples(_rows())
    assert algs == ["dp_sgd", "dp_gd", "gaussian_spider"]
    first = ratio[ratio["x"] == 0.1].iloc[0]
    assert (first["dp_sgd"], first["dp_gd"], first["gaussian_spider"]) == (2.0, 1.0, 30.0)
    second = ratio[ratio["x"] == 0.2].iloc[0]
    assert second["dp_sgd"] == 1.0 and second["gaussian_spider"] == pytest.approx(1.5)
    assert math.isnan(second["dp_gd"])  # not run at that point


class _Checked:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.pages = 0

    def savefig(self, fig) -> None:
        self.problems += layout_problems(fig)
        self.pages += 1


@pytest.mark.parametrize("source", ["planted", "reference"])
def test_the_page_has_no_text_off_the_page_or_on_other_text(source):
    if source == "reference":
        path = ROOT / "reports" / "practitioners.csv"
        if not path.is_file():
            pytest.skip("no reports/practitioners.csv")
        rows = pd.read_csv(path)
    else:
        rows = _rows()
    pdf = _Checked()
    assert practitioners_page(pdf, rows)
    assert pdf.pages == 1 and pdf.problems == []
    assert not practitioners_page(pdf, None) and not practitioners_page(pdf, rows.iloc[:0])
