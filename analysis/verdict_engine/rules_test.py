"""The primary test (issue 55, item 1): the measured curve against the algorithm's own bound.

The null is the rules curve (`rules_curve`: the bound the implementation runs, with its T,
batch, noise and escape rule, the problem's constants, its logs, knobs at 1). The statistic is
the residual slope: the slope of log(measured / rules) on log x, i.e. the measured slope minus
the rules' slope over the same design points. Its CI is the seeds' CI of the measured slope
shifted by the rules' slope (the rules are a deterministic function of the design) and widened
by the residual's own window spread (the largest change of the residual slope when one design
point is dropped at either end): the rules' curvature is in the null, so only the part of the
curve's bend the rules do not predict widens it (curvature modelled, not widened away).

The decision, against the declared margin m (`analysis.verdict_engine.margins`), both ways:

- "follows its rules": the residual CI inside [-m, m];
- "slower / faster than its rules": the CI entirely beyond +m or -m (by how much is in the
  row), the side read from `verdicts.FAVOURABLE`;
- "undecided against its rules": the CI straddles +m or -m;
- "no rules curve": the family states no rules bound at these design points (why is said).

`rules_acceptance` is the resolution of this test on its own design: the range of pure power
laws x^s whose residual CI (the same seeds' half-widths, the rules' curvature as the spread)
would lie inside [-m, m].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.verdict_engine import verdicts, window
from analysis.verdict_engine.rules_curve import RulesCurve

FOLLOWS = "follows its rules"
SLOWER = "slower than its rules"
FASTER = "faster than its rules"
UNDECIDED = "undecided against its rules"
NO_RULES = "no rules curve"


@dataclass(frozen=True)
class RulesTest:
    residual: float  # measured slope - rules slope
    low: float  # the residual's CI (seeds' shifted, widened by the residual spread)
    high: float
    spread: float  # the residual's window spread
    margin: float
    decision: str  # one of the labels above
    accepts_low: float  # pure power laws this test would call "follows" (NaN: none)
    accepts_high: float

    @property
    def text(self) -> str:
        if self.decision == NO_RULES or not math.isfinite(self.residual):
            return self.decision
        if self.decision in (SLOWER, FASTER):
            return f"{self.decision} by {abs(self.residual):.3g}"
        return self.decision


def residual_spread(x: np.ndarray, log_measured: np.ndarray, rules: RulesCurve) -> float:
    """The residual log(measured / rules)'s window spread (NaN with < 3 points or no rules)."""
    if not rules.available or len(x) < 3:
        return math.nan
    return window.drop_end_spread(x, log_measured - np.log(rules.values), window.ols_slope)


#: verdicts.verdict's labels for a residual read against 0 with the margin, as this test says them
_LABELS = {"consistent": FOLLOWS, "inconclusive": UNDECIDED, "faster than claimed": FASTER,
           "slower than claimed": SLOWER}


def decide_against(residual: float, low: float, high: float, m: float, view: str,
                   x: str) -> str:
    """The decision label from the residual CI and the margin (module docstring): the one
    margin rule of `verdicts.verdict`, read against a residual of 0."""
    return _LABELS[verdicts.verdict({"ci_low": low, "ci_high": high, "x": x}, 0.0, view, x,
                                    margin=m)]


def rules_acceptance(x: np.ndarray, rules: RulesCurve, est: float, seed_low: float,
                     seed_high: float, m: float) -> tuple[float, float]:
    """The pure power laws x^s this test calls "follows" on this design: the rules' slope r,
    the seeds' CI half-widths a (below) and b (above) widened by the spread a pure power law's
    residual has (the rules' own curvature), then s in [r - m + a', r + m - b'] (NaN, NaN where
    that is empty: the design cannot show equivalence at m)."""
    r = rules.slope(x)
    if not math.isfinite(r) or not all(math.isfinite(v) for v in (est, seed_low, seed_high)):
        return math.nan, math.nan
    spread = window.drop_end_spread(x, -np.log(rules.values), window.ols_slope) \
        if rules.available and len(x) >= 3 else math.nan
    a, b = est - seed_low, seed_high - est
    if math.isfinite(spread):
        a, b = math.hypot(a, spread), math.hypot(b, spread)
    lo, hi = r - m + a, r + m - b
    return (lo, hi) if lo <= hi else (math.nan, math.nan)


def rules_test(x: np.ndarray, log_measured: np.ndarray, rules: RulesCurve | None, est: float,
               seed_low: float, seed_high: float, m: float, view: str, x_name: str) -> RulesTest:
    """The primary test of one fit row (module docstring): `est` and the seeds' CI are the
    row's measured slope, `log_measured` the design medians' logs."""
    nan = math.nan
    if rules is None or not rules.available or not math.isfinite(est):
        return RulesTest(nan, nan, nan, nan, m, NO_RULES, nan, nan)
    r = rules.slope(x)
    if not math.isfinite(r):
        return RulesTest(nan, nan, nan, nan, m, NO_RULES, nan, nan)
    res = est - r
    spread = residual_spread(x, log_measured, rules)
    lo, hi = window.widen(res, seed_low - r, seed_high - r, spread)
    decision = decide_against(res, lo, hi, m, view, x_name)
    acc = rules_acceptance(x, rules, est, seed_low, seed_high, m)
    return RulesTest(res, lo, hi, spread, m, decision, *acc)


__all__ = [
    "FASTER",
    "FOLLOWS",
    "NO_RULES",
    "SLOWER",
    "UNDECIDED",
    "RulesTest",
    "decide_against",
    "residual_spread",
    "rules_acceptance",
    "rules_test",
]
