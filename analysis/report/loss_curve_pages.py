"""Seed 002's Figure 1 frame in the report (`loss_curve_pages`): per problem and design point, the
median excess risk against the step for each method at its chosen step size (a panel per eps,
95% CIs of the median), then a table of the final excess risks with the split check of the step
size choice (the data from `analysis.report.loss_curves`).
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.declarations import StoreData
from analysis.report import loss_curves as lc
from analysis.report import plots
from analysis.report.layout import table_figure, wrap_paragraphs

#: A store gets loss-curve pages when its methods are repeated at least this often and its
#: cells know the excess risk (seed 002's experiment: 30 runs per method).
LOSS_CURVE_MIN_REPS = 10


def loss_curve_pages(pdf: PdfPages, data: StoreData, figures: Path | None = None) -> None:
    """Seed 002's Figure 1 frame: per problem, the median excess risk against the step for
    each method at its chosen step size (a panel per eps, 95% CIs of the median), then a
    table of the final excess risks (`analysis.report.loss_curves`)."""
    df = data.cells
    if "excess_last" not in df or not df["excess_last"].notna().any() or df["rep"].max() + 1 < \
            LOSS_CURVE_MIN_REPS:
        return
    curves = lc.loss_curves(data)
    table = lc.final_loss_table(df)
    if curves.empty:
        return
    for point, pc in curves.groupby(["problem", "n", "d", "delta"]):
        prob = point[0]
        where = f"{prob}, n {point[1]}, d {point[2]}, delta {point[3]:g}"
        at_point = table[(table["problem"] == prob) & (table["n"] == point[1]) & (table["d"] == point[2])
                         & (table["delta"] == point[3])]
        eps_values = sorted(pc["eps"].unique(), key=lambda e: (math.isinf(e), e))
        fig, axes = plots.new_figure(3.9 * len(eps_values), 4.6, ncols=len(eps_values), squeeze=False)
        for ax, eps in zip(axes[0], eps_values, strict=True):
            sub = pc[pc["eps"] == eps]
            order = at_point[at_point["eps"] == eps]["method"].tolist()
            sub = sub.set_index("method").loc[[m for m in order if m in set(sub["method"])]].reset_index()
            plots.loss_curve_plot(ax, sub, title="non-private" if math.isinf(eps) else f"eps = {eps:g}")
        fig.suptitle(f"{data.spec.name}: median excess risk against the step ({where}; step size "
                     "chosen per method and eps by the median final excess; 95% CI of the median)",
                     fontsize=9)
        fig.tight_layout()
        if figures is not None:
            fig.savefig(figures / f"{data.spec.name}_loss_curves.png", dpi=110, bbox_inches="tight")
        pdf.savefig(fig)
        plt.close(fig)
        rows = at_point
        show = pd.DataFrame({
            "eps": ["inf" if math.isinf(e) else f"{e:g}" for e in rows["eps"]],
            "method": rows["method"], "alpha": [f"{a:g}" for a in rows["alpha"]],
            "runs": rows["runs"], "median final excess": [f"{v:.4g}" for v in rows["median"]],
            "95% CI": [f"[{lo:.4g}, {hi:.4g}]" for lo, hi in zip(rows["ci_low"], rows["ci_high"],
                                                                  strict=True)],
            "split check: alpha, median": [f"{a:g}, {m:.4g}" for a, m in zip(
                rows.get("alpha_split", np.nan * rows["median"]),
                rows.get("median_split", np.nan * rows["median"]), strict=True)]})
        fig = table_figure(f"{data.spec.name}: final excess risk of the output ({where})", show,
                           [0.04, 0.12, 0.92, 0.76], 8, 1.25)
        fig.text(0.04, 0.07, wrap_paragraphs(
            "alpha: chosen by the median final excess over all runs (the CI is conditional on that "
            "choice). Split check: alpha chosen on the first half of the seeds, median final excess "
            "of that choice on the other half (fresh seeds: no selection bias).", 150), fontsize=8,
            va="top")
        pdf.savefig(fig)
        plt.close(fig)
