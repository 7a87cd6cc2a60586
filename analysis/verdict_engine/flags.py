"""The measurements behind a fit's contamination flags (the window is never moved, only
flagged; Scientific protocol items 6 and 7), which `analysis.claims.run_fit` raises:
- ceiling: a point in the window whose run never left the start saddle, or a window whose top
  is within 10x of the start saddle's alpha_SOSP (`start_point` names the start; for the
  excess-risk metric the start's value is `excess_at_x0`);
- floor (error view): a design point whose median is within 3x of the eps = inf median of the
  same (algorithm, problem instance, n, d, knob setting) (`floor_check`); "floor unchecked"
  (advisory) counts the design points with no such eps = inf run to compare with;
- measured private share (`measured_private_share`), which the privacy-share gate reads
  first (decide, step 3), from the same kind of controls in both views: the error view's
  (n, d) controls, and in the samples-to-target view the eps = inf runs configured for the
  same target alpha (1 - n*_inf / n*_private), each at the point's own knob setting;
- censored: points that never reached their threshold (counted; see analysis.verdict_engine.rates).
The ceiling and floor flags fail the regime gate (`analysis.verdict_engine.verdicts`).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from analysis.declarations import FitSpec, StoreData
from analysis.verdict_engine.envelope import hd_median


def excess_at_x0(data: StoreData, sub: pd.DataFrame) -> pd.Series:
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
    return floor_check(data, sub, fit)[0]


def floor_check(data: StoreData, sub: pd.DataFrame, fit: FitSpec) -> tuple[bool, int, int]:
    """(floor hit, design points with no eps = inf control, design points) of a private
    error-view fit: a point is checked against the eps = inf median of its own (algorithm,
    problem instance, n, d, knob setting); one with no such control cannot be checked, which
    the fit says (an advisory flag: the regime forecast still gates), rather than passing in
    silence. Error view only: in the samples-to-target view the measured private share gates
    (`measured_private_share`, decide step 3)."""
    if fit.view != "error":
        return False, 0, 0
    pairs = _controls(data, sub, fit)
    if pairs is None:
        return False, 0, 0
    floors = pairs["floor"].to_numpy(float)
    known = np.isfinite(floors)
    hit = bool((pairs["median"].to_numpy(float)[known] <= 3 * floors[known]).any())
    return hit, int((~known).sum()), len(pairs)


def measured_private_share(data: StoreData, sub: pd.DataFrame, fit: FitSpec) -> np.ndarray | None:
    """The private share of each design point's measurement (issues 42 and 55), one value per
    distinct x of `sub` in increasing order, clipped to [0, 1]; NaN where a point has no control;
    None for a fit with no private point or no control at all.

    - error view: 1 - the eps = inf median of y / the point's median, the control being the
      same algorithm on the same instance at the same n and d;
    - samples-to-target view: 1 - n*_inf / n*_private (medians; a censored run counts as
      n* = inf), the control being the same algorithm on the same instance at the same d and
      the same target alpha and budget (the point's alpha: x itself for x = alpha, the cell's
      target for x = eps or d; for a fixed-budget cell's threshold, the control's curve at that
      threshold and the same n). A control whose median never reaches the target is no control
      (NaN); a private median that never does while its control does has share 1.

    In both views the control runs at the point's own knob setting (the cells' whole `params`:
    alpha_mult, horizon_mult, c_T, fixed overrides): a control at other knob values is not a
    control. delta is not matched (a non-private run calibrates no noise). Where a design point
    has several knob settings (a tuned fit, a samples-to-target fit), the share is that of the
    setting the envelope reads there, the smallest private median; where it spans several
    (n, d, instance) groups, the median over them. The control is what the same rules reach
    without noise at the same point: the statistical and optimization cost the private run
    pays too, so the share is the part of the measurement privacy adds, not the split of an
    upper bound."""
    pairs = _controls(data, sub, fit)
    if pairs is None or not np.isfinite(pairs["floor"].to_numpy(float)).any():
        return None
    med, floor = pairs["median"].to_numpy(float), pairs["floor"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(np.isfinite(floor) & (med > 0), 1 - floor / med, np.nan)
    share = pd.Series(np.clip(share, 0.0, 1.0), index=pairs.index)
    return share.groupby(pairs["x"]).median().sort_index().to_numpy(float)


#: The columns that identify a design point's control, beside its knob setting, per view
#: (`target` is the point's alpha in the samples-to-target view; n is its budget there, one per
#: spec for target cells, the design size of a fixed-budget cell read at a threshold).
_MATCH = {"error": ("algorithm", "problem", "instance_params", "n", "d"),
          "sample_complexity": ("algorithm", "problem", "instance_params", "n", "d", "target")}


def _setting(params: object, algorithm: str | None = None) -> str:
    """A cell's knob setting or instance as a comparable string (its whole params, numbers by
    value: 1 == 1.0; {} when unknown). With `algorithm`, a knob at the algorithm's default is
    dropped: a cell run at {} and one at {"alpha_mult": 1} are the same configuration (a spec
    without a knob grid against its lender's grid, `controls_from`)."""
    p = params if isinstance(params, dict) else {}
    if algorithm is not None:
        defaults = _knob_defaults(algorithm)
        p = {k: v for k, v in p.items() if not (k in defaults and _same(v, defaults[k]))}
    return json.dumps({k: float(v) if isinstance(v, (int, float)) and not isinstance(v, bool)
                       else v for k, v in p.items()}, sort_keys=True)


def _median(y: np.ndarray, censored_inf: bool) -> float:
    """The median of a design point's runs: NaN counts as inf (never reached) in the
    samples-to-target view, and is skipped (a metric not computed) in the error view."""
    y = np.asarray(y, float)
    if censored_inf:
        return float(np.median(np.where(np.isnan(y), np.inf, y))) if len(y) else math.nan
    y = y[~np.isnan(y)]
    return float(np.median(y)) if len(y) else math.nan


def _controls(data: StoreData, sub: pd.DataFrame, fit: FitSpec) -> pd.DataFrame | None:
    """Per (control match, x) of a private fit's points: the median of the knob setting the fit
    reads there and its eps = inf control's median ("floor", NaN where none); None where the
    check does not apply (another view, no private point)."""
    if fit.view not in _MATCH or sub.empty:
        return None
    if not np.isfinite(sub["eps"].to_numpy(float)).any():  # a non-private fit IS the floor:
        return None  # comparing its points with themselves flagged every one (issue 29)
    samples = fit.view == "sample_complexity"
    keys = list(_MATCH[fit.view])
    cells = data.cells
    settings = _settings_by_key(cells)
    pts = sub.assign(setting=[settings.get(k, "{}") for k in sub["key"]] if "key" in sub
                     else "{}",
                     instance_params=[_setting(json.loads(p)) for p in sub["instance_params"]])
    if samples:
        pts = pts.assign(target=pts["alpha"].astype(float),
                         budget_cell=pts["target_alpha"].isna() if "target_alpha" in pts else False)
    else:
        pts = pts.assign(budget_cell=False)
    rows = []
    for key, g in pts.groupby([*keys, "x"], sort=True, dropna=False):
        by = dict(list(g.groupby("setting")))
        # the envelope's choice where the point has several settings: the smallest
        # Harrell-Davis median (a censored run as inf), as `envelope.envelope_fit` chooses
        best = min(by, key=lambda s: (_hd(by[s]["y"].to_numpy(float)), s))
        rows.append({**dict(zip([*keys, "x"], key, strict=True)), "setting": best,
                     "median": _median(by[best]["y"].to_numpy(float), samples),
                     "budget_cell": bool(g["budget_cell"].iloc[0])})
    med = pd.DataFrame(rows)
    ok = cells["status"] == "ok" if "status" in cells else np.ones(len(cells), bool)
    inf = cells[ok & ~np.isfinite(cells["eps"].to_numpy(float))]
    if data.controls is not None and not data.controls.empty:  # lent by `controls_from`
        inf = pd.concat([inf, data.controls], ignore_index=True)
    if inf.empty:
        return med.assign(floor=math.nan)
    # Per instance (problem parameters included), not per problem name: two instances of one
    # problem in a store (e.g. a GLM at rank 5 and rank 10) have floors of their own.
    inf = inf.assign(instance_params=[_setting(p) for p in inf["problem_params"]],
                     setting=[_setting(p, a) for p, a in zip(inf["params"], inf["algorithm"],
                                                             strict=True)]
                     if "params" in inf else "{}")
    curves: dict[str, dict] = {}
    med["floor"] = [_control_median(data, inf, r, keys, fit, curves)
                    for r in med.itertuples(index=False)]
    return med


def _knob_defaults(algorithm: str) -> dict:
    """The knob defaults of a registered algorithm that has knobs (the Spiders); {} otherwise."""
    from algorithms import get_algorithm
    from algorithms.sosp.spider import KNOB_DEFAULTS

    try:
        cls = get_algorithm(algorithm)
    except (KeyError, ValueError):
        return {}
    if not hasattr(cls, "knob_defaults"):
        return {}
    return {**KNOB_DEFAULTS, **cls.knob_defaults}


def _same(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return a == b


def _hd(y: np.ndarray) -> float:
    """The envelope's median of one knob setting's runs (NaN, censored, as inf; NaN: none)."""
    y = np.where(np.isnan(y), np.inf, y)
    if not len(y):
        return math.inf
    m = float(hd_median(y))
    return m if not math.isnan(m) else math.inf


def _settings_by_key(cells: pd.DataFrame) -> dict[str, str]:
    if "key" not in cells or "params" not in cells:
        return {}
    return {k: _setting(p, a) for k, p, a in zip(cells["key"], cells["params"],
                                                   cells["algorithm"], strict=True)}


def _control_median(data: StoreData, inf: pd.DataFrame, r: object, keys: list[str],
                    fit: FitSpec, curves: dict[str, dict]) -> float:
    """The eps = inf median matching one design point `r` (NaN where none, or where the
    control itself never reached the target)."""
    c = inf[inf["setting"] == r.setting]
    for k in keys:
        v = getattr(r, k)
        if k == "target":
            continue
        if isinstance(v, str):
            c = c[c[k] == v]
        else:
            c = c[np.isclose(c[k].astype(float), float(v), rtol=1e-9, atol=0.0)]
    if c.empty:
        return math.nan
    if fit.view == "error":
        return _median(c[fit.y].to_numpy(float), censored_inf=False) if fit.y in c else math.nan
    target = float(r.target)
    ta = c["target_alpha"].astype(float) if "target_alpha" in c else pd.Series(np.nan, index=c.index)
    if not r.budget_cell:  # target cells: the control configured for the same target
        c = c[np.isclose(ta, target, rtol=1e-9, atol=0.0)]
        n_star = c["samples_to_target"].to_numpy(float) if len(c) else np.array([])
    else:  # a fixed-budget cell's threshold: the control's curve at the same budget n
        c = c[ta.isna().to_numpy()]
        n_star = _curve_samples(data, c["key"], target, curves) if len(c) else np.array([])
    if not len(n_star):
        return math.nan
    m = _median(n_star, censored_inf=True)
    return m if math.isfinite(m) else math.nan


def _curve_samples(data: StoreData, keys: pd.Series, threshold: float,
                   curves: dict[str, dict]) -> np.ndarray:
    """Samples each control run used to first reach `threshold` (NaN: never), from its
    samples-to-accuracy curve (`curves`: those loaded so far, by key)."""
    missing = [k for k in keys if k not in curves]
    if missing:
        curves.update(data.load_curves("samples_to_accuracy", missing))
    out = []
    for k in keys:
        c = curves.get(k)
        if c is None:
            continue
        th = np.asarray(c["threshold"], float)
        at = np.flatnonzero(np.isclose(th, threshold, rtol=1e-9, atol=0.0))
        s = c["samples"][at[0]] if len(at) else None
        out.append(math.nan if s is None else float(s))
    return np.array(out, float)


def start_point(sub: pd.DataFrame) -> str:
    """How the ceiling flag names the start x0 of the fit's instance: "the start saddle" where
    x0 is one (grad F(x0) = 0, lambda_min < 0), else "the start x0" with its gradient norm."""
    from problems import get_problem
    from problems.evaluation.metrics import sosp_alpha

    r = sub.iloc[0]
    prob = get_problem(r["problem"], d=int(r["d"]), **json.loads(r["instance_params"]))
    s = sosp_alpha(prob, prob.x0)
    if s["grad_norm"] <= 1e-9 * max(1.0, s["alpha"]) and s["lambda_min"] < 0:
        return "the start saddle"
    return f"the start x0 (||grad F(x0)|| = {s['grad_norm']:.3g}, not a saddle)"
