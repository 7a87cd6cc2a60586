"""The report's atlas pages (issue 45): which algorithm wins where across the report's stores,
as text (every design point's reading and margin, the crossovers) and one map per metric and
instance (`analysis.atlas_map`). `atlas_page` is what `analysis.report.build.write_report`
calls; it draws nothing but a short note when no metric is measured by two algorithms on one
instance, so a report of a single algorithm keeps one page about it, not an empty map.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.atlas import READING_NOTE, atlas_table, points_table, text_lines
from analysis.atlas_map import atlas_figures, crossover_lines, crossovers
from analysis.declarations import StoreData
from analysis.report.layout import _text_page, _wrap
from analysis.verdict_engine.rates import N_BOOT

TITLE = "Atlas: which algorithm wins where"


def atlas_page(pdf: PdfPages, datas: list[StoreData], n_boot: int = N_BOOT,
               ranges: pd.DataFrame | None = None) -> pd.DataFrame:
    """Append the atlas of `datas` to `pdf`: a text page (readings, margins, crossovers) and its
    maps; `ranges`: the sensitivity study's hook (`analysis.atlas_map`, None: off). Returns the
    atlas's long table (`analysis.atlas.atlas_table`) for the caller's exports."""
    frames = [d.cells.assign(store=d.path) for d in datas if len(d.cells)]
    cells = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    table = atlas_table(cells, n_boot=n_boot) if len(cells) else pd.DataFrame()
    points = points_table(table) if len(table) else pd.DataFrame()
    if not len(points) or not (points["runner_up"] != "").any():
        _text_page(pdf, TITLE, _wrap("No metric of these stores is measured by two or more "
                                     "algorithms on one instance and design point, so there is "
                                     "no comparison to map. " + READING_NOTE))
        return table
    body = _wrap(READING_NOTE) + "\n\n" + "\n".join(
        text_lines(points) + crossover_lines(crossovers(table)))
    _text_page(pdf, TITLE, body, size=7)
    for _name, fig in atlas_figures(table, ranges):
        pdf.savefig(fig)
        plt.close(fig)
    return table
