"""The PDF report of a store (matplotlib PdfPages).

Pages: title (spec, date, provenance, counts by status); claims table; one scaling page per
declared fit and mode; exponent forest plots; paired differences; trajectories of a median cell
per algorithm and problem; methods; failures (only when a cell failed).
"""

from __future__ import annotations

import datetime as _dt
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

from analysis import rates
from analysis.claims import claims_table, declared_claims, paired_table
from analysis.declarations import StoreData
from analysis.path_length import path_table
from analysis.points import FOLDED, fit_points_table
from analysis.predictions import Y_METRIC
from analysis.privacy_checks.ledger import UNVERIFIED_MARK, spent_table, spent_text, unverified_algorithms
from analysis.report import loss_curves as lc
from analysis.report import plots
from analysis.report.tables import (
    VERDICT_COLOURS,
    claims_display,
    claims_summary,
    direction_lines,
    summary_notes,
    verdict_counts,
)
from problems import character as problem_character

A4 = (8.27, 11.69)
A4_LANDSCAPE = (11.69, 8.27)

METHODS = """\
What is measured. alpha_SOSP(x) = max(|grad F(x)|, max(0, -lambda_min(hess F(x)))^2 / rho), the
smallest alpha for which x is an alpha-second-order stationary point (seed 000, Definition 1.2),
computed from the problem's exact population gradient and Hessian. A run's running minimum over its
stored iterates is its "best" output (the theorems' "at least one output").

Two views (README, the protocol, items 2-3). Sample complexity (primary): each cell configures an
algorithm for a target alpha and gives it a generous prefix-consistent stream; n* is the number of
samples consumed when the running minimum first falls to <= the target. The claim alpha ~
(sqrt(d)/(n eps))^p predicts log n* against log alpha with slope -1/p (-2 for p = 1/2, -7/3 for
p = 3/7), slope -1 in eps and +1/2 in d. Error at a fixed budget: alpha achieved with n samples
against x = sqrt(d)/(n eps), slope p. Predictions come from each algorithm's claimed exponent.

Fits and CIs. Error view: OLS slopes in log-log space over every repetition in the fit window,
which the spec declares before the run; 95% CIs from a stratified bootstrap that resamples
repetitions within each design point (2000 resamples), widened by sqrt(m/(m-1)) t_{N-2}/z for m
repetitions and N points; the OLS standard error alongside; in x = sqrt(d)/(n eps) also the
power law plus floor a x^p + b n^{-1/3} (eps = inf runs pin b). Sample-complexity view: OLS
slopes through the Harrell-Davis medians of n* per design point, the bootstrap resampling
repetitions before taking medians. Calibration tests check 90-98% coverage on simulated data.

Data modes. "records": every record is drawn and its per-sample gradient computed. "counts" (exact
batch statistics): on problems whose records take finitely many values, the stream hands out the
value counts of the next k records, distributed exactly as for k i.i.d. records and prefix-
consistent (a tree of binomial / hypergeometric draws); subsamples come from exact reads of the
counts (binomial thinning, hypergeometric splits), and every clipped or projected batch mean is
computed per atom on atoms problems, or on two-point problems only where a guard on public values
(the whole support at the public iterate) proves the clip the identity. It is the same algorithm on
the same distribution; tests hold it equal to record mode on records made from the same counts. The
privacy verification runs in record mode. The title page names each problem's mode.

Theory vs tuned mode. Theory mode runs every hidden constant (knob) at 1: it checks the parameter
rules as written. Tuned mode takes, at each design point, the best median over the spec's knob grid
(the envelope; non-private tuning), with the bootstrap resampling repetitions before taking the
minimum so that the CI includes the selection.

Censoring. A run that never reached its threshold (its budget or its own horizon T ran out) is
censored and counts as n* = inf: a design point is excluded (and counted) only when its median is
censored. Flags: "ceiling" (a run never left the start saddle, or the window's top is
within 10x of the start saddle's alpha_SOSP), "floor" (a design point within 3x of its eps = inf
median). A flagged window is reported as declared, never moved.

Verdicts. consistent: the prediction lies inside the CI. faster / slower than claimed: the CI lies
entirely on the favourable / unfavourable side, favourable meaning fewer samples or smaller error
in the regime the claim is about (large n, small alpha). "rules" is the slope the algorithm's own
implemented rules predict over the same design points (log of the rules' sample budget from
theory_params, knobs at 1, against log x), log factors included (the tree depth log T enters the
tree's noise); when the O~ exponent is outside the CI but the rules' slope is inside, the verdict
is "consistent up to the rules' log factors". inconclusive: no prediction, or a CI wider
than 0.15 (error view) or 0.66 (sample-complexity view), about twice the gap between the two
headline predictions. A benign problem is expected to give "faster than claimed": the claims are
worst-case bounds that bind only where the path to an alpha-SOSP is long (the hard instance).

Which way each x counts. "Faster" always means the favourable side in the regime the claim is
about, and that regime differs by x: against x = sqrt(d)/(n eps) it is x -> 0 (large n), so a
larger error exponent is faster; against eps it is eps -> 0 (strong privacy), so an error
exponent above the claim's (less negative) is faster: the error grows more slowly as eps
shrinks. A weak eps dependence therefore reads "slower" against privacy and "faster" against eps:
one fact, two directions. In samples, n* against alpha or eps: a slope above the claim's (less
negative) is faster. Against n, d or rank: an exponent below the claim's is faster. Every fit
table carries this line for its x.

The regime gate. A fit whose window fails the gate (a "ceiling" flag: the window reaches within
10x of the start's metric, or runs never halved it; a "floor" flag: a design point within 3x of
the eps = inf median) gets the verdict "not in regime" with that reason, never consistent /
slower / faster, and is counted so; censoring is counted, not gated. A target at or above the
start's metric is refused when the spec is checked.
"""


def _text_page(pdf: PdfPages, title: str, body: str, size: float = 8.5) -> None:
    """Monospaced text on as many A4 pages as it needs: lines wider than the page are wrapped,
    and a page holds what fits between the title and the bottom margin."""
    width = int(0.84 * A4[0] * 72 / (0.61 * size))  # DejaVu Sans Mono: 0.6 em per character
    lines = []
    for line in body.split("\n"):
        indent = len(line) - len(line.lstrip())
        lines += textwrap.wrap(line, width, subsequent_indent=" " * (indent + 2),
                               drop_whitespace=False) or [""]
    per_page = int(0.86 * A4[1] * 72 / (1.2 * size * 1.02))
    chunks = [lines[i:i + per_page] for i in range(0, max(1, len(lines)), per_page)]
    for k, chunk in enumerate(chunks):
        fig = plt.figure(figsize=A4)
        more = f" (continued, {k + 1} of {len(chunks)})" if k else ""
        fig.text(0.08, 0.95, title + more, fontsize=15, weight="bold", va="top")
        fig.text(0.08, 0.91, "\n".join(chunk), fontsize=size, va="top", family="monospace",
                 wrap=False)
        pdf.savefig(fig)
        plt.close(fig)


def _wrap(text: str, width: int = 95) -> str:
    """Refill each paragraph (blank-line separated) to `width` columns."""
    return "\n\n".join(textwrap.fill(p, width) for p in text.split("\n\n") if p.strip())


def _data_modes(df: pd.DataFrame) -> dict[str, str]:
    """Per problem, the data mode(s) its cells ran in (see METHODS, "Data modes")."""
    if "data" not in df or not len(df):
        return {}
    return {str(k): "/".join(sorted(map(str, v.dropna().unique())))
            for k, v in df.groupby("problem")["data"]}


def _delta_lines(df: pd.DataFrame, spec: Any) -> list[str]:
    """The delta convention and how it compares with the records a run consumed."""
    ok = df[(df["status"] == "ok") & np.isfinite(df["eps"].astype(float))]
    if not len(ok):
        return []
    used = ok["samples_used"].astype(float)
    n_delta = (used * ok["delta"].astype(float)).max()
    deltas = ", ".join(f"{v:.3g}" for v in sorted(ok["delta"].unique()))
    rules = [e for e in spec.grid.get("delta", []) if isinstance(e, str)]
    how = (f"rule {', '.join(rules)}: 1 / budget^p" if rules else "fixed, not a function of n")
    lines = [f"delta       {deltas} per run ({how}); runs consumed up to "
             f"{used.max():.3g} records, so n delta <= {n_delta:.3g}"]
    if n_delta > 1:
        lines.append("            n delta > 1: as a deployed guarantee this would be weak (the "
                     "usual reading wants delta << 1/n);")
        lines.append("            here delta is a parameter of the rules whose rates we measure "
                     "(log(1/delta) enters the noise).")
    return lines


def title_page(pdf: PdfPages, data: StoreData) -> None:
    df = data.cells
    counts = df["status"].value_counts().sort_index()
    prov = df.iloc[0] if len(df) else {}
    spec = data.spec
    lines = [
        f"spec        {spec.name}  ({spec.source})",
        f"            {spec.description}",
        f"store       {data.path}",
        f"report date {_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"cells       {len(df)}: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
        "",
        "provenance (first cell)",
        f"  dprates {prov.get('dprates_version', '?')}, git {prov.get('git_commit', '') or 'n/a'}",
        f"  Python {prov.get('python', '?')}, numpy {prov.get('numpy', '?')}, host {prov.get('host', '?')}",
        f"  first cell started {df['started'].min() if len(df) else '?'}",
        f"  last cell finished {df['finished'].max() if len(df) else '?'}",
        f"  total CPU {df['cpu'].sum():.1f} s, wall of cells {df['wall'].sum():.1f} s",
        "",
        "grid",
        *[f"  {k:12s} {v}" for k, v in spec.grid.items()],
        f"  repetitions  {spec.repetitions} (paired data seeds), base seed {spec.seed}",
        "",
        "problems:   " + ", ".join(p["name"] + (f" {p['params']}" if p["params"] else "")
                                   for p in spec.problems),
        "data mode:  " + ", ".join(f"{name} {mode}" for name, mode in _data_modes(df).items()),
        "algorithms: " + ", ".join(a["name"] + (f" grid {a['grid']}" if a["grid"] else "")
                                   for a in spec.algorithms),
        "",
        *_delta_lines(df, spec),
        "",
        "declared fits (fixed before the run)",
        *[f"  {f.name}: {f.view}, x = {f.x}, y = {f.y}, window {f.window}, mode {f.mode}"
          + (f", where {f.where}" if f.where else "") for f in spec.fits],
    ]
    fig = plt.figure(figsize=A4)
    fig.text(0.08, 0.95, "dprates report", fontsize=20, weight="bold", va="top")
    fig.text(0.08, 0.91, f"{spec.name}: measured convergence exponents of private optimizers",
             fontsize=11, va="top")
    width = int(0.84 * A4[0] * 72 / (0.61 * 8))
    wrapped = []
    for line in lines:
        wrapped += textwrap.wrap(line, width, subsequent_indent=" " * 14, break_long_words=True,
                                 break_on_hyphens=False) or [""]
    fig.text(0.08, 0.86, "\n".join(wrapped[:92]), fontsize=8, va="top", family="monospace")
    pdf.savefig(fig)
    plt.close(fig)


def _table_figure(title: str, chunk: pd.DataFrame, box: list[float], fontsize: float,
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
    return fig



def claims_page(pdf: PdfPages, claims: pd.DataFrame) -> None:
    disp = claims_display(claims)
    per_page = 18
    for start in range(0, max(1, len(disp)), per_page):
        chunk = disp.iloc[start:start + per_page]
        fig = _table_figure("Declared fits: predicted vs measured exponents (95% CI)", chunk,
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
    _text_page(pdf, "Every declared claim", "\n".join(lines), size=7)


def spec_design_notes(text: str) -> str:
    """The comment block a spec opens with (its design: instance, window, why), unwrapped."""
    lines = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        lines.append(stripped.lstrip("#").strip())
    return "\n".join(lines)


def section_page(pdf: PdfPages, data: StoreData) -> None:
    """A divider before a store's pages in a multi-store report: its description and the design
    notes its spec opens with, so each section's plots come with the reasons for its design."""
    spec = data.spec
    notes = spec_design_notes(getattr(spec, "text", ""))
    body = f"{spec.description}\n\n" + (notes or "(the spec has no design notes)")
    _text_page(pdf, f"Section: {spec.name}", _wrap(body), size=9)


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
            sub = _chosen_rows(sub, fsub)
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


def _chosen_rows(sub: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
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
        fig = _table_figure("Path length and budget: do the rules or the optimization set n*?",
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
        fig = _table_figure(f"{data.spec.name}: final excess risk of the output ({where})", show,
                            [0.04, 0.12, 0.92, 0.76], 8, 1.25)
        fig.text(0.04, 0.07, _wrap(
            "alpha: chosen by the median final excess over all runs (the CI is conditional on that "
            "choice). Split check: alpha chosen on the first half of the seeds, median final excess "
            "of that choice on the other half (fresh seeds: no selection bias).", 150), fontsize=8,
            va="top")
        pdf.savefig(fig)
        plt.close(fig)


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
    fig = _table_figure(
        f"Private second moments (Algorithm 3, reconstructed): {c['problem']}, d = {int(c['d'])}, "
        f"cap {cap:g}, {MOMENT_REPS} draws each", show, [0.04, 0.16, 0.92, 0.72], 8, 1.2)
    fig.text(0.04, 0.08, _wrap(
        "Sup-norm error of the estimate of E g_j^2 at x0 from m records (analysis/moment_"
        "estimation.py). The bound is capping bias + noise std * Phi^-1(1 - 0.05/(4d)) + "
        "Hoeffding's sampling term; 'resolved' counts coordinates whose second moment exceeds "
        "twice the median error, i.e. the scales the estimate can tell apart. The store's "
        "pagan_private_scales runs hold out m = moment_frac * n records.", 150), fontsize=8,
        va="top")
    pdf.savefig(fig)
    plt.close(fig)


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
    _text_page(pdf, f"Failures ({len(bad)} cells)", "\n".join(lines), size=7)


CSV_COLUMNS = ["algorithm", "problem", "character", "view", "mode", "x", "predicted", "exponent",
               "ci_low", "ci_high", "verdict", "regime", "declared", "rules_predicted",
               "rules_verdict", "fit", "where", "spec", "window", "n_design", "n_points",
               "n_censored", "dropped_design", "se_ols", "r2", "method", "two_term_p",
               "two_term_ci_low", "two_term_ci_high", "two_term_verdict", "median_steps",
               "median_first_o1", "n_stuck", "alpha_x0", "alpha_top", "flags", "d", "eps", "n"]


SUMMARY_QUESTION = (
    "The question. For an alpha-second-order stationary point of a population loss from n samples "
    "under (eps, delta)-DP, Ganesh et al.'s Gaussian-mechanism Spider claims alpha ~ n^-1/3 + "
    "(sqrt(d)/(n eps))^(3/7) and the adaptive-batch tree Spider (seed 000) claims exponent 1/2: in "
    "samples to reach alpha, n* ~ alpha^(-7/3) against alpha^(-2). Both are worst-case bounds, "
    "tested here on hard instances where the path to an alpha-SOSP takes ~alpha^-2 steps.")


def _key_fit(data: StoreData, claims: pd.DataFrame) -> Any:
    """The first declared sample-complexity fit over alpha on a hard problem (or None)."""
    for fit in data.spec.fits:
        rows = claims[(claims["fit"] == fit.name) & (claims["spec"] == data.spec.name)]
        if fit.view == "sample_complexity" and fit.x == "alpha" and (rows["character"] == "hard").any():
            return fit
    return None


def _key_panels(datas: list[StoreData], claims: pd.DataFrame) -> list[tuple[Any, Any, str]]:
    """(store, fit, problem) of the key figure's panels: the first sample-complexity fit over
    alpha of each hard problem, at most two problems (one panel each), in store order."""
    out: list[tuple[Any, Any, str]] = []
    for data in datas:
        fit = _key_fit(data, claims)
        if fit is None:
            continue
        rows = claims[(claims["fit"] == fit.name) & (claims["spec"] == data.spec.name)
                      & (claims["character"] == "hard")]
        for problem in sorted(rows["problem"].unique()):
            if problem not in {p for _, _, p in out} and len(out) < 2:
                out.append((data, fit, problem))
    return out


def _hard_alpha_pairs(paired: list[list[dict]], claims: pd.DataFrame) -> list[dict]:
    """Paired comparisons of sample complexity against alpha on the hard instances."""
    hard = set(claims.loc[claims["character"] == "hard", "problem"])
    return [p for part in paired for p in part
            if p["view"] == "sample_complexity" and p["x"] == "alpha"
            and p["group"].get("problem") in hard]


def _crossover_line(p: dict) -> str:
    """Where the paired difference's fit says the two algorithms need the same samples."""
    res = p["result"]
    where = ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{v}"
                      for k, v in p["group"].items() if k in ("problem", "eps", "d"))
    head = f"Crossover {p['a']} / {p['b']} ({where}; paired, theory mode): "
    if not math.isfinite(res.crossover):
        return head + (f"none located (the paired difference's slope CI [{res.slope_ci_low:.2f}, "
                       f"{res.slope_ci_high:.2f}] includes 0 or is undefined).")
    return head + (f"equal samples at alpha = {res.crossover:.3g} [95% CI "
                   f"{res.crossover_ci_low:.3g}, {res.crossover_ci_high:.3g}], "
                   + ("inside the window." if res.crossover_where == "inside" else
                      f"an extrapolation {res.crossover_where} the window."))


#: Page 1's columns: (summary column, header, share of the table's width, wrap width in
#: characters at SUMMARY_FONT, at most this many lines).
SUMMARY_TABLE = [
    ("algorithm", "algorithm", 0.11, 23, 2),
    ("claim", "claim", 0.15, 33, 2),
    ("short source", "theorem (paper)", 0.185, 42, 2),
    ("claimed", "claimed", 0.045, 7, 1),
    ("measured", "measured [95% CI]", 0.105, 23, 2),
    ("rules", "rules", 0.04, 6, 1),
    ("verdict", "verdict", 0.085, 18, 2),
    ("regime", "regime", 0.13, 29, 2),
    ("decided by", "decided by (spec/fit, mode, problem, x)", 0.15, 33, 2),
]
SUMMARY_FONT = 6.0


def _cell_lines(text: Any, width: int, max_lines: int) -> list[str]:
    """`text` wrapped to `width` characters, breaking names like recursive_regularization_linear
    after an underscore rather than mid-word; at most `max_lines` lines (then shortened)."""
    marked = str(text).replace("_", "_\x01")  # a break opportunity after each underscore
    lines = [ln.replace("\x01", "").strip() for ln in
             textwrap.wrap(marked.replace("\x01", " \x01"), width + 1, break_long_words=True)]
    lines = [ln.replace("_ ", "_") for ln in lines] or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = textwrap.shorten(lines[-1] + " ...", width, placeholder=" ...")
    return lines


def summary_table_pages(pdf: PdfPages, summary: pd.DataFrame, title: str) -> None:
    """Page 1: the claims summary as a real table (one row per declared claim, coloured by
    verdict, "not measured" / "not in regime" / "out of reach" rows shown), continued on as
    many pages as it needs, the counts and what faster / slower mean beneath."""
    cols = list(SUMMARY_TABLE)
    if "privacy" in summary and summary["privacy"].astype(str).str.strip().astype(bool).any():
        cols = [(c, h, w * 0.93, max(6, int(n * 0.93)), m) for c, h, w, n, m in cols]
        cols.append(("privacy", "privacy", 0.07, 14, 3))
    rows = [[_cell_lines(r.get(c, ""), n, m) for c, _, _, n, m in cols]
            for r in summary.to_dict("records")]
    header = [_cell_lines(h, n, 3) for _, h, _, n, _ in cols]
    line_pt = SUMMARY_FONT * 1.3
    pad_pt = 2.6
    box = [0.03, 0.15, 0.94, 0.76]
    ax_h_pt = box[3] * A4_LANDSCAPE[1] * 72
    def height(cells: list[list[str]]) -> float:
        return (max(len(c) for c in cells) * line_pt + pad_pt) / ax_h_pt

    pages, current, used = [], [], height(header)
    for k, r in enumerate(rows):
        h = height(r)
        if current and used + h > 1.0:
            pages.append(current)
            current, used = [], height(header)
        current.append(k)
        used += h
    pages.append(current)
    counts = verdict_counts(summary)
    notes = summary_notes(summary)
    for i, idx in enumerate(pages):
        fig = plt.figure(figsize=A4_LANDSCAPE)
        more = f" (continued, {i + 1} of {len(pages)})" if len(pages) > 1 and i else ""
        fig.text(0.03, 0.965, title + more, fontsize=13, weight="bold", va="top")
        fig.text(0.03, 0.93, "; ".join(f"{v} {k}" for k, v in counts.items()) + f" ({len(summary)} "
                 "declared claims)", fontsize=8, va="top")
        ax = fig.add_axes(box)
        ax.axis("off")
        texts = ["\n".join(c) for c in header]
        cell_text = [["\n".join(c) for c in rows[k]] for k in idx]
        table = ax.table(cellText=cell_text, colLabels=texts, colWidths=[c[2] for c in cols],
                         loc="upper left", cellLoc="left", colLoc="left")
        table.auto_set_font_size(False)
        table.set_fontsize(SUMMARY_FONT)
        for j in range(len(cols)):
            cell = table[0, j]
            cell.set_height(height(header))
            cell.set_facecolor("#d9d9d9")
            cell.get_text().set_weight("bold")
            cell.get_text().set_va("center")
        for row_no, k in enumerate(idx, start=1):
            colour = VERDICT_COLOURS.get(str(summary.iloc[k]["verdict"]), "#ffffff")
            for j in range(len(cols)):
                cell = table[row_no, j]
                cell.set_height(height(rows[k]))
                cell.set_facecolor(colour)
                cell.get_text().set_va("center")
                cell.PAD = 0.02
        legend = "   ".join(f"{name}" for name in VERDICT_COLOURS)
        fig.text(0.03, 0.135 if len(idx) else 0.85, "\n".join(
            textwrap.fill(n, 210) for n in notes) + "\nrow colours: " + legend, fontsize=6.5,
            va="top")
        pdf.savefig(fig)
        plt.close(fig)


def headline_page(pdf: PdfPages, datas: list[StoreData], claims: pd.DataFrame,
                  paired: list[list[dict]]) -> None:
    """Page 2: the question, the key figure (n* against alpha for both algorithms on up to two
    hard instances, with the crossover where it falls inside the window) and the crossover
    lines, with what the plotted fits' verdicts mean."""
    panels = _key_panels(datas, claims) if len(claims) else []
    if not panels:
        return
    fig = plt.figure(figsize=A4)
    fig.text(0.07, 0.965, "Headline: samples to reach alpha on the hard instances", fontsize=14,
             weight="bold", va="top")
    fig.text(0.07, 0.935, textwrap.fill(SUMMARY_QUESTION, 100), fontsize=7.5, va="top")
    width = 0.85 / max(1, len(panels)) - (0.04 if len(panels) > 1 else 0.0)
    for k, (data, fit, problem) in enumerate(panels):
        ax = fig.add_axes([0.1 + k * (width + 0.08), 0.5, width, 0.33])
        mode = fit.mode
        pts = fit_points_table(data, fit, mode)
        rows = claims[(claims["fit"] == fit.name) & (claims["mode"] == mode)
                      & (claims["spec"] == data.spec.name) & (claims["problem"] == problem)]
        sub = pts[pts["problem"] == problem]
        if mode == "tuned":  # the envelope's chosen knob setting, as on the scaling pages
            sub = _chosen_rows(sub, rows)
        plots.scaling_plot(ax, sub, rows, x=fit.x, y=fit.y, window=fit.window,
                           title=f"{problem}: samples to reach alpha\n"
                           f"({data.spec.name}, {mode} mode)")
        if len(panels) > 1:
            ax.legend(fontsize=5.5, loc="upper right")
        for p in _hard_alpha_pairs(paired, claims):
            res = p["result"]
            if (p["fit"] == fit.name and p["group"].get("problem") == problem
                    and math.isfinite(res.crossover)
                    and fit.window[0] <= res.crossover <= fit.window[1]):
                ax.axvline(res.crossover, color="0.3", linewidth=0.8, linestyle=":")
    lines = [textwrap.fill(_crossover_line(p), 105) for p in _hard_alpha_pairs(paired, claims)]
    shown = claims[claims["fit"].isin([f.name for _, f, _ in panels])]
    lines += ["", *[textwrap.fill(v, 105) for v in direction_lines(
        list(zip(shown["view"], shown["x"], strict=True)))]]
    lines += ["", textwrap.fill(
        "Each line's label carries its fit: slope [95% CI] and the claim's. The verdicts of "
        "these fits, with the regime gate's reasons, are on page 1 and the claims pages. Theory "
        "mode runs every hidden constant at 1 (a check of the rules as written); tuned mode "
        "takes the best knob setting per design point.", 105)]
    fig.text(0.07, 0.44, "\n".join(lines), fontsize=7, va="top")
    pdf.savefig(fig)
    plt.close(fig)


def overflowing_text(fig: plt.Figure) -> list[str]:
    """Text that runs off the page or out of its table cell: each visible, non-empty Text
    artist's drawn bounding box against the figure's, and each table cell's text against the
    cell (1 pt of slack)."""
    from matplotlib.table import Table
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    slack = fig.dpi / 72
    # Tick labels outside an axis' view limits keep stale positions but are not drawn.
    undrawn = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not ax.axison:  # axis("off"): none of its tick labels is drawn
                undrawn |= {id(lb) for tick in axis.get_major_ticks() + axis.get_minor_ticks()
                            for lb in (tick.label1, tick.label2)}
                continue
            drawn = {id(lb) for tick in axis._update_ticks() for lb in (tick.label1, tick.label2)}
            undrawn |= {id(lb) for tick in axis.get_major_ticks() + axis.get_minor_ticks()
                        for lb in (tick.label1, tick.label2) if id(lb) not in drawn}
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
            cb, tb = cell.get_window_extent(renderer), text.get_window_extent(renderer)
            if tb.width > cb.width + slack or tb.height > cb.height + slack:
                out.append(f"out of its cell ({r}, {c}): {text.get_text()[:60]!r}")
    return out


class LayoutCheckedPdf:
    """A PdfPages that checks every page with `overflowing_text` before saving it, appending
    "page N: ..." to `problems` (tests; `write_report(layout_problems=...)`)."""

    def __init__(self, pdf: PdfPages, problems: list[str]) -> None:
        self._pdf, self._problems = pdf, problems

    def savefig(self, fig: plt.Figure, **kw: Any) -> None:
        page = self._pdf.get_pagecount() + 1
        self._problems.extend(f"page {page}: {m}" for m in overflowing_text(fig))
        self._pdf.savefig(fig, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pdf, name)


def privacy_page(pdf: PdfPages, datas: list[StoreData]) -> None:
    """Spent / declared eps per algorithm, its accountant, its privacy check (fair rules: each
    algorithm gets the noise its accountant needs, no more)."""
    body = "\n\n".join(f"{d.spec.name}\n" + spent_text(spent_table(d.cells)) for d in datas)
    _text_page(pdf, "Privacy: spent / declared eps and verification", body, size=7.5)


def write_report(stores: StoreData | list[StoreData], out: str | Path, n_boot: int = rates.N_BOOT,
                 csv: str | Path | None = None, figures: str | Path | None = None,
                 privacy: dict | None = None,
                 layout_problems: list[str] | None = None) -> dict[str, Any]:
    """Write the PDF report of one or several stores (opened by `bench.store.open_store_data`)
    to `out` (one claims table and forest plot for all; scaling, paired, trajectory and failure
    pages per store). `csv`: also write the claims table; `figures`: a directory for PNGs of
    each declared fit and the forest plot. Page 1 is the claims summary (`analysis.report.tables.
    claims_summary`; `privacy`: its optional per-row privacy notes), page 2 the headline plots.
    `layout_problems`: a list that receives every text running off a page or out of its
    table cell (see `overflowing_text`)."""
    out = Path(out)
    if out.suffix.lower() != ".pdf":
        raise ValueError(f"-o {str(out)!r} is invalid: the report is a .pdf file")
    datas = [stores] if isinstance(stores, StoreData) else list(stores)
    claims_parts = [claims_table(d, n_boot=n_boot) for d in datas]
    claims = pd.concat([c for c in claims_parts if len(c)], ignore_index=True) if any(
        len(c) for c in claims_parts) else pd.DataFrame()
    paired = [paired_table(d, n_boot=n_boot) for d in datas]
    figdir = Path(figures) if figures else None
    if figdir is not None:
        figdir.mkdir(parents=True, exist_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    if privacy is None:  # the algorithms whose privacy is not verified, marked on page 1
        privacy = {(a, ""): f"{UNVERIFIED_MARK}: {label}" for d in datas
                   for a, label in unverified_algorithms(d.cells).items()}
    summary = claims_summary(claims, privacy=privacy)
    with PdfPages(out) as raw_pdf:
        pdf = raw_pdf if layout_problems is None else LayoutCheckedPdf(raw_pdf, layout_problems)
        summary_table_pages(pdf, summary, "Claims: measured against claimed rates, "
                            + ", ".join(d.spec.name for d in datas)[:80])
        headline_page(pdf, datas, claims, paired)
        for data in datas:
            title_page(pdf, data)
        if len(claims):
            claims_page(pdf, claims)
            forest_page(pdf, claims, figdir)
        declared_claims_page(pdf, claims)
        path_page(pdf, [path_table(d) for d in datas])
        privacy_page(pdf, datas)
        for data, part, pair in zip(datas, claims_parts, paired, strict=True):
            if len(datas) > 1:
                section_page(pdf, data)
            if len(part):
                scaling_pages(pdf, data, part, figdir)
            paired_page(pdf, pair)
            loss_curve_pages(pdf, data, figdir)
            moment_pages(pdf, data)
            trajectory_pages(pdf, data)
        _text_page(pdf, "Methods", _wrap(METHODS), size=8)
        for data in datas:
            failures_page(pdf, data)
        info = pdf.infodict()
        info["Title"] = "dprates report: " + ", ".join(d.spec.name for d in datas)
        info["Subject"] = "Measured convergence exponents of private optimizers"
        pages = pdf.get_pagecount()
    if csv is not None and len(claims):
        table = claims.copy()
        table["window"] = [f"{w[0]:g}..{w[1]:g}" if isinstance(w, (tuple, list)) else "" for w in
                           table["window"]]
        table[[c for c in CSV_COLUMNS if c in table]].to_csv(csv, index=False, float_format="%.4g")
    return {"claims": claims, "paired": [p for part in paired for p in part], "pages": pages,
            "path": out, "summary": summary}
