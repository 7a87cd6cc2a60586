"""Page 1 lists the measured claims (issue 46, item 3), "no claim" reads as such (item 8), the
verdict vocabulary's order and colours, the dry run's forecast line and grad_evals in a store."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pandas as pd
import pytest

from algorithms.privacy.audit.ledger import FAILED_MARK
from analysis.report.tables import (
    NO_CLAIM,
    VERDICT_COLOURS,
    claims_display,
    claims_summary,
    shown_claims,
    summary_rank,
    verdict_colour,
    verdict_counts,
    verdict_key,
)
from bench.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "reports" / "reference_exponents.csv"
TWO = ("gaussian_spider", "adaptive_tree_spider")


@pytest.fixture(scope="module")
def two_measured(tmp_path_factory) -> Path:
    """The reference's fit rows of the two Spiders only: 2 claims measured, 21 not."""
    table = pd.read_csv(CSV)
    path = tmp_path_factory.mktemp("page1") / "two.csv"
    table[table["algorithm"].isin(TWO)].to_csv(path, index=False)
    return path


def _summary(path: Path, privacy: dict | None = None) -> pd.DataFrame:
    from bench.measured import read_fits

    return claims_summary(read_fits([str(path)]), privacy=privacy)


def test_shown_claims_keep_measured_rows_and_a_failed_algorithm_first(two_measured: Path):
    summary = _summary(two_measured)
    shown, hidden = shown_claims(summary)
    assert (len(summary), len(shown), hidden) == (23, 2, 21)
    assert set(shown["algorithm"]) == set(TWO)
    assert len(shown_claims(summary, all_claims=True)[0]) == 23
    note = f"{FAILED_MARK}: replayed with one record replaced"
    failed = _summary(two_measured, privacy={("dp_gd", ""): note, ("plug", ""): note})
    shown, hidden = shown_claims(failed)
    # dp_gd (not measured) stays because its privacy check FAILED; the plugin's row is added;
    # both first
    assert list(shown["algorithm"][:2]) == ["dp_gd", "plug"] and hidden == 20
    assert verdict_colour(shown["verdict"].iloc[0], shown["privacy"].iloc[0]) == \
        VERDICT_COLOURS[FAILED_MARK]
    assert verdict_colour("consistent", note) == VERDICT_COLOURS[FAILED_MARK]  # red, whatever


def test_page_one_lists_measured_rows_and_says_how_to_list_the_rest(two_measured: Path,
                                                                      tmp_path: Path):
    from matplotlib.backends.backend_pdf import PdfPages
    from pypdf import PdfReader

    from analysis.report.summary_page import all_claims_on_page_one, summary_table_pages

    summary = _summary(two_measured, privacy={("dp_gd", ""): f"{FAILED_MARK}: moved 2.3e+05 x"})
    texts = {}
    for name, all_claims in (("default", None), ("all", True)):
        out = tmp_path / f"{name}.pdf"
        with PdfPages(out) as pdf:
            summary_table_pages(pdf, summary, "Claims", all_claims=all_claims)
        texts[name] = "".join(p.extract_text() for p in PdfReader(out).pages).replace("\n", "")
    page = texts["default"]
    assert "gaussian_spider" in page and "adaptive_tree_spider" in page and "dp_gd" in page
    assert "pdp_sgd" not in page and "jl_recursive" not in page
    assert "20 of 23 declared claims are not measured" in page and "--all-claims" in page
    assert "PRIVACY FAILED: dp_gd" in page
    assert "pdp_sgd" in texts["all"] and "not listed" not in texts["all"]
    with all_claims_on_page_one():  # what `dprates report --all-claims` sets
        out = tmp_path / "ctx.pdf"
        with PdfPages(out) as pdf:
            summary_table_pages(pdf, summary, "Claims")
    assert "pdp_sgd" in "".join(p.extract_text() for p in PdfReader(out).pages)
    args = build_parser().parse_args(["report", "s.sqlite", "-o", "r.pdf", "--all-claims"])
    assert args.all_claims


def test_claims_markdown_lists_measured_rows_csv_every_row(two_measured: Path, capsys):
    assert main(["claims", "--measured", str(two_measured)]) == 0
    md = capsys.readouterr().out
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "---" not in ln]
    assert len(rows) == 1 + 2  # the header and the two measured claims
    assert "21 of 23 declared claims are not measured" in md and "--all-claims" in md
    assert main(["claims", "--measured", str(two_measured), "--all-claims"]) == 0
    md = capsys.readouterr().out
    assert len([ln for ln in md.splitlines() if ln.startswith("| ")]) == 1 + 23
    assert "not listed" not in md
    assert main(["claims", "--measured", str(two_measured), "--format", "csv"]) == 0
    assert len(pd.read_csv(io.StringIO(capsys.readouterr().out))) == 23
    assert main(["claims", "--all-claims"]) == 2  # needs --measured


def test_a_claimless_algorithm_reads_no_claim_and_ranks_last():
    base = {"fit": "f", "problem": "hard_valley", "view": "sample_complexity", "mode": "theory",
            "x": "alpha", "rules_predicted": math.nan, "window": (0.03, 0.09), "flags": "",
            "metric": "alpha_sosp", "character": "hard", "regime": "in regime"}
    rows = pd.DataFrame([
        {**base, "algorithm": "tree_spider", "predicted": math.nan, "exponent": -2.4,
         "ci_low": -2.5, "ci_high": -2.3, "verdict": "inconclusive"},
        {**base, "algorithm": "gaussian_spider", "predicted": -2.33, "exponent": -2.4,
         "ci_low": -2.5, "ci_high": -2.3, "verdict": "inconclusive"},
        {**base, "algorithm": "gaussian_spider", "predicted": math.nan, "exponent": -2.4,
         "ci_low": -2.5, "ci_high": -2.3, "verdict": "inconclusive"},  # claims: stays
        {**base, "algorithm": "not_registered", "predicted": math.nan, "exponent": -2.4,
         "ci_low": -2.5, "ci_high": -2.3, "verdict": "inconclusive"},  # a plugin not loaded
    ])
    assert list(claims_display(rows)["verdict"]) == [NO_CLAIM, "inconclusive", "inconclusive",
                                                    "inconclusive"]
    ranks = [summary_rank(pd.Series({**r, "_order": 0})) for r in rows.to_dict("records")]
    assert ranks[0] > ranks[1]  # a claimless row never decides before a claim's row


def test_the_verdict_vocabulary_orders_and_colours_by_prefix():
    vocab = ["consistent", "consistent up to logs", "approaches its bound from below",
             "slower than claimed even with logs", "faster than claimed even with logs",
             "slower than claimed", "faster than claimed", "inconclusive", "not in regime",
             "out of reach", "not measured", "no claim", "consistent up to the rules' log factors"]
    for v in vocab:
        assert verdict_key(v) == v and verdict_colour(v) == VERDICT_COLOURS[v]
    assert verdict_key("consistent up to logs (log^2 n)") == "consistent up to logs"
    assert verdict_key("slower than claimed even with logs (3 factors)") == \
        "slower than claimed even with logs"
    assert verdict_colour("something new") == "#ffffff"
    counts = verdict_counts(pd.DataFrame({"verdict": ["not measured"] * 3 + ["consistent",
                                                      "no claim", "zzz", "slower than claimed"]}))
    assert list(counts) == ["consistent", "slower than claimed", "not measured", "no claim", "zzz"]
    # the sixth edition's names, counted by name (its "by X", "(Rx)", "(accepts a..b)" left out)
    for v in ("exceeds its bound", "slower than its rules", "faster than its rules"):
        assert verdict_key(v) == v and verdict_colour(v) == VERDICT_COLOURS[v]
    counts = verdict_counts(pd.DataFrame({"verdict": [
        "slower than its rules by 0.448", "slower than its rules by 0.209",
        "exceeds its bound (1.28x)", "not refuted by the O~ claim (accepts 0.47..0.53)"]}))
    assert counts == {"not refuted by the O~ claim": 1, "exceeds its bound": 1,
                      "slower than its rules": 2}
    assert list(counts) == ["not refuted by the O~ claim", "exceeds its bound",
                            "slower than its rules"]


def test_the_dry_run_says_advisory_once(tmp_path: Path, capsys):
    from algorithms import regime_forecast as rf

    assert main(["sweep", "bench/configs/seed002_scaling3_d.toml", "--dry-run", "--out",
                 str(tmp_path / "s.sqlite")]) == 0
    out = capsys.readouterr().out
    line = next(r for r in out.splitlines() if r.strip().startswith("pagan / ") and "floor" in r)
    assert rf.ADVISORY in line and "the data's flags decide" not in line
    assert line.endswith("[claim's terms, constants at 1]")


def test_stores_keep_grad_evals_and_old_cells_read_nan(tmp_path: Path):
    """issue 46, item 5: the per-sample gradient evaluations of each cell (exact passes over
    the data with n); a cell written without them (an older dprates) reads NaN."""
    import sqlite3

    from bench.runner import compute_cell
    from bench.store import Store, load

    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        st.set_spec("s", "", "", ["a", "b"], "now")
        st.write({"key": "a", "status": "ok", "n": 10, "grad_evals": 123})
        st.write({"key": "b", "status": "ok", "n": 10})
    cells = load(path).set_index("key")
    assert cells.loc["a", "grad_evals"] == 123 and math.isnan(cells.loc["b", "grad_evals"])
    with sqlite3.connect(path) as conn:  # a store from before the column: still readable
        conn.execute("ALTER TABLE cells DROP COLUMN grad_evals")
    assert math.isnan(load(path).set_index("key").loc["a", "grad_evals"])
    from bench.config import parse_spec

    spec = parse_spec("""
name = "g"
seed = 1
repetitions = 1
[grid]
n = [400]
d = [3]
eps = [1.0]
[[problem]]
name = "hard_valley"
[[algorithm]]
name = "dp_gd"
""")
    res = compute_cell(spec.cells()[0], None)
    assert isinstance(res["grad_evals"], int) and res["grad_evals"] > 0
