"""The practitioners' atlas in the main report (issue 73, item 3): after page 1's practitioner
paragraph, its map as a table a reader can read both ways: one row per point of the atlas
(instance, metric, d, eps, target), one column per algorithm, each cell the algorithm's n* (the
oracle's first hitting time, medians over the seeds) as a multiple of the point's smallest,
coloured by that multiple on a log scale, the fewest samples marked; with its scope (instances,
d, eps, targets, knobs at 1) and the definition of n* under it. From reports/practitioners.csv
(`make reference-practitioners`)."""

from __future__ import annotations

import math
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.report.layout import A4_LANDSCAPE

#: The algorithms' column order: the first-order ones a practitioner would pick, then the Spiders.
ORDER = ("dp_sgd", "dp_gd", "noisy_sgd", "gaussian_spider", "adaptive_tree_spider",
         "tree_private_spider")
POINT = ["view", "metric", "problem", "d", "eps", "x"]


def multiples(practitioners: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(rows: one per point, a column per algorithm holding n* / the point's smallest n*; the
    algorithm columns in `ORDER`)."""
    t = practitioners[practitioners["value"].notna()].copy()
    t["value"] = t["value"].astype(float)
    wide = t.pivot_table(index=POINT, columns="algorithm", values="value", aggfunc="first")
    algs = [a for a in ORDER if a in wide.columns] + sorted(set(wide.columns) - set(ORDER))
    wide = wide[algs]
    ratio = wide.div(wide.min(axis=1), axis=0)
    return ratio.reset_index(), algs


def _label(r: pd.Series) -> str:
    return (f"{r['problem']}  {r['metric']}  d {r['d']:g}  eps {r['eps']:g}  "
            f"target {r['x']:g}")


def practitioners_page(pdf: object, practitioners: pd.DataFrame | None) -> bool:
    """The page (module docstring); False (no page) without the CSV's rows."""
    if practitioners is None or not len(practitioners):
        return False
    ratio, algs = multiples(practitioners)
    if ratio.empty:
        return False
    vals = ratio[algs].to_numpy(dtype=float)
    fig = plt.figure(figsize=A4_LANDSCAPE)
    fig.text(0.04, 0.96, "The practitioner's atlas: samples to each target, as a multiple of the "
             "fewest at that point", fontsize=13, weight="bold", va="top")
    ax = fig.add_axes((0.30, 0.12, 0.62, 0.78))
    shown = np.log10(np.where(np.isfinite(vals), vals, np.nan))
    ax.imshow(shown, aspect="auto", cmap="YlOrRd", vmin=0, vmax=max(1.0, float(np.nanmax(shown))))
    for i in range(vals.shape[0]):
        for j in range(vals.shape[1]):
            v = vals[i, j]
            text = "-" if not math.isfinite(v) else ("1 (fewest)" if v == 1 else f"{v:.3g}x")
            ax.text(j, i, text, ha="center", va="center", fontsize=5.5,
                    weight="bold" if v == 1 else "normal")
    ax.set_xticks(range(len(algs)), [a.replace("_", " ") for a in algs], fontsize=7)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(ratio)), [_label(r) for _, r in ratio.iterrows()], fontsize=5.5)
    scope = practitioners.drop_duplicates(POINT)
    fig.text(0.04, 0.075, textwrap.fill("Scope: instances " + ", ".join(sorted(scope["problem"].unique()))
             + f"; d {', '.join(f'{v:g}' for v in sorted(scope['d'].unique()))}; eps "
             + ", ".join(f"{v:g}" for v in sorted(scope["eps"].unique()))
             + f"; targets {scope['x'].min():g}-{scope['x'].max():g}; every knob at 1. n*: the "
             "oracle's first hitting time (the first n whose best iterate, judged by the exact "
             "population metric, reaches the target), the median over the seeds; an evaluation "
             "over the search's runs, not a release.", 190), fontsize=7, va="bottom")
    fig.text(0.04, 0.035, textwrap.fill(
        "A multiple says how many times the fewest samples at that point the algorithm needs "
        "(the intervals and the compute, passes and gradient evaluations, are in "
        "reports/practitioners.csv); '-': the algorithm was not run at that point.", 190),
        fontsize=7, va="bottom")
    pdf.savefig(fig)
    plt.close(fig)
    return True


__all__ = ["multiples", "practitioners_page"]
