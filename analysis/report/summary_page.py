"""Page 1 of the report: the claims summary as a real table, one row per measured claim coloured
by verdict (a privacy-FAILED algorithm's rows first and red), continued on as many pages as it
needs, the verdict counts, how many claims no fit measures (listed with `dprates report
--all-claims`) and what faster / slower mean beneath (`summary_table_pages`; the rows come from
`analysis.report.tables.claims_summary`, chosen by `shown_claims`).
"""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.report.layout import A4_LANDSCAPE
from analysis.report.tables import (
    hidden_claims_line,
    privacy_failure_lines,
    shown_claims,
    summary_notes,
    verdict_colour,
    verdict_counts,
    verdict_key,
)

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

#: Page 1's columns: (summary column, header, share of the table's width, wrap width in
#: characters at SUMMARY_FONT, at most this many lines).
SUMMARY_TABLE = [
    ("algorithm", "algorithm", 0.10, 21, 2),
    ("claim", "claim", 0.13, 27, 2),
    ("short source", "theorem (paper)", 0.15, 31, 2),
    ("claimed", "claimed", 0.04, 7, 1),
    ("measured", "measured [95% CI]", 0.09, 19, 2),
    ("rules", "rules", 0.035, 6, 1),
    ("against its rules", "against its rules (residual, m)", 0.11, 23, 3),
    ("verdict", "verdict", 0.11, 23, 3),
    ("regime", "regime", 0.10, 21, 2),
    ("decided by", "decided by (spec/fit, mode, problem, x)", 0.135, 28, 2),
]
SUMMARY_FONT = 6.0
#: The notes under page 1's table (glossary, counts, what was left out).
NOTES_FONT = 6.5
#: Page 1's one-line glossary of the verdicts (analysis/README.md, "What each verdict means").
VERDICT_GLOSSARY = (
    "Verdicts: 'follows its rules' = the residual slope (measured minus the algorithm's own "
    "rules) has its 95% CI inside +-m, the declared margin; 'slower / faster than its rules by "
    "X' = outside it; 'undecided' = it straddles +-m; 'whose asymptote is the claim' = the rules' "
    "local slope tends to the claimed exponent; 'not refuted by the O~ claim (accepts a..b)' = "
    "the claim with the logs its rules carry, +-m, accepts the pure power laws a..b on this "
    "design; 'exceeds its bound' = the seeds' mean above the algorithm's own bound beyond its "
    "one-sided 95% interval; 'design too short' = no test decides and every CI is wider than m; "
    "'not in regime' = the regime gate (privacy share under 0.9, ceiling or floor). The first "
    "test that decides is the verdict, on any design.")


def _cell_lines(text: Any, width: int, max_lines: int) -> list[str]:
    """`text` wrapped to `width` characters, breaking names like recursive_regularization_linear
    after an underscore rather than mid-word; at most `max_lines` lines (then shortened)."""
    marked = str(text).replace("_", "_\x01")  # a break opportunity after each underscore
    lines = [ln.replace("\x01", "").strip() for ln in
             textwrap.wrap(marked.replace("\x01", " \x01"), width + 1, break_long_words=True)]
    lines = [ln.replace("_ ", "_") for ln in lines] or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = textwrap.shorten(lines[-1] + " ...", width, placeholder=" ...")
    return lines


def summary_table_pages(pdf: PdfPages, summary: pd.DataFrame, title: str,
                        all_claims: bool | None = None) -> None:
    """Page 1: the claims summary as a real table (one row per measured claim, coloured by
    verdict, "not in regime" / "out of reach" rows shown; with `all_claims`, default
    `all_claims_on_page_one`'s setting, the "not measured" ones too), continued on as many pages
    as it needs, the counts, the line on the claims left out and what faster / slower mean
    beneath."""
    full = summary
    summary, hidden = shown_claims(full, _ALL_CLAIMS.get() if all_claims is None else all_claims)
    summary = summary.reset_index(drop=True)
    cols = list(SUMMARY_TABLE)
    if "privacy" in summary and summary["privacy"].astype(str).str.strip().astype(bool).any():
        cols = [(c, h, w * 0.93, max(6, int(n * 0.93)), m) for c, h, w, n, m in cols]
        cols.append(("privacy", "privacy", 0.07, 14, 3))
    rows = [[_cell_lines(r.get(c, ""), n, m) for c, _, _, n, m in cols]
            for r in summary.to_dict("records")]
    header = [_cell_lines(h, n, 3) for _, h, _, n, _ in cols]
    line_pt = SUMMARY_FONT * 1.3
    pad_pt = 2.6
    box = [0.03, 0.15, 0.94, 0.76]
    ax_h_pt = box[3] * A4_LANDSCAPE[1] * 72
    def height(cells: list[list[str]]) -> float:
        return (max(len(c) for c in cells) * line_pt + pad_pt) / ax_h_pt

    pages, current, used = [], [], height(header)
    for k, r in enumerate(rows):
        h = height(r)
        if current and used + h > 1.0:
            pages.append(current)
            current, used = [], height(header)
        current.append(k)
        used += h
    pages.append(current)
    counts = verdict_counts(full)
    notes = [VERDICT_GLOSSARY, *summary_notes(full)]
    if hidden:
        notes.insert(len(privacy_failure_lines(full)), hidden_claims_line(
            hidden, len(full), "`dprates report STORES -o OUT --all-claims`"))
    for i, idx in enumerate(pages):
        fig = plt.figure(figsize=A4_LANDSCAPE)
        more = f" (continued, {i + 1} of {len(pages)})" if len(pages) > 1 and i else ""
        fig.text(0.03, 0.965, title + more, fontsize=13, weight="bold", va="top")
        failed = sorted({ln.split(":")[1].strip() for ln in privacy_failure_lines(summary)})
        if failed:  # a plugin swept with --allow-unverified after its check found a leak
            fig.text(0.97, 0.965, f"PRIVACY FAILED: {', '.join(failed)}", fontsize=11,
                     weight="bold", color="#b00000", va="top", ha="right")
        # the counts can be a dozen verdicts long (the reference): wrapped to the page's width
        fig.text(0.03, 0.937, textwrap.fill("; ".join(f"{v} {k}" for k, v in counts.items())
                                            + f" ({len(full)} declared claims" + (
                                                f"; the {hidden} not measured are not listed"
                                                if hidden else "") + ")", 200),
                 fontsize=7, va="top")
        if not idx:  # nothing measured: no table, the notes say what was left out
            fig.text(0.03, 0.88, "No declared claim is measured by these stores.", fontsize=9,
                     va="top")
            fig.text(0.03, 0.84, "\n".join(textwrap.fill(n, 210) for n in notes), fontsize=6.5,
                     va="top")
            pdf.savefig(fig)
            plt.close(fig)
            continue
        ax = fig.add_axes(box)
        ax.axis("off")
        texts = ["\n".join(c) for c in header]
        cell_text = [["\n".join(c) for c in rows[k]] for k in idx]
        table = ax.table(cellText=cell_text, colLabels=texts, colWidths=[c[2] for c in cols],
                         loc="upper left", cellLoc="left", colLoc="left")
        table.auto_set_font_size(False)
        table.set_fontsize(SUMMARY_FONT)
        for j in range(len(cols)):
            cell = table[0, j]
            cell.set_height(height(header))
            cell.set_facecolor("#d9d9d9")
            cell.get_text().set_weight("bold")
            cell.get_text().set_va("center")
        for row_no, k in enumerate(idx, start=1):
            row = summary.iloc[k]
            colour = verdict_colour(row["verdict"], row.get("privacy", ""))
            for j in range(len(cols)):
                cell = table[row_no, j]
                cell.set_height(height(rows[k]))
                cell.set_facecolor(colour)
                cell.get_text().set_va("center")
                cell.PAD = 0.02
        legend = "   ".join(dict.fromkeys(verdict_key(v) for v in summary["verdict"]))
        drawn = height(header) + sum(height(rows[k]) for k in idx)  # of the box's height
        top = max(0.135, box[1] + box[3] * (1 - drawn) - 0.02)  # just under the table
        last = i == len(pages) - 1  # the notes go under the table's last page only
        lines = [*("\n".join(textwrap.fill(n, 210) for n in notes).split("\n") if last else []),
                 "row colours: " + legend + ("" if last else "   (notes: under the table's end)")]
        per_line = NOTES_FONT * 1.2 / (A4_LANDSCAPE[1] * 72)  # of the page's height
        room = int((top - 0.015) / per_line)
        rest: list[str] = []
        if len(lines) > room:  # the reference's notes outgrow page 1: the rest on pages of their own
            lines, rest = lines[:room - 1], lines[room - 1:]
            lines.append("(the notes continue on the next page)")
        fig.text(0.03, top, "\n".join(lines), fontsize=NOTES_FONT, va="top")
        pdf.savefig(fig)
        plt.close(fig)
        per_page = int((0.92 - 0.015) / per_line)
        chunks = [rest[k:k + per_page] for k in range(0, len(rest), per_page)]
        for chunk in chunks:
            fig = plt.figure(figsize=A4_LANDSCAPE)
            fig.text(0.03, 0.965, title + ": notes (continued)", fontsize=13, weight="bold",
                     va="top")
            fig.text(0.03, 0.92, "\n".join(chunk), fontsize=NOTES_FONT, va="top")
            pdf.savefig(fig)
            plt.close(fig)
