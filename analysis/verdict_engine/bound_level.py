"""The claim as an upper envelope (issue 42, item 3): its level as well as its slope.

- `measured_constant`: C = max over the window of measured / (claim at constants 1): the
  constant the O~ hides, measured (the claim's n* at a target alpha in the samples-to-target
  view: the smallest n whose bound at constants 1 reaches it);
- `approach`: whether the local slopes move toward the claim's as x moves into the regime
  (the direction in which the rules' private share grows, or `INTO_REGIME` where the rules give
  none). A bound is an envelope: a curve that steepens (or flattens) toward its slope where the
  bound speaks approaches it from below, and its secant over the window says nothing against
  the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from algorithms.claims import Claim
from analysis.regime_forecast import _decreasing_root, claim_bound
from analysis.verdict_engine.design import Design

#: The direction of x in which a claim's privacy term takes over, where the rules' private
#: share does not say: smaller eps, larger privacy = sqrt(d)/(n eps), smaller n, larger d and
#: rank; larger target alpha (the statistical n* ~ alpha^-3 outgrows the private one below).
INTO_REGIME = {"eps": -1, "privacy": +1, "n": -1, "d": +1, "rank": +1, "alpha": +1}
#: An approach: the local slopes' gap to the claim's shrinks to at most this fraction of its
#: first value, and falls (Spearman rho <= APPROACH_RHO) where there are three or more.
APPROACH_FRACTION, APPROACH_RHO = 0.5, -0.8


@dataclass(frozen=True)
class BoundLevel:
    constant: float  # C = max measured / claim at constants 1 (NaN where not computable)
    constant_at: float  # the x where the max is attained
    local: tuple[float, ...]  # local slopes ordered into the regime
    approaching: bool


def _ranks(claim: Claim, design: Design) -> list[float | None]:
    """Each design point's rank where a claim's term needs it (the instance's own rank)."""
    if not any(t.exponent("rank") for t in claim.terms):
        return [None] * len(design)
    from analysis.verdict_engine.rules_curve import _problem

    return [getattr(_problem(design.context.iloc[i]), "rank", None) for i in range(len(design))]


def claim_values(claim: Claim, design: Design, view: str) -> np.ndarray:
    """The claim at constants 1 at each design point: its bound at (n, d, eps) in the error
    view, its n* at the target alpha = x in the samples-to-target view."""
    ctx = design.context
    out = []
    for i, rank in enumerate(_ranks(claim, design)):
        d, eps = float(ctx["d"].iloc[i]), float(ctx["eps"].iloc[i])
        if view == "sample_complexity":
            alpha = float(design.x[i]) if design.x_name == "alpha" else float(ctx["alpha"].iloc[i])
            out.append(_decreasing_root(lambda n, d=d, eps=eps, a=alpha, rank=rank:
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


def approach(x: np.ndarray, ly: np.ndarray, predicted: float, x_name: str,
             share: np.ndarray | None = None) -> tuple[tuple[float, ...], bool]:
    """(local slopes ordered into the regime, whether they approach `predicted`)."""
    if len(x) < 3 or predicted is None or not math.isfinite(predicted):
        return (), False
    local = np.diff(ly) / np.diff(np.log(x))
    direction = INTO_REGIME.get(x_name, +1)
    if share is not None and len(share) == len(x) and np.all(np.isfinite(share)) \
            and float(np.ptp(share)) > 0.01:
        direction = +1 if share[-1] > share[0] else -1
    if direction < 0:
        local = local[::-1]
    gap = np.abs(local - predicted)
    ok = gap[-1] <= APPROACH_FRACTION * gap[0]
    if ok and len(gap) >= 3:
        rho = spearmanr(np.arange(len(gap)), gap).statistic
        ok = bool(np.isfinite(rho) and rho <= APPROACH_RHO)
    return tuple(float(v) for v in local), bool(ok)
