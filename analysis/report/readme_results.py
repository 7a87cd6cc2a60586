"""README Results as tables (issue 59, item 2): the headline, the crossover and the atlas, each a
small table and one sentence, read from the committed CSVs (reports/reference_exponents.csv,
reports/crossovers.csv, reports/crossover_laws.csv, reports/atlas_fair.csv) so that the README,
the report and the CSVs agree digit for digit. `dprates claims --measured ... --update-readme`
writes them between the README's results-tables markers; a test fails when they disagree.

Every sentence is derived from the rows (which Spider follows its rules, whether the rules tests
exclude the rival's claim, which side wins where): nothing here is typed about a result.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.verdict_engine.typed import share_source

#: The headline fit: both Spiders on the hard valley, samples to a target alpha, theory mode.
HEADLINE_SPEC, HEADLINE_FIT = "headline2", "valley_n_star_vs_alpha"
SPIDERS = {"gaussian_spider": "Gaussian Spider (3/7)", "adaptive_tree_spider": "adaptive tree Spider (1/2)"}
SHORT = {"gaussian_spider": "Gaussian", "adaptive_tree_spider": "adaptive"}
#: The crossover law's own specs (knobs at 1), as crossovers.csv names their sources.
LAW_SOURCES = ("headline4_law_eps", "headline4_law_d", "headline4_law_ramp_eps", "headline4_law_ramp_d")


def _num(v: object, fmt: str = ".3g") -> str:
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "-"
    return format(f, fmt) if math.isfinite(f) else "-"


def _signed(v: object) -> str:
    return _num(v, "+.2f")


def _ci(v: object, lo: object, hi: object, fmt: str = ".3g") -> str:
    return f"{_num(v, fmt)} [{_num(lo, fmt)}, {_num(hi, fmt)}]"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *["| " + " | ".join(r) + " |" for r in rows]]


def headline_rows(exponents: pd.DataFrame) -> pd.DataFrame:
    """The headline's two theory-mode rows (Gaussian first), empty when the CSV has none."""
    t = exponents[(exponents["spec"] == HEADLINE_SPEC) & (exponents["fit"] == HEADLINE_FIT)
                  & (exponents["mode"] == "theory") & exponents["algorithm"].isin(SPIDERS)]
    return t.sort_values("algorithm", key=lambda c: c.map(list(SPIDERS).index))


SPIDER_HEADER = ["Spider", "claimed", "measured [95% CI]", "its rules", "residual [95% CI], margin",
                 "against its rules", "rules test accepts", "O~ test accepts", "private share"]


#: What the headline table's less obvious columns hold (printed under it).
SPIDER_COLUMNS_NOTE = (
    "n* is the oracle's: the samples at which the best iterate so far, judged by the exact "
    "population alpha_SOSP, first reaches the target (a user gets the algorithm's own output "
    "instead; samples to that output are not yet measured). Slopes are of log n* on log alpha. "
    "Residual: measured minus its rules' slope, decided "
    "against the margin m (follows / slower / faster / undecided); 'accepts': the pure power "
    "laws each test would pass on this design; private share: 1 - n*(eps = inf) / n*(eps), "
    "measured against eps = inf controls ((rules') where only the rules' split exists).")


def spider_rows(t: pd.DataFrame) -> list[list[str]]:
    """One row of SPIDER_HEADER per claims row (as the CSV stores it): claimed and measured
    slope, its rules' slope, the residual against the declared margin and the decision, what
    the rules test and the O~ test accept on this design, and the private share (measured
    against eps = inf controls; "(rules')" where it is the rules' split)."""
    rows = []
    for r in t.to_dict("records"):
        untestable = isinstance(r.get("untestable"), str) and r["untestable"].strip()
        rows.append([SPIDERS.get(r["algorithm"], r["algorithm"]), _num(r.get("predicted")),
                     _ci(r.get("exponent"), r.get("ci_low"), r.get("ci_high")),
                     _num(r.get("rules_predicted")),
                     f"{_signed(r.get('rules_residual'))} [{_signed(r.get('rules_residual_low'))}, "
                     f"{_signed(r.get('rules_residual_high'))}], m {_num(r.get('margin'), '.2g')}",
                     str(r.get("rules_verdict", "-")),
                     f"{_num(r.get('rules_accepts_low'))}..{_num(r.get('rules_accepts_high'))}",
                     f"{_num(r.get('accepts_low'))}..{_num(r.get('accepts_high'))}"
                     + (" (untestable)" if untestable else ""),
                     # unmarked: measured against eps = inf controls; the rules' split is the
                     # fallback where no control exists, and says so
                     _num(r.get("private_share"), ".2f")
                     + ("" if share_source(r.get("private_share_measured"),
                                          r.get("private_share_source", "")) == "measured"
                        else " (rules')")])
    return rows


def spider_finding(t: pd.DataFrame) -> str:
    """What the rows show, in one clause each: whether every Spider follows its own rules,
    whether each rules test excludes the rival's slope, whether an O~ test is untestable."""
    follows = all(str(v) == "follows its rules" for v in t["rules_verdict"])
    separates = "separates_rival" in t and all(str(v).startswith("yes") for v in t["separates_rival"])
    untestable = "untestable" in t and t["untestable"].fillna("").astype(str).str.strip().ne("").any()
    return (("both Spiders follow their own rules within the declared margin m" if follows and
             len(t) == 2 else "every Spider follows its own rules within the declared margin m"
             if follows else "not every Spider follows its own rules")
            + ("; each rules test excludes the rival's slope, so this window tells 3/7 from 1/2 "
               "through the rules" if separates else
               "; the rules tests do not both exclude the rival's slope")
            + (", while the O~ test alone cannot for a Spider marked untestable (its accepted "
               "range holds the rival's slope)." if untestable else "."))


def headline_table(exponents: pd.DataFrame) -> list[str]:
    """The README's headline: the sentence and the two Spiders' rows (`spider_rows`)."""
    t = headline_rows(exponents)
    if t.empty:
        return [f"(no {HEADLINE_SPEC} / {HEADLINE_FIT} rows in the CSV)"]
    r0 = t.iloc[0]
    seeds = round(float(r0["n_points"]) / float(r0["n_design"])) if _num(r0["n_design"]) != "-" else 0
    sentence = (f"Samples n* to reach alpha on `hard_valley` (eps {_num(r0['eps'], 'g')}, d "
                f"{_num(r0['d'], 'g')}, {int(r0['design_points'])} targets over alpha "
                f"{r0['window']}, {seeds} paired seeds, the papers' noise formulas): "
                + spider_finding(t))
    return [sentence, "", *_table(SPIDER_HEADER, spider_rows(t)), "",
            SPIDER_COLUMNS_NOTE]


def crossover_table(crossovers: pd.DataFrame, laws: pd.DataFrame) -> list[str]:
    """The crossover law's conditions (knobs at 1, fair calibration): alpha* with its CI and
    bracket, the paired slope against the rules' own, the measured private shares and the
    paired slope's gate; then each family's law."""
    src = crossovers["source"].astype(str).str.split(" ").str[0]
    t = crossovers[src.isin(LAW_SOURCES) & (crossovers["constants"] == "knobs at 1")]
    if t.empty:
        return ["(no crossover-law rows in the CSV)"]
    t = t.sort_values(["problem", "d", "eps"])
    rows = []
    for r in t.itertuples():
        gate = getattr(r, "paired_gate", "")
        gate = gate if isinstance(gate, str) and gate else "no eps = inf control: not read"
        rows.append([f"`{r.problem}`", _num(r.eps, "g"), _num(r.d, "g"),
                     _ci(r.alpha_star, r.ci_low, r.ci_high), str(r.where),
                     _ci(r.paired_slope, r.paired_ci_low, r.paired_ci_high),
                     _num(r.rules_paired_slope),
                     f"{_num(getattr(r, 'share_adaptive', math.nan), '.2f')} / "
                     f"{_num(getattr(r, 'share_gaussian', math.nan), '.2f')}",
                     gate.split(";")[0]])
    inside = int((t["where"] == "inside").sum())
    gates = t["paired_gate"] if "paired_gate" in t else pd.Series([""] * len(t))
    in_regime = int(gates.astype(str).eq("in regime").sum())
    sentence = (f"Where the adaptive tree Spider starts to need fewer samples than the Gaussian "
                f"one, both calibrated tight (each spends all of eps), knobs at 1: alpha* at "
                f"{len(t)} (eps, d), {inside} inside their brackets of paired targets; the "
                "paired slope (the claims' difference is 1/3) is read only where both Spiders' "
                f"measured private shares reach 0.9 ({in_regime} of {len(t)} do).")
    out = [sentence, "", *_table(["family", "eps", "d", "alpha* [95% CI]", "where",
                                  "paired slope [95% CI]", "rules' paired slope",
                                  "private share adaptive / Gaussian", "paired slope"], rows)]
    for law in laws.sort_values("problem").itertuples():
        terms = []
        if math.isfinite(float(law.eps_exp)):
            terms.append(f"eps^{_ci(law.eps_exp, law.eps_ci_low, law.eps_ci_high)}")
        if math.isfinite(float(law.d_exp)):
            terms.append(f"d^{_ci(law.d_exp, law.d_ci_low, law.d_ci_high)}")
        if terms:
            out += ["", f"Law on `{law.problem}`: alpha* ~ {' '.join(terms)} (through "
                        f"{int(law.fitted)} of {int(law.conditions)} crossovers; the rules "
                        f"scaled by each Spider's measured budget use predict "
                        f"{_num(law.pred_eps_exp)} and {_num(law.pred_d_exp)})."]
    return out


def atlas_summary(atlas: pd.DataFrame) -> list[str]:
    """Per (family, d, eps) of the fair atlas: the winner at the largest and at the smallest
    measured target, with the loser's sample ratio and its CI."""
    t = atlas[(atlas["view"] == "samples to target") & atlas["algorithm"].isin(SPIDERS)]
    if t.empty:
        return ["(no samples-to-target rows in the atlas CSV)"]
    rows = []
    for (problem, d, eps), g in t.groupby(["problem", "d", "eps"], sort=True):
        xs = sorted(g["x"].unique())
        cells = []
        for x in (xs[-1], xs[0]):
            p = g[g["x"] == x]
            if (p["reading"] != "winner").all():
                cells.append(str(p["reading"].iloc[0]))
                continue
            win = str(p["winner"].iloc[0])
            lose = p[p["algorithm"] != win]
            short = SHORT.get(win, win)
            if lose.empty:
                cells.append(short)
                continue
            r = lose.iloc[0]
            if "value" in r and not math.isfinite(float(r["value"])):  # censored: a lower bound
                bound = float(r.get("bound", math.nan)) / float(p[p["algorithm"] == win]
                                                                 ["value"].iloc[0])
                cells.append(f"{short}, more than {_num(bound)}x fewer (runner-up censored)"
                             if math.isfinite(bound) else f"{short}? runner-up censored")
                continue
            cells.append(f"{short}, {_ci(r['ratio'], r['ratio_low'], r['ratio_high'])}x fewer")
        rows.append([f"`{problem}`", _num(d, "g"), _num(eps, "g"),
                     f"{_num(xs[0])}..{_num(xs[-1])} ({len(xs)})", *cells])
    sentence = ("Which Spider needs fewer samples at each measured point (fair calibration, "
                "paired seeds; `dprates atlas reports/atlas_fair.csv --at n=...,d=...,eps=... "
                "--target ...` answers between them): at the largest and at the smallest target.")
    return [sentence, "", *_table(["family", "d", "eps", "targets (count)", "largest target",
                                   "smallest target"], rows)]


def results_block(exponents: pd.DataFrame, crossovers: pd.DataFrame, laws: pd.DataFrame,
                  atlas: pd.DataFrame) -> str:
    """The README's generated Results tables (markdown)."""
    parts = ["**The headline.**", *headline_table(exponents), "",
             "**The crossover.**", *crossover_table(crossovers, laws), "",
             "**The atlas.**", *atlas_summary(atlas)]
    return "\n".join(parts).strip()
