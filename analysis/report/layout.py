"""Page primitives of the PDF report: A4 sizes, monospaced text pages that continue as long as
they need (`text_page`), paragraph refilling (`wrap_paragraphs`), a landscape page holding a table
(`table_figure`); and the layout check, text that runs off a page or out of its table cell
(`overflowing_text`) and text on text: tick labels, titles, captions, legends
(`overlapping_text`); both applied to every page by `LayoutCheckedPdf`.
"""

from __future__ import annotations

import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

A4 = (8.27, 11.69)
A4_LANDSCAPE = (11.69, 8.27)


def text_page(pdf: PdfPages, title: str, body: str, size: float = 8.5,
              page: tuple[float, float] = A4) -> None:
    """Monospaced text on as many pages (`page`: A4 portrait, or `A4_LANDSCAPE` in a landscape
    report) as it needs: lines wider than the page are wrapped, and a page holds what fits
    between the title and the bottom margin."""
    width = int(0.84 * page[0] * 72 / (0.61 * size))  # DejaVu Sans Mono: 0.6 em per character
    lines = []
    for line in body.split("\n"):
        indent = len(line) - len(line.lstrip())
        lines += textwrap.wrap(line, width, subsequent_indent=" " * (indent + 2),
                               drop_whitespace=False) or [""]
    per_page = int(0.86 * page[1] * 72 / (1.2 * size * 1.02))
    chunks = [lines[i:i + per_page] for i in range(0, max(1, len(lines)), per_page)]
    for k, chunk in enumerate(chunks):
        fig = plt.figure(figsize=page)
        more = f" (continued, {k + 1} of {len(chunks)})" if k else ""
        head = title + more
        # a long title (a continued page's) shrinks to the page's width: bold is ~0.62 em a char
        fig.text(0.08, 0.95, head, fontsize=min(15.0, 0.84 * page[0] * 72 / (0.62 * len(head))),
                 weight="bold", va="top")
        fig.text(0.08, 0.91, "\n".join(chunk), fontsize=size, va="top", family="monospace",
                 wrap=False)
        pdf.savefig(fig)
        plt.close(fig)


def wrap_paragraphs(text: str, width: int = 95) -> str:
    """Refill each paragraph (blank-line separated) to `width` columns."""
    return "\n\n".join(textwrap.fill(p, width) for p in text.split("\n\n") if p.strip())


def table_figure(title: str, chunk: pd.DataFrame, box: list[float], fontsize: float,
                 row_scale: float) -> plt.Figure:
    """A landscape page with a title and `chunk` as a table in `box` (figure coordinates)."""
    fig = plt.figure(figsize=A4_LANDSCAPE)
    fig.text(0.04, 0.95, title, fontsize=13, weight="bold", va="top")
    ax = fig.add_axes(box)
    ax.axis("off")
    if len(chunk):
        table = ax.table(cellText=chunk.to_numpy(), colLabels=list(chunk.columns),
                         loc="upper center", cellLoc="left", colLoc="left")
        table.auto_set_font_size(False)
        table.set_fontsize(fontsize)
        table.scale(1, row_scale)
        table.auto_set_column_width(list(range(len(chunk.columns))))
        _fit_width(fig, table, fontsize)
    return fig


def _fit_width(fig: plt.Figure, table: Any, fontsize: float, margin: float = 0.02) -> None:
    """Shrink an auto-width table's font until it spans at most the page less `margin` each
    side (the appendix's widest fit table ran off both edges: issue 73, item 4)."""
    for _ in range(8):
        fig.canvas.draw()
        bb = table.get_window_extent(fig.canvas.get_renderer())
        room = fig.bbox.width * (1 - 2 * margin)
        if bb.width <= room:
            return
        fontsize *= max(0.6, room / bb.width * 0.98)
        table.set_fontsize(fontsize)
        table.auto_set_column_width(list(range(len(table.get_celld()) and
                                               max(c for _, c in table.get_celld()) + 1)))


def overflowing_text(fig: plt.Figure) -> list[str]:
    """Text that runs off the page or out of its table cell: each visible, non-empty Text
    artist's drawn bounding box against the figure's, and each table cell's text against the
    cell (1 pt of slack); a cell whose text ends in "..." is cut short, not wrapped."""
    from matplotlib.table import Table
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    slack = fig.dpi / 72
    undrawn = _undrawn_tick_labels(fig)
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or id(t) in undrawn:
            continue
        bb = t.get_window_extent(renderer)
        if (bb.x0 < page.x0 - slack or bb.x1 > page.x1 + slack or bb.y0 < page.y0 - slack
                or bb.y1 > page.y1 + slack):
            out.append(f"off the page: {t.get_text()[:60]!r}")
    for table in fig.findobj(Table):
        for (r, c), cell in table.get_celld().items():
            text = cell.get_text()
            if not text.get_text().strip():
                continue
            if text.get_text().rstrip().endswith(("...", "\u2026")):  # shortened, not wrapped
                out.append(f"truncated in its cell ({r}, {c}): {text.get_text()[-60:]!r}")
            cb, tb = cell.get_window_extent(renderer), text.get_window_extent(renderer)
            if tb.width > cb.width + slack or tb.height > cb.height + slack:
                out.append(f"out of its cell ({r}, {c}): {text.get_text()[:60]!r}")
    return out


def overlapping_text(fig: plt.Figure) -> list[str]:
    """Drawn text boxes that overlap one another: tick labels of one axis colliding, a title on
    a caption, a legend on an axis label or on another legend, a legend off the page (issue 73,
    item 4). Each visible, non-empty Text outside tables and legends is a box, each legend one
    box; two boxes overlap when they share more than 1 pt each way."""
    from matplotlib.legend import Legend
    from matplotlib.table import Table
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    slack = fig.dpi / 72
    inside = {id(t) for tab in fig.findobj(Table) for t in tab.findobj(Text)}
    legends = [lg for lg in fig.findobj(Legend) if lg.get_visible()]
    inside |= {id(t) for lg in legends for t in lg.findobj(Text)}
    undrawn = _undrawn_tick_labels(fig)
    boxes = [(f"{t.get_text()[:40]!r}", t.get_window_extent(renderer)) for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and id(t) not in inside
             and id(t) not in undrawn]
    out = []
    page = fig.bbox
    for lg in legends:
        bb = lg.get_window_extent(renderer)
        label = "legend " + ", ".join(t.get_text()[:20] for t in lg.get_texts()[:2])
        if (bb.x0 < page.x0 - slack or bb.x1 > page.x1 + slack or bb.y0 < page.y0 - slack
                or bb.y1 > page.y1 + slack):
            out.append(f"off the page: {label}")
        boxes.append((label, bb))
    for i, (name_a, a) in enumerate(boxes):
        for name_b, b in boxes[i + 1:]:
            if name_a == name_b and abs(a.x0 - b.x0) < slack and abs(a.y0 - b.y0) < slack:
                continue  # one label drawn twice in place (a twin axis' ticks): reads as one
            if (min(a.x1, b.x1) - max(a.x0, b.x0) > slack
                    and min(a.y1, b.y1) - max(a.y0, b.y0) > slack):
                out.append(f"overlapping: {name_a} and {name_b}")
    return out


def _undrawn_tick_labels(fig: plt.Figure) -> set[int]:
    """Tick labels matplotlib keeps but does not draw: those of an axis turned off and those
    outside an axis' view limits (stale positions)."""
    undrawn: set[int] = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            every = {id(lb) for tick in axis.get_major_ticks() + axis.get_minor_ticks()
                     for lb in (tick.label1, tick.label2)}
            if not ax.axison:
                undrawn |= every
                continue
            drawn = {id(lb) for tick in axis._update_ticks() for lb in (tick.label1, tick.label2)}
            undrawn |= every - drawn
    return undrawn


def layout_problems(fig: plt.Figure) -> list[str]:
    """Every layout problem of a page: text off it or out of its cell (`overflowing_text`),
    text on text (`overlapping_text`)."""
    return overflowing_text(fig) + overlapping_text(fig)


class LayoutCheckedPdf:
    """A PdfPages that checks every page with `layout_problems` before saving it, appending
    "page N: ..." to `problems` (tests; `write_report(layout_problems=...)`)."""

    def __init__(self, pdf: PdfPages, problems: list[str]) -> None:
        self._pdf, self._problems = pdf, problems

    def savefig(self, fig: plt.Figure, **kw: Any) -> None:
        page = self._pdf.get_pagecount() + 1
        self._problems.extend(f"page {page}: {m}" for m in layout_problems(fig))
        self._pdf.savefig(fig, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pdf, name)


def panel_grid_pages(pdf: Any, rows: Any, panel: Any, title: str, figsize: tuple[float, float],
                     png_name: Any = None, figdir: Any = None, per_page: int = 4,
                     rect: tuple[float, float, float, float] = (0, 0.03, 1, 0.96),
                     h_pad: float = 6, png_size: tuple[float, float] = (5, 4)) -> int:
    """Pages of a 2 x 2 grid of `panel(ax, row)` over the rows of the DataFrame `rows`, titled
    `title`; with `figdir`, also each panel alone as figdir / png_name(row). Returns the rows
    drawn (the local-slope pages and the claim-link pages share it)."""
    from pathlib import Path

    for start in range(0, len(rows), per_page):
        chunk = rows.iloc[start:start + per_page]
        fig, axes = plt.subplots(2, 2, figsize=figsize)
        fig.suptitle(title, fontsize=9)
        for ax, (_, r) in zip(axes.flat, chunk.iterrows(), strict=False):
            panel(ax, r)
            if figdir is not None and png_name is not None:
                one, a1 = plt.subplots(figsize=png_size)
                panel(a1, r)
                one.tight_layout()
                one.savefig(Path(figdir) / png_name(r), dpi=110)
                plt.close(one)
        for ax in list(axes.flat)[len(chunk):]:
            ax.axis("off")
        fig.tight_layout(rect=rect, h_pad=h_pad)
        pdf.savefig(fig)
        plt.close(fig)
    return len(rows)
