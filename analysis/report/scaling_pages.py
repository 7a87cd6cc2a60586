"""The report's scaling pages: one figure per declared fit and mode, a panel per problem (and per
value of each group column that varies), the points, the fit over its window, the predicted slope
and, on first-order fits against privacy, the declared DP lower bound (`scaling_figure`,
`scaling_pages`); tuned mode plots the envelope's chosen knob setting (`chosen_rows`).
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.declarations import StoreData
from analysis.points import FOLDED, fit_points_table
from analysis.report import plots
from analysis.verdict_engine.predictions import Y_METRIC
from problems import character as problem_character


def _lower_bound_line(data: StoreData, fit: Any, problem: str) -> tuple[float, str] | None:
    """The declared DP lower bound (algorithms.claims.LOWER_BOUNDS) as y = c x on a fit against
    privacy = sqrt(d)/(n eps) of a first-order metric: c = factor G sqrt(log(1/delta)), G the
    problem's Lipschitz constant (the first cell's instance)."""
    from algorithms.claims import LOWER_BOUNDS
    from problems import get_problem

    if fit.view != "error" or fit.x != "privacy" or Y_METRIC.get(fit.y) not in ("emp_grad_norm",
                                                                                 "grad_norm"):
        return None
    cells = data.cells[(data.cells["problem"] == problem) & (data.cells["status"] == "ok")]
    if cells.empty or not LOWER_BOUNDS:
        return None
    r = cells.iloc[0]
    raw = r["problem_params"]
    params = raw if isinstance(raw, dict) else json.loads(raw or "{}")
    G = get_problem(problem, d=int(r["d"]), **params).constants.G
    lb = LOWER_BOUNDS[0]
    c = lb.explicit_factor * G * math.sqrt(math.log(1 / float(r["delta"])))
    return c, f"lower bound shape ({lb.where.split(' (')[0]}): {c:.3g} x"


def scaling_figure(data: StoreData, fit: Any, mode: str, claims: pd.DataFrame) -> plt.Figure:
    """One declared fit in one mode: a panel per problem."""
    pts = fit_points_table(data, fit, mode)
    fits = claims[(claims["fit"] == fit.name) & (claims["mode"] == mode)]
    # a panel per problem and per value of each group column that varies (e.g. eps when the
    # fit is against d): the fits are per group, so are the panels
    split = [c for c in ("eps", "n", "d", "delta") if c not in FOLDED[fit.x] and c in pts
             and c in fits and pts[c].nunique() > 1]
    panels = sorted({tuple(r) for r in pts[["problem", *split]].itertuples(index=False)}, key=str)
    ncols = min(3, max(1, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plots.new_figure(5.4 * ncols, 4.5 * nrows, ncols=ncols, nrows=nrows, squeeze=False)
    for ax, key in zip(axes.ravel(), panels, strict=False):
        key = key if isinstance(key, tuple) else (key,)
        prob, vals = key[0], dict(zip(split, key[1:], strict=True))
        sel_p = pts["problem"] == prob
        sel_f = fits["problem"] == prob
        for c, v in vals.items():
            sel_p &= np.isclose(pts[c].astype(float), float(v))
            sel_f &= np.isclose(fits[c].astype(float), float(v))
        sub, fsub = pts[sel_p], fits[sel_f]
        if mode == "tuned":  # plot the repetitions of the envelope's chosen knob setting
            sub = chosen_rows(sub, fsub)
        label = "".join(f", {c} = {v:g}" for c, v in vals.items())
        plots.scaling_plot(ax, sub, fsub, x=fit.x, y=fit.y,
                           window=fit.window, lower_bound=_lower_bound_line(data, fit, prob),
                           title=f"{prob} [{problem_character(prob)}]{label} ({mode} mode)")
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    where = (" where " + ", ".join(f"{k} = {v}" for k, v in fit.where.items())) if fit.where else ""
    chars = int(5.4 * ncols * 72 / (0.55 * 10)) - 4  # the suptitle's width in characters
    head = f"{data.spec.name}: {fit.name} ({fit.view.replace('_', ' ')} view{where})"
    legend = ("markers: median; band: interquartile range; lines: fit over the shaded window; "
              "dotted: predicted slope")
    fig.suptitle("\n".join(textwrap.wrap(head, chars) + textwrap.wrap(legend, chars)), fontsize=10)
    fig.tight_layout()
    return fig


def scaling_pages(pdf: PdfPages, data: StoreData, claims: pd.DataFrame,
                  figures: Path | None = None) -> None:
    for fit in data.spec.fits:
        modes = sorted(claims[claims["fit"] == fit.name]["mode"].unique(), key=lambda m: m != fit.mode)
        for mode in modes:
            fig = scaling_figure(data, fit, mode, claims)
            if figures is not None and mode == fit.mode:
                fig.savefig(figures / f"{fit.name}.png", dpi=110, bbox_inches="tight")
            pdf.savefig(fig)
            plt.close(fig)


def chosen_rows(sub: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    keep = []
    for alg, g in sub.groupby("algorithm"):
        fr = fits[fits["algorithm"] == alg]
        chosen = fr.iloc[0]["chosen"] if len(fr) else {}
        if len(fr) and not (isinstance(chosen, dict) and chosen):  # one knob setting: every row
            keep.append(g)
            continue
        for xval, gg in g.groupby("x"):
            label = chosen.get(f"{xval:g}")
            keep.append(gg[gg["combo"] == label] if label is not None else gg.iloc[0:0])
    return pd.concat(keep) if keep else sub.iloc[0:0]
