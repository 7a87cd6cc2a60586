"""The secondary test (issue 55, items 3 and 5): the measured slope against the O~ claim with
its declared logs, named for what it is.

An O~ claim allows a constant and the log factors it declares (`log_factors`: one factor per
log the theorem writes, at the power of its proof, only those the implemented rules carry). At
t = 1 the logs move the slope over the design by A (`log_factors.slope_allowance`), so the band
of slopes the claim cannot be told from is [p + min(0, A) - m, p + max(0, A) + m], m the
declared margin (`margins.margin`). On the seeds' CI [lo, hi] of the measured slope:

- "consistent": the CI inside [p - m, p + m] (the claim's exponent itself, within the margin);
- "not refuted by the O~ claim": the CI meets the band;
- "slower / faster than claimed" ("... even with logs" where the logs move the slope): the CI
  entirely outside the band, on that side (`verdicts.FAVOURABLE`).

Its resolution on its own design (`ClaimTest.accepts_low` .. `accepts_high`): the pure power laws
x^s whose CI (the same half-widths) would meet the band, s in [band_lo - b, band_hi + a] with
a = est - lo, b = hi - est. Where that range holds the rival claim's slope or is wider than the
gap to it (the headline: 1/3 in n*), "not refuted" says nothing the rival would not also get:
the row reads "the O~ claim is untestable on this window" with the range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from analysis.verdict_engine import verdicts

CONSISTENT = "consistent"
NOT_REFUTED = "not refuted by the O~ claim"
UNTESTABLE = "the O~ claim is untestable on this window"
EVEN_WITH_LOGS = " even with logs"


class ClaimOutcome(Enum):
    """What the O~ test found (module docstring); `ClaimTest.label` renders it."""

    CONSISTENT = CONSISTENT
    NOT_REFUTED = NOT_REFUTED
    FASTER = "faster than claimed"
    SLOWER = "slower than claimed"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class ClaimTest:
    """The O~ test of one row: its outcome (typed; decisions read it, never the label), whether
    the declared logs moved the band, the band, the resolution range and untestability."""

    outcome: ClaimOutcome
    logs_moved: bool
    band_low: float
    band_high: float
    accepts_low: float
    accepts_high: float
    untestable: bool
    why_untestable: str

    @property
    def label(self) -> str:
        """The outcome in words ("... even with logs" where the logs moved the band)."""
        beyond = self.outcome in (ClaimOutcome.FASTER, ClaimOutcome.SLOWER)
        return self.outcome.value + (EVEN_WITH_LOGS if beyond and self.logs_moved else "")

    @property
    def accepts(self) -> str:
        if not (math.isfinite(self.accepts_low) and math.isfinite(self.accepts_high)):
            return ""
        return f"accepts {self.accepts_low:.3g}..{self.accepts_high:.3g}"


def claim_test(est: float, lo: float, hi: float, predicted: float, allowance: float, m: float,
               view: str, x: str, rival: float = math.nan) -> ClaimTest:
    """The O~ test of one row (module docstring); `allowance` is A (0 where no declared log
    moves over the design), `rival` the rival claim's predicted slope (NaN: none)."""
    a_ = allowance if math.isfinite(allowance) else 0.0
    band_lo, band_hi = predicted + min(0.0, a_) - m, predicted + max(0.0, a_) + m
    nan = math.nan
    if not all(math.isfinite(v) for v in (est, lo, hi)):
        return ClaimTest(ClaimOutcome.INCONCLUSIVE, False, band_lo, band_hi, nan, nan, False, "")
    acc_lo, acc_hi = band_lo - (hi - est), band_hi + (est - lo)
    if predicted - m <= lo and hi <= predicted + m:
        outcome = ClaimOutcome.CONSISTENT
    elif hi >= band_lo and lo <= band_hi:
        outcome = ClaimOutcome.NOT_REFUTED
    else:
        above = lo > band_hi
        sign = verdicts.FAVOURABLE.get((view, x), +1)
        outcome = ClaimOutcome.FASTER if above == (sign > 0) else ClaimOutcome.SLOWER
    untestable, why = False, ""
    if math.isfinite(rival) and abs(rival - predicted) > 1e-12:
        gap = abs(rival - predicted)
        if acc_lo <= rival <= acc_hi:
            untestable, why = True, f"the rival claim's {rival:.3g} is inside"
        elif acc_hi - acc_lo > gap:
            untestable, why = True, f"wider than the gap {gap:.3g} to the rival claim's {rival:.3g}"
    return ClaimTest(outcome, abs(a_) > 1e-12, band_lo, band_hi, acc_lo, acc_hi, untestable, why)


def window_that_would_test(x: np.ndarray, x_name: str, est: float, lo: float, hi: float,
                           predicted: float, allowance: float, m: float, rival: float) -> str:
    """The window of the same span, moved toward the claim's limit, on which the O~ test would
    tell the claim from the rival: the logs' slope allowance falls like 1 / |ln x| (a log of a
    power of x), so A at a window centred at x_c' is A |ln x_c| / |ln x_c'|; the CI half-widths
    are assumed the same. "" where no window within 12 decades does (or nothing to test)."""
    from analysis.verdict_engine.asymptote import LIMIT

    direction = LIMIT.get(x_name)
    gap = abs(rival - predicted) if math.isfinite(rival) else math.nan
    if direction is None or not math.isfinite(gap) or gap <= 0 or not len(x):
        return ""
    xc = float(np.exp(np.mean(np.log(x))))
    if (direction < 0 and xc >= 1) or (direction > 0 and xc <= 1):
        return ""
    a, b = est - lo, hi - est
    for k in np.arange(0.25, 12.01, 0.25):
        shift = 10 ** (direction * k)
        xck = xc * shift
        if (direction < 0 and xck >= 1) or (direction > 0 and xck <= 1):
            continue
        ak = allowance * abs(math.log(xc)) / abs(math.log(xck))
        acc_lo = predicted + min(0.0, ak) - m - b
        acc_hi = predicted + max(0.0, ak) + m + a
        if not acc_lo <= rival <= acc_hi and acc_hi - acc_lo <= gap:
            lo_x, hi_x = float(x.min()) * shift, float(x.max()) * shift
            return (f"{x_name} in [{lo_x:.2g}, {hi_x:.2g}] would (the logs' allowance there "
                    f"~{ak:.2f}, the same CI)")
    return "no window within 12 decades would"


__all__ = ["CONSISTENT", "EVEN_WITH_LOGS", "NOT_REFUTED", "UNTESTABLE", "ClaimTest", "claim_test",
           "window_that_would_test"]
