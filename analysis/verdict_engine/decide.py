"""One fit row's verdict from the whole engine (fifth edition, issue 55; sixth, issue 70; `decide`).

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

The verdict (sixth edition, issue 70: `verdict_rule`, typed in `typed`): the first test that
decides, on any design: the bound exceeded beyond the seeds' interval; the primary test
rejected ("slower / faster than its rules by X", whatever the O~ test says); the chain where it
holds ("follows its rules, whose asymptote is (not) the claim"); the O~ test's rejection;
"untestable" where its range holds the rival; "design too short" only where no test decides and
every test's resolution is wider than the gap it must tell (with the design that would decide);
else the O~ test's agreement. A decision on a design under the length rule (>= 5 points over
>= 1.5 decades) is marked in `resolution`. Each row carries its kind (`verdict_kind`) and the
band of pure power-law slopes that receive it (`verdict_band_low` .. `verdict_band_high`).
"Approaches its bound from below" is no longer a verdict (not monotone in the slope); the
local slopes and their extrapolated limit stay in the row. The privacy-share gate adds a floor
flag (median share below PRIVATE_SHARE_MIN: measured from eps = inf controls where at least
half the design points have one, else the rules' split, said in `private_share_source`), so the
regime gate makes the row "not in regime" whatever the above. No verdict changes on a
difference smaller than m.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from algorithms.claims import Claim
from algorithms.regime_flags import FlagKind, RegimeFlag
from analysis.verdict_engine import (
    bound_level,
    log_aware,
    log_factors,
    margins,
    rules_test,
    verdict_rule,
    window,
)
from analysis.verdict_engine.asymptote import rules_asymptote
from analysis.verdict_engine.claim_test import claim_test, window_that_would_test
from analysis.verdict_engine.design import Design
from analysis.verdict_engine.measured_link import MeasuredLink, measured_link, rules_profile
from analysis.verdict_engine.rules_curve import (
    PRIVATE_SHARE_MIN,
    RulesCurve,
    ratio_trend,
    rules_binding_n,
)
from analysis.verdict_engine.typed import NAMES, VerdictKind

#: The verdicts of the fifth edition besides the O~ test's labels (`claim_test`).
FOLLOWS_CHAIN = NAMES[VerdictKind.FOLLOWS_CHAIN]
FOLLOWS_OTHER = NAMES[VerdictKind.FOLLOWS_OTHER]
#: The fifth edition's label, no longer a verdict (verdict_rule); kept for readers of its CSVs.
APPROACHES = "approaches its bound from below"
DESIGN_TOO_SHORT = NAMES[VerdictKind.DESIGN_TOO_SHORT]
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
                   private_share_measured=False,
                   rules_private_share=float(np.nanmedian(share)))
    # budget use (issue 43, item 2): the steps run against the rules' horizon T, per point
    steps = design.context["n_steps"].to_numpy(float) / rules.horizon
    out["steps_per_horizon"] = " ".join(_fmt(v) for v in steps) if np.isfinite(steps).any() else ""


def _measured_share_columns(out: dict[str, Any], measured_share: np.ndarray | None) -> None:
    """The measured private share replaces the rules' where at least half the design points
    have an eps = inf control."""
    if measured_share is not None and 2 * int(np.isfinite(measured_share).sum()) >= len(measured_share):
        out.update(private_share=float(np.nanmedian(measured_share)),
                   private_share_min=float(np.nanmin(measured_share)),
                   private_share_source="measured: 1 - eps = inf control / median",
                   private_share_measured=True)


def decide(row: dict[str, Any], design: Design, claim: Claim | None, rules: RulesCurve | None,
           rng: np.random.Generator, calibration: str = "theory",
           measured_share: np.ndarray | None = None) -> dict[str, Any]:
    """The engine's columns for one fit row (`row`: a `run_fit` row with exponent, ci_low,
    ci_high, predicted, view, x, verdict, rival_predicted), as the module docstring lists
    them; `rules`: `rules_curve` on the design (None: none); `measured_share`: the measured
    private share per design point (None: no eps = inf control)."""
    view, x = row["view"], row["x"]
    seed_lo, seed_hi = row["ci_low"], row["ci_high"]
    out: dict[str, Any] = {"seed_ci_low": seed_lo, "seed_ci_high": seed_hi}
    med = design.medians if len(design) else np.array([])
    ly = np.log(med) if len(med) else med
    if rules is not None:
        _rules_columns(out, design, rules, view, calibration, row)
    _measured_share_columns(out, measured_share)
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
                   asymptote_note=asym.note, asymptote_tail=asym.tail,
                   asymptote_tail_x=asym.tail_x, asymptote_past_jump=asym.past_jump)
    # 2b. the claim link on data (issue 70, item 3): the deepest decade of a two-decade design
    rival = row.get("rival_predicted", math.nan)
    rival = float(rival) if isinstance(rival, (int, float)) else math.nan
    link = _measured(design, p, m, rival, rules, rng, view, calibration)
    out.update(_link_columns(link, p, m, rival, x))
    # 3. the O~ test with its declared logs (t is reported; the band decides)
    reg = log_factors.log_regressor(claim, design, view, x,
                                    rules.horizon if rules is not None else None)
    allowance = log_factors.slope_allowance(reg, design.x) if reg.varying else 0.0
    lp = log_aware.log_power_fit(design, p, reg.z, rng=rng)
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
    if link.available:
        out["chain"] += f"; the claim link on data: {out['claim_link'].removeprefix('measured: ')}"
    if math.isfinite(rival) and abs(rival - p) > 1e-12:
        out["separates_rival"] = _separates(rt, asym, rival, link)
    _gate(out, design)
    seed_ci = f"{_fmt(est)} [{_fmt(seed_lo)}, {_fmt(seed_hi)}]"
    band = f"[{_fmt(ct.band_low)}, {_fmt(ct.band_high)}]"
    o_text = (f"O~ test: {seed_ci} against {_fmt(p)}{' times ' + reg.text if reg.varying else ''} "
              f"+- m {_fmt(m)}, band {band}: {ct.label}; {ct.accepts}")
    # the sixth edition's rule (verdict_rule): the first test that decides, on any design
    horizon = rules.horizon if rules is not None else None

    def allowance_of(d: Design) -> float:
        r = log_factors.log_regressor(claim, d, view, x, horizon)
        return log_factors.slope_allowance(r, d.x) if r.varying else 0.0

    tests = verdict_rule.row_tests(
        design, est, seed_lo, seed_hi, rules.slope(design.x) if rules is not None else math.nan,
        rt.low, rt.high, rules, m, view, x, p, rival, allowance_of,
        bool(asym is not None and asym.meets), bool(asym is not None and math.isfinite(asym.limit)),
        link.deep if link.available else (math.nan, math.nan, math.nan))
    out.update(_verdict_columns(verdict_rule.choose(tests), tests, design, x, out, o_text,
                                (seed_hi - seed_lo) / 2, m))
    return out


def _verdict_columns(v: Any, tests: Any, design: Design, x: str, out: dict[str, Any], o_text: str,
                     half: float, m: float) -> dict[str, Any]:
    """The chosen verdict's columns (`verdict_rule.choose`): its text, kind and band, the bound
    check's worst point, the resolution's design note and the reason (the deciding test's
    statement, the chain, the O~ test's line, the band)."""
    worst_low, worst_ratio, worst_x = tests.exceed.worst()
    cols: dict[str, Any] = dict(
        verdict=v.text, verdict_kind=v.kind.value, test_verdict_kind=v.kind.value,
        verdict_band_low=v.band_low, verdict_band_high=v.band_high, bound_exceed_low=worst_low,
        bound_exceed_ratio=worst_ratio, bound_exceed_x=worst_x, resolution=out["resolution"])
    short = margins.design_check(design.x, x)
    if short:
        cols["resolution"] += f"; decided on a short design: {short.split('; would do')[0]}" \
            if v.kind not in (VerdictKind.DESIGN_TOO_SHORT,) else f"; {short.split('; would do')[0]}"
    band = f"; verdict band {v.band}" if v.band else ""
    if v.kind is VerdictKind.EXCEEDS_BOUND:
        reason = (f"the seeds' mean is {_fmt(worst_ratio)}x the rules' bound at {x} "
                  f"{_fmt(worst_x)} (one-sided lower bound {_fmt(worst_low)}x at "
                  f"{verdict_rule.EXCEED_LEVEL:g} over {len(design)} points)")
    elif v.kind is VerdictKind.DESIGN_TOO_SHORT:
        reason = f"no test decides; would decide: {verdict_rule.would_decide(design, x, half, m)}"
    elif v.kind is VerdictKind.UNTESTABLE:
        reason = out["untestable"]
    else:
        reason = ""
    cols["verdict_reason"] = "; ".join(r for r in (reason, out["chain"], o_text) if r) + band
    return cols


def _measured(design: Design, p: float, m: float, rival: float, rules: RulesCurve | None,
              rng: np.random.Generator, view: str, calibration: str) -> MeasuredLink:
    """The row's measured claim link (`measured_link`), its resamples from a generator spawned
    from the row's (the row's own draws stay those of the fifth edition), with the rules'
    profile where the link is available."""
    link = measured_link(design, p, m, rival, rules.values if rules is not None else None,
                         rng.spawn(1)[0])
    if link.available and rules is not None and rules.available:
        link = replace(link, profile=rules_profile(design, view, calibration))
    return link


def _link_columns(link: MeasuredLink, p: float, m: float, rival: float, x: str) -> dict[str, Any]:
    """The measured claim link's columns (`measured_link`): its line, the deepest and first
    decades' slopes and the trend with CIs, the rules' slope there, the local slopes with CIs
    and the rules' local-slope profile (text: "x:slope[low,high]" / "x:slope", space-separated)."""
    out: dict[str, Any] = {"claim_link": link.text(p, m, rival, x)}
    if not link.available:
        return out
    out.update(link_deep=link.deep[0], link_deep_low=link.deep[1], link_deep_high=link.deep[2],
               link_deep_from=link.deep_window[0], link_deep_to=link.deep_window[1],
               link_first=link.first[0], link_trend=link.trend[0], link_trend_low=link.trend[1],
               link_trend_high=link.trend[2], link_rules_deep=link.rules_deep,
               link_reached=link.reached, link_excludes_rival=link.excluded_rival,
               link_local=" ".join(f"{a:.3g}:{b:.4g}[{c:.4g},{d:.4g}]" for a, b, c, d in link.local),
               rules_profile=" ".join(f"{a:.3g}:{b:.4g}" for a, b in link.profile))
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
    tail = (f"; past that jump the rules' local slope is {_fmt(asym.past_jump)} (median), "
            f"{_fmt(asym.tail)} at {x} {asym.tail_x:.2g}" if math.isfinite(asym.past_jump) else "")
    return (f"{first}; the rules' slope tends to {asym.text}{where}: its asymptote {verdict}{note}"
            + tail)


def _separates(rt: rules_test.RulesTest, asym: Any, rival: float, link: MeasuredLink) -> str:
    """Whether the chain tells this claim from the rival's on this window: on data where the
    design carries the measured link (its deepest decade's CI clears the rival +- m), else by
    the rules test and the rules' asymptote."""
    if link.available:
        s, lo, hi = link.deep
        verdict = "yes (measured)" if link.excluded_rival else "no (measured)"
        clears = "clears" if link.excluded_rival else "does not clear"
        return (f"{verdict}: the deepest decade's {_fmt(s)} [{_fmt(lo)}, {_fmt(hi)}] {clears} the "
                f"rival's {_fmt(rival)} +- m")
    if rt.decision == rules_test.NO_RULES or not math.isfinite(rt.accepts_low):
        return "no: the rules test accepts nothing at m on this design"
    if asym is None or not asym.meets:
        return "no: the rules' asymptote is not the claim"
    if rt.accepts_low <= rival <= rt.accepts_high:
        return (f"no: the rules test accepts {_fmt(rt.accepts_low)}..{_fmt(rt.accepts_high)}, "
                f"the rival's {_fmt(rival)} among them")
    return (f"yes: the rules test accepts {_fmt(rt.accepts_low)}..{_fmt(rt.accepts_high)}, not the "
            f"rival's {_fmt(rival)}, and the rules' asymptote is the claim")


def _gate(out: dict[str, Any], design: Design) -> None:
    """The privacy-share gate: a floor flag (`share_gate`, a typed `RegimeFlag` the caller adds
    to the row's flags), so the one regime gate (verdicts.apply_gate) acts."""
    share_med = out.get("private_share", math.nan)
    if math.isfinite(share_med) and share_med < PRIVATE_SHARE_MIN and design.private:
        whose = "measured" if out.get("private_share_measured", False) else "the rules'"
        out["share_gate"] = [RegimeFlag(
            FlagKind.FLOOR, f"{whose} private share over the window (median {share_med:.2f}) is "
                            f"below {PRIVATE_SHARE_MIN:g}: the statistical term carries part of "
                            "the slope")]
