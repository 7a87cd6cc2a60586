"""Verdicts: a fit's CI read against a prediction (`verdict`: consistent / faster than claimed /
slower than claimed / inconclusive), the direction in which each x counts as faster
(`FAVOURABLE`) and the CI width beyond which nothing is concluded (`MAX_CI_WIDTH`).
"""

from __future__ import annotations

import math
from dataclasses import asdict

from analysis.rates import ExponentFit

#: A CI wider than this makes a verdict "inconclusive": about twice the gap between the two
#: headline predictions (0.071 in the error view, 0.33 in the sample-complexity view).
MAX_CI_WIDTH = {"error": 0.15, "sample_complexity": 0.66}
#: Direction of "faster than claimed": +1 if an exponent above the prediction is more
#: favourable in the regime the claim is about (large n, small target alpha, strong privacy
#: i.e. small eps, high dimension), -1 if below. Example: n* ~ alpha^-1 measured against a
#: claimed alpha^-2 needs fewer samples as alpha -> 0: faster than claimed.
FAVOURABLE = {
    ("error", "privacy"): +1, ("error", "n"): -1, ("error", "eps"): +1, ("error", "d"): -1,
    ("error", "rank"): -1,
    ("sample_complexity", "alpha"): +1, ("sample_complexity", "eps"): +1,
    ("sample_complexity", "d"): -1, ("sample_complexity", "privacy"): -1,
}


def verdict(fit: ExponentFit | dict, predicted: float | None, view: str = "error",
            x: str | None = None, max_width: float | None = None) -> str:
    """consistent (prediction inside the CI), faster / slower than claimed (CI entirely on the
    favourable / unfavourable side, see FAVOURABLE), or inconclusive (no prediction, no CI,
    or a CI wider than `max_width`, by default MAX_CI_WIDTH[view])."""
    f = fit if isinstance(fit, dict) else asdict(fit)
    lo, hi = f["ci_low"], f["ci_high"]
    xname = x or f["x"]
    width = MAX_CI_WIDTH.get(view, math.inf) if max_width is None else max_width
    if predicted is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    if hi - lo > width:
        return "inconclusive"
    if lo <= predicted <= hi:
        return "consistent"
    above = lo > predicted
    sign = FAVOURABLE.get((view, xname))
    if sign is None:
        raise ValueError(f"(view, x)=({view!r}, {xname!r}) is invalid: no favourable direction "
                         f"is defined; allowed are {sorted(FAVOURABLE)}")
    return "faster than claimed" if (above == (sign > 0)) else "slower than claimed"
