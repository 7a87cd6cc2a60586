"""Page 1 of the main report: the suite's two questions answered in a paragraph each (issue 73,
item 1), from the committed CSVs, every number read from a row, nothing typed about a result.

- `spider_answer`: 3/7 or 1/2 at equal privacy? From the measured crossovers (reports/
  crossovers.csv): both Spiders calibrated tight (each spends all of eps), knobs at 1; who needs
  fewer samples on which side of alpha*, alpha* with its CI at the headline's setting, its range
  over eps and d, and how often it stays inside its bracket when a knob moves (sensitivity).
- `rates_answer`: 3/7 or 1/2 on data? From the claims table's measured claim link
  (`analysis.verdict_engine.measured_link`): each Spider's slope of n* against alpha over the
  deepest decade of a two-decade window on a hard instance, with its CI, against its own claim
  and its rival's.
- `practitioner_answer`: which private optimizer should I use? From the practitioners' atlas
  (reports/practitioners.csv): at how many points DP-SGD and DP-GD need fewer samples than the
  best Spider, by how much, at what compute, with the scope (instances, d, eps, targets, knobs)
  and the definition of n* (the oracle's first hitting time); with reports/output_gap.csv, how
  many more samples the algorithm's own output (its last iterate) needs (`output_gap_sentence`).
"""

from __future__ import annotations

import math
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.report.layout import A4_LANDSCAPE
from analysis.report.practitioners_page import practitioners_page

#: The headline setting whose crossover the paragraph leads with.
HEADLINE = ("hard_valley", 0.1, 10.0)
#: How the crossovers of the knob sweeps are named in crossovers.csv's `source`.
SENSITIVITY = "headline4_sensitivity"
LAW = "headline4_law"


def _g(v: float) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float)) and math.isfinite(v) else "n/a"


def _source(c: pd.DataFrame) -> pd.Series:
    return c["source"].astype(str).str.split(" ").str[0]


def spider_answer(crossovers: pd.DataFrame | None) -> str:
    """The equal-privacy answer (module docstring); "" without crossovers."""
    if crossovers is None or not len(crossovers):
        return ""
    c = crossovers.assign(src=_source(crossovers))
    law = c[c["src"].str.startswith(LAW)]
    head = law[(law["problem"] == HEADLINE[0]) & np.isclose(law["eps"].astype(float), HEADLINE[1])
               & np.isclose(law["d"].astype(float), HEADLINE[2])]
    if head.empty:
        return ""
    h = head.iloc[0]
    a_star, slope = float(h["alpha_star"]), float(h.get("paired_slope", math.nan))
    if not (math.isfinite(a_star) and h["where"] == "inside"):
        return ""  # no crossover inside its bracket at the headline's setting: nothing to say
    # the paired slope of log(n*_adaptive / n*_Gaussian) on log alpha: above 0, the adaptive
    # Spider's ratio falls as alpha falls (it wins below alpha*); below 0, the reverse
    if math.isfinite(slope) and slope != 0:
        below, above = ("fewer", "more") if slope > 0 else ("more", "fewer")
        side = (f"needs {below} samples than the Gaussian Spider (3/7) for targets below alpha* = "
                f"{_g(a_star)} [{_g(h['ci_low'])}, {_g(h['ci_high'])}] and {above} above it "
                f"(paired slope {_g(slope)})")
    else:
        side = (f"and the Gaussian Spider (3/7) need equal samples at alpha* = {_g(a_star)} "
                f"[{_g(h['ci_low'])}, {_g(h['ci_high'])}]")
    text = (f"3/7 or 1/2 at equal privacy? Both Spiders calibrated tight (each spends all of its "
            f"eps), every knob at 1, samples counted as the oracle's n* (the first n whose best "
            f"iterate, judged by the exact population alpha_SOSP, reaches the target): on "
            f"{HEADLINE[0]} at eps {HEADLINE[1]:g}, d {HEADLINE[2]:g}, the adaptive tree Spider "
            f"(claimed exponent 1/2) {side}.")
    ranges = []
    for problem, g in law.groupby("problem", sort=True):
        inside = g[g["where"] == "inside"]
        if len(inside):
            ranges.append(f"{_g(inside['alpha_star'].min())}-{_g(inside['alpha_star'].max())} on "
                          f"{problem} (inside its bracket at {len(inside)} of {len(g)} settings)")
    if ranges:
        eps = law["eps"].astype(float)
        d = law["d"].astype(float)
        text += (f" Over eps {eps.min():g}-{eps.max():g} and d {d.min():g}-{d.max():g}, alpha* "
                 "moves " + "; ".join(ranges) + ".")
    sens = c[c["src"].str.startswith(SENSITIVITY)]
    parts = []
    for problem, g in sens.groupby("problem", sort=True):
        n = len(g)
        k = {w: int((g["where"] == w).sum()) for w in ("inside", "above", "below", "none")}
        parts.append(f"on {problem} inside its bracket at {k['inside']} of {n} settings, outside "
                     f"it at {k['above'] + k['below']}, absent at {k['none']}")
    if parts:
        text += (" With one knob of either Spider at 1/4 or 4, or all of them on a Latin "
                 "hypercube, the crossover lies " + "; ".join(parts) + ": where it falls depends "
                 "on the constants the O~ claims hide.")
    return text


#: The two Spiders whose claims are each other's rivals, as page 1 names them.
SPIDERS = {"gaussian_spider": "the Gaussian Spider (claim -7/3)",
           "adaptive_tree_spider": "the adaptive tree Spider (claim -2)"}


def rates_answer(claims: pd.DataFrame | None) -> str:
    """The rates on data (module docstring); "" where no Spider row carries a measured link."""
    if claims is None or not len(claims) or "link_deep" not in claims:
        return ""
    c = claims[claims["algorithm"].isin(list(SPIDERS)) & (claims["x"].astype(str) == "alpha")
               & pd.to_numeric(claims["link_deep"], errors="coerce").notna()]
    if "character" in c:
        c = c[c["character"].astype(str) == "hard"]
    if c.empty:
        return ""
    parts = []
    for (problem, eps, d), g in c.groupby(["problem", "eps", "d"], sort=True):
        one = []
        for _, r in g.sort_values("algorithm", ascending=False).iterrows():
            p, rival, m = float(r["predicted"]), float(r["rival_predicted"]), float(r["margin"])
            reached = "within m of its claim" if bool(r["link_reached"]) else \
                "not within m of its claim"
            told = (f"clear of the rival's {_g(rival)} +- m" if bool(r["link_excludes_rival"])
                    else f"not clear of the rival's {_g(rival)} +- m")
            one.append(f"{SPIDERS[r['algorithm']]} reads {float(r['link_deep']):.3f} "
                       f"[{float(r['link_deep_low']):.3f}, {float(r['link_deep_high']):.3f}] "
                       f"({reached} {_g(p)} +- {m:.2g}; {told})")
        a, b = float(g["link_deep_from"].min()), float(g["link_deep_to"].max())
        parts.append(f"at eps {float(eps):g} (d {float(d):g}, {problem}, alpha {_g(a)}-{_g(b)}) "
                     + " and ".join(one))
    told = c["link_excludes_rival"].map(lambda v: str(v).strip().lower() == "true")
    verdict = (f" At {int(told.sum())} of {len(c)} of these settings the curve is clear of its "
               "rival's claim: on data the two Spiders' rates differ as their papers say."
               if told.all() else
               f" At {int((~told).sum())} of {len(c)} settings the curve is not clear of its "
               "rival's claim: there the data do not tell 3/7 from 1/2.")
    return ("3/7 or 1/2 on data? Over two decades of alpha, each Spider under its paper's own "
            "noise (theory calibration, knobs at 1), the slope of n* against alpha over the "
            "deepest decade (95% CI over the seeds): " + "; ".join(parts) + ". A curve clear of "
            "its rival's band does not follow the rival's rate there; hidden log factors only "
            "steepen a curve toward small alpha, so a curve shallower than -7/3 beyond the "
            "margin is beyond what the 3/7 claim's logs allow." + verdict)


def output_gap_sentence(gap: pd.DataFrame | None) -> str:
    """What the oracle's n* leaves out (issue 70, item 5): per algorithm, the range of samples
    to its own output over the oracle's n* (reports/output_gap.csv); "" without it."""
    if gap is None or not len(gap):
        return ""
    from analysis.comparisons.output_gap import output_gap_lines

    eps = ", ".join(f"{v:g}" for v in sorted(gap["eps"].astype(float).unique()))
    targets = gap["target_alpha"].astype(float)
    return (f" Samples to the algorithm's own output (its last iterate, what the code returns) "
            f"against the oracle's n*, on {', '.join(sorted(gap['problem'].astype(str).unique()))} "
            f"at eps {eps}, targets {_g(targets.min())}-{_g(targets.max())} "
            "(reports/output_gap.csv): " + "; ".join(output_gap_lines(gap)) + ".")


def practitioner_answer(practitioners: pd.DataFrame | None,
                        gap: pd.DataFrame | None = None) -> str:
    """The practitioner's answer (module docstring); "" without the practitioners' rows.
    `gap`: reports/output_gap.csv, the own-output samples against the oracle's n*."""
    if practitioners is None or not len(practitioners):
        return ""
    from analysis.comparisons.practitioners import recommendation

    t = practitioners.assign(instance=practitioners["instance"].fillna(""))  # NaN keys group out
    scope = (f"{', '.join(sorted(t['problem'].astype(str).unique()))}; d "
             f"{', '.join(f'{v:g}' for v in sorted(t['d'].astype(float).unique()))}; eps "
             f"{', '.join(f'{v:g}' for v in sorted(t['eps'].astype(float).unique()))}")
    parts = []
    for metric, g in t.groupby("metric", sort=True):
        x = g["x"].astype(float)
        passes = g.loc[g["algorithm"] == "dp_sgd", "passes"].astype(float)
        most = f"; DP-SGD takes up to {_g(passes.max())} passes" if passes.notna().any() else ""
        rec = recommendation(g).split(" n* is the oracle's")[0].rstrip(".")
        parts.append(f"At {metric} targets {_g(x.min())}-{_g(x.max())}, {rec}{most}.")
    return ("Which private optimizer should I use? On the practitioners' atlas (" + scope
            + "; every knob at 1; samples are the oracle's n*, not samples to the algorithm's own "
            "output, an evaluation over the search's runs, which share one seed across n, not "
            "a release): " + " ".join(parts) + output_gap_sentence(gap))


def answers_page(pdf: object, crossovers: pd.DataFrame | None,
                 practitioners: pd.DataFrame | None, claims: pd.DataFrame | None = None,
                 gap: pd.DataFrame | None = None) -> bool:
    """Page 1 (module docstring): the paragraphs, each wrapped to the page; False (no page)
    where none has its data (a store's own report: the claims come first)."""
    paragraphs = [(head, p) for head, p in (("The Spiders at equal privacy", spider_answer(crossovers)),
                                            ("The Spiders' rates on data", rates_answer(claims)),
                                            ("The practitioner",
                                             practitioner_answer(practitioners, gap)))
                  if p]
    if not paragraphs:
        return False
    fig = plt.figure(figsize=A4_LANDSCAPE)
    fig.text(0.04, 0.95, "The two answers", fontsize=15, weight="bold", va="top")
    y = 0.89
    for head, p in paragraphs:
        fig.text(0.04, y, head, fontsize=11, weight="bold", va="top")
        body = textwrap.fill(p, 150)
        fig.text(0.04, y - 0.035, body, fontsize=9, va="top", linespacing=1.35)
        y -= 0.035 + 0.0215 * (body.count("\n") + 1) + 0.05
    fig.text(0.04, 0.05, "Where each number comes from: reports/crossovers.csv (the crossovers, "
             "`make reference-law` / `reference-sensitivity`) and reports/practitioners.csv "
             "(`make reference-practitioners`); the claims and their verdicts follow.",
             fontsize=7, va="bottom")
    pdf.savefig(fig)
    plt.close(fig)
    practitioners_page(pdf, practitioners)  # the practitioner's answer in detail (its atlas)
    return True


__all__ = ["answers_page", "output_gap_sentence", "practitioner_answer", "rates_answer",
           "spider_answer"]
