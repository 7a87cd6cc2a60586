"""The report's atlas pages (issue 45): which algorithm wins where across the report's stores,
as text (every design point's reading and margin, the crossovers) and one map per metric and
instance (`analysis.comparisons.atlas_map`). `atlas_page` is what `analysis.report.build.write_report`
calls; it draws nothing but a short note when no metric is measured by two algorithms on one
instance, so a report of a single algorithm keeps one page about it, not an empty map.
"""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.comparisons.atlas import READING_NOTE, atlas_table, points_table, text_lines
from analysis.comparisons.atlas_map import atlas_page_figures, crossover_lines, crossovers
from analysis.declarations import StoreData
from analysis.report.layout import text_page, wrap_paragraphs
from analysis.verdict_engine.rates import N_BOOT

TITLE = "Atlas: which algorithm wins where"


def atlas_of(datas: list[StoreData], n_boot: int = N_BOOT) -> pd.DataFrame:
    """The atlas's long table of `datas` (`analysis.comparisons.atlas.atlas_table`; empty without cells)."""
    frames = [d.cells.assign(store=d.path) for d in datas if len(d.cells)]
    cells = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return atlas_table(cells, n_boot=n_boot) if len(cells) else pd.DataFrame()


def _compared(table: pd.DataFrame) -> pd.DataFrame | None:
    points = points_table(table) if len(table) else pd.DataFrame()
    return points if len(points) and (points["runner_up"] != "").any() else None


def atlas_maps(pdf: PdfPages, table: pd.DataFrame, ranges: pd.DataFrame | None = None,
               caption: str = "") -> None:
    """The atlas's maps, one per metric and instance (`analysis.comparisons.atlas_map`; `ranges`: the
    sensitivity study's hook, None: off); one short page instead when nothing is compared.
    `caption`: a line under each page's title (the main report's: calibration and n*)."""
    if _compared(table) is None:
        text_page(pdf, TITLE, wrap_paragraphs("No metric of these stores is measured by two or more "
                                              "algorithms on one instance and design point, so there is "
                                              "no comparison to map. " + READING_NOTE))
        return
    for fig in atlas_page_figures(table, ranges):  # one-row maps four to a page
        if caption:  # between the title's two lines and the maps' own titles
            fig.text(0.5, 0.937, textwrap.fill(caption, 200), fontsize=6.5, ha="center",
                     va="top", style="italic")
        pdf.savefig(fig)
        plt.close(fig)


def atlas_text(pdf: PdfPages, table: pd.DataFrame) -> None:
    """The atlas as text: every design point's reading and margin, and the crossovers."""
    points = _compared(table)
    if points is None:
        return
    body = wrap_paragraphs(READING_NOTE) + "\n\n" + "\n".join(
        text_lines(points) + crossover_lines(crossovers(table)))
    text_page(pdf, "Atlas: readings and margins", body, size=7)


def atlas_page(pdf: PdfPages, datas: list[StoreData], n_boot: int = N_BOOT,
               ranges: pd.DataFrame | None = None) -> pd.DataFrame:
    """Append the atlas of `datas` to `pdf`: its text page (readings, margins, crossovers) and
    its maps. Returns the atlas's long table (`analysis.comparisons.atlas.atlas_table`)."""
    table = atlas_of(datas, n_boot)
    atlas_text(pdf, table)
    atlas_maps(pdf, table, ranges)
    return table
