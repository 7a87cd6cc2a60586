"""The report's pages across the declared fits: the claims table of predicted against measured
exponents (`claims_page`), the exponent forest plots (`forest_page`), every claim every algorithm
declares with its measurements (`declared_claims_page`), path length and budget (`path_page`)
and, per store, the paired differences on the same data seeds (`paired_page`).
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.claims import declared_claims
from analysis.report import plots
from analysis.report.layout import table_figure, text_page
from analysis.report.tables import claims_display, direction_lines


def claims_page(pdf: PdfPages, claims: pd.DataFrame) -> None:
    disp = claims_display(claims)
    per_page = 18
    for start in range(0, max(1, len(disp)), per_page):
        chunk = disp.iloc[start:start + per_page]
        fig = table_figure("Declared fits: predicted vs measured exponents (95% CI)", chunk,
                           [0.03, 0.3, 0.94, 0.6], fontsize=7.5, row_scale=1.35)
        counts: dict[str, int] = {}
        for fl in claims.iloc[start:start + per_page]["flags"]:
            for part in filter(None, (fl or "").split("; ")):
                counts[part] = counts.get(part, 0) + 1
        dirs = direction_lines(list(zip(claims.iloc[start:start + per_page]["view"],
                                        claims.iloc[start:start + per_page]["x"], strict=True)))
        text = ("fit: the spec's [[fit]] name; where: its filter. views: samples = slope of log n* "
                "against log x (x = alpha, eps or d: sample complexity); error = slope of log alpha "
                "against log x (x = privacy = sqrt(d)/(n eps), n or eps).\nPredictions from each "
                "algorithm's claimed exponent (O~) and its own rules (log factors included); "
                "tree_spider claims none (ablation).")
        text += "\n" + "\n".join(textwrap.shorten(d, 200) for d in dirs)
        if counts:
            text += "\nflags (number of rows), see the methods page:\n" + "\n".join(
                textwrap.shorten(f"[{k}] {msg}", 190) for msg, k in list(counts.items())[:8])
        fig.text(0.04, 0.29, text, fontsize=7, va="top")
        pdf.savefig(fig)
        plt.close(fig)


def declared_claims_page(pdf: PdfPages, claims: pd.DataFrame) -> None:
    """Every claim every registered algorithm declares, with its measurements or "not
    measured" (claims as data: no claim goes missing because no spec fitted it)."""
    table = declared_claims(claims)
    lines = []
    for (alg, setting, metric, rate, source), g in table.groupby(
            ["algorithm", "setting", "metric", "claimed", "source"], sort=False):
        lines.append(f"{alg}: {metric} ({setting}) ~ {rate}")
        lines.append(textwrap.fill(source, 100, initial_indent="    ", subsequent_indent="    "))
        for m in g["measured"]:
            lines.append(textwrap.fill(m, 100, initial_indent="    - ", subsequent_indent="      "))
    text_page(pdf, "Every declared claim", "\n".join(lines), size=7)


def path_page(pdf: PdfPages, tables: list[pd.DataFrame]) -> None:
    """n* beside the first O1 batch, the rules' budget, the steps and the privacy share."""
    table = pd.concat([t for t in tables if len(t)], ignore_index=True) if any(
        len(t) for t in tables) else pd.DataFrame()
    if table.empty:
        return
    def g(v: float) -> str:
        return "inf" if v == math.inf else ("-" if not math.isfinite(v) else f"{v:.3g}")
    disp = pd.DataFrame({
        "problem": table["problem"], "algorithm": table["algorithm"], "d": table["d"],
        "eps": [g(v) for v in table["eps"]], "target": [g(v) for v in table["target_alpha"]],
        "runs (cens.)": [f"{r} ({c})" for r, c in zip(table["runs"], table["censored"], strict=True)],
        "median n*": [g(v) for v in table["n_star"]],
        "first O1 b": [g(v) for v in table["first_o1_batch"]],
        "n*/b": [g(v) for v in table["n_star_over_b"]],
        "rules' budget": [g(v) for v in table["theory_budget"]],
        "steps": [g(v) for v in table["steps"]], "T": [g(v) for v in table["T"]],
        "privacy share": [g(v) for v in table["privacy_share"]],
        "steps slope": [g(v) for v in table["steps_slope"]],
        "rules' slope": [g(v) for v in table["rules_budget_slope"]],
    })
    per_page = 30
    for start in range(0, len(disp), per_page):
        chunk = disp.iloc[start:start + per_page]
        fig = table_figure("Path length and budget: do the rules or the optimization set n*?",
                           chunk, [0.02, 0.12, 0.96, 0.78], fontsize=6.8, row_scale=1.25)
        fig.text(0.04, 0.09, "Medians over repetitions (theory mode; censored runs count as n* = inf). "
                 "n*/b: samples to the target over the first O1 batch (a few: the batch rules set n*; "
                 "hundreds: the path does).\nsteps slope: log(steps) against log(target) per "
                 "algorithm, about -2 on an instance that is hard for it. privacy share: 1 - rules' "
                 "budget at eps = inf / rules' budget at eps.\nrules' slope: log(rules' budget) "
                 "against log(target): the exponent the parameter rules imply over this window, "
                 "with the log factors the O~ hides (tree depth ~ log T).", fontsize=7, va="top")
        pdf.savefig(fig)
        plt.close(fig)


def forest_page(pdf: PdfPages, claims: pd.DataFrame, figures: Path | None = None) -> None:
    views = [v for v in ("sample_complexity", "error") if (claims["view"] == v).any()]
    for view in views:
        rows = claims[claims["view"] == view]
        fig, ax = plots.new_figure(11.0, 2.2 + 0.3 * len(rows))
        plots.forest_plot(ax, rows, view)
        fig.tight_layout()
        if figures is not None:
            fig.savefig(figures / f"forest_{view}.png", dpi=110, bbox_inches="tight")
        pdf.savefig(fig)
        plt.close(fig)


def paired_page(pdf: PdfPages, paired: list[dict]) -> None:
    if not paired:
        return
    k = len(paired)
    fig, axes = plots.new_figure(11.0, 4.2 * math.ceil(k / 2), ncols=min(2, k),
                                 nrows=math.ceil(k / 2), squeeze=False)
    for ax, p in zip(axes.ravel(), paired, strict=False):
        plots.paired_plot(ax, p, p["x"])
    for ax in axes.ravel()[k:]:
        ax.axis("off")
    fig.suptitle("Paired differences on the same data seeds (theory mode)", fontsize=10)
    fig.tight_layout()
    pdf.savefig(fig)
    plt.close(fig)
