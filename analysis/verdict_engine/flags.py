"""The measurements behind a fit's contamination flags (the window is never moved, only
flagged; Scientific protocol items 6 and 7), which `analysis.claims.run_fit` raises:
- ceiling: a point in the window whose run never left the start saddle, or a window whose top
  is within 10x of the start saddle's alpha_SOSP (`start_point` names the start; for the
  excess-risk metric the start's value is `_excess_at_x0`);
- floor (error view): a design point whose median is within 3x of the eps = inf median of the
  same (algorithm, problem, n, d) (`_floor_check`); "floor unchecked" (advisory) counts the
  design points with no such eps = inf run to compare with;
- censored: points that never reached their threshold (counted; see analysis.verdict_engine.rates).
The ceiling and floor flags fail the regime gate (`analysis.verdict_engine.verdicts`).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from analysis.declarations import FitSpec, StoreData


def _excess_at_x0(data: StoreData, sub: pd.DataFrame) -> pd.Series:
    """F(x0) - min F for each cell's instance (exact: the problem's own `excess_risk` at its
    start), the excess-risk metric's counterpart of grad_x0."""
    from problems import get_problem

    cache: dict[str, float] = {}
    out = []
    for name, d, params in zip(sub["problem"], sub["d"], sub["instance_params"], strict=True):
        key = f"{name}|{int(d)}|{params}"
        if key not in cache:
            prob = get_problem(name, **{**json.loads(params), "d": int(d)})
            cache[key] = float(prob.excess_risk(prob.x0))
        out.append(cache[key])
    return pd.Series(out, index=sub.index)


def _floor_flag(data: StoreData, sub: pd.DataFrame, fit: FitSpec) -> bool:
    return _floor_check(data, sub, fit)[0]


def _floor_check(data: StoreData, sub: pd.DataFrame, fit: FitSpec) -> tuple[bool, int, int]:
    """(floor hit, design points with no eps = inf control, design points) of a private
    error-view fit: a point is checked against the eps = inf median of its own (algorithm,
    problem instance, n, d); one with no such control cannot be checked, which the fit says
    (an advisory flag: the regime forecast still gates), rather than passing in silence."""
    if fit.view != "error":
        return False, 0, 0
    if not np.isfinite(sub["eps"].to_numpy(float)).any():  # a non-private fit IS the floor:
        return False, 0, 0  # comparing its points with themselves flagged every one (issue 29)
    keys = ["algorithm", "problem", "instance_params", "n", "d"]
    med = sub.groupby([*keys, "x"])["y"].median()
    cells = data.cells
    inf = cells[(cells["status"] == "ok") & ~np.isfinite(cells["eps"])]
    if inf.empty:
        return False, len(med), len(med)
    # Per instance (problem parameters included), not per problem name: two instances of one
    # problem in a store (e.g. a GLM at rank 5 and rank 10) have floors of their own.
    inf = inf.assign(instance_params=[json.dumps(p or {}, sort_keys=True) for p in inf["problem_params"]])
    ref = inf.groupby(keys)[fit.y].median()
    hit, missing = False, 0
    for (alg, prob, params, n, d, _x), value in med.items():
        floor = ref.get((alg, prob, params, n, d))
        if floor is None or not np.isfinite(floor):
            missing += 1
        elif value <= 3 * floor:
            hit = True
    return hit, missing, len(med)


def start_point(sub: pd.DataFrame) -> str:
    """How the ceiling flag names the start x0 of the fit's instance: "the start saddle" where
    x0 is one (grad F(x0) = 0, lambda_min < 0), else "the start x0" with its gradient norm."""
    from analysis.metrics import sosp_alpha
    from problems import get_problem

    r = sub.iloc[0]
    prob = get_problem(r["problem"], d=int(r["d"]), **json.loads(r["instance_params"]))
    s = sosp_alpha(prob, prob.x0)
    if s["grad_norm"] <= 1e-9 * max(1.0, s["alpha"]) and s["lambda_min"] < 0:
        return "the start saddle"
    return f"the start x0 (||grad F(x0)|| = {s['grad_norm']:.3g}, not a saddle)"
