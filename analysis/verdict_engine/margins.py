"""What a verdict may call a difference, declared before the data (issue 55, items 1 and 5).

**The margin m.** A slope difference smaller than m is never called "faster" or "slower", in
either direction, and a CI that clears the reference by more than m is conclusive however wide
(an equivalence test, as two one-sided tests do it: Schuirmann 1987; regression-based TOST for
model validation, Robinson and Froese 2004). The rule (`margin`): m = |p| / 24, at least
0.025, p the claim's predicted slope of the row. Why these numbers:

- the question the suite exists to answer is 3/7 against 1/2, a relative difference of 1/7 in
  the privacy exponent; in the samples-to-target view the two claims' slopes are -7/3 and -2,
  1/3 apart (1/7 to 1/6 of |p|). m = |p|/24 is a quarter of that gap (0.083 at -2, 0.097 at
  -7/3; 0.018 at 3/7 and 0.021 at 1/2 in the error view, floored): a band of width 2m is at most
  half the gap, so no row can be within m of both rivals' curves;
- the floor 0.025 is the resolution the reference designs reach (seed CIs of a slope over
  >= 1.5 decades with 10 seeds are +-0.01 to +-0.04): below it a "difference" is not a
  statement the design could back. Each row states its own resolution (the CI half-width h);
  where h > m the design cannot show equivalence at m and says so.

**The design rule** (`design_check`): at least `MIN_POINTS` design points over at least
`MIN_DECADES` decades of x (`design_that_would_do`: the shortest window of the rule). In the
fifth edition a row under it read "design too short"; since the sixth (issue 70,
`verdict_rule`) it only marks a row that a test decides anyway, and "design too short" is kept
for a row no test decides whose resolution is wider than the gap it must tell.

**Rivals** (`RIVALS`): the claims whose difference a row must resolve (the two SOSP Spiders';
seed 002's Pasan and the three Pagans, sqrt(d) against polylog(d)).
"""

from __future__ import annotations

import math

import numpy as np

#: m = MARGIN_FRACTION |p|, at least MARGIN_FLOOR (module docstring).
MARGIN_FRACTION = 1.0 / 24.0
MARGIN_FLOOR = 0.025
#: The design rule: >= MIN_POINTS design points over >= MIN_DECADES decades.
MIN_POINTS = 5
MIN_DECADES = 1.5
#: The claim whose prediction a row of this algorithm must be told apart from.
RIVALS = {"gaussian_spider": "adaptive_tree_spider", "adaptive_tree_spider": "gaussian_spider",
          # seed 002: Pagan's polylog(d) against Pasan's sqrt(d) (issue 70, item 4): where either
          # band holds the other's slope, the O~ test cannot tell them apart and says so
          "pasan": "pagan", "pagan": "pasan", "pagan_public_scales": "pasan",
          "pagan_private_scales": "pasan"}
#: Which way a too-short window is extended: away from the end the ceiling or the regime fixes
#: (-1: toward smaller x, +1: toward larger x). alpha: the top is 10x below the start saddle;
#: eps: smaller eps is deeper in the private regime; privacy sqrt(d)/(n eps): smaller x is
#: larger n (the ceiling is at large x); n, d, rank: larger.
EXTEND = {"alpha": -1, "eps": -1, "privacy": -1, "n": +1, "d": +1, "rank": +1}


def margin(predicted: float | None) -> float:
    """The declared margin m of a row whose claim predicts slope `predicted` (module docstring);
    the floor where there is no finite prediction."""
    if predicted is None or not math.isfinite(predicted):
        return MARGIN_FLOOR
    return max(MARGIN_FLOOR, MARGIN_FRACTION * abs(float(predicted)))


def decades(x: np.ndarray) -> float:
    """The span of the design in decades of x (0 for fewer than two positive points)."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x) & (x > 0)]
    return float(np.log10(x.max() / x.min())) if len(x) >= 2 else 0.0


def design_that_would_do(x: np.ndarray, x_name: str) -> str:
    """The shortest window of the rule that keeps the end the ceiling or regime fixes: e.g.
    "alpha in [0.00285, 0.09] with >= 5 points"."""
    x = np.asarray(x, float)
    if not len(x):
        return f"{MIN_POINTS} design points over {MIN_DECADES:g} decades"
    lo, hi = float(x.min()), float(x.max())
    span = 10 ** MIN_DECADES
    if EXTEND.get(x_name, -1) < 0:
        lo = min(lo, hi / span)
    else:
        hi = max(hi, lo * span)
    return f"{x_name} in [{lo:.3g}, {hi:.3g}] with >= {MIN_POINTS} points"


def design_check(x: np.ndarray, x_name: str) -> str:
    """"" where the design meets the rule, else why not and the design that would do."""
    x = np.asarray(x, float)
    k, span = len(x), decades(x)
    if k >= MIN_POINTS and span >= MIN_DECADES - 1e-9:
        return ""
    return (f"{k} design points over {span:.2f} decades (the rule: >= {MIN_POINTS} over >= "
            f"{MIN_DECADES:g}); would do: {design_that_would_do(x, x_name)}")


__all__ = ["EXTEND", "MARGIN_FLOOR", "MARGIN_FRACTION", "MIN_DECADES", "MIN_POINTS", "RIVALS",
           "decades", "design_check", "design_that_would_do", "margin"]
