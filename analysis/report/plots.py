"""Figures: scaling plots (both views), exponent forest plot, paired differences, trajectories.

One style for all (`STYLE`): each algorithm has its own marker and line style as well as its
colour, so every figure reads in grayscale. Functions draw on a given Axes / Figure and return
it; `save` writes PNG, SVG or PDF by the file's extension.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

STYLE = {
    "gaussian_spider": {"color": "#1b5e9e", "marker": "o", "linestyle": "-", "label": "Gaussian Spider"},
    "tree_spider": {"color": "#7f7f7f", "marker": "s", "linestyle": ":", "label": "fixed-batch tree Spider"},
    "adaptive_tree_spider": {"color": "#c0392b", "marker": "^", "linestyle": "--",
                             "label": "adaptive tree Spider"},
    "dp_gd": {"color": "#2ca02c", "marker": "D", "linestyle": "-.", "label": "DP-GD"},
    "dp_sgd": {"color": "#17becf", "marker": "P", "linestyle": (0, (3, 1, 1, 1)), "label": "DP-SGD"},
    "noisy_sgd": {"color": "#8c564b", "marker": "X", "linestyle": (0, (5, 1)), "label": "noisy SGD"},
    "tree_private_spider": {"color": "#d62728", "marker": "h", "linestyle": "--",
                            "label": "tree private Spider"},
    "private_spiderboost": {"color": "#ff7f0e", "marker": "o", "linestyle": "-",
                            "label": "private SpiderBoost"},
    "recursive_regularization": {"color": "#1f77b4", "marker": "s", "linestyle": "-",
                                 "label": "recursive regularization"},
    "recursive_regularization_linear": {"color": "#7f7f7f", "marker": "<", "linestyle": ":",
                                        "label": "recursive regularization (linear)"},
    "jl_dp_gd": {"color": "#9467bd", "marker": "v", "linestyle": (0, (5, 1)), "label": "JL + DP-GD"},
    "jl_private_spiderboost": {"color": "#e377c2", "marker": "*", "linestyle": "--",
                               "label": "JL + private SpiderBoost"},
    "jl_recursive_regularization": {"color": "#bcbd22", "marker": ">", "linestyle": "-.",
                                    "label": "JL + recursive regularization"},
    "pagan": {"color": "#c0392b", "marker": "^", "linestyle": "-", "label": "Pagan"},
    "pagan_private_scales": {"color": "#e377c2", "marker": "v", "linestyle": "--",
                             "label": "Pagan (private scales)"},
    "pagan_public_scales": {"color": "#ff7f0e", "marker": "<", "linestyle": "-.",
                            "label": "Pagan (public scales)"},
    "pasan": {"color": "#9467bd", "marker": "s", "linestyle": "-", "label": "Pasan"},
    "private_sgd_iso": {"color": "#1b5e9e", "marker": "o", "linestyle": "--",
                        "label": "private SGD (A = I)"},
    "private_adagrad_iso": {"color": "#2ca02c", "marker": "D", "linestyle": ":",
                            "label": "private AdaGrad (A = I)"},
    "pdp_sgd": {"color": "#7f7f7f", "marker": "P", "linestyle": "-.", "label": "PDP-SGD"},
}
FALLBACK = [{"color": "#2ca02c", "marker": "D", "linestyle": "-."},
            {"color": "#9467bd", "marker": "v", "linestyle": (0, (5, 1))}]
RC = {"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 7.5,
      "figure.dpi": 110, "savefig.dpi": 150, "axes.grid": True, "grid.alpha": 0.3,
      "grid.linestyle": ":"}
X_LABELS = {"privacy": r"$\sqrt{d}/(n\,\varepsilon)$", "alpha": r"target $\alpha$",
            "n": "n (samples)", "d": "d", "eps": r"$\varepsilon$", "rank": "rank of the features"}
Y_LABELS = {"n_star": r"samples to reach $\alpha$, $n^*$", "alpha_best": r"$\alpha_{SOSP}$ (best iterate)"}
SAVE_FORMATS = (".png", ".svg", ".pdf")


def style_for(algorithm: str, k: int = 0) -> dict[str, Any]:
    if algorithm in STYLE:
        return STYLE[algorithm]
    return {**FALLBACK[k % len(FALLBACK)], "label": algorithm}


def new_figure(width: float = 7.5, height: float = 4.8, **kw: Any) -> tuple[Figure, Any]:
    with plt.rc_context(RC):
        fig, axes = plt.subplots(figsize=(width, height), **kw)
    return fig, axes


def save(fig: Figure, path: str | Path) -> Path:
    p = Path(path)
    if p.suffix.lower() not in SAVE_FORMATS:
        raise ValueError(f"output {str(p)!r} is invalid: the extension must be one of "
                         f"{', '.join(SAVE_FORMATS)}")
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, bbox_inches="tight")
    plt.close(fig)
    return p


def plain_log_ticks(axis: Any) -> None:
    """Readable ticks on a log axis spanning less than ~2 decades (0.1, 0.2, 0.4, not 2x10^-1)."""
    lo, hi = axis.get_view_interval()
    if lo > 0 and hi / lo < 100:
        axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(ticker.NullFormatter())


def _fmt_ci(row: pd.Series | dict) -> str:
    if not math.isfinite(row["exponent"]):
        return "no fit"
    return f"{row['exponent']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"


def scaling_plot(ax: Axes, pts: pd.DataFrame, fits: pd.DataFrame, *, x: str, y: str,
                 window: tuple[float, float] | None = None, title: str = "",
                 lower_bound: tuple[float, str] | None = None) -> Axes:
    """Per algorithm: the median and interquartile band over repetitions at each design point,
    the fitted line over the window, and a dashed guide with the predicted slope through the
    data; the legend gives exponent and CI. `pts`: columns algorithm, x, y (NaN = censored);
    `fits`: rows of the claims table (algorithm, exponent, ci_low, ci_high, intercept,
    predicted, x_design, y_design, method)."""
    with plt.rc_context(RC):
        for k, (alg, sub) in enumerate(pts.groupby("algorithm", sort=True)):
            st = style_for(alg, k)
            g = sub.groupby("x")["y"]
            xs = np.array(sorted(sub["x"].unique()))
            med = g.median().reindex(xs).to_numpy()
            q1 = g.quantile(0.25).reindex(xs).to_numpy()
            q3 = g.quantile(0.75).reindex(xs).to_numpy()
            frow = fits[fits["algorithm"] == alg]
            label = st["label"]
            if len(frow):
                fr = frow.iloc[0]
                pred = fr.get("predicted")
                label += f": {_fmt_ci(fr)}"
                if pred is not None and np.isfinite(pred):
                    label += f" (claim {pred:.2f})"
            ax.fill_between(xs, q1, q3, color=st["color"], alpha=0.15, linewidth=0)
            ax.plot(xs, med, marker=st["marker"], linestyle="none", color=st["color"], label=label,
                    markersize=5)
            if len(frow) and math.isfinite(frow.iloc[0]["exponent"]):
                fr = frow.iloc[0]
                xd = np.array(fr["x_design"], float)
                lo, hi = (window if window else (xd.min(), xd.max()))
                lo, hi = max(lo, xd.min()), min(hi, xd.max())
                xx = np.geomspace(lo, hi, 20)
                if str(fr.get("method", "")).startswith("envelope"):
                    ax.plot(xd, fr["y_design"], linestyle="none", marker=st["marker"],
                            markerfacecolor="none", color=st["color"], markersize=8)
                ax.plot(xx, np.exp(fr["intercept"]) * xx ** fr["exponent"], color=st["color"],
                        linestyle=st["linestyle"], linewidth=1.4)
                pred = fr.get("predicted")
                if pred is not None and np.isfinite(pred):
                    yd = np.array(fr["y_design"], float)
                    gx, gy = math.exp(np.log(xd).mean()), math.exp(np.log(yd).mean())
                    ax.plot(xx, gy * (xx / gx) ** pred, color=st["color"], linestyle=(0, (2, 2)),
                            linewidth=0.9, alpha=0.8)
        if lower_bound is not None and len(pts):
            slope_const, text = lower_bound  # y = const * x, the worst-case floor's shape
            xs_all = pts["x"].to_numpy(float)
            xs_all = xs_all[np.isfinite(xs_all) & (xs_all > 0)]
            if len(xs_all):
                xx = np.geomspace(xs_all.min(), xs_all.max(), 20)
                ax.plot(xx, slope_const * xx, color="0.35", linestyle="-.", linewidth=1.0, label=text)
        if window:
            ax.axvspan(window[0], window[1], color="0.5", alpha=0.06, linewidth=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax.xaxis)
        plain_log_ticks(ax.yaxis)
        ax.set_xlabel(X_LABELS.get(x, x))
        ax.set_ylabel(Y_LABELS.get(y, y))
        if title:
            ax.set_title(title)
        ax.plot([], [], color="0.3", linestyle=(0, (2, 2)), linewidth=0.9,
                label="dotted: predicted slope through the data")
        ax.legend(loc="best", frameon=False)
    return ax


def forest_plot(ax: Axes, claims: pd.DataFrame, view: str, title: str = "") -> Axes:
    """Each (algorithm, problem, mode, group) exponent with its CI, against vertical lines at
    the predictions of the view."""
    rows = claims[claims["view"] == view].reset_index(drop=True)
    with plt.rc_context(RC):
        labels = []
        for i, r in rows.iterrows():
            st = style_for(r["algorithm"])
            yv = len(rows) - 1 - i
            if math.isfinite(r["exponent"]):
                ax.errorbar(r["exponent"], yv, xerr=[[r["exponent"] - r["ci_low"]],
                                                    [r["ci_high"] - r["exponent"]]],
                            fmt=st["marker"], color=st["color"], capsize=3, markersize=5,
                            markerfacecolor="white" if r["mode"] == "theory" else st["color"])
            extra = f" | x = {r['x']}" if r["x"] not in ("alpha", "privacy") else ""
            labels.append(f"{st.get('label', r['algorithm'])} | {r['problem']} | {r['mode']}{extra}")
        preds = sorted({float(p) for p in rows["predicted"].dropna()})
        for p in preds:
            ax.axvline(p, color="0.2", linestyle="--", linewidth=0.9)
            ax.text(p, len(rows) - 0.4, f" {p:.3g}", fontsize=7, va="bottom")
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(labels[::-1], fontsize=7)
        ax.set_ylim(-0.7, len(rows) - 0.1 + 0.6)
        ax.set_xlabel("measured exponent (95% CI); dashed: claimed; open marker: theory mode")
        ax.set_title(title or f"Exponents, {view.replace('_', ' ')} view")
    return ax


def paired_plot(ax: Axes, paired: dict[str, Any], x: str) -> Axes:
    """Mean of log y_A - log y_B per design point with its CI; the fitted slope of the
    difference and the predicted one (difference of the claimed exponents)."""
    res = paired["result"]
    xs = np.array(res.x_design)
    with plt.rc_context(RC):
        m = np.array(res.mean)
        ax.errorbar(xs, m, yerr=[m - np.array(res.ci_low), np.array(res.ci_high) - m], fmt="o",
                    color="0.15", capsize=3, markersize=4,
                    label=f"mean log({paired['a']}/{paired['b']}), 95% CI")
        if math.isfinite(res.slope) and len(xs) >= 2:
            lx = np.log(xs)
            c = m.mean() - res.slope * lx.mean()
            ax.plot(xs, c + res.slope * lx, color="0.15",
                    label=f"slope {res.slope:.2f} [{res.slope_ci_low:.2f}, {res.slope_ci_high:.2f}]")
            pred = paired["predicted_slope"]
            ax.plot(xs, m.mean() + pred * (lx - lx.mean()), color="0.4", linestyle="--",
                    label=f"predicted slope {pred:.2f}")
            rules = paired.get("rules_paired_slope", math.nan)
            if isinstance(rules, float) and math.isfinite(rules):
                ax.plot(xs, m.mean() + rules * (lx - lx.mean()), color="C2", linestyle=":",
                        label=f"the rules' own paired slope {rules:.2f}")
            if math.isfinite(res.crossover):
                where = ("" if res.crossover_where == "inside"
                         else f", extrapolated ({res.crossover_where} the window)")
                ax.plot([], [], " ", label=f"crossover at {res.crossover:.3g} "
                        f"[{res.crossover_ci_low:.3g}, {res.crossover_ci_high:.3g}]{where}")
        ax.axhline(0, color="0.6", linewidth=0.8)
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis)
        ax.set_xlabel(X_LABELS.get(x, x))
        ax.set_ylabel("paired difference of log y")
        g = paired["group"]
        ax.set_title(f"{g.get('problem', '')}: {paired['a']} vs {paired['b']}", fontsize=9)
        ax.legend(frameon=False)
    return ax


def trajectory_plot(axes: Sequence[Axes], profile: dict[str, Any], title: str = "",
                    target: float | None = None) -> Sequence[Axes]:
    """Left: alpha_SOSP, its gradient and curvature parts at stored iterates, and the released
    estimate's norm, against samples used. Right: the batch b_t and the drift. O1 calls (restarts)
    are marked by ticks on both."""
    a1, a2 = axes
    with plt.rc_context(RC):
        first = min([v for v in profile["samples"] if v > 0] or [1])
        # x0 is drawn at the first batch (it was made before any sample was used).
        s_it = np.maximum(np.array(profile["iterate_samples"], float), first)
        a1.plot(s_it, profile["alpha"], color="black", label=r"$\alpha_{SOSP}$")
        a1.plot(s_it, profile["grad_norm"], color="#1b5e9e", linestyle="--", label=r"$\|\nabla F\|$")
        curv = np.array(profile["curvature_part"], float)
        a1.plot(s_it, np.where(curv > 0, curv, np.nan), color="#c0392b", linestyle=":",
                label=r"$\max(0,-\lambda_{min})^2/\rho$")
        s = np.maximum(np.array(profile["samples"], float), 1)
        a1.plot(s, profile["est_norm"], color="0.55", linewidth=0.6, alpha=0.8,
                label=r"$\|\tilde\nabla_t\|$ (released)")
        oracle = np.array(profile["oracle"])
        batch = np.array(profile["batch"], float)
        a2.plot(s[oracle == 2], batch[oracle == 2], linestyle="none", marker=".", markersize=2.5,
                color="black", label="O2 batch $b_t$")
        a2.plot(s[oracle == 1], batch[oracle == 1], linestyle="none", marker="x", markersize=4,
                color="#1b5e9e", label="O1 batch")
        a2b = a2.twinx()
        a2b.plot(s, np.maximum(np.array(profile["drift"], float), 1e-12), color="#c0392b",
                 linestyle="--", linewidth=0.9, label="drift")
        a2b.set_yscale("log")
        a2b.set_ylabel("drift")
        o1 = np.maximum(np.array(profile.get("o1_samples", []), float), 1)
        for ax in (a1, a2):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("samples used")
            ax.set_xlim(left=first * 0.8)
            if len(o1):
                ax.plot(o1, np.full(len(o1), 0.02), transform=ax.get_xaxis_transform(),
                        marker="|", linestyle="none", color="#1b5e9e", markersize=7,
                        label="O1 call" if ax is a2 else None)
        if target is not None and math.isfinite(target):
            a1.axhline(target, color="0.3", linewidth=0.8, linestyle="-.", label="target alpha")
        a1.set_ylabel("value")
        a2.set_ylabel("batch size")
        a1.legend(frameon=False, fontsize=6.5)
        h1, l1 = a2.get_legend_handles_labels()
        h2, l2 = a2b.get_legend_handles_labels()
        a2.legend(h1 + h2, l1 + l2, frameon=False, fontsize=6.5, loc="upper left")
        if title:
            a1.set_title(title, fontsize=8.5, loc="left")
    return axes


def loss_curve_plot(ax: Axes, curves: pd.DataFrame, title: str = "") -> Axes:
    """Median excess risk against the step, one line per method with its 95% CI band (the
    frame of `analysis.loss_curves.loss_curves` for one problem and eps)."""
    with plt.rc_context(RC):
        seen: dict[str, int] = {}
        for method, g in curves.groupby("method", sort=False):
            algorithm = method.split(" (")[0]
            k = seen.get(algorithm, 0)
            seen[algorithm] = k + 1
            st = dict(style_for(algorithm, k))
            if k:  # a second method of one algorithm (PDP-SGD at another k): its own colour
                st.update(FALLBACK[(k - 1) % len(FALLBACK)])
            g = g.sort_values("step")
            label = st.get("label", algorithm) + method[len(algorithm):]
            step = np.maximum(g["step"].to_numpy(float), 1)
            ax.plot(step, g["median"], color=st["color"], linestyle=st["linestyle"], label=label)
            ax.fill_between(step, g["ci_low"], g["ci_high"], color=st["color"], alpha=0.15,
                            linewidth=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel(r"excess risk $F(\bar x_t) - \min F$")
        ax.legend(frameon=False, fontsize=6.5)
        if title:
            ax.set_title(title, fontsize=9, loc="left")
    return ax
