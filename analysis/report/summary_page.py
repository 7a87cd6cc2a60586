"""The main report's claims table: one row per measured claim coloured by verdict (a
privacy-FAILED algorithm's rows first and red), continued on as many pages as it needs with
every cell whole, each page with the verdict counts, a swatch per colour, how many claims no fit
measures (listed with `dprates report --all-claims`) and the glossary of the verdict words
(`summary_table_pages`; the rows come from `analysis.report.tables.claims_summary`, chosen by
`shown_claims`). One sign convention: "steeper / flatter" than the rules or the claim, read
off the slopes in the row. The appendix holds the table's other half, each row's theorem and
deciding fit (`source_table_pages`).
"""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.patches import Patch

from analysis.report.layout import A4_LANDSCAPE
from analysis.report.tables import (
    VERDICT_COLOURS,
    hidden_claims_line,
    privacy_failure_lines,
    shown_claims,
    verdict_colour,
    verdict_counts,
    verdict_key,
)
from analysis.report.verdict_cells import as_steepness, finite

#: Whether page 1 lists every declared claim (`dprates report --all-claims`) or, by default,
#: the measured ones (set for one report by `all_claims_on_page_one`).
_ALL_CLAIMS: ContextVar[bool] = ContextVar("dprates_page_one_all_claims", default=False)


@contextlib.contextmanager
def all_claims_on_page_one(on: bool = True) -> Iterator[None]:
    """Within this block, page 1 of a report lists every declared claim (`on`), measured or not
    (`dprates report --all-claims`); by default it lists the measured ones and says how many
    it leaves out."""
    token = _ALL_CLAIMS.set(bool(on))
    try:
        yield
    finally:
        _ALL_CLAIMS.reset(token)

#: Page 1's columns: (summary column, header, share of the table's width). Nothing is cut:
#: each cell wraps to its column's width at SUMMARY_FONT (`_cell_lines`), and a row is as tall
#: as its longest cell. The theorem and the fit that decides each row are the appendix's
#: (`SOURCE_TABLE`, "Every declared claim"; issue 73, item 1: a narrower set of columns).
SUMMARY_TABLE = [
    ("algorithm", "algorithm", 0.08),
    ("claim", "claim (the paper's rate)", 0.12),
    ("slope of", "slope of", 0.065),
    ("claimed", "claimed slope", 0.04),
    ("measured", "measured [95% CI]", 0.085),
    ("rules", "its rules' slope", 0.04),
    ("against its rules", "against its rules: residual [95% CI], margin m", 0.125),
    ("resolution", "resolution: the slopes each test accepts; the CI's half-width against m",
     0.18),
    ("verdict", "verdict", 0.13),
    ("regime", "regime", 0.135),
]
#: The appendix's half of the claims table: where each row's claim and measurement come from.
SOURCE_TABLE = [
    ("algorithm", "algorithm", 0.12),
    ("claim", "claim (the paper's rate)", 0.17),
    ("source", "theorem (paper)", 0.33),
    ("decided by", "decided by (spec/fit, mode, problem, x)", 0.26),
    ("fits", "fits", 0.12),
]
SUMMARY_FONT = 6.0
#: The glossary under page 1's table, in three columns.
NOTES_FONT = 6.2
#: Characters a column holds per unit of its share at SUMMARY_FONT (DejaVu Sans averages ~0.56
#: em a character; the cell pads 2% of its width each side; digits are wider, hence the slack).
_CHARS_PER_SHARE = 0.92 * 842 / (SUMMARY_FONT * 0.6) * 0.93
#: The verdict words on page 1's page, in plain language (issue 73, item 1; the long form is
#: analysis/README.md, "What each verdict means", and the appendix's Methods).
GLOSSARY = [
    ("rules", "the algorithm's own bound as its implementation runs it (its step sizes, batches "
              "and noise, constants at 1). 'Its rules' slope' is that bound's slope on the "
              "same design."),
    ("follows its rules", "the residual slope (measured minus rules) has its 95% CI inside "
                          "+-m."),
    ("margin m", "the smallest slope difference a test counts, declared per claim before the "
                 "run; within +-m reads as equal."),
    ("steeper / flatter", "the measured slope further from / nearer to 0 than the rules' (or "
                          "the claim's) slope, by X, its CI beyond +-m. Steeper is better for "
                          "an error against sqrt(d)/(n eps) or n, worse for n* against alpha "
                          "or eps and for an error against d, rank or eps."),
    ("undecided", "the residual's CI straddles +-m."),
    ("asymptote", "where the rules' slope tends as x goes to its limit: 'whose asymptote is "
                  "the claim' = the rules are followed and tend to the paper's exponent."),
    ("reaches the claim on its deepest decade", "on a window of two decades or more, the "
                                                "slope over the last decade is within +-m of "
                                                "the claim."),
    ("O~ test", "the paper's rate read with the log factors its O~ hides; 'not refuted (accepts "
                "a..b)' = the measured slope is one that rate, +-m, allows on this design."),
    ("exceeds its bound", "the seeds' mean lies above the algorithm's own bound beyond its "
                          "one-sided 95% interval."),
    ("design too short", "no test decides: every CI is wider than m on this range of x."),
    ("not in regime", "the window is not where the claim binds: the private share is under "
                      "0.9, or the runs hit a ceiling or a floor; the slope (in parentheses) "
                      "measures something else."),
    ("private share", "the part of n* (or of the error) the privacy noise causes, against "
                      "eps = inf runs; the claims are about that part."),
    ("knobs", "each algorithm's tuning constants (step, batch, horizon multipliers); at 1 "
              "(theory mode) unless the row's mode says tuned."),
    ("resolution", "the pure power laws each test would accept on this design (a..b), and the "
                   "CI's half-width: a difference smaller than it could not have been seen."),
]


def _cell_lines(text: Any, width: int) -> list[str]:
    """`text` wrapped to `width` characters, every word kept (no "..."), breaking names like
    recursive_regularization_linear after an underscore rather than mid-word."""
    marked = str(text).replace("_", "_\x01")  # a break opportunity after each underscore
    lines = [ln.replace("\x01", "").strip() for ln in
             textwrap.wrap(marked.replace("\x01", " \x01"), width + 1, break_long_words=True)]
    return [ln.replace("_ ", "_") for ln in lines] or [""]


def page_one_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """Page 1's cells: the summary with "faster" / "slower" as "steeper" / "flatter" (one sign
    convention on every row, `verdict_cells.as_steepness`), the axis each slope is of, and the
    resolution with the CI's half-width against m."""
    out = summary.copy()
    recs = out.to_dict("records")
    for col in ("verdict", "against its rules"):
        if col in out:
            out[col] = [as_steepness(r.get(col, ""), r.get("view"), r.get("x"), r.get("rules"),
                                     r.get("claimed")) for r in recs]
    out["slope of"] = [slope_of(r.get("view"), r.get("x")) for r in recs]
    out["resolution"] = [resolution_cell(r) for r in recs]
    return out


def slope_of(view: Any, x: Any) -> str:
    """The axes a row's slope is measured on: "log n* on log alpha"."""
    if not isinstance(view, str) or not isinstance(x, str):
        return "-"
    y = "n*" if view == "sample_complexity" else "error"
    return f"log {y} on log {X_NAMES.get(x, x)}"


#: How page 1 names each x.
X_NAMES = {"privacy": "sqrt(d)/(n eps)", "alpha": "target alpha"}


def resolution_cell(row: Mapping[str, Any]) -> str:
    """The slopes each test accepts (`resolution_text`) and the half-width of the CI the
    verdict reads (the residual's, else the measured slope's) against the margin m: what the
    test could not have detected."""
    text = str(row.get("resolution", "-"))
    for long, short in (("this verdict for ", "this verdict: "), ("rules test", "rules"),
                        ("O~ test", "O~")):
        text = text.replace(long, short)
    lo, hi, m = row.get("rules_ci_low"), row.get("rules_ci_high"), row.get("margin")
    if not (finite(lo) and finite(hi)):
        lo, hi = row.get("ci_low"), row.get("ci_high")
    if not (finite(lo) and finite(hi)):
        return text if text != "-" else "no CI: nothing accepted or rejected"
    half = (float(hi) - float(lo)) / 2
    if not finite(m):
        return f"{text}; CI +-{half:.2g}"
    than = "<=" if half <= float(m) else ">"
    return f"{text}; CI +-{half:.2g} {than} m {float(m):.2g}"


def legend_label(key: str) -> str:
    """A colour's label: a "faster" / "slower" verdict says which way is better (the words on
    the rows say steeper / flatter)."""
    for word, way in (("faster", "better"), ("slower", "worse")):
        if key.startswith(word):
            return f"steeper/flatter{key[len(word):]}, the {way} way"
    return key


def summary_table_pages(pdf: PdfPages, summary: pd.DataFrame, title: str,
                        all_claims: bool | None = None) -> None:
    """Page 1: the claims summary as a real table (one row per measured claim, coloured by
    verdict, "not in regime" / "out of reach" rows shown; with `all_claims`, default
    `all_claims_on_page_one`'s setting, the "not measured" ones too), continued on as many pages
    as it needs, every cell whole; on each page the counts, the colours' legend and the
    glossary of the verdict words (`GLOSSARY`)."""
    full = summary
    summary, hidden = shown_claims(full, _ALL_CLAIMS.get() if all_claims is None else all_claims)
    shown = page_one_rows(summary.reset_index(drop=True))
    cols = list(SUMMARY_TABLE)
    if "privacy" in shown and shown["privacy"].astype(str).str.strip().astype(bool).any():
        cols = [(c, h, w * 0.93) for c, h, w in cols] + [("privacy", "privacy", 0.07)]
    counts = verdict_counts(full)
    head = ["; ".join(f"{v} {legend_label(k) if k[:6] in ('faster', 'slower') else k}"
                      for k, v in counts.items())
            + f" ({len(full)} declared claims" + (
                f"; the {hidden} not measured are not listed" if hidden else "") + ")"]
    head += privacy_failure_lines(full)
    if hidden:
        head.append(hidden_claims_line(hidden, len(full), "`dprates report STORES -o OUT "
                                       "--all-claims`"))
    head.append("Each row's theorem (paper) and the fit that decides it: the appendix, 'Every "
                "declared claim'; the verdicts in full: its Methods.")
    colours = [verdict_colour(v, p) for v, p in zip(
        summary["verdict"], summary.get("privacy", pd.Series("", summary.index)), strict=True)]
    keys = list(dict.fromkeys(verdict_key(v) for v in summary["verdict"]))
    failed = sorted({ln.split(":")[1].strip() for ln in privacy_failure_lines(summary)})
    table_pages(pdf, shown, cols, title, head, colours, legend=keys, glossary=True,
                alarm=f"PRIVACY FAILED: {', '.join(failed)}" if failed else "")


def source_table_pages(pdf: PdfPages, summary: pd.DataFrame) -> None:
    """The appendix's half of page 1's table (`SOURCE_TABLE`): each measured claim's theorem
    and the fit that decides it, every cell whole."""
    shown, _ = shown_claims(summary, _ALL_CLAIMS.get())
    shown = shown.reset_index(drop=True)
    if not len(shown):
        return
    colours = [verdict_colour(v, p) for v, p in zip(
        shown["verdict"], shown.get("privacy", pd.Series("", shown.index)), strict=True)]
    table_pages(pdf, shown, SOURCE_TABLE, "Every declared claim: its theorem and the fit that "
                "decides it", ["The rows of the main report's claims table, in its order and "
                               "colours."], colours)


def table_pages(pdf: PdfPages, frame: pd.DataFrame, cols: list[tuple[str, str, float]],
                title: str, head: list[str], colours: list[str], legend: list[str] = (),
                glossary: bool = False, alarm: str = "") -> None:
    """`frame`'s columns `cols` as a table over as many landscape pages as it needs, every cell
    wrapped whole (`_cell_lines`), rows coloured by `colours`; each page with `title`, the
    `head` lines, a swatch per `legend` verdict and, with `glossary`, the `GLOSSARY` beneath."""
    rows = [[_cell_lines(r.get(c, ""), int(w * _CHARS_PER_SHARE)) for c, _, w in cols]
            for r in frame.to_dict("records")]
    header = [_cell_lines(h, int(w * _CHARS_PER_SHARE)) for _, h, w in cols]
    top = 0.94 - 0.0125 * sum(len(textwrap.wrap(h, 230)) for h in head) - (0.03 if legend else 0)
    box = [0.03, 0.215 if glossary else 0.04, 0.92, 0.0]
    box[3] = top - box[1]
    line = SUMMARY_FONT * 1.28 / (box[3] * A4_LANDSCAPE[1] * 72)  # one text line, of the box

    def height(cells: list[list[str]]) -> float:
        return max(len(c) for c in cells) * line + 2.2 * line / (SUMMARY_FONT * 1.28)

    pages, current, used = [], [], height(header)
    for k, r in enumerate(rows):
        if current and used + height(r) > 1.0:
            pages.append(current)
            current, used = [], height(header)
        current.append(k)
        used += height(r)
    pages.append(current)
    for i, idx in enumerate(pages):
        fig = plt.figure(figsize=A4_LANDSCAPE)
        more = f" (continued, {i + 1} of {len(pages)})" if len(pages) > 1 and i else ""
        fig.text(0.03, 0.975, title + more, fontsize=13, weight="bold", va="top")
        if alarm:  # a plugin swept with --allow-unverified after its check found a leak
            fig.text(0.97, 0.975, alarm, fontsize=11, weight="bold", color="#b00000", va="top",
                     ha="right")
        fig.text(0.03, 0.945, "\n".join(w for h in head for w in textwrap.wrap(h, 230)),
                 fontsize=6.5, va="top")
        if legend:
            handles = [Patch(facecolor=VERDICT_COLOURS.get(k, "#ffffff"), edgecolor="0.4",
                             label=legend_label(k)) for k in legend]
            fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.03, top + 0.03),
                       ncol=min(len(handles), 5), fontsize=6, frameon=False, handlelength=1.5,
                       columnspacing=1.2, borderaxespad=0)
        _draw_table(fig, box, header, [rows[k] for k in idx], [colours[k] for k in idx], cols,
                    height)
        if glossary:
            _glossary(fig)
        pdf.savefig(fig)
        plt.close(fig)


def _draw_table(fig: plt.Figure, box: list[float], header: list[list[str]],
                rows: list[list[list[str]]], colours: list[str],
                cols: list[tuple[str, str, float]], height: Any) -> None:
    ax = fig.add_axes(box)
    ax.axis("off")
    if not rows:
        ax.text(0, 1, "No declared claim is measured by these stores.", fontsize=9, va="top")
        return
    table = ax.table(cellText=[["\n".join(c) for c in r] for r in rows],
                     colLabels=["\n".join(c) for c in header], colWidths=[c[2] for c in cols],
                     loc="upper left", cellLoc="left", colLoc="left")
    table.auto_set_font_size(False)
    table.set_fontsize(SUMMARY_FONT)
    for j in range(len(cols)):
        cell = table[0, j]
        cell.set_height(height(header))
        cell.set_facecolor("#d9d9d9")
        cell.get_text().set_weight("bold")
        cell.get_text().set_va("center")
        cell.PAD = 0.02
    for row_no, (cells, colour) in enumerate(zip(rows, colours, strict=True), start=1):
        for j in range(len(cols)):
            cell = table[row_no, j]
            cell.set_height(height(cells))
            cell.set_facecolor(colour)
            cell.get_text().set_va("center")
            cell.PAD = 0.02


def _glossary(fig: plt.Figure) -> None:
    """`GLOSSARY` in three columns under the table (0.195 down to the page number's line)."""
    fig.text(0.03, 0.198, "Glossary of the verdict words", fontsize=7, weight="bold", va="top")
    entries = [f"{term}: {text}" for term, text in GLOSSARY]
    per = -(-len(entries) // 3)
    for k in range(3):
        lines = [w for e in entries[k * per:(k + 1) * per]
                 for w in textwrap.wrap(e, 72, subsequent_indent="  ")]
        fig.text(0.03 + k * 0.318, 0.178, "\n".join(lines), fontsize=NOTES_FONT, va="top",
                 linespacing=1.15)
