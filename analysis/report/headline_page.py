"""Page 2 of the report, the headline: the question (`SUMMARY_QUESTION`), the key figure (n*
against alpha for the algorithms on up to two hard instances, `_key_panels`) with the crossover
where it falls inside the window, the observed crossovers of reports/crossovers.csv when given
(`observed_crossover_lines`), and the crossover lines of the paired comparisons
(`headline_page`).
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.crossover_law import ADAPTIVE, GAUSSIAN
from analysis.declarations import StoreData
from analysis.points import fit_points_table
from analysis.report import plots
from analysis.report.layout import A4
from analysis.report.scaling_pages import _chosen_rows
from analysis.report.tables import direction_lines

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


def _crossover_line(p: dict, observed: frozenset[str] = frozenset()) -> str:
    """Where the paired difference's fit says the two algorithms need the same samples; outside
    the window on a family in `observed` (measured crossovers above it on the page) the
    extrapolated value of the two Spiders is not printed."""
    res = p["result"]
    where = ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{v}"
                      for k, v in p["group"].items() if k in ("problem", "eps", "d"))
    head = f"Crossover {p['a']} / {p['b']} ({where}; paired, theory mode): "
    rules = p.get("rules_paired_slope", math.nan)
    if isinstance(rules, float) and math.isfinite(rules):
        head = (f"Paired slope {res.slope:.3g} [{res.slope_ci_low:.3g}, {res.slope_ci_high:.3g}]"
                f" against the claims' {p['predicted_slope']:.3g} and the rules' own {rules:.3g} "
                "(the rest is the two algorithms' drift against their own budgets). " + head)
    if not math.isfinite(res.crossover):
        return head + (f"none located (the paired difference's slope CI [{res.slope_ci_low:.2f}, "
                       f"{res.slope_ci_high:.2f}] includes 0 or is undefined).")
    # crossovers.csv measures the two Spiders only: another pair keeps its extrapolation
    spiders = {p["a"], p["b"]} == {ADAPTIVE, GAUSSIAN}
    if res.crossover_where != "inside" and spiders and p["group"].get("problem") in observed:
        return head + (f"outside the window ({res.crossover_where} it), not printed: an "
                       "extrapolation is not a measurement. The crossovers measured by paired "
                       "brackets are listed above, each with its calibration, eps and d.")
    return head + (f"equal samples at alpha = {res.crossover:.3g} [95% CI "
                   f"{res.crossover_ci_low:.3g}, {res.crossover_ci_high:.3g}], "
                   + ("inside the window." if res.crossover_where == "inside" else
                      f"an extrapolation {res.crossover_where} the window."))


#: The `constants` of a crossover at the rules' own constants (all knobs 1).
CENTRAL_CONSTANTS = ("knobs at 1", "defaults")


#: The condition whose slopes page 2 prints for a family (the headline's central point), when
#: the family has it; else its first condition.
CENTRAL_EPS, CENTRAL_D = 0.1, 10


def _fin(v: Any) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def _ci(v: float, lo: float, hi: float) -> str:
    return f"{v:.3g} [{lo:.3g}, {hi:.3g}]" if _fin(v) else "-"


def _law_text(law: Any, sources: str = "") -> str:
    """One family's law (a row of reports/crossover_laws.csv) in words, naming its sources when
    they are not `sources` (the family's crossovers on the page); "" without an exponent."""
    parts = []
    if _fin(law.eps_exp):
        parts.append(f"eps^{law.eps_exp:.3g} [{law.eps_ci_low:.3g}, {law.eps_ci_high:.3g}]")
    if _fin(law.d_exp):
        parts.append(f"d^{law.d_exp:.3g} [{law.d_ci_low:.3g}, {law.d_ci_high:.3g}]")
    if not parts:
        return ""
    pred = ", ".join(f"{k} {v:.3g}" for k, v in (("eps", law.pred_eps_exp), ("d", law.pred_d_exp))
                     if _fin(v))
    own = "; ".join(v.strip() for v in str(law.sources).split(";"))
    return (f"Law through the {law.fitted} crossovers inside their brackets"
            + (f" of {own}" if sources and own != sources else "") + f": alpha* ~ "
            f"{' '.join(parts)}" + (f" (the rules scaled by each Spider's measured budget use: "
                                    f"{pred})" if pred else "") + ".")


def _slopes_text(r: Any) -> str:
    """A condition's slopes over its bracket, beside the rules' own paired slope."""
    if not _fin(getattr(r, "paired_slope", math.nan)):
        return ""
    out = (f"At eps {r.eps:g}, d {int(r.d)}: paired slope "
           f"{_ci(r.paired_slope, r.paired_ci_low, r.paired_ci_high)}")
    if _fin(r.rules_paired_slope):
        out += f" (the rules' own {r.rules_paired_slope:.3g}; the claims' 1/3)"
    if _fin(r.slope_adaptive):
        out += (f"; slopes of log n*: adaptive "
                f"{_ci(r.slope_adaptive, r.slope_adaptive_ci_low, r.slope_adaptive_ci_high)}"
                f" (claim -2), Gaussian "
                f"{_ci(r.slope_gaussian, r.slope_gaussian_ci_low, r.slope_gaussian_ci_high)}"
                " (claim -2.33)")
    return out + "."


def _sources(g: pd.DataFrame) -> str:
    """The rows' specs, with their calibration once when they share it."""
    src = list(dict.fromkeys(g["source"]))
    cals = {v.rsplit(" (", 1)[-1] for v in src if " (" in v}
    if len(cals) == 1 and all(" (" in v for v in src):
        return ", ".join(v.rsplit(" (", 1)[0] for v in src) + f"; {cals.pop()[:-1]}"
    return ", ".join(src)


def _family_line(problem: str, g: pd.DataFrame, laws: pd.DataFrame | None) -> str:
    """One family's crossovers at the rules' own constants (its most common bracket named once,
    another one at its row), its law and its slopes at the central point."""
    bracket = g["bracket"].mode().iloc[0]
    items = []
    for r in g.itertuples():
        at = f"eps {r.eps:g}, d {int(r.d)}" + ("" if r.bracket == bracket else f" ({r.bracket})")
        if r.where == "inside":
            items.append(f"alpha* = {_ci(r.alpha_star, r.ci_low, r.ci_high)} at {at}")
        else:  # an extrapolation out of the bracket is not a measured crossover
            items.append(f"no crossing inside the bracket at {at}")
    out = f"{problem} ({_sources(g)}; knobs at 1; {bracket}): " + "; ".join(items) + "."
    law = laws[laws["problem"] == problem] if laws is not None and len(laws) else None
    text = _law_text(next(law.itertuples()), "; ".join(dict.fromkeys(g["source"]))) \
        if law is not None and len(law) else ""
    out += " " + text if text else ""
    central = g[(g["eps"] == CENTRAL_EPS) & (g["d"] == CENTRAL_D)]
    slopes = _slopes_text(next((central if len(central) else g).itertuples()))
    return out + (" " + slopes if slopes else "")


def _study_line(problem: str, g: pd.DataFrame) -> str:
    """A constants study in one line: its defaults' crossover, then how many of its other
    settings cross inside the targets (their range as a multiple of the defaults'), outside
    them, and never (the rows: its markdown report)."""
    is_base = g["constants"].isin(CENTRAL_CONSTANTS)
    base, others = g[is_base], g[~is_base]
    inside = others[others["where"] == "inside"]["alpha_star"]
    never = int((~np.isfinite(others["alpha_star"].astype(float))).sum())
    span = (f"alpha* {inside.min():.3g} to {inside.max():.3g}" if len(inside) else "none")
    head = f"{problem} constants study ({_sources(g)}; {g['bracket'].iloc[0]})"
    if len(base):
        b = next(base.itertuples())
        head += f": defaults alpha* = {_ci(b.alpha_star, b.ci_low, b.ci_high)}"
        if len(inside) and _fin(b.alpha_star):
            span += (f" ({inside.min() / b.alpha_star:.2f}-{inside.max() / b.alpha_star:.2f}x "
                     "the defaults')")
    return (f"{head}; {len(others)} other settings of the constants: {len(inside)} cross inside "
            f"the targets, {span}; {len(others) - len(inside) - never} outside them, {never} never")


def observed_crossover_lines(crossovers: pd.DataFrame | None,
                             laws: pd.DataFrame | None = None) -> list[str]:
    """The measured crossovers (rows of reports/crossovers.csv, `dprates crossover-law --csv`):
    per family its crossovers at the rules' own constants with CIs, how they were bracketed, its
    law (reports/crossover_laws.csv, when given) and its slopes at the central point; then each
    constants study (a source with other constants than the rules') in one line. [] without
    any."""
    if crossovers is None or not len(crossovers):
        return []
    out = ["Observed crossovers (adaptive tree Spider / Gaussian Spider, each bracketed by paired "
           "targets; below alpha* the adaptive Spider needs fewer samples):"]
    central = crossovers["constants"].isin(CENTRAL_CONSTANTS)
    studies = set(crossovers.loc[~central, "source"])
    in_study = crossovers["source"].isin(studies)
    for problem, g in crossovers[central & ~in_study].groupby("problem", sort=False):
        out.append("  " + _family_line(str(problem), g, laws))
    for (problem, _), g in crossovers[in_study].groupby(["problem", "source"], sort=False):
        out.append("  " + _study_line(str(problem), g))
    return out


def rules_lines(claims: pd.DataFrame, panels: list[tuple[Any, Any, str]]) -> list[str]:
    """Each plotted Spider against its own rules (the fifth edition's primary test, issue 55):
    its verdict, the residual against its rules with the margin, where its rules tend, and
    whether the window can tell its claim from the rival's."""
    out = []
    for data, fit, problem in panels:
        rows = claims[(claims["fit"] == fit.name) & (claims["mode"] == fit.mode)
                      & (claims["spec"] == data.spec.name) & (claims["problem"] == problem)]
        for r in rows.to_dict("records"):
            chain = r.get("chain")
            if not isinstance(chain, str) or not chain:
                continue
            sep = r.get("separates_rival")
            sep = f" Separates 3/7 from 1/2 here: {sep}." if isinstance(sep, str) and sep else ""
            out.append(f"{r['algorithm']} on {problem} ({data.spec.name}): {r['verdict']}. "
                       f"Against its rules: {chain}.{sep}")
    return out


def headline_page(pdf: PdfPages, datas: list[StoreData], claims: pd.DataFrame,
                  paired: list[list[dict]], crossovers: pd.DataFrame | None = None,
                  laws: pd.DataFrame | None = None) -> None:
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
        ax = fig.add_axes([0.1 + k * (width + 0.08), 0.59, width, 0.24])
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
    lines = [textwrap.fill(v, 140, subsequent_indent="    ") for v in rules_lines(claims, panels)]
    lines += ([""] if lines else []) + [textwrap.fill(v, 140, subsequent_indent="    ")
                                        for v in observed_crossover_lines(crossovers, laws)]
    observed = frozenset(crossovers["problem"]) if crossovers is not None and len(crossovers) else frozenset()
    lines += ([""] if lines else []) + [textwrap.fill(_crossover_line(p, observed), 140)
                                        for p in _hard_alpha_pairs(paired, claims)]
    shown = claims[claims["fit"].isin([f.name for _, f, _ in panels])]
    lines += ["", *[textwrap.fill(v, 140) for v in direction_lines(
        list(zip(shown["view"], shown["x"], strict=True)))]]
    lines += ["", textwrap.fill(
        "Each line's label carries its fit: slope [95% CI] and the claim's. The verdicts of "
        "these fits, with the regime gate's reasons, are on page 1 and the claims pages. Theory "
        "mode runs every hidden constant at 1 (a check of the rules as written); tuned mode "
        "takes the best knob setting per design point.", 140)]
    fig.text(0.07, 0.535, "\n".join(lines), fontsize=6.5, va="top")
    pdf.savefig(fig)
    plt.close(fig)
