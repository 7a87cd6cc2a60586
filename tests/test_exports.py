"""`dprates compare` and `dprates practitioners` export what a design doc takes as is (issue 73,
item 5): markdown, LaTeX (booktabs) and CSV; the table first, its notes after, the iterate
rule said once; one row per algorithm and point, one number per cell, absolute gradient
evaluations beside the passes. No TeX engine is on the test machine (`which pdflatex lualatex
tectonic` finds none), so the LaTeX is checked by its structure: the booktabs rules in order,
the tabular's column count (parsed from its column spec) on the header and on every row, and
the special characters of a planted instance escaped.

The planted store: the Gaussian Spider reads n* = (100, 200, 300) on two instances, the
adaptive tree Spider (400, 800, 1200) on the same seeds; by hand the medians are 200 and 800,
one pass each (gradient evaluations 200 and 800), the paired ratio 4 on every draw."""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from bench.cli import main
from tests.synthetic_cells import targeted, write_store

ROOT = Path(__file__).resolve().parents[1]
#: A problem parameter holding every character LaTeX treats specially.
SPECIAL = "50% & #1_x {a} ~^$"
#: What the exported compare table shows, counted by hand from the planted store: problem,
#: instance (two instances), algorithm, view, metric, samples, passes, grad. evals, ratio,
#: baseline, pairing, reads, flags.
COMPARE_COLUMNS = 13
#: metric, instance, d, eps, target, algorithm, samples, passes, grad. evals, ratio to fewest,
#: best Spider, best Spider / n*, reading.
PRACTITIONERS_COLUMNS = 13


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    rows = (targeted("gaussian_spider", [100, 200, 300], 0.05)
            + targeted("adaptive_tree_spider", [400, 800, 1200], 0.05)
            + targeted("gaussian_spider", [100, 200, 300], 0.05,
                       problem_params={"note": SPECIAL}))
    return write_store(tmp_path_factory.mktemp("exports") / "planted.sqlite", rows)


def _run(capsys, argv: list[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def _group(s: str, start: int) -> tuple[str, int]:
    """The brace group opening at s[start] and the index after it."""
    assert s[start] == "{", s[start:start + 20]
    depth = 0
    for i in range(start, len(s)):
        if s[i] == "\\":
            continue
        depth += {"{": 1, "}": -1}.get(s[i], 0)
        if depth == 0:
            return s[start + 1:i], i + 1
    raise AssertionError("unbalanced braces in " + s[start:start + 40])


def spec_columns(spec: str) -> int:
    """How many columns an array-package column spec declares: l c r, and p m b with their
    width; >{...} <{...} @{...} !{...} declare none."""
    n, i = 0, 0
    while i < len(spec):
        ch = spec[i]
        if ch in "><@!":
            _, i = _group(spec, i + 1)
            continue
        if ch in "pmb":
            _, i = _group(spec, i + 1)
            n += 1
            continue
        if ch in "lcr":
            n += 1
        elif not ch.isspace() and ch != "|":
            raise AssertionError(f"unexpected column type {ch!r} in {spec!r}")
        i += 1
    return n


def _cells(row: str) -> list[str]:
    return re.split(r"(?<!\\)&", row)


def latex_structure(tex: str) -> tuple[list[str], list[list[str]], str, str]:
    """Checks the booktabs table and returns (header, rows, text before, text after it)."""
    assert "\\hline" not in tex and "|" not in tex.split("\\begin{tabular}", 1)[1].split("}", 1)[0]
    start = tex.index("\\begin{tabular}")
    spec, after_spec = _group(tex, start + len("\\begin{tabular}"))
    body, rest = tex[after_spec:].split("\\end{tabular}", 1)
    lines = [ln.strip() for ln in body.strip().splitlines() if ln.strip()]
    # the three booktabs rules, once each, in order: top, header, mid, rows, bottom
    assert lines[0] == "\\toprule" and lines[2] == "\\midrule" and lines[-1] == "\\bottomrule"
    assert sum(ln in ("\\toprule", "\\midrule", "\\bottomrule") for ln in lines) == 3
    n = spec_columns(spec)
    header, rows = _cells(lines[1].removesuffix("\\\\")), []
    assert lines[1].endswith("\\\\") and len(header) == n, (n, lines[1])
    for ln in lines[3:-1]:
        assert ln.endswith("\\\\"), ln
        cells = _cells(ln.removesuffix("\\\\"))
        assert len(cells) == n, (n, ln)
        assert not ln.startswith("["), ln  # read as \\[dimen] after the previous row's \\
        rows.append([c.strip() for c in cells])
    return [c.strip() for c in header], rows, tex[:start], rest


def _outside_math(tex: str) -> str:
    return re.sub(r"(?<!\\)\$[^$]*(?<!\\)\$", " ", tex)


def assert_escaped(text: str) -> None:
    """No character of % & # _ ^ ~ $ { } left raw in `text` (table cells, math removed)."""
    plain = _outside_math(text)
    plain = re.sub(r"\\(textasciitilde|textasciicircum|textbackslash|slash)\{\}", " ", plain)
    plain = re.sub(r"\\textsuperscript\{\w+\}", " ", plain)
    for ch in "%&#_^~$":
        assert not re.search(rf"(?<!\\){re.escape(ch)}", plain), (ch, text)
    assert not re.search(r"(?<!\\)[{}]", plain), text


def test_spec_columns_counts_the_array_column_types():
    assert spec_columns("lll") == 3
    assert spec_columns(r"l>{\raggedright\arraybackslash}p{\dimexpr4pt+(\linewidth-9pt)*1/2\relax}r") == 3
    assert spec_columns(r"@{}lc@{}") == 2


def test_compare_latex_is_a_booktabs_table_with_every_row_complete(store, capsys):
    tex = _run(capsys, ["compare", store, "--target", "0.05", "--format", "latex", "--boot",
                        "200"])
    header, rows, before, after = latex_structure(tex)
    assert len(header) == COMPARE_COLUMNS and len(rows) == 3  # one row per algorithm and point
    assert header[6:8] == ["passes", "grad. evals"]  # absolute evaluations beside the passes
    for row in rows:
        assert_escaped(" ".join(row))
    planted = next(r for r in rows if "note" in r[1])
    assert planted[1] == ("\\{``note'': ``50\\% \\& \\#1\\_x \\{a\\} "
                          "\\textasciitilde{}\\textasciicircum{}\\$''\\}")
    spider = next(r for r in rows if r[2] == "adaptive\\_tree\\_spider")
    # median 800 over (400, 800, 1200), one pass: 800 evaluations; paired ratio 4 on every draw
    assert spider[5] == "$800$ $[400, 1.2\\times 10^{3}]$"
    assert spider[6:9] == ["$1$", "$800$", "$4$ $[4, 4]$"]
    # no prose before the table: every line a comment or a command (set-up, caption, label)
    assert all(ln.startswith(("%", "\\")) for ln in before.splitlines() if ln.strip()), before
    assert "Samples to target 0.05. One pass" not in before
    # the iterate rule: once, after the table
    assert tex.count("first time the best iterate") == 1 and "Selection" in after
    assert_escaped(after.split("\\raggedright", 1)[1].split("\\end{minipage}", 1)[0])


def test_compare_markdown_gives_the_table_first_and_the_rule_once(store, capsys):
    md = _run(capsys, ["compare", store, "--target", "0.05", "--boot", "200"])
    lines = md.splitlines()
    assert lines[0].startswith("| problem | instance | algorithm |") and lines[1].startswith("|---")
    body = [ln for ln in lines[2:] if ln.startswith("| ")]
    assert len(body) == 3 and all(ln.count(" | ") == COMPARE_COLUMNS - 1 for ln in body)
    assert md.count("first time the best iterate") == 1
    assert md.index("first time the best iterate") > md.index(body[-1])


def test_compare_csv_holds_one_number_per_cell(store, capsys):
    out = _run(capsys, ["compare", store, "--target", "0.05", "--format", "csv", "--boot", "200"])
    t = pd.read_csv(io.StringIO(out))
    cols = list(t.columns)
    assert cols[cols.index("passes") + 1] == "grad_evals"
    for c in ("samples", "ci_low", "ci_high", "passes", "grad_evals", "ratio", "ratio_low",
              "ratio_high"):
        assert t[c].dtype.kind == "f", c
    by = t.set_index(["algorithm", t["instance"].notna()])
    assert by.loc[("adaptive_tree_spider", False), "grad_evals"] == 800.0
    assert by.loc[("gaussian_spider", False), "grad_evals"] == 200.0
    assert by.loc[("adaptive_tree_spider", False), "ratio"] == 4.0
    assert set(t["selection"]) == {"first_hit"}  # a code, not the sentence on every row
    assert not out.lstrip().startswith(("Samples", "One pass"))


@pytest.fixture(scope="module")
def practitioners_csv() -> pd.DataFrame:
    return pd.read_csv(ROOT / "reports" / "practitioners.csv")


def test_practitioners_latex_is_a_booktabs_table_with_every_row_complete(practitioners_csv,
                                                                         capsys):
    csv = str(ROOT / "reports" / "practitioners.csv")
    tex = _run(capsys, ["practitioners", csv, "--format", "latex"])
    header, rows, _before, after = latex_structure(tex)
    assert len(header) == PRACTITIONERS_COLUMNS and len(rows) == len(practitioners_csv)
    assert header[7:9] == ["passes", "grad. evals"]
    assert header[10:12] == ["best Spider", "best Spider \\slash{} n* [95\\% CI]"]
    for row in rows:
        assert_escaped(" ".join(row))
        # one name or one number (with its interval) per cell: the Spider's name stands alone
        assert row[10] in ("--", "gaussian\\_spider", "adaptive\\_tree\\_spider",
                           "tree\\_private\\_spider"), row[10]
        assert ":" not in row[11]
    assert "The maps" not in tex  # no map was drawn by this call
    assert "Recommendation" in after


def test_practitioners_markdown_rows_match_the_csv(practitioners_csv, capsys):
    csv = str(ROOT / "reports" / "practitioners.csv")
    md = _run(capsys, ["practitioners", csv])
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith("| metric")]
    assert len(rows) == len(practitioners_csv)
    first = practitioners_csv.sort_values(["metric", "problem", "d", "eps", "x", "value"]).iloc[0]
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    # grad. evals as the CSV holds them, to three digits, beside the passes
    assert cells[8] == f"{first['grad_evals']:.3g}" and cells[7] == f"{first['passes']:.3g}"
    assert "The maps" not in md


def test_practitioners_on_stores_without_a_target_point_is_one_line(tmp_path, capsys):
    """Stores with n-grid cells only: one line naming the sources and what the command reads
    (pandas' "merge on float64 and object columns" came out before), and no map announced."""
    from tests.synthetic_cells import budgets

    rows = [r for alg, c in (("dp_sgd", 1.0), ("dp_gd", 2.0)) for r in budgets(
        alg, [1e3, 1e4], lambda n, r, c=c: c * (1 + r / 10) / math.sqrt(n), 3,
        metrics=("emp_grad_best", "pop_grad_best"))]
    s = write_store(tmp_path / "untargeted.sqlite", rows)
    maps = tmp_path / "maps"
    assert main(["practitioners", s, "--maps", str(maps), "--boot", "200"]) == 2
    out = capsys.readouterr()
    err = out.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"dprates: error: sources {s}: no samples-to-target")
    assert "merge" not in out.err and "The maps" not in out.out + out.err
    assert not (maps.exists() and any(maps.iterdir()))


def test_a_censored_median_reads_as_what_it_exceeds(practitioners_csv):
    """A median run that never reached the target (value inf) shows '> its bound (censored)',
    never a bare '-'; a censored rival's open ratio shows 'inf'."""
    from analysis.comparisons.practitioners import export_rows

    t = practitioners_csv.copy()
    t.loc[0, ["value", "bound", "ratio"]] = [math.inf, 5e7, math.inf]
    t.loc[1, ["value", "bound"]] = [math.inf, math.nan]
    shown = export_rows(t.iloc[:2])
    by_alg = dict(zip(shown["algorithm"], shown["samples n* [95% CI]"], strict=True))
    assert by_alg[t.loc[0, "algorithm"]] == "> 5e+07 (censored)"
    assert by_alg[t.loc[1, "algorithm"]] == "inf (censored)"
    row0 = shown[shown["algorithm"] == t.loc[0, "algorithm"]].iloc[0]
    assert row0["ratio to fewest [95% CI]"] == "inf"
