"""The claim as the rules' asymptote (issue 55, item 2).

"Follows its rules" says something about a paper only if the rules' curve tends to the claimed
exponent where the claim speaks. `rules_asymptote` evaluates the algorithm's own rules
(`rules_curve`, knobs at 1) beyond the design, decade by decade, in the claim's limit (target
alpha -> 0, x = sqrt(d)/(n eps) -> 0 i.e. n -> inf, n -> inf, eps -> 0, d -> inf), where the
claim's term dominates: a private fit's rules are evaluated at eps scaled by EPS_SCALE (1e-6)
where x is not eps itself, so that the privacy term carries the whole bound (at the design's
eps the statistical alpha^-3 outgrows it as alpha -> 0, and the rules' private excess then
follows whatever rule binds there); a non-private fit (eps = inf) at its own eps.

The rules' local slopes s(x) between consecutive half-decades carry log factors that fade like
K / |ln x|, so the limit is extrapolated in u = 1 / |ln x| to u = 0 by a line through the
privacy-dominated stretch (private share >= SHARE_MIN, up to the first jump of more than JUMP
in one half-decade: another rule of the implementation binds there, e.g. the Gaussian Spider
below alpha ~ 5e-8); its accuracy is the change when the nearest third is left out. The row
states the limit with its accuracy, and whether it meets the claim: a local slope of the
privacy-dominated stretch comes within ASYMPTOTE_TOL (0.01) of the claim (`x_at_claim`), or the
extrapolated limit is within ASYMPTOTE_TOL of it (or within its accuracy, where that is coarser)
and that accuracy is at most m / 2; and the first x where the rules' local slope comes within
the margin m of the claim (`x_within_m`). Then "follows its rules, whose asymptote is the
claim" is a chain in two links, each of which can break.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.verdict_engine.design import Design

#: The accuracy the limit is computed to, and how close it must come to the claim.
ASYMPTOTE_TOL = 0.01
#: The claim's limit per x: -1 toward smaller x, +1 toward larger x.
LIMIT = {"alpha": -1, "privacy": -1, "eps": -1, "n": +1, "d": +1}
#: Where the fit is private and x is not eps, the rules are evaluated at eps times EPS_SCALE:
#: the claim's exponent is its privacy term's, and at the design's own eps the statistical
#: term takes over as x moves on (at alpha -> 0 the budget tends to alpha^-3, and the rules'
#: private excess over it follows whatever rule binds there, e.g. -2 for the Gaussian Spider's
#: batch rule), so the limit in which the claim speaks is the privacy-dominated one.
EPS_SCALE = 1e-6
#: How far beyond the design the rules are evaluated (decades), and the largest d evaluated
#: (an instance of dimension d is built).
DECADES = 14
MAX_D = 1e7
#: The privacy-dominated stretch: the rules' private share at least SHARE_MIN; a local slope
#: that moves by more than JUMP in one half-decade marks another rule taking over.
SHARE_MIN = 0.9
JUMP = 0.05


@dataclass(frozen=True)
class Asymptote:
    limit: float  # the extrapolated limit of the rules' local slope (NaN: not computed)
    accuracy: float  # |limit(last 4) - limit(last 3)|
    meets: bool  # computed to ASYMPTOTE_TOL and within ASYMPTOTE_TOL of the claim
    x_within_m: float  # the first x from which the local slope stays within m of the claim
    reached: float  # the farthest x the rules were evaluated at
    note: str  # why not computed, or ""
    x_at_claim: float = math.nan  # where a local slope comes within ASYMPTOTE_TOL of the claim
    # the whole privacy-dominated profile, past any jump (issue 70, item 3): the rules' local
    # slope at the farthest x evaluated, and its median over the stretch past the first jump
    # (NaN: no jump), so a plateau that only passes the claim is seen beside its tail
    tail: float = math.nan
    tail_x: float = math.nan
    past_jump: float = math.nan

    @property
    def text(self) -> str:
        if not math.isfinite(self.limit):
            return self.note
        acc = f"to {self.accuracy:.2g}" if math.isfinite(self.accuracy) else "accuracy unknown"
        return f"{self.limit:.3f} ({acc})"


def shifted_design(design: Design, i: int, xs: np.ndarray, eps_scale: float = 1.0) -> Design | None:
    """A design of the rules' context at design point i with x replaced by each of xs (and the
    context column x stands for: the target alpha, n, eps or d; a per-target instance such as
    hard_ramp, whose parameter alpha is the target, moves with it), eps multiplied by
    `eps_scale` where x is not eps."""
    base = design.context.iloc[i].to_dict()
    name = design.x_name
    if name != "eps" and math.isfinite(float(base.get("eps", math.nan))):
        base["eps"] = float(base["eps"]) * eps_scale
    rows = []
    for xv in xs:
        r = dict(base)
        r["x"] = float(xv)
        if name == "alpha":
            params = json.loads(r.get("instance_params") or "{}")
            if "alpha" in params and math.isclose(float(params["alpha"]), float(r.get("alpha", math.nan)),
                                                  rel_tol=1e-6):
                params["alpha"] = float(xv)
                r["instance_params"] = json.dumps(params, sort_keys=True)
            r["alpha"] = float(xv)
        elif name == "privacy":
            r["n"] = math.sqrt(float(r["d"])) / (float(xv) * float(r["eps"]))
        elif name in ("n", "eps"):
            r[name] = float(xv)
        elif name == "d":
            r["d"] = round(float(xv))
        else:
            return None
        rows.append(r)
    return Design(np.asarray(xs, float), tuple(np.ones(1) for _ in xs), pd.DataFrame(rows), name)


#: rules_asymptote's answers by their inputs (the design's x and context: not its measured
#: values, which the rules never read): a replant of a row (analysis.verdict_engine.replant)
#: asks the same question for every tilt of its curve.
_CACHE: dict[tuple, Asymptote] = {}


def rules_asymptote(design: Design, view: str, calibration: str, predicted: float,
                    m: float) -> Asymptote:
    """The rules' limit slope and where it comes within m of `predicted` (module docstring);
    memoized on the design's x and context (`_CACHE`)."""
    # repr of the context's values: full precision, inf and nan kept apart (to_json is not)
    key = (design.x.tobytes(), repr(design.context.to_dict("split")), design.x_name,
           design.private, view, calibration, predicted, m)
    if key not in _CACHE:
        if len(_CACHE) > 512:
            _CACHE.clear()
        _CACHE[key] = _rules_asymptote(design, view, calibration, predicted, m)
    return _CACHE[key]


def _rules_asymptote(design: Design, view: str, calibration: str, predicted: float,
                     m: float) -> Asymptote:
    """`rules_asymptote`, computed."""
    from analysis.verdict_engine.rules_curve import rules_curve

    nan = math.nan
    direction = LIMIT.get(design.x_name)
    if direction is None or not len(design):
        return Asymptote(nan, nan, False, nan, nan,
                         f"no limit is defined for x = {design.x_name} (the instance fixes it)")
    if predicted is None or not math.isfinite(predicted):
        return Asymptote(nan, nan, False, nan, nan, "no claim")
    i = int(np.argmin(design.x)) if direction < 0 else int(np.argmax(design.x))
    x0 = float(design.x[i])
    k = DECADES if design.x_name != "d" else int(min(DECADES, math.floor(math.log10(MAX_D / x0))))
    xs = x0 * np.logspace(0, direction * k, 2 * k + 1)
    shifted = shifted_design(design, i, xs, EPS_SCALE if design.private else 1.0)
    if shifted is None:
        return Asymptote(nan, nan, False, nan, nan, f"x = {design.x_name} cannot be shifted")
    curve = rules_curve(shifted, view, calibration)
    values = curve.values * curve.share if design.private else curve.values
    ok = np.isfinite(values) & (values > 0)
    if design.private:  # the privacy-dominated stretch only
        ok &= np.isfinite(curve.share) & (curve.share >= SHARE_MIN)
    stop = len(ok) if ok.all() else int(np.argmin(ok))
    xs, values = xs[:stop], values[:stop]
    if len(xs) < 5:
        return Asymptote(nan, nan, False, nan, float(xs[-1]) if len(xs) else nan,
                         "the rules could not be evaluated (privacy-dominated) beyond the design "
                         f"({len(xs)} half-decades)")
    lx = np.log(xs)
    s = np.diff(np.log(values)) / np.diff(lx)
    mid = np.exp((lx[1:] + lx[:-1]) / 2)
    # up to the first jump: another rule binds from there (a regime of the rules, not a log)
    jumps = np.flatnonzero(np.abs(np.diff(s)) > JUMP)
    cut = int(jumps[0]) + 1 if len(jumps) else len(s)
    tail, tail_x = (float(s[-1]), float(mid[-1])) if len(s) else (nan, nan)
    past = float(np.median(s[cut:])) if cut < len(s) else nan
    s, mid = s[:cut], mid[:cut]
    note = (f"another rule binds beyond x = {float(mid[-1]):.2g} (local slope jumps by more "
            f"than {JUMP:g} per half-decade)") if len(jumps) else ""
    u = 1.0 / np.abs(np.log(mid))
    if len(s) < 4 or float(np.ptp(u)) <= 0:
        return Asymptote(nan, nan, False, nan, float(mid[-1]), note or "too few rules points",
                         nan, tail, tail_x, past)
    lim = float(np.polyfit(u, s, 1)[1])
    far = len(s) // 3
    lim_far = float(np.polyfit(u[far:], s[far:], 1)[1]) if len(s) - far >= 3 else nan
    acc = abs(lim - lim_far) if math.isfinite(lim_far) else nan
    gap = np.abs(s - predicted)
    reached = bool(gap.min() <= ASYMPTOTE_TOL)
    extrapolated = bool(math.isfinite(acc) and acc <= m / 2
                        and abs(lim - predicted) <= max(ASYMPTOTE_TOL, acc))
    inside = np.flatnonzero(gap <= m)
    within = float(mid[inside[0]]) if len(inside) else nan
    return Asymptote(lim, acc, reached or extrapolated, within, float(mid[-1]), note,
                     float(mid[int(np.argmin(gap))]) if reached else nan, tail, tail_x, past)


__all__ = ["ASYMPTOTE_TOL", "Asymptote", "rules_asymptote"]
