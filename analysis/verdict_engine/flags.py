"""The measurements behind a fit's contamination flags (the window is never moved, only
flagged; Scientific protocol items 6 and 7), which `analysis.claims.run_fit` raises:
- ceiling: a point in the window whose run never left the start saddle, or a window whose top
  is within 10x of the start saddle's alpha_SOSP (`start_point` names the start; for the
  excess-risk metric the start's value is `_excess_at_x0`);
- floor (error view): a design point whose median is within 3x of the eps = inf median of the
  same (algorithm, problem, n, d) (`_floor_check`); "floor unchecked" (advisory) counts the
  design points with no such eps = inf run to compare with; the same controls give the
  measured private share (`measured_private_share`) the privacy-share gate reads first;
- censored: points that never reached their threshold (counted; see analysis.verdict_engine.rates).
The ceiling and floor flags fail the regime gate (`analysis.verdict_engine.verdicts`).
"""

from __future__ import annotations

import json
import math

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
    pairs = _controls(data, sub, fit)
    if pairs is None:
        return False, 0, 0
    floors = pairs["floor"].to_numpy(float)
    known = np.isfinite(floors)
    hit = bool((pairs["median"].to_numpy(float)[known] <= 3 * floors[known]).any())
    return hit, int((~known).sum()), len(pairs)


def measured_private_share(data: StoreData, sub: pd.DataFrame, fit: FitSpec) -> np.ndarray | None:
    """The private share of each design point's error, measured (issue 42, item 4): 1 - the
    eps = inf median of the same (algorithm, instance, n, d) / the point's median, clipped to
    [0, 1], one value per distinct x in increasing order (the median over the groups at one x);
    NaN where a point has no control. None for a fit with no private point or no control at
    all. The control is what the same rules reach without noise at the same n and d: the
    statistical and optimization error the private run pays too, so the share is the part of
    the measured error that privacy adds, not the split of an upper bound."""
    pairs = _controls(data, sub, fit)
    if pairs is None or not np.isfinite(pairs["floor"].to_numpy(float)).any():
        return None
    share = (1 - pairs["floor"] / pairs["median"]).clip(0.0, 1.0)
    return share.groupby(pairs["x"]).median().sort_index().to_numpy(float)


def _controls(data: StoreData, sub: pd.DataFrame, fit: FitSpec) -> pd.DataFrame | None:
    """Per (algorithm, instance, n, d, x) of an error-view private fit: the median and its
    eps = inf control's median (NaN where none); None where the check does not apply."""
    if fit.view != "error":
        return None
    if not np.isfinite(sub["eps"].to_numpy(float)).any():  # a non-private fit IS the floor:
        return None  # comparing its points with themselves flagged every one (issue 29)
    keys = ["algorithm", "problem", "instance_params", "n", "d"]
    med = sub.groupby([*keys, "x"])["y"].median().rename("median").reset_index()
    cells = data.cells
    inf = cells[(cells["status"] == "ok") & ~np.isfinite(cells["eps"])]
    if inf.empty:
        return med.assign(floor=math.nan)
    # Per instance (problem parameters included), not per problem name: two instances of one
    # problem in a store (e.g. a GLM at rank 5 and rank 10) have floors of their own.
    inf = inf.assign(instance_params=[json.dumps(p or {}, sort_keys=True) for p in inf["problem_params"]])
    ref = inf.groupby(keys)[fit.y].median().rename("floor").reset_index()
    return med.merge(ref, on=keys, how="left")


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
