"""The report's pages about single cells: the trajectories of a median cell per algorithm and
problem (`median_cells`, `trajectory_pages`) and the cells that failed (`failures_page`).
"""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.declarations import StoreData
from analysis.points import fit_points_table
from analysis.report import plots
from analysis.report.layout import text_page


def median_cells(data: StoreData) -> pd.DataFrame:
    """Per (problem, algorithm): the cell with the median y at the middle design point of the
    first declared fit (theory mode)."""
    if not data.spec.fits:
        return pd.DataFrame()
    fit = data.spec.fits[0]
    pts = fit_points_table(data, fit, "theory")
    pts = pts[pts["y"].notna()]
    rows = []
    for (_prob, _alg), g in pts.groupby(["problem", "algorithm"]):
        xs = np.sort(g["x"].unique())
        mid = g[g["x"] == xs[len(xs) // 2]].sort_values("y")
        rows.append(mid.iloc[(len(mid) - 1) // 2])
    return pd.DataFrame(rows)


def trajectory_pages(pdf: PdfPages, data: StoreData) -> None:
    cells = median_cells(data)
    if cells.empty or ("excess_last" in cells and cells["excess_last"].notna().all()):
        return  # excess-risk stores (seed 002): alpha_SOSP against samples says nothing there
    profiles = data.load_curves("trajectory", cells["key"])
    for prob, group in cells.groupby("problem"):
        k = len(group)
        fig, axes = plots.new_figure(11.0, 3.3 * k, nrows=k, ncols=2, squeeze=False)
        for row, (_, c) in zip(axes, group.iterrows(), strict=True):
            prof = profiles.get(c["key"])
            if prof:
                title = (f"{c['algorithm']}: target {c['target_alpha']:g}, eps {c['eps']:g}, "
                         f"d {c['d']}, rep {c['rep']}" if pd.notna(c["target_alpha"]) else
                         f"{c['algorithm']}: n {c['n']}, eps {c['eps']:g}, d {c['d']}, rep {c['rep']}")
                plots.trajectory_plot(row, prof, title=title,
                                      target=c["target_alpha"] if pd.notna(c["target_alpha"]) else None)
        fig.suptitle(f"Trajectories of a median cell per algorithm: {prob}", fontsize=10)
        fig.tight_layout()
        pdf.savefig(fig)
        plt.close(fig)


def failures_page(pdf: PdfPages, data: StoreData) -> None:
    df = data.cells
    bad = df[df["status"].isin(["error", "timeout", "diverged"])]
    if bad.empty:
        return
    lines = []
    for _, r in bad.head(60).iterrows():
        msg = (r["error_message"] or r["stop_reason"] or "").strip().splitlines()
        lines.append(f"[{r['status']}] {r['algorithm']}/{r['problem']} d={r['d']} n={r['n']} "
                     f"eps={r['eps']:g} rep={r['rep']}: {r['error_type'] or ''} "
                     f"{textwrap.shorten(msg[0] if msg else '', 80)}")
    if len(bad) > 60:
        lines.append(f"... and {len(bad) - 60} more (dprates status STORE)")
    text_page(pdf, f"Failures ({len(bad)} cells)", "\n".join(lines), size=7)
