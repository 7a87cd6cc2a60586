"""The main report's claims table (issue 73, items 1 and 4): every cell whole, one sign
convention (steeper / flatter, checked against the slopes themselves), the resolution and the
glossary on the table's pages, no layout fault; the appendix's pages for the stores the main
report cites only through its CSVs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reports" / "reference_exponents.csv"


@pytest.fixture(scope="module")
def summary() -> pd.DataFrame:
    from analysis.report.tables import claims_summary
    from bench.measured import read_fits

    return claims_summary(read_fits([str(REFERENCE)]))


def test_steeper_and_flatter_read_off_the_slopes():
    """Every "faster / slower than its rules" row of the reference CSV becomes "steeper" where
    |measured| > |rules' slope| and "flatter" where smaller: the numbers decide, whatever the
    view's sense of faster (the reference holds both senses: dp_sgd faster and jl_dp_gd slower
    with the measured slope above the rules' in both)."""
    from analysis.report.verdict_cells import as_steepness

    fits = pd.read_csv(REFERENCE)
    rows = fits[fits["verdict"].astype(str).str.contains(r"(?:faster|slower) than its rules")]
    assert len(rows) >= 10
    senses = set()
    for r in rows.itertuples():
        word = as_steepness(r.verdict, r.view, r.x, r.rules_predicted, r.predicted).split()[0]
        expected = "steeper" if abs(r.exponent) > abs(r.rules_predicted) else "flatter"
        assert word == expected, (r.algorithm, r.verdict, r.exponent, r.rules_predicted)
        senses.add((r.verdict.split()[0], r.exponent > r.rules_predicted))
    assert ("faster", True) in senses and ("slower", True) in senses  # the old flip, now gone
    assert as_steepness("faster than its rules by 0.1", "error", "unknown_x", 1, 1) == \
        "faster than its rules by 0.1"  # an unknown view keeps its word rather than guess


def test_claims_table_keeps_every_word_and_its_glossary(summary: pd.DataFrame, tmp_path: Path):
    from matplotlib.backends.backend_pdf import PdfPages
    from pypdf import PdfReader

    from analysis.report.layout import LayoutCheckedPdf
    from analysis.report.summary_page import SUMMARY_TABLE, page_one_rows, summary_table_pages

    planted = summary.copy()
    k = planted.index[planted["verdict"] != "not measured"][0]
    tail = "and this planted regime note ends with the word zanzibar"
    planted.loc[k, "regime"] = "floor: " + "a long regime note that must wrap, " * 8 + tail
    out, problems = tmp_path / "claims.pdf", []
    with PdfPages(out) as raw:
        summary_table_pages(LayoutCheckedPdf(raw, problems), planted, "Claims")
    assert problems == []  # nothing off the page, out of a cell, cut short or overlapping
    pages = [p.extract_text() for p in PdfReader(out).pages]
    assert len(pages) >= 2
    for text in pages:  # the glossary on every page of the table
        assert "Glossary of the verdict words" in text and "design too short:" in text
        assert "not in regime:" in text and "asymptote:" in text
    joined = "".join(pages).replace("\n", " ")
    assert "zanzibar" in joined and "..." not in joined
    rows = page_one_rows(planted[planted["verdict"] != "not measured"])
    assert not rows["verdict"].str.contains(r"\b(?:faster|slower)\b").any()
    # every measured row states an acceptance range and its CI's half-width against m
    assert rows["resolution"].str.contains(r"\d\.\.-?\d|CI \+-").all()
    assert {c for c, *_ in SUMMARY_TABLE} >= {"resolution", "verdict", "claimed", "measured"}


def test_cited_stores_get_a_spec_provenance_and_privacy_page(tmp_path: Path):
    from analysis.report.appendix import cited_store_text, cited_stores

    crossovers = pd.DataFrame({"source": ["headline4_law_eps (tight)", "headline4_law_d (tight)",
                                          "headline4_law_eps (tight)"]})
    laws = pd.DataFrame({"sources": ["headline4_law_eps (tight); headline4_law_ramp_d (tight)"]})
    assert cited_stores(crossovers, laws) == ["headline4_law_eps", "headline4_law_d",
                                              "headline4_law_ramp_d"]
    text = cited_store_text("headline4_law_eps")
    assert "not among this report's inputs" in text and "calibration tight" in text
    assert "eps [0.03, 0.1, 0.3], delta [1e-06]" in text and "last changed at" in text
    assert "adaptive_tree_spider" in text and "design notes" in text
    assert "not found" in cited_store_text("no_such_store", configs=tmp_path)


def test_the_contents_list_starts_under_a_long_subtitle():
    """The appendix's contents page (issue 73, item 4: its first page's text overlapped): a
    subtitle wrapping to four lines pushes the list down rather than onto it."""
    from analysis.report.layout import overlapping_text
    from analysis.report.outline import contents_pages

    names = ", ".join(f"headline2_store{k}" for k in range(12))
    figs = contents_pages("Appendix: contents", [(f"Section {k}", k) for k in range(60)],
                           f"The appendix of reference.pdf ({names}): every page the main "
                           "report leaves out, by section; the PDF's bookmarks list the same.")
    assert len(figs) == 2 and [overlapping_text(f) for f in figs] == [[], []]
