"""Path length and budget (Scientific protocol item 2: do the rules or the optimization set
n*?): `path_table`, per target-alpha group of the SOSP Spiders' theory-mode cells, the median n*
beside the first O1 batch, the rules' own budget, the steps and the privacy share of the budget,
and the slopes of the steps, the budget and the first batch against alpha.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from algorithms import get_algorithm
from algorithms.sosp.spider import KNOB_DEFAULTS
from analysis.declarations import StoreData
from analysis.points import theory_mask
from analysis.verdict_engine import rates


def path_table(data: StoreData) -> pd.DataFrame:
    """For target-alpha cells: per (problem, algorithm, d, eps, target), the median n* beside
    the first O1 batch and the rules' own budget (theory_budget), the median number of steps
    and the horizon T, and the privacy share of the rules' budget, 1 - budget(eps = inf) /
    budget(eps) (Scientific protocol item 2: do the rules or the optimization set n*?).
    Also the slope of log(steps) against log(alpha) per (problem, algorithm, d, eps): about -2
    when the instance is hard for the algorithm; and the slopes of the rules' budget and of the
    first O1 batch against log(alpha) (the rules' own prediction, log factors included)."""
    from algorithms import Privacy
    from problems import get_problem

    df = data.cells
    df = df[(df["status"] == "ok") & df["target_alpha"].notna()]
    df = df[np.array([getattr(get_algorithm(a), "family", "") == "sosp_spider"
                      for a in df["algorithm"]], dtype=bool)]
    df = df[theory_mask(df)]
    if df.empty:
        return pd.DataFrame()
    rows = []
    keys = ["problem", "algorithm", "d", "eps", "delta", "target_alpha"]
    for key, g in df.groupby(keys, sort=True):
        prob, alg, d, eps, delta, ta = key
        first = g["params_used"].iloc[0]
        cls = get_algorithm(alg)
        constants = get_problem(prob, d=int(d), **(g["problem_params"].iloc[0] or {})).constants
        try:
            inf_budget = cls.theory_params(constants, None, int(d), Privacy(math.inf, delta),
                                           target_alpha=float(ta), **KNOB_DEFAULTS)["theory_budget"]
            share = 1.0 - inf_budget / first["theory_budget"]
        except (ValueError, KeyError, ZeroDivisionError):
            share = math.nan
        n_star = g["samples_to_target"]
        rows.append({
            "problem": prob, "algorithm": alg, "d": int(d), "eps": eps, "target_alpha": ta,
            "runs": len(g), "censored": int(g["censored"].sum()),
            "n_star": float(g["n_star"].median()),  # the store's n_star: censored = inf
            "first_o1_batch": float(g["first_o1_batch"].median()),
            "n_star_over_b": float((n_star / g["first_o1_batch"]).median()),
            "theory_budget": float(first["theory_budget"]),
            "steps": float(g["n_steps"].median()), "T": float(first["T"]),
            "privacy_share": share,
        })
    out = pd.DataFrame(rows)
    slopes = {}
    for key, g in df.groupby(["problem", "algorithm", "d", "eps"], sort=True):
        if g["target_alpha"].nunique() >= 2:
            ok = g[g["samples_to_target"].notna()]
            if ok["target_alpha"].nunique() >= 2:
                f = rates.fit_points(ok["target_alpha"].to_numpy(), ok["n_steps"].to_numpy().astype(float),
                                     n_boot=500)
                slopes[key] = (f.exponent, f.ci_low, f.ci_high)
    out["steps_slope"] = [slopes.get((r.problem, r.algorithm, r.d, r.eps), (math.nan,) * 3)[0]
                          for r in out.itertuples()]
    # What the rules themselves predict over this window, log factors (tree depth ~ log T,
    # log 1/delta inside eps_eff) included: slopes of the rules' budget and first batch.
    for col, src in (("rules_budget_slope", "theory_budget"), ("first_batch_slope", "first_o1_batch")):
        vals = {}
        for key, g in out.groupby(["problem", "algorithm", "d", "eps"]):
            if g["target_alpha"].nunique() >= 2:
                vals[key] = float(np.polyfit(np.log(g["target_alpha"]), np.log(g[src]), 1)[0])
        out[col] = [vals.get((r.problem, r.algorithm, r.d, r.eps), math.nan) for r in out.itertuples()]
    return out
