"""One fit row's verdict from the whole engine, in a fixed order (`decide`):

1. no prediction: the row keeps its verdict ("no claim" / "inconclusive");
2. the CI (seeds' bootstrap widened by the window spread) wider than MAX_CI_WIDTH:
   "inconclusive", except for a pure polylog claim (exponent 0 in x, declared logs in x), whose
   secant is wide from the curvature a polylog has: its log model's t decides (t's CI at most
   T_CI_MAX wide: inside [0, 1] "consistent up to logs", else "... even with logs");
3. the privacy-share gate: the median private share over the window below PRIVATE_SHARE_MIN
   adds a floor flag, so the regime gate makes it "not in regime". The share is measured
   (1 - eps = inf control / median, `flags.measured_private_share`) where at least half the
   design points have a control; only where they do not is it the rules' bound's split, which
   is an upper bound's and can put the weight on a statistical term the instance does not pay
   (both are reported: private_share with its source, rules_private_share);
4. the claim's slope inside the CI: "consistent";
5. the claim times its declared logs with a power share t in [0, 1] fits (t's CI, widened by
   its own window spread, meets [0, 1]): "consistent up to logs";
6. the rules' own slope inside the CI, where the rules' curve is itself the claim times its
   declared logs: "consistent up to the rules' log factors" (the curve follows the bound the
   implementation optimizes, not the stylized exponent); a rules bound with another power of x
   is not a log factor, and its row goes on to 7-8 with the rules' slope in its reason;
7. the local slopes approach the claim's into the regime: "approaches its bound from below";
8. otherwise "slower / faster than claimed", "... even with logs" where logs were allowed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from algorithms.claims import Claim
from analysis.verdict_engine import bound_level, log_aware, log_factors, verdicts, window
from analysis.verdict_engine.design import Design
from analysis.verdict_engine.rules_curve import (
    PRIVATE_SHARE_MIN,
    RulesCurve,
    ratio_trend,
    rules_binding_n,
)

UP_TO_LOGS = "consistent up to logs"
APPROACHES = "approaches its bound from below"
EVEN_WITH_LOGS = " even with logs"
#: The widest CI of the log power share t that decides a pure polylog claim (exponent 0 in x)
#: whose power CI is too wide (the declared allowance [0, 1] has width 1: a wider t CI cannot
#: tell inside from outside).
T_CI_MAX = 1.0


def _fmt(v: float) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float)) and math.isfinite(v) else "-"


def decide(row: dict[str, Any], design: Design, claim: Claim | None, rules: RulesCurve | None,
           rng: np.random.Generator, calibration: str = "theory",
           measured_share: np.ndarray | None = None) -> dict[str, Any]:
    """The engine's columns for one fit row (`row`: a `run_fit` row with exponent, ci_low,
    ci_high, predicted, view, x, verdict, flags). Returns the updated columns: the verdict and
    its reason, the CI the verdict reads (ci_low / ci_high) beside the seeds' (seed_ci_*), the
    window spread, the log power share t, the bound's measured constant, the local slopes, the
    rules' slope / ratio / private share (`rules`: `rules_curve` on the design, None for none);
    `measured_share`: the measured private share per design point (None: no eps = inf control)."""
    view, x = row["view"], row["x"]
    out: dict[str, Any] = {"seed_ci_low": row["ci_low"], "seed_ci_high": row["ci_high"]}
    med = design.medians if len(design) else np.array([])
    ly = np.log(med) if len(med) else med
    if rules is not None:
        ratio, trend = ratio_trend(design.x, med, rules)
        start = row.get("alpha_x0", math.nan)
        if view == "error" and isinstance(start, float) and rules.source:
            out["rules_binding_n"] = rules_binding_n(design, calibration, start)
        share = rules.share
        out.update(rules_predicted=rules.slope(design.x), rules_source=rules.source,
                   rules_ratio=" ".join(_fmt(v) for v in ratio) if rules.available else "",
                   rules_ratio_trend=trend)
        if np.isfinite(share).any():
            out.update(private_share=float(np.nanmedian(share)),
                       private_share_min=float(np.nanmin(share)),
                       private_share_source="the rules' bound",
                       rules_private_share=float(np.nanmedian(share)))
        # budget use (issue 43, item 2): the steps run against the rules' horizon T, per point
        steps = design.context["n_steps"].to_numpy(float) / rules.horizon
        out["steps_per_horizon"] = " ".join(_fmt(v) for v in steps) if np.isfinite(steps).any() else ""
    if measured_share is not None and 2 * int(np.isfinite(measured_share).sum()) >= len(measured_share):
        out.update(private_share=float(np.nanmedian(measured_share)),
                   private_share_min=float(np.nanmin(measured_share)),
                   private_share_source="measured: 1 - eps = inf control / median")
    spread = window.drop_end_spread(design.x, ly, window.ols_slope) if len(design) else math.nan
    est = row["exponent"]
    lo, hi = window.widen(est, row["ci_low"], row["ci_high"], spread) if math.isfinite(est) else \
        (row["ci_low"], row["ci_high"])
    out.update(window_spread=spread, ci_low=lo, ci_high=hi)
    p = row.get("predicted")
    if p is None or not isinstance(p, (int, float)) or not math.isfinite(p) or claim is None:
        return out
    reg = log_factors.log_regressor(claim, design, view, x,
                                    rules.horizon if rules is not None else None)
    lp = log_aware.log_power_fit(design, p, reg.z, rng=rng)
    t_spread = window.drop_end_spread(
        design.x, ly, lambda xx, yy: _t_of(xx, yy, p, reg.z, design.x)) if reg.varying else math.nan
    t_lo, t_hi = window.widen(lp.t, lp.t_low, lp.t_high, t_spread) if math.isfinite(lp.t) else \
        (lp.t_low, lp.t_high)
    c, c_at = bound_level.measured_constant(claim, design, view)
    local, approaching = bound_level.approach(design.x, ly, p, x,
                                              rules.share if rules is not None else None)
    out.update(log_factors=reg.text, log_missing="; ".join(reg.missing), log_power=lp.t,
               log_power_low=t_lo, log_power_high=t_hi, bound_constant=c, bound_at=c_at,
               local_slopes=" ".join(_fmt(v) for v in local), approaching=approaching)
    # The privacy-share gate: a floor flag, so the one regime gate (verdicts.apply_gate) acts.
    share_med = out.get("private_share", math.nan)
    if math.isfinite(share_med) and share_med < PRIVATE_SHARE_MIN and design.private:
        whose = "measured" if out.get("private_share_source", "").startswith("measured") \
            else "the rules'"
        flag = (f"floor: {whose} private share over the window (median {share_med:.2f}) is "
                f"below {PRIVATE_SHARE_MIN:g}: the statistical term carries part of the slope")
        out["flags"] = "; ".join(f for f in (row.get("flags", ""), flag) if f)
    width = verdicts.MAX_CI_WIDTH.get(view, math.inf)
    seed_ci = (f"{_fmt(est)} [{_fmt(lo)}, {_fmt(hi)}] (seeds [{_fmt(row['ci_low'])}, "
               f"{_fmt(row['ci_high'])}], window spread {_fmt(spread)})")
    # A pure polylog claim in x (no power of x: Pagan in d) is read by its log model alone.
    t_ok = p == 0 and reg.varying and math.isfinite(t_lo) and math.isfinite(t_hi) \
        and t_hi - t_lo <= T_CI_MAX
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo > width:
        if not t_ok:
            out.update(verdict="inconclusive", verdict_reason=f"CI {seed_ci} wider than {width:g}")
            return out
        # The power's CI is wide from curvature the claim's own logs predict (a polylog's local
        # slopes fall like K / log x): the log model is the claim's model, and its t is narrow.
        fits = t_lo <= 1 and t_hi >= 0
        # t multiplies the bound's own logs: above 1 the curve needs more than the claim allows
        # (slower), below 0 less than the claim without logs (faster), in every view.
        worse = "slower than claimed" if t_lo > 1 else "faster than claimed"
        out.update(verdict=UP_TO_LOGS if fits else worse + EVEN_WITH_LOGS, verdict_reason=(
            f"secant CI {seed_ci} wider than {width:g} (curvature), but {_fmt(p)} times "
            f"{reg.text} fits with t = {_fmt(lp.t)} [{_fmt(t_lo)}, {_fmt(t_hi)}] of the declared "
            f"powers{'' if fits else ', outside [0, 1]'}"))
        return out
    if lo <= p <= hi:
        out.update(verdict="consistent", verdict_reason=f"{seed_ci} covers {_fmt(p)}")
        return out
    if reg.varying and math.isfinite(t_lo) and t_lo <= 1 and t_hi >= 0:
        out.update(verdict=UP_TO_LOGS, verdict_reason=(
            f"{seed_ci} against {_fmt(p)}; {_fmt(p)} times {reg.text} fits with t = "
            f"{_fmt(lp.t)} [{_fmt(t_lo)}, {_fmt(t_hi)}] of the declared powers"))
        return out
    rules_slope = out.get("rules_predicted", math.nan)
    follows = math.isfinite(rules_slope) and lo <= rules_slope <= hi
    if follows and rules is not None and _rules_are_claim_times_logs(design.x, rules.values, p, reg):
        out.update(verdict=verdicts.UP_TO_LOGS, verdict_reason=(
            f"{seed_ci} against {_fmt(p)}: it follows the rules' own slope {_fmt(rules_slope)} "
            f"({out.get('rules_source', '')})"))
        return out
    if approaching:
        out.update(verdict=APPROACHES, verdict_reason=(
            f"secant {_fmt(est)} against {_fmt(p)}, but the local slopes "
            f"{out['local_slopes']} move toward {_fmt(p)} as x moves into the regime"))
        return out
    base = verdicts.verdict({"ci_low": lo, "ci_high": hi, "x": x}, p, view, x, max_width=math.inf)
    logs = f"; {reg.text} allows t in [0, 1], measured t = {_fmt(lp.t)} [{_fmt(t_lo)}, {_fmt(t_hi)}]" \
        if reg.varying else "; no declared log factor moves over this window"
    rules_note = (f"; it follows the rules' own slope {_fmt(rules_slope)}, whose bound is not the "
                  f"claim times its declared logs ({out.get('rules_source', '')})" if follows else "")
    out.update(verdict=base + (EVEN_WITH_LOGS if reg.varying else ""),
               verdict_reason=f"{seed_ci} against {_fmt(p)}{logs}{rules_note}")
    return out


#: How far outside [0, 1] the rules' own log power share may sit (numerical slack), and how far
#: the rules' slope may sit from the claim's where no declared log moves over the window.
RULES_T_SLACK, RULES_SLOPE_SLACK = 0.1, 0.02


def _rules_are_claim_times_logs(x: np.ndarray, values: np.ndarray, p: float, reg: Any) -> bool:
    """Whether the rules' own curve is the claim's power times the claim's declared logs (its
    log power share t in [0, 1], up to RULES_T_SLACK): only then is a curve that follows its rules
    "consistent up to the rules' log factors". A rules bound with another power of x (e.g. the
    statistical term sqrt(d/n) of a theorem against a printed sqrt(d)/n) is not a log factor."""
    ok = np.isfinite(values) & (values > 0)
    if ok.sum() < 2:
        return False
    lx, r = np.log(x[ok]), np.log(values[ok]) - p * np.log(x[ok])
    if not reg.varying:
        return abs(float(np.polyfit(lx, np.log(values[ok]), 1)[0]) - p) <= RULES_SLOPE_SLACK
    z = np.asarray(reg.z, float)[ok]
    zc = z - z.mean()
    if float(zc @ zc) < 1e-12:
        return False
    t = float((r - r.mean()) @ zc / float(zc @ zc))
    return -RULES_T_SLACK <= t <= 1 + RULES_T_SLACK


def _t_of(xx: np.ndarray, yy: np.ndarray, p: float, z_all: np.ndarray, x_all: np.ndarray) -> float:
    """t on a sub-window (the design points xx of x_all), for the window spread."""
    if len(xx) < 3:
        return math.nan
    idx = np.searchsorted(x_all, xx)
    z = z_all[idx]
    zc = z - z.mean()
    if float(zc @ zc) < 1e-12:
        return math.nan
    r = yy - p * np.log(xx)
    return float((r - r.mean()) @ zc / float(zc @ zc))
