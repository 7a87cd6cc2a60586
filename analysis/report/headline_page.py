"""The headline: on the main report's page 2 (`headline_page`, one landscape page) the key
figure (n* against alpha on up to two hard instances, `_key_panels`) with the crossover where it
falls inside the window, one table of the plotted Spiders against their rules and claims, and at
most 12 lines of text (the finding, each family's crossover, law and constants range); in the
appendix (`headline_detail_page`) the long form: the question (`SUMMARY_QUESTION`), each Spider's
chain, the observed crossovers of reports/crossovers.csv (`observed_crossover_lines`) and the
crossover lines of the paired comparisons.
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

from analysis.comparisons.crossover_law import ADAPTIVE, GAUSSIAN
from analysis.declarations import StoreData
from analysis.points import fit_points_table
from analysis.report import plots
from analysis.report.equal_privacy_panel import (
    ORACLE_N,
    THEORY,
    TIGHT,
    draw_equal_privacy,
    equal_privacy_rows,
)
from analysis.report.layout import A4_LANDSCAPE, text_page
from analysis.report.scaling_pages import chosen_rows
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


def _draw_panels(fig: Any, panels: list[tuple[Any, Any, str]], claims: pd.DataFrame,
                 paired: list[list[dict]], box: tuple[float, float, float, float]) -> None:
    """The key figure's panels side by side in `box` (left, bottom, width, height), each with
    the crossover where the paired fit puts it inside the window."""
    left, bottom, width, height = box
    gap = 0.07 if len(panels) > 1 else 0.0
    w = (width - gap * (len(panels) - 1)) / max(1, len(panels))
    for k, (data, fit, problem) in enumerate(panels):
        ax = fig.add_axes([left + k * (w + gap), bottom, w, height])
        mode = fit.mode
        pts = fit_points_table(data, fit, mode)
        rows = claims[(claims["fit"] == fit.name) & (claims["mode"] == mode)
                      & (claims["spec"] == data.spec.name) & (claims["problem"] == problem)]
        sub = pts[pts["problem"] == problem]
        if mode == "tuned":  # the envelope's chosen knob setting, as on the scaling pages
            sub = chosen_rows(sub, rows)
        cal = THEORY if data.spec.calibration == "theory" else TIGHT
        plots.scaling_plot(ax, sub, rows, x=fit.x, y=fit.y, window=fit.window,
                           title=f"{problem}: the papers' formulas\n({data.spec.name}, "
                           f"{cal.split(' (')[0]}, {mode} mode)\n{ORACLE_N}")
        ax.title.set_fontsize(8)
        if len(panels) > 1:
            ax.legend(fontsize=5.5, loc="upper right")
        for p in _hard_alpha_pairs(paired, claims):
            res = p["result"]
            if (p["fit"] == fit.name and p["group"].get("problem") == problem
                    and math.isfinite(res.crossover)
                    and fit.window[0] <= res.crossover <= fit.window[1]):
                ax.axvline(res.crossover, color="0.3", linewidth=0.8, linestyle=":")


def _panel_rows(claims: pd.DataFrame, panels: list[tuple[Any, Any, str]]) -> pd.DataFrame:
    """The claims rows the panels plot (their fit, mode, spec and problem), in panel order."""
    parts = [claims[(claims["fit"] == fit.name) & (claims["mode"] == fit.mode)
                    & (claims["spec"] == data.spec.name) & (claims["problem"] == problem)]
             for data, fit, problem in panels]
    return pd.concat(parts, ignore_index=True) if parts else claims.iloc[:0]


#: The headline page's text: at least this size, at most HEADLINE_LINES lines (issue 59).
HEADLINE_FONT, HEADLINE_LINES = 9.0, 12
#: The headline table's column widths (shares of its box), in SPIDER_HEADER's order.
HEADLINE_COLUMNS = [0.145, 0.05, 0.12, 0.05, 0.185, 0.105, 0.11, 0.15, 0.085]
HEADLINE_QUESTION = (
    "Samples n* to reach an alpha-SOSP under (eps, delta)-DP on hard instances: the Gaussian "
    "Spider claims n* ~ alpha^(-7/3) (exponent 3/7), the adaptive tree Spider alpha^(-2) (1/2). "
    "Each is held first to its own rules (the bound its implementation runs), with a declared "
    "margin m.")


def calibration_line(datas: list[StoreData]) -> str:
    """Which calibration the headline's stores use and which n* they count (issue 73, item 2)."""
    cals = sorted({d.spec.calibration for d in datas})
    what = {"theory": "the papers' noise formulas, unequal spend; the left panel and page 1 "
                      "compare at equal privacy", "tight": "each Spider spends all of its eps"}
    return ("Calibration: " + "; ".join(f"{c} ({what.get(c, c)})" for c in cals) + ". n*: the "
            "oracle's first hitting time (best iterate by the exact population alpha_SOSP): for "
            "the adaptive tree Spider its paper's own output (the set of iterates, at least one "
            "an alpha-SOSP: seed 000, Algorithm 2, Theorem 3.11); the Gaussian Spider's private "
            "selection (Ganesh et al.) is not implemented, so its n* is the oracle's alone.")


def crossover_summary_lines(crossovers: pd.DataFrame | None, laws: pd.DataFrame | None,
                            families: set[str] | None = None) -> list[str]:
    """Per family (those in `families`, None: all), one line: its crossover at the central
    (eps, d) with its bracket and the paired slope's gate, its law, and the constants study's
    range (`_study_line`)."""
    if crossovers is None or not len(crossovers):
        return []
    out = []
    central = crossovers["constants"].isin(CENTRAL_CONSTANTS)
    studies = set(crossovers.loc[~central, "source"])
    base = crossovers[central & ~crossovers["source"].isin(studies)]
    if families is not None:
        base = base[base["problem"].isin(families)]
    for problem, g in base.groupby("problem", sort=True):
        c = g[(g["eps"] == CENTRAL_EPS) & (g["d"] == CENTRAL_D)]
        r = next((c if len(c) else g).itertuples())
        gate = getattr(r, "paired_gate", "")
        gate = str(gate).split(";")[0] if isinstance(gate, str) and gate else "no control"
        line = (f"{problem} ({_sources(g)}; knobs at 1): alpha* = "
                f"{_ci(r.alpha_star, r.ci_low, r.ci_high)} at eps {r.eps:g}, d {int(r.d)} "
                f"({r.where} {r.bracket}); paired slope "
                f"{_ci(r.paired_slope, r.paired_ci_low, r.paired_ci_high)} ({gate})")
        law = laws[laws["problem"] == problem] if laws is not None and len(laws) else None
        if law is not None and len(law):
            lr = next(law.itertuples())
            terms = [f"eps^{lr.eps_exp:.3g}" if _fin(lr.eps_exp) else "",
                     f"d^{lr.d_exp:.3g}" if _fin(lr.d_exp) else ""]
            line += f"; law alpha* ~ {' '.join(t for t in terms if t)}"
        study = crossovers[crossovers["source"].isin(studies) & (crossovers["problem"] == problem)]
        if len(study):
            line += "; " + _study_line(str(problem), study).split(": ", 1)[-1]
        out.append(line + ".")
    return out


def headline_page(pdf: PdfPages, datas: list[StoreData], claims: pd.DataFrame,
                  paired: list[list[dict]], crossovers: pd.DataFrame | None = None,
                  laws: pd.DataFrame | None = None) -> None:
    """The main report's headline, one landscape page: the question, the key figure (n*
    against alpha on up to two hard instances), one table (per plotted Spider: measured slope,
    its rules' slope, the decision against its rules, what the rules and O~ tests accept, the
    private share; the numbers as the CSV stores them, `analysis.report.readme_results`) and
    at most HEADLINE_LINES lines of text at HEADLINE_FONT: the finding and the crossover per
    family. Everything else is `headline_detail_page`'s, in the appendix."""
    from analysis.report.readme_results import SHORT, SPIDER_HEADER, spider_finding, spider_rows

    panels = _key_panels(datas, claims) if len(claims) else []
    if not panels:
        return
    fig = plt.figure(figsize=A4_LANDSCAPE)
    fig.text(0.04, 0.965, "Headline: samples to reach alpha on the hard instances, at equal "
             "privacy and under the papers' formulas", fontsize=13, weight="bold", va="top")
    shown = list({id(d): d for d, _, _ in panels}.values())  # the plotted panels' stores
    fig.text(0.04, 0.93, textwrap.fill(HEADLINE_QUESTION + " " + calibration_line(shown), 175),
             fontsize=8, va="top")
    equal = equal_privacy_rows(crossovers)
    if len(equal):  # the equal-privacy comparison leads (issue 73, item 2)
        draw_equal_privacy(fig.add_axes((0.09, 0.5, 0.19, 0.25)), equal)
    _draw_panels(fig, panels, claims, paired, (0.36, 0.5, 0.6, 0.25) if len(equal)
                 else (0.07, 0.5, 0.88, 0.25))
    rows = _panel_rows(claims, panels)
    body = spider_rows(rows)
    # the first column names the Spider and, with two panels, its instance
    body = [[SHORT.get(a, a) + (f" ({p})" if len(panels) > 1 else ""), *b[1:]]
            for b, a, p in zip(body, rows["algorithm"], rows["problem"], strict=True)]
    ax = fig.add_axes([0.03, 0.3, 0.94, 0.13])
    ax.axis("off")
    table = ax.table(cellText=body, colLabels=SPIDER_HEADER, loc="upper left", cellLoc="left",
                     colLoc="left", colWidths=HEADLINE_COLUMNS)
    table.auto_set_font_size(False)
    table.set_fontsize(HEADLINE_FONT)
    for cell in table.get_celld().values():
        cell.set_height(1.0 / (len(body) + 1))
        cell.PAD = 0.012
    plotted = {p for *_, p in panels}
    text = [spider_finding(rows)[0].upper() + spider_finding(rows)[1:],
            *crossover_summary_lines(crossovers, laws, plotted),
            "Details (the chain from rules to claim, every crossover and constants study, what "
            "faster and slower mean): the appendix, 'The headline in detail'."]
    lines = [w for t in text for w in textwrap.wrap(t, 155)][:HEADLINE_LINES]
    fig.text(0.04, 0.27, "\n".join(lines), fontsize=HEADLINE_FONT, va="top")
    pdf.savefig(fig)
    plt.close(fig)


def headline_detail_lines(claims: pd.DataFrame, panels: list[tuple[Any, Any, str]],
                          paired: list[list[dict]], crossovers: pd.DataFrame | None,
                          laws: pd.DataFrame | None) -> list[str]:
    """The headline's long form: each plotted Spider's chain against its rules, the observed
    crossovers with their laws and constants studies, every paired comparison's crossover, and
    what faster / slower mean for the plotted fits."""
    lines = [SUMMARY_QUESTION, "", *rules_lines(claims, panels)]
    lines += ["", *observed_crossover_lines(crossovers, laws)]
    observed = frozenset(crossovers["problem"]) if crossovers is not None and len(crossovers) else frozenset()
    lines += [""] + [_crossover_line(p, observed)
                                        for p in _hard_alpha_pairs(paired, claims)]
    shown = claims[claims["fit"].isin([f.name for _, f, _ in panels])]
    lines += ["", *direction_lines(list(zip(shown["view"], shown["x"], strict=True)))]
    lines += ["", "Each line's label carries its fit: slope [95% CI] and the claim's. The "
              "verdicts of these fits, with the regime gate's reasons, are on the main report's "
              "page 1 and the claims pages. Theory mode runs every hidden constant at 1 (a check "
              "of the rules as written); tuned mode takes the best knob setting per design point."]
    return lines


def headline_detail_page(pdf: PdfPages, datas: list[StoreData], claims: pd.DataFrame,
                         paired: list[list[dict]], crossovers: pd.DataFrame | None = None,
                         laws: pd.DataFrame | None = None) -> None:
    """The appendix's 'The headline in detail' (`headline_detail_lines`), nothing without a
    headline figure."""
    panels = _key_panels(datas, claims) if len(claims) else []
    if not panels:
        return
    body = "\n".join(textwrap.fill(v, 110, subsequent_indent="    ") if v else ""
                     for v in headline_detail_lines(claims, panels, paired, crossovers, laws))
    text_page(pdf, "The headline in detail", body, size=7.5)
