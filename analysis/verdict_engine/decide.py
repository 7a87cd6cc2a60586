"""One fit row's verdict from the whole engine (fifth edition, issue 55; `decide`).

Two tests, each with a declared margin m (`margins.margin`) and its resolution on the row's own
design, and a chain that links them:

1. **The primary test: the curve against its own rules** (`rules_test`): the residual slope
   (measured minus the rules' slope) with its CI against [-m, m]: "follows its rules", "slower /
   faster than its rules by X", "undecided against its rules", or "no rules curve" (why).
   Column `rules_verdict`, the residual in `rules_residual*`, the pure power laws it would call
   "follows" in `rules_accepts_*`.
2. **The claim as the rules' asymptote** (`asymptote`): the rules' local slope in the claim's
   limit, computed beyond the design (`asymptote*` columns). A row that follows its rules whose
   asymptote meets the claim reads "follows its rules, whose asymptote is the claim": a chain
   in two links, each able to break.
3. **The O~ test, named for what it is** (`claim_test`): the seeds' CI against the claim with
   its declared logs (the band p + [min(0, A), max(0, A)] +- m): "consistent", "not refuted by
   the O~ claim (accepts a..b)", "slower / faster than claimed (even with logs)". Where the range
   of pure power laws it accepts holds the rival claim or is wider than the gap to it, the row
   reads "the O~ claim is untestable on this window (accepts a..b)".

The verdict, in a fixed order: no prediction keeps "no claim" / "inconclusive"; a design with
fewer than 5 points or under 1.5 decades reads "design too short" with the design that would
do; the chain where it holds; "follows its rules, whose asymptote is not the claim" where only
its first link does; the O~ test's direction where its CI clears the band; "approaches its bound
from below" where the measured local slopes, extrapolated in 1 / |ln x| to the claim's limit,
meet the claim within m and move toward it into the regime; else the O~ test's label
(untestable where it is). The privacy-share gate adds a floor flag (median share below
PRIVATE_SHARE_MIN: measured from eps = inf controls where at least half the design points have
one, else the rules' split, said in `private_share_source`), so the regime gate makes the row
"not in regime" whatever the above. No verdict changes on a difference smaller than m.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from algorithms.claims import Claim
from analysis.verdict_engine import bound_level, log_aware, log_factors, margins, rules_test, window
from analysis.verdict_engine.asymptote import rules_asymptote
from analysis.verdict_engine.claim_test import UNTESTABLE, claim_test, window_that_would_test
from analysis.verdict_engine.design import Design
from analysis.verdict_engine.rules_curve import (
    PRIVATE_SHARE_MIN,
    RulesCurve,
    ratio_trend,
    rules_binding_n,
)

#: The verdicts of the fifth edition besides the O~ test's labels (`claim_test`).
FOLLOWS_CHAIN = "follows its rules, whose asymptote is the claim"
FOLLOWS_OTHER = "follows its rules, whose asymptote is not the claim"
APPROACHES = "approaches its bound from below"
DESIGN_TOO_SHORT = "design too short"
#: Kept for readers of fourth-edition CSVs (verdict_changes): the old allowance's label.
UP_TO_LOGS = "consistent up to logs"


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float)) and math.isfinite(v) else "-"


def _rules_columns(out: dict[str, Any], design: Design, rules: RulesCurve, view: str,
                   calibration: str, row: dict[str, Any]) -> None:
    med = design.medians
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
                   private_share_source="the rules' bound (no eps = inf control)",
                   rules_private_share=float(np.nanmedian(share)))
    # budget use (issue 43, item 2): the steps run against the rules' horizon T, per point
    steps = design.context["n_steps"].to_numpy(float) / rules.horizon
    out["steps_per_horizon"] = " ".join(_fmt(v) for v in steps) if np.isfinite(steps).any() else ""


def decide(row: dict[str, Any], design: Design, claim: Claim | None, rules: RulesCurve | None,
           rng: np.random.Generator, calibration: str = "theory",
           measured_share: np.ndarray | None = None) -> dict[str, Any]:
    """The engine's columns for one fit row (`row`: a `run_fit` row with exponent, ci_low,
    ci_high, predicted, view, x, verdict, flags and, for a Spider, rival_predicted). Returns the
    updated columns (module docstring): the verdict and its reason; the primary test's residual,
    CI, decision and acceptance range; the rules' asymptote; the O~ test's band, label and
    acceptance range; the margin, the resolution and the chain in one line; the log power share
    t, the bound's measured constant and the local slopes (reported, not deciding); the rules'
    slope / ratio / private share (`rules`: `rules_curve` on the design, None for none);
    `measured_share`: the measured private share per design point (None: no eps = inf
    control)."""
    view, x = row["view"], row["x"]
    seed_lo, seed_hi = row["ci_low"], row["ci_high"]
    out: dict[str, Any] = {"seed_ci_low": seed_lo, "seed_ci_high": seed_hi}
    med = design.medians if len(design) else np.array([])
    ly = np.log(med) if len(med) else med
    if rules is not None:
        _rules_columns(out, design, rules, view, calibration, row)
    if measured_share is not None and 2 * int(np.isfinite(measured_share).sum()) >= len(measured_share):
        out.update(private_share=float(np.nanmedian(measured_share)),
                   private_share_min=float(np.nanmin(measured_share)),
                   private_share_source="measured: 1 - eps = inf control / median")
    spread = window.drop_end_spread(design.x, ly, window.ols_slope) if len(design) else math.nan
    est = row["exponent"]
    p = row.get("predicted")
    has_p = isinstance(p, (int, float)) and math.isfinite(p) and claim is not None
    m = margins.margin(p if has_p else None)
    out.update(window_spread=spread, ci_low=seed_lo, ci_high=seed_hi, margin=m,
               design_points=len(design), design_decades=margins.decades(design.x))
    # 1. the primary test: the curve against its own rules
    rt = rules_test.rules_test(design.x, ly, rules, est, seed_lo, seed_hi, m, view, x)
    out.update(rules_residual=rt.residual, rules_residual_low=rt.low, rules_residual_high=rt.high,
               rules_residual_spread=rt.spread, rules_verdict=rt.text,
               rules_accepts_low=rt.accepts_low, rules_accepts_high=rt.accepts_high)
    if rt.decision == rules_test.NO_RULES:
        why = ("the rules give no positive finite value at every design point"
               if rules is not None and rules.source else "the family states no rules bound")
        out["rules_verdict"] = f"{rules_test.NO_RULES}: {why}"
    half = (seed_hi - seed_lo) / 2 if math.isfinite(seed_hi - seed_lo) else math.nan
    out["resolution"] = (f"CI half-width {_fmt(half)} against m {_fmt(m)}"
                         + ("; the design cannot show equivalence to its rules at m"
                            if rt.decision != rules_test.NO_RULES
                            and not math.isfinite(rt.accepts_low) else ""))
    if not has_p:
        return out
    # 2. the claim as the rules' asymptote
    asym = rules_asymptote(design, view, calibration, p, m) if rules is not None and rules.available \
        else None
    if asym is not None:
        out.update(asymptote=asym.limit, asymptote_accuracy=asym.accuracy,
                   asymptote_meets=asym.meets, asymptote_x_within_m=asym.x_within_m,
                   asymptote_note=asym.note)
    # 3. the O~ test with its declared logs (t is reported; the band decides)
    reg = log_factors.log_regressor(claim, design, view, x,
                                    rules.horizon if rules is not None else None)
    allowance = log_factors.slope_allowance(reg, design.x) if reg.varying else 0.0
    lp = log_aware.log_power_fit(design, p, reg.z, rng=rng)
    rival = row.get("rival_predicted", math.nan)
    rival = float(rival) if isinstance(rival, (int, float)) else math.nan
    ct = claim_test(est, seed_lo, seed_hi, p, allowance, m, view, x, rival)
    c, c_at = bound_level.measured_constant(claim, design, view)
    local = window.local_slopes(design.x, ly) if len(design) >= 2 else np.array([])
    limit, approaching = bound_level.approaches_limit(design.x, ly, p, x, m) \
        if len(design) >= 4 else (math.nan, False)
    out.update(log_factors=reg.text, log_missing="; ".join(reg.missing), log_power=lp.t,
               log_power_low=lp.t_low, log_power_high=lp.t_high, log_allowance=allowance,
               claim_band_low=ct.band_low, claim_band_high=ct.band_high, claim_test=ct.label,
               accepts_low=ct.accepts_low, accepts_high=ct.accepts_high,
               untestable=ct.why_untestable if ct.untestable else "",
               rival_predicted=rival, bound_constant=c, bound_at=c_at,
               local_slopes=" ".join(_fmt(v) for v in local), local_limit=limit,
               approaching=approaching)
    if ct.untestable:
        would = window_that_would_test(design.x, x, est, seed_lo, seed_hi, p, allowance, m, rival)
        out["untestable"] = f"{ct.why_untestable}; {would}" if would else ct.why_untestable
    out["chain"] = _chain(rt, asym, p, x)
    if math.isfinite(rival) and abs(rival - p) > 1e-12:
        out["separates_rival"] = _separates(rt, asym, rival)
    _gate(out, row, design)
    seed_ci = f"{_fmt(est)} [{_fmt(seed_lo)}, {_fmt(seed_hi)}]"
    band = f"[{_fmt(ct.band_low)}, {_fmt(ct.band_high)}]"
    o_text = (f"O~ test: {seed_ci} against {_fmt(p)}{' times ' + reg.text if reg.varying else ''} "
              f"+- m {_fmt(m)}, band {band}: {ct.label}; {ct.accepts}")
    short = margins.design_check(design.x, x)
    if short:
        out.update(verdict=DESIGN_TOO_SHORT, verdict_reason=f"{short}; {out['chain']}; {o_text}")
        return out
    directional = "than claimed" in ct.label
    if rt.decision == rules_test.FOLLOWS and asym is not None and asym.meets:
        out.update(verdict=FOLLOWS_CHAIN, verdict_reason=f"{out['chain']}; {o_text}")
    elif rt.decision == rules_test.FOLLOWS and asym is not None and math.isfinite(asym.limit):
        out.update(verdict=FOLLOWS_OTHER, verdict_reason=f"{out['chain']}; {o_text}")
    elif directional and out["approaching"]:
        out.update(verdict=APPROACHES, verdict_reason=(
            f"secant {seed_ci} against {_fmt(p)}, but the local slopes {out['local_slopes']} "
            f"move toward it and extrapolate to {_fmt(limit)} (within m {_fmt(m)}); {o_text}"))
    elif ct.untestable and not directional:
        out.update(verdict=f"{UNTESTABLE} ({ct.accepts})",
                   verdict_reason=f"{out['untestable']}; {o_text}; {out['chain']}")
    else:
        label = ct.label + (f" ({ct.accepts})" if ct.label != "consistent" and not directional
                            else "")
        out.update(verdict=label, verdict_reason=f"{o_text}; {out['chain']}")
    return out


def _chain(rt: rules_test.RulesTest, asym: Any, p: float, x: str) -> str:
    """The chain in one line: the rules test, then the rules' asymptote against the claim."""
    if rt.decision == rules_test.NO_RULES:
        return "no rules curve: the chain cannot be formed"
    first = (f"{rt.text} (residual {_fmt(rt.residual)} [{_fmt(rt.low)}, {_fmt(rt.high)}], m "
             f"{_fmt(rt.margin)}; accepts "
             + (f"{_fmt(rt.accepts_low)}..{_fmt(rt.accepts_high)}" if math.isfinite(rt.accepts_low)
                else "nothing at m") + ")")
    if asym is None or not math.isfinite(asym.limit):
        return f"{first}; the rules' asymptote: {asym.note if asym is not None else 'no rules'}"
    where = (f", within m of the claim from {x} {asym.x_within_m:.2g}"
             if math.isfinite(asym.x_within_m) else ", never within m of the claim")
    verdict = "is the claim" if asym.meets else f"is not the claim's {_fmt(p)}"
    note = f" ({asym.note})" if asym.note else ""
    return f"{first}; the rules' slope tends to {asym.text}{where}: its asymptote {verdict}{note}"


def _separates(rt: rules_test.RulesTest, asym: Any, rival: float) -> str:
    """Whether the chain tells this claim from the rival's on this window."""
    if rt.decision == rules_test.NO_RULES or not math.isfinite(rt.accepts_low):
        return "no: the rules test accepts nothing at m on this design"
    if asym is None or not asym.meets:
        return "no: the rules' asymptote is not the claim"
    if rt.accepts_low <= rival <= rt.accepts_high:
        return (f"no: the rules test accepts {_fmt(rt.accepts_low)}..{_fmt(rt.accepts_high)}, "
                f"the rival's {_fmt(rival)} among them")
    return (f"yes: the rules test accepts {_fmt(rt.accepts_low)}..{_fmt(rt.accepts_high)}, not the "
            f"rival's {_fmt(rival)}, and the rules' asymptote is the claim")


def _gate(out: dict[str, Any], row: dict[str, Any], design: Design) -> None:
    """The privacy-share gate: a floor flag, so the one regime gate (verdicts.apply_gate) acts."""
    share_med = out.get("private_share", math.nan)
    if math.isfinite(share_med) and share_med < PRIVATE_SHARE_MIN and design.private:
        whose = "measured" if out.get("private_share_source", "").startswith("measured") \
            else "the rules'"
        flag = (f"floor: {whose} private share over the window (median {share_med:.2f}) is "
                f"below {PRIVATE_SHARE_MIN:g}: the statistical term carries part of the slope")
        out["flags"] = "; ".join(f for f in (row.get("flags", ""), flag) if f)
