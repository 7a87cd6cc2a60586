"""What a fit is held against: the metric it measures (`fit_metric`, `claim_metric`, `Y_METRIC`),
the exponent the algorithm's claim on that metric predicts (`predicted_slope`, from
`matching_claim`) and the slope its implemented rules predict over the same design points, log
factors included (`rules_prediction`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from algorithms import get_algorithm
from algorithms.sosp.spider import KNOB_DEFAULTS
from analysis.declarations import FitSpec


def rules_prediction(sub: pd.DataFrame, fit: FitSpec, calibration: str) -> float:
    """The slope the algorithm's own implemented rules predict over the fit's design points:
    log theory_budget (the rules' sample budget, with the log factors they contain: the tree
    depth log T, log 1/delta, log 1/alpha in the escape window) against log x, computed from
    `theory_params` at each design point with the knobs at 1 (not fitted to measurements).
    Sample-complexity view only (NaN otherwise, or with fewer than two design points)."""
    from algorithms import Privacy
    from problems import get_problem

    if fit.view != "sample_complexity" or sub["x"].nunique() < 2:
        return math.nan
    cls = get_algorithm(sub["algorithm"].iloc[0])
    if getattr(cls, "family", "") != "sosp_spider":  # only the Spiders' rules state a budget
        return math.nan
    xs, budgets = [], []
    for xv, g in sub.groupby("x"):
        r = g.iloc[0]
        constants = get_problem(r["problem"], d=int(r["d"]), **json.loads(r["instance_params"])).constants
        privacy = Privacy(float(r["eps"]), float(r["delta"]), calibration)
        try:
            p = cls.theory_params(constants, None, int(r["d"]), privacy,
                                  target_alpha=float(r["alpha"]), **KNOB_DEFAULTS)
        except ValueError:
            return math.nan
        xs.append(float(xv))
        budgets.append(float(p["theory_budget"]))
    return float(np.polyfit(np.log(xs), np.log(budgets), 1)[0])


def matching_claim(cls: Any, metric: str) -> Any:
    """The algorithm's claim on `metric`, None if it declares none on that metric (a fit of
    another metric, e.g. DP-GD's population ||grad F|| beside its empirical claim, has no
    claimed slope and so no verdict, rather than the first claim's)."""
    return next((c for c in getattr(cls, "claims", ()) if c.metric == metric), None)


def predicted_slope(cls: Any, fit: FitSpec, metric: str, private: bool = True) -> float | None:
    """The exponent the algorithm's claim on `metric` predicts for the fit: its privacy term's
    where the cells are private, its statistical term's (the one in n alone) where every cell
    is non-private (eps = inf); None where the claim predicts nothing for this x."""
    claim = matching_claim(cls, metric)
    if claim is None:
        return None
    if not private:
        if fit.view != "error" or fit.x not in ("n", "d", "rank"):
            return None
        stat = claim.statistical_term
        return stat.exponent(fit.x) if stat is not None else None
    try:
        return claim.predicted_slope(fit.view, fit.x)
    except ValueError:
        return None


#: The claim metric each stored column measures (error view).
Y_METRIC = {"alpha_best": "alpha_sosp", "alpha_last": "alpha_sosp", "alpha_selected": "alpha_sosp",
            "grad_norm_best": "grad_norm", "pop_grad_best": "grad_norm", "pop_grad_last": "grad_norm",
            "emp_grad_best": "emp_grad_norm", "emp_grad_last": "emp_grad_norm",
            "emp_grad_selected": "emp_grad_norm", "excess_best": "excess_risk",
            "excess_last": "excess_risk", "alpha_at_emp_best": "alpha_sosp",
            "emp_alpha_best": "emp_alpha_sosp", "emp_alpha_last": "emp_alpha_sosp",
            "emp_alpha_selected": "emp_alpha_sosp"}


def fit_metric(fit: FitSpec, algorithm: str) -> str:
    """The metric a fit measures: its y column's (error view) or, for samples-to-target, the
    metric the algorithm's cells are targeted on (its first claim's)."""
    if fit.view == "sample_complexity":
        return claim_metric(algorithm)
    return Y_METRIC.get(fit.y, "other")


def claim_metric(algorithm: str) -> str:
    """The metric of the algorithm's first claim (alpha_sosp when it claims nothing)."""
    cls = get_algorithm(algorithm)
    return cls.claims[0].metric if cls.claims else "alpha_sosp"
