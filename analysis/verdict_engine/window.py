"""Uncertainty from the window itself (issue 42, item 6): a slope read over one window moves
when the window moves, and seeds alone do not see it.

- `drop_end_spread`: the largest change of an estimate when one design point is dropped at
  either end of the window (needs >= 3 points; NaN otherwise);
- `local_slopes`: the slopes between consecutive design points (medians);
- `widen`: the seeds' CI widened by the spread, in quadrature on each side about the estimate
  (both are reported; the verdict reads the widened CI).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def drop_end_spread(x: np.ndarray, ly: np.ndarray,
                    estimate: Callable[[np.ndarray, np.ndarray], float]) -> float:
    """max |estimate(window minus one end) - estimate(window)| over the two ends, NaN with fewer
    than three design points (two points left after a drop still give a slope; one does not)."""
    if len(x) < 3:
        return math.nan
    full = estimate(x, ly)
    drops = [estimate(x[1:], ly[1:]), estimate(x[:-1], ly[:-1])]
    vals = [abs(d - full) for d in drops if math.isfinite(d)]
    return max(vals) if vals else math.nan


def ols_slope(x: np.ndarray, ly: np.ndarray) -> float:
    """Slope of ly on log x (NaN with fewer than two points)."""
    if len(x) < 2:
        return math.nan
    return float(np.polyfit(np.log(x), ly, 1)[0])


def local_slopes(x: np.ndarray, ly: np.ndarray) -> np.ndarray:
    """Slopes of ly on log x between consecutive design points (x ascending)."""
    return np.diff(ly) / np.diff(np.log(x))


def widen(estimate: float, lo: float, hi: float, spread: float) -> tuple[float, float]:
    """The CI [lo, hi] widened on each side by `spread` in quadrature (unchanged when the spread
    is NaN: fewer than three design points)."""
    if not math.isfinite(spread):
        return lo, hi
    return (estimate - math.hypot(estimate - lo, spread), estimate + math.hypot(hi - estimate, spread))
