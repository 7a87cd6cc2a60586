"""The claim as an upper envelope (issue 42, item 3): its level as well as its slope.

- `measured_constant`: C = max over the window of measured / (claim at constants 1): the
  constant the O~ hides, measured (the claim's n* at a target alpha in the samples-to-target
  view: the smallest n whose bound at constants 1 reaches it);
- `approaches_limit` (fifth edition, issue 55, item 5): the measured local slopes extrapolated
  in 1 / |ln x| to the claim's limit (`extrapolated_limit`); a curve approaches its bound when
  that limit meets the claim within the margin m and the local slopes' gap to the claim shrinks
  toward the limit. A bound is an envelope: such a curve's secant over the window says nothing
  against the paper; a curve whose local slopes settle elsewhere does not approach it.
"""

from __future__ import annotations

import math

import numpy as np

from algorithms.claims import Claim
from algorithms.regime_forecast import claim_bound, decreasing_root
from analysis.verdict_engine.design import Design


def _ranks(claim: Claim, design: Design) -> list[float | None]:
    """Each design point's rank where a claim's term needs it (the instance's own rank)."""
    if not any(t.exponent("rank") for t in claim.terms):
        return [None] * len(design)
    from analysis.verdict_engine.rules_curve import problem_of

    return [getattr(problem_of(design.context.iloc[i]), "rank", None) for i in range(len(design))]


def claim_values(claim: Claim, design: Design, view: str) -> np.ndarray:
    """The claim at constants 1 at each design point: its bound at (n, d, eps) in the error
    view, its n* at the target alpha = x in the samples-to-target view."""
    ctx = design.context
    out = []
    for i, rank in enumerate(_ranks(claim, design)):
        d, eps = float(ctx["d"].iloc[i]), float(ctx["eps"].iloc[i])
        if view == "sample_complexity":
            alpha = float(design.x[i]) if design.x_name == "alpha" else float(ctx["alpha"].iloc[i])
            out.append(decreasing_root(lambda n, d=d, eps=eps, a=alpha, rank=rank:
                                       claim_bound(claim, n, d, eps, rank) - a))
        else:
            out.append(claim_bound(claim, float(ctx["n"].iloc[i]), d, eps, rank))
    return np.array(out, float)


def measured_constant(claim: Claim, design: Design, view: str) -> tuple[float, float]:
    """(C, x where attained); NaN where the claim cannot be evaluated (e.g. a rank term on a
    problem without one)."""
    try:
        ref = claim_values(claim, design, view)
    except (ValueError, ZeroDivisionError, OverflowError):
        return math.nan, math.nan
    ratio = design.medians / ref
    ok = np.isfinite(ratio) & (ref > 0)
    if not ok.any():
        return math.nan, math.nan
    i = int(np.argmax(np.where(ok, ratio, -np.inf)))
    return float(ratio[i]), float(design.x[i])


def extrapolated_limit(x: np.ndarray, ly: np.ndarray, x_name: str) -> float:
    """The limit of the measured local slopes in the claim's limit (issue 55, item 5): the line
    of the local slopes against u = 1 / |ln x| (a log factor's share of a local slope fades like
    K / |ln x|) at u = 0, x -> 0 for alpha, privacy and eps, x -> inf for n, d and rank. NaN
    with fewer than three local slopes or where the window straddles x = 1 (u is not monotone
    there)."""
    from analysis.verdict_engine.asymptote import LIMIT

    direction = LIMIT.get(x_name, +1 if x_name == "rank" else None)
    if direction is None or len(x) < 4:
        return math.nan
    mid = np.sqrt(x[1:] * x[:-1])
    if (direction < 0 and not np.all(mid < 1)) or (direction > 0 and not np.all(mid > 1)):
        return math.nan
    local = np.diff(ly) / np.diff(np.log(x))
    u = 1.0 / np.abs(np.log(mid))
    if not np.all(np.isfinite(local)) or float(np.ptp(u)) <= 0:
        return math.nan
    return float(np.polyfit(u, local, 1)[1])


def approaches_limit(x: np.ndarray, ly: np.ndarray, predicted: float, x_name: str,
                     m: float) -> tuple[float, bool]:
    """(the extrapolated limit of the local slopes, whether the curve approaches the claim):
    the limit within m of `predicted` and the local slopes' gap to it smaller at the end of the
    window nearer the claim's limit than at the other end."""
    from analysis.verdict_engine.asymptote import LIMIT

    limit = extrapolated_limit(x, ly, x_name)
    if not math.isfinite(limit) or abs(limit - predicted) > m:
        return limit, False
    local = np.diff(ly) / np.diff(np.log(x))
    if LIMIT.get(x_name, +1) < 0:
        local = local[::-1]  # ordered toward the limit
    gap = np.abs(local - predicted)
    return limit, bool(gap[-1] < gap[0])
