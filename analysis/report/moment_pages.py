"""The report's private-moments page (seed 002, Algorithm 3, reconstructed): for a store with
Pagan on privately estimated scales, the estimate's sup-norm error against m and eps beside its
guarantee on the store's instance (`moment_pages`, from `analysis.moment_estimation`).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.declarations import StoreData
from analysis.report.layout import table_figure, wrap_paragraphs

#: The private-moments page's design: held-out sizes m and eps values (seed 002, Algorithm 3).
MOMENT_MS, MOMENT_EPS, MOMENT_REPS = (100, 300, 1000, 3000, 10000), (0.5, 1.0, 4.0), 30


def moment_pages(pdf: PdfPages, data: StoreData) -> None:
    """For a store with Pagan on privately estimated scales: the estimate's sup-norm error
    against m and eps beside its guarantee (`analysis.moment_estimation`), on the store's
    instance, with the moment cap the runs used."""
    from analysis.moment_estimation import moment_error_table
    from problems import get_problem

    cells = data.cells[(data.cells["algorithm"] == "pagan_private_scales") & (data.cells["status"] == "ok")]
    if cells.empty:
        return
    c = cells.iloc[0]
    prob = get_problem(c["problem"], **{**(c["problem_params"] or {}), "d": int(c["d"])})
    cap = float((c["params"] or {}).get("moment_cap", 1.0))
    table = moment_error_table(prob, list(MOMENT_MS), list(MOMENT_EPS), delta=float(c["delta"]),
                               cap=cap, reps=MOMENT_REPS)
    show = pd.DataFrame({
        "eps": [f"{e:g}" for e in table["eps"]], "m": table["m"],
        "noise std": [f"{v:.3g}" for v in table["noise_std"]],
        "median sup error": [f"{v:.3g}" for v in table["median_error"]],
        "95% quantile": [f"{v:.3g}" for v in table["q_error"]],
        "bound (95%)": [f"{v:.3g}" for v in table["bound"]],
        "bound held": [f"{v:.0%}" for v in table["held"]],
        "coordinates resolved": table["resolved"]})
    fig = table_figure(
        f"Private second moments (Algorithm 3, reconstructed): {c['problem']}, d = {int(c['d'])}, "
        f"cap {cap:g}, {MOMENT_REPS} draws each", show, [0.04, 0.16, 0.92, 0.72], 8, 1.2)
    fig.text(0.04, 0.08, wrap_paragraphs(
        "Sup-norm error of the estimate of E g_j^2 at x0 from m records (analysis/moment_"
        "estimation.py). The bound is capping bias + noise std * Phi^-1(1 - 0.05/(4d)) + "
        "Hoeffding's sampling term; 'resolved' counts coordinates whose second moment exceeds "
        "twice the median error, i.e. the scales the estimate can tell apart. The store's "
        "pagan_private_scales runs hold out m = moment_frac * n records.", 150), fontsize=8,
        va="top")
    pdf.savefig(fig)
    plt.close(fig)
