"""The sixth edition's verdict rule (issue 70, items 1 and 4): which test decides a row, and the
band of true slopes that receives the row's verdict.

**A resolution rule, not a length rule.** A row is decided whenever one of its tests decides, on
any design (a short one is marked in `resolution`, not turned into "design too short"):

1. the measured curve above its own upper bound (the rules, knobs at 1) beyond the seeds'
   one-sided interval at some design point: "exceeds its bound" (`exceedance`);
2. the primary test rejected (the residual slope against the rules clears +-m): "slower / faster
   than its rules by X", whatever the O~ test says;
3. the primary test holds: "follows its rules and reaches the claim on its deepest decade" where
   the design spans two decades and the measured slope over its deepest decade lies within the
   claim's +-m (`measured_link`: the claim link on data), else "follows its rules, whose
   asymptote is (not) the claim" (the link read off the rules beyond the design);
4. the O~ test rejected: "slower / faster than claimed (even with logs)";
4b. the rules test undecided (or no rules), the O~ test not rejected, and the measured deepest
   decade of a two-decade design within the claim's +-m (`measured_link`): "reaches the claim on
   its deepest decade"; after the O~ rejection, so that the verdict stays monotone in the slope
   (a tilt moves the deepest decade and the whole window alike);
5. the O~ test's accepted range holds the rival claim (or is wider than the gap to it):
   "untestable";
6. no test decided and every test's resolution is wider than the gap it must tell (the CI
   half-width of the rules test and of the O~ test both above m): "design too short", with the
   design that would decide (`would_decide`);
7. else the O~ test's agreement: "consistent" / "not refuted by the O~ claim (accepts a..b)".

"Approaches its bound from below" (the fifth edition's extrapolation of the local slopes) is no
longer a verdict: a tilt of 0.005 moved a row between it and "slower than claimed" (issue 70),
so it could not be monotone in the slope; the local slopes and their limit stay reported.

**The verdict band** (`band`): the slopes s whose tilt of the row's own curve receives the row's
verdict kind. A tilt multiplies every run at design point x by (x / x_c)^(s - est), x_c the
design's geometric centre: the row's seeds, their spread and the curve's bend are kept (its
"own noise", as tests/headline_fixture.py plants), and a slope fit of the tilted runs reads
est + (s - est) = s with the same CI half-widths (the fit is linear in log y and draws the same
resamples) and the same window spread. So the rules test's CI moves by s - est, the O~ test's
by the same (its log allowance evaluated on the tilted values where a declared log reads them,
e.g. log n at n* in the samples view), and the bound check scales point i by
(x_i / x_c)^(s - est): the band is the verdict rule evaluated along s (a grid of 0.001 within 4
of the row's slope), it holds the row's slope by construction, and tests/test_planted_bands.py
replants every reference row from its committed points at its band's edges through the engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from analysis.verdict_engine import margins, verdicts
from analysis.verdict_engine.claim_test import ClaimOutcome, ClaimTest, claim_test
from analysis.verdict_engine.design import Design
from analysis.verdict_engine.rules_curve import RulesCurve
from analysis.verdict_engine.typed import Verdict, VerdictKind

#: The family-wise level of the bound check over a design's points (Bonferroni).
EXCEED_LEVEL = 0.05
#: The grid the band is evaluated on, and how far from the row's slope it looks.
BAND_STEP = 0.001
BAND_REACH = 4.0
#: Where the O~ test's log allowance moves with the measured values, the tilts it is evaluated at
#: (linear between).
ALLOWANCE_STEP = 0.05


@dataclass(frozen=True)
class Exceedance:
    """Per design point: the one-sided lower confidence bound of the seeds' mean over the rules'
    bound (NaN where not computable: a censored seed, fewer than 3 seeds, no rules)."""

    lower: np.ndarray
    ratio: np.ndarray  # the seeds' mean over the bound
    x: np.ndarray

    def worst(self, scale: np.ndarray | None = None) -> tuple[float, float, float]:
        """(largest lower bound, the mean ratio there, x there) with each point's values scaled
        by `scale` (a planted curve), NaNs where nothing is computable."""
        s = np.ones_like(self.lower) if scale is None else scale
        low = self.lower * s
        if not np.isfinite(low).any():
            return math.nan, math.nan, math.nan
        i = int(np.nanargmax(low))
        return float(low[i]), float(self.ratio[i] * s[i]), float(self.x[i])


def exceedance(design: Design, rules: RulesCurve | None) -> Exceedance:
    """The bound check's statistics (module docstring, rule 1): the mean of the seeds at each
    design point against the rules' value there, a one-sided t bound at EXCEED_LEVEL / k. The
    theorems bound the expected error (or n* at the target): a mean is what they bound."""
    k = len(design)
    nan = np.full(k, math.nan)
    if rules is None or not rules.available or k == 0:
        return Exceedance(nan, nan, design.x)
    low, ratio = nan.copy(), nan.copy()
    q = stats.t.ppf(1 - EXCEED_LEVEL / k, df=np.maximum([len(r) - 1 for r in design.reps], 1))
    for i, reps in enumerate(design.reps):
        y = np.asarray(reps, float)
        if len(y) < 3 or not np.isfinite(y).all():
            continue
        mean, se = float(y.mean()), float(y.std(ddof=1)) / math.sqrt(len(y))
        low[i] = (mean - float(q[i]) * se) / float(rules.values[i])
        ratio[i] = mean / float(rules.values[i])
    return Exceedance(low, ratio, design.x)


@dataclass(frozen=True)
class RowTests:
    """What the verdict rule reads, for a row and for any tilt of its curve: the rules test (its
    slope r, the row's residual CI as offsets below / above its residual), the O~ test (its band,
    the seeds' half-widths), the margin, the favourable side, the rival, the asymptote's reading
    and the bound check."""

    est: float
    m: float
    sign: int
    r: float
    rules_below: float
    rules_above: float
    seeds_below: float
    seeds_above: float
    p: float
    view: str
    x_name: str
    rival: float
    allowance_t: np.ndarray  # tilts at which the O~ test's log allowance was evaluated ...
    allowance: np.ndarray  # ... and its values there (one value: constant in the tilt)
    asym_meets: bool
    asym_finite: bool
    exceed: Exceedance
    lever: np.ndarray  # log(x / x_c) per design point: a tilt's log factor per unit slope
    # the measured claim link (`measured_link`): the deepest decade's slope and its CI as offsets
    # below / above it (NaN: the design spans under two decades, the link is the rules' only)
    deep: float = math.nan
    deep_below: float = math.nan
    deep_above: float = math.nan

    def reaches_at(self, t: float) -> bool:
        """Whether the deepest decade's CI of the curve tilted by t lies within the claim's +-m
        (a tilt moves every local slope by t)."""
        if not all(math.isfinite(v) for v in (self.deep, self.deep_below, self.deep_above)):
            return False
        d = self.deep + t
        return self.p - self.m <= d - self.deep_below and d + self.deep_above <= self.p + self.m

    def _rules_decision(self, lo: float, hi: float, t: float = 0.0) -> VerdictKind | None:
        """The rules test on a residual CI: a rejection's kind, FOLLOWS_MEASURED /
        FOLLOWS_CHAIN / FOLLOWS_OTHER for a pass, None for undecided or no rules."""
        if not math.isfinite(self.r) or not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        if -self.m <= lo and hi <= self.m:
            if self.reaches_at(t):
                return VerdictKind.FOLLOWS_MEASURED
            if not self.asym_finite:
                return None
            return VerdictKind.FOLLOWS_CHAIN if self.asym_meets else VerdictKind.FOLLOWS_OTHER
        if lo > self.m:
            return VerdictKind.RULES_FASTER if self.sign > 0 else VerdictKind.RULES_SLOWER
        if hi < -self.m:
            return VerdictKind.RULES_SLOWER if self.sign > 0 else VerdictKind.RULES_FASTER
        return None

    def kind_at(self, s: float) -> VerdictKind:
        """The verdict rule (module docstring) for the row's curve tilted to slope s (s = est:
        the row itself)."""
        t = s - self.est
        low, _, _ = self.exceed.worst(np.exp(t * self.lever))
        if math.isfinite(low) and low > 1:
            return VerdictKind.EXCEEDS_BOUND
        if not all(math.isfinite(v) for v in (s, self.seeds_below, self.seeds_above)):
            return VerdictKind.INCONCLUSIVE
        res = s - self.r
        rules = self._rules_decision(res - self.rules_below, res + self.rules_above, t)
        if rules is not None:
            return rules
        ct = self.claim_test_at(s)
        if ct.outcome in (ClaimOutcome.FASTER, ClaimOutcome.SLOWER):
            return VerdictKind.CLAIM_FASTER if ct.outcome is ClaimOutcome.FASTER \
                else VerdictKind.CLAIM_SLOWER
        if self.reaches_at(t):  # the claim link on data, the rules test undecided (rule 4b)
            return VerdictKind.REACHES_MEASURED
        if ct.untestable:
            return VerdictKind.UNTESTABLE
        consistent = ct.outcome is ClaimOutcome.CONSISTENT
        if not consistent and self.too_short:
            return VerdictKind.DESIGN_TOO_SHORT
        return VerdictKind.CONSISTENT if consistent else VerdictKind.NOT_REFUTED

    def allowance_at(self, t: float) -> float:
        """The O~ test's log allowance for the curve tilted by t (it moves where a declared log
        reads the measured values, e.g. log n at n* in the samples view)."""
        if len(self.allowance) == 1:
            return float(self.allowance[0])
        return float(np.interp(t, self.allowance_t, self.allowance))

    def claim_test_at(self, s: float) -> ClaimTest:
        """The O~ test (`claim_test`) of the curve tilted to slope s: the row's CI half-widths,
        the allowance there."""
        return claim_test(s, s - self.seeds_below, s + self.seeds_above, self.p,
                          self.allowance_at(s - self.est), self.m, self.view, self.x_name,
                          self.rival)

    @property
    def too_short(self) -> bool:
        """Every test's resolution wider than the gap it must tell (rule 6)."""
        seeds_h = (self.seeds_below + self.seeds_above) / 2
        rules_h = (self.rules_below + self.rules_above) / 2
        rules_short = not math.isfinite(self.r) or not math.isfinite(rules_h) or rules_h > self.m
        return rules_short and not seeds_h <= self.m

    def band(self, kind: VerdictKind) -> tuple[float, float]:
        """The interval of tilted slopes receiving `kind` around the row's slope (NaN ends:
        unbounded within BAND_REACH; both NaN: the row itself does not receive `kind`)."""
        if not math.isfinite(self.est):
            return math.nan, math.nan
        steps = np.arange(-BAND_REACH, BAND_REACH + BAND_STEP / 2, BAND_STEP)
        grid = self.est + steps
        centre = int(np.argmin(np.abs(steps)))
        hit = np.array([self.kind_at(float(s)) is kind for s in grid])
        if not hit[centre]:
            return math.nan, math.nan
        lo_i, hi_i = centre, centre
        while lo_i > 0 and hit[lo_i - 1]:
            lo_i -= 1
        while hi_i < len(grid) - 1 and hit[hi_i + 1]:
            hi_i += 1
        lo = float(grid[lo_i]) if lo_i > 0 else math.nan
        hi = float(grid[hi_i]) if hi_i < len(grid) - 1 else math.nan
        return lo, hi


def row_tests(design: Design, est: float, seed_lo: float, seed_hi: float, rules_slope: float,
              rules_lo: float, rules_hi: float, rules: RulesCurve | None, m: float, view: str,
              x_name: str, p: float, rival: float, allowance_of: Callable[[Design], float],
              asym_meets: bool, asym_finite: bool,
              deep: tuple[float, float, float] = (math.nan, math.nan, math.nan)) -> RowTests:
    """The row's tests as the verdict rule reads them (module docstring): the seeds' CI, the
    rules test's residual CI [rules_lo, rules_hi] about est - rules_slope (NaN: no rules), the
    O~ test's allowance as a function of the design's values (`allowance_of`: evaluated on the
    tilted design where it moves with the values, on a grid of ALLOWANCE_STEP); `deep`: the
    measured deepest decade's slope and CI (`measured_link`; NaN where it carries no link)."""
    sign = verdicts.FAVOURABLE.get((view, x_name), +1)
    res = est - rules_slope
    lx = np.log(design.x) if len(design) else np.array([])
    lever = lx - float(np.mean(lx)) if len(lx) else lx

    def tilted(t: float) -> Design:
        f = np.exp(t * lever)
        return Design(design.x, tuple(np.asarray(r, float) * fi for r, fi in
                                      zip(design.reps, f, strict=True)), design.context,
                      design.x_name)

    a0 = allowance_of(design)
    probes = [allowance_of(tilted(t)) for t in (-0.5, 0.5)] if len(design) >= 2 else []
    if all(abs(v - a0) <= 1e-12 for v in probes):
        ts, allow = np.array([0.0]), np.array([a0])
    else:
        ts = np.arange(-BAND_REACH, BAND_REACH + ALLOWANCE_STEP / 2, ALLOWANCE_STEP)
        allow = np.array([allowance_of(tilted(float(t))) for t in ts])
    return RowTests(est, m, sign, rules_slope, res - rules_lo, rules_hi - res, est - seed_lo,
                    seed_hi - est, p, view, x_name, rival, ts, allow, asym_meets, asym_finite,
                    exceedance(design, rules), lever, deep[0], deep[0] - deep[1],
                    deep[2] - deep[0])


def would_decide(design: Design, x_name: str, half_width: float, m: float) -> str:
    """The design that would resolve the margin: a slope's CI half-width falls like 1 / span at
    the same point density and like 1 / sqrt(seeds); from h to m takes span x h / m or seeds x
    (h / m)^2."""
    if not (math.isfinite(half_width) and half_width > 0 and m > 0):
        return margins.design_that_would_do(design.x, x_name)
    factor = half_width / m
    span = margins.decades(design.x)
    seeds = max((len(r) for r in design.reps), default=0)
    return (f"the CI half-width {half_width:.3g} against m {m:.3g}: x over ~{span * factor:.2g} "
            f"decades at the same density (now {span:.2g}), or ~{math.ceil(seeds * factor ** 2)} "
            f"seeds a point (now {seeds})")


def choose(tests: RowTests) -> Verdict:
    """The row's own verdict and the band of tilted slopes that receive it."""
    kind = tests.kind_at(tests.est)
    _, ratio, _ = tests.exceed.worst()
    by = ratio if kind is VerdictKind.EXCEEDS_BOUND else (
        tests.est - tests.r if kind in (VerdictKind.RULES_SLOWER, VerdictKind.RULES_FASTER)
        else math.nan)
    lo_b, hi_b = tests.band(kind)
    ct = tests.claim_test_at(tests.est)
    logs = ct.outcome in (ClaimOutcome.FASTER, ClaimOutcome.SLOWER) and ct.logs_moved
    accepts = ct.accepts if kind in (VerdictKind.NOT_REFUTED, VerdictKind.UNTESTABLE) else ""
    return Verdict(kind, by, accepts, logs, lo_b, hi_b)


__all__ = ["ALLOWANCE_STEP", "BAND_REACH", "BAND_STEP", "EXCEED_LEVEL", "Exceedance", "RowTests", "choose",
           "exceedance", "row_tests", "would_decide"]
