"""The claim link on data (sixth edition, issue 70, item 3): does the measured curve itself
reach the claimed exponent where the claim speaks, not only the algorithm's rules?

"Follows its rules, whose asymptote is the claim" rests its second link on code: the rules'
local slope evaluated far beyond the design (`asymptote`). On a design of at least MIN_DECADES
decades the measurement can carry that link itself. `measured_link` reads the row's measured
curve (the seeds at each design point, their Harrell-Davis medians, as the fit reads them):

- **the deepest decade's slope**: an OLS slope of the log medians over the design points within
  DEEP_DECADES of the window's end in the claim's limit (`asymptote.LIMIT`: small alpha, large
  n, ...), with a percentile CI from N_BOOT resamplings of the seeds at each point;
- **the first decade's slope** at the other end, and the **trend** (deepest minus first) with its
  CI from the same resamples: a curve heading for the claim moves toward it;
- **local slopes with CIs** over consecutive half-decades (for the report's profile);
- **the rules' slope over the same deepest decade** and the rules' whole local-slope profile at
  the design's own eps from the window's top to PROFILE_DECADES beyond its deep end (issue 70:
  "the Gaussian's -2.66 tail included"), so a reader sees the measured local slopes beside the
  curve they are meant to follow and where that curve goes next.

The link holds on data (`reached`) when the deepest decade's CI lies within the claim's margin m
(p - m .. p + m); the verdict rule then reads "follows its rules and reaches the claim on its
deepest decade" (`typed.VerdictKind.FOLLOWS_MEASURED`); a tilt of the curve to slope s moves
every local slope by s - est, so the verdict band stays a planted band. The rival claim (the
other Spider's exponent) is `excluded` when the deepest decade's CI clears rival +- m: the
measured curve does not follow the rival's rate on its deepest decade. Where the curve is
shallower than the rival (n* against alpha: the rival's hidden logs can only steepen its curve,
as log(1/alpha) and log n grow toward small alpha) no log factor of the rival reaches it.

What this cannot detect: a slope that changes again beyond the design (the rules' profile says
where the implementation's own rules would); an exponent within m of the claim but not equal to
it. The bootstrap resamples each design point's seeds independently; the seeds of one curve are
paired across targets (one stream per seed), so the CI of a difference is conservative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.verdict_engine.asymptote import LIMIT, shifted_design
from analysis.verdict_engine.design import Design
from analysis.verdict_engine.envelope import hd_median
from analysis.verdict_engine.margins import decades

#: The design's span from which the measurement carries the claim link (decades of x).
MIN_DECADES = 2.0
#: The deepest (and the first) stretch a slope is read over (decades of x).
DEEP_DECADES = 1.0
#: The local slopes' stretch (decades of x).
LOCAL_DECADES = 0.5
#: Resamplings of the seeds, and the CI level.
N_BOOT = 400
LEVEL = 0.95
#: How far beyond the window's deep end the rules' profile is drawn (decades), in half-decades.
PROFILE_DECADES = 6


@dataclass(frozen=True)
class MeasuredLink:
    """The measured claim link of one row (module docstring); NaN slopes and `note` saying why
    where the design cannot carry it."""

    available: bool
    note: str
    deep: tuple[float, float, float] = (math.nan, math.nan, math.nan)  # slope, CI low, high
    deep_window: tuple[float, float] = (math.nan, math.nan)  # its x range
    first: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    trend: tuple[float, float, float] = (math.nan, math.nan, math.nan)  # deep - first
    rules_deep: float = math.nan
    local: tuple[tuple[float, float, float, float], ...] = ()  # (x mid, slope, low, high)
    profile: tuple[tuple[float, float], ...] = ()  # the rules' (x mid, local slope)
    reached: bool = False
    excluded_rival: bool = False

    def text(self, p: float, m: float, rival: float, x_name: str) -> str:
        """The link in one line, for the row's `claim_link` column."""
        if not self.available:
            return f"rules only: {self.note}"
        s, lo, hi = self.deep
        a, b = self.deep_window
        head = (f"measured: the deepest decade ({x_name} {a:.2g}..{b:.2g}) reads {s:.3f} "
                f"[{lo:.3f}, {hi:.3f}]")
        if self.reached:
            claim = f"within m {m:.3g} of the claim's {p:.3g}: the measured slope reaches the claim"
        elif lo <= p <= hi:
            claim = (f"which holds the claim's {p:.3g} but is wider than its +-m {m:.3g}: the "
                     "deepest decade does not resolve the link")
        else:
            near, far = sorted((abs(lo - p), abs(hi - p)))
            where = (f"its far end {far:.3g} from the claim's {p:.3g}, beyond m {m:.3g}"
                     if near <= m else f"{near:.3g} from the claim's {p:.3g} at its near end, "
                     f"beyond m {m:.3g}")
            claim = f"{where}: the claim is not reached on data"
        t, tlo, thi = self.trend
        toward = ""
        if math.isfinite(t):
            resolved = math.isfinite(tlo) and (tlo > 0 or thi < 0)
            moving = ("toward" if abs(self.deep[0] - p) < abs(self.first[0] - p) else "away from"
                      ) + " the claim" if resolved else "no trend resolved"
            toward = (f"; from the first decade's {self.first[0]:.3f} it moved {t:+.3f} "
                      f"[{tlo:+.3f}, {thi:+.3f}]: {moving}")
        rules = f"; the rules read {self.rules_deep:.3f} there" if math.isfinite(self.rules_deep) \
            else ""
        riv = ""
        if math.isfinite(rival) and abs(rival - p) > 1e-12:
            riv = (f"; the rival's {rival:.3g} +- m is excluded" if self.excluded_rival
                   else f"; the rival's {rival:.3g} +- m is not excluded")
        return f"{head}, {claim}{toward}{rules}{riv}"


def _boot_medians(design: Design, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """N_BOOT x len(idx) log HD medians of the seeds resampled at each of the points idx."""
    cols = []
    for i in idx:
        r = np.asarray(design.reps[i], float)
        draws = r[rng.integers(0, len(r), size=(N_BOOT, len(r)))]
        with np.errstate(divide="ignore", invalid="ignore"):
            cols.append(np.log(hd_median(draws, axis=-1)))
    return np.column_stack(cols)


def _slopes(lx: np.ndarray, ly: np.ndarray) -> np.ndarray:
    """OLS slope of each row of ly (B x k) on lx (k)."""
    c = lx - lx.mean()
    with np.errstate(invalid="ignore"):
        return ((ly - ly.mean(axis=-1, keepdims=True)) @ c) / float(c @ c)


def _ci(est: float, boot: np.ndarray) -> tuple[float, float, float]:
    b = boot[np.isfinite(boot)]
    if len(b) < N_BOOT // 2:
        return est, math.nan, math.nan
    q = (1 - LEVEL) / 2
    return est, float(np.quantile(b, q)), float(np.quantile(b, 1 - q))


def rules_profile(design: Design, view: str, calibration: str) -> tuple[tuple[float, float], ...]:
    """The rules' local slope (knobs at 1, at the design's own eps) per half-decade from the
    window's top to PROFILE_DECADES beyond its deep end; () where x cannot be shifted."""
    from analysis.verdict_engine.rules_curve import rules_curve

    direction = LIMIT.get(design.x_name)
    if direction is None or not len(design):
        return ()
    i = int(np.argmin(design.x)) if direction < 0 else int(np.argmax(design.x))
    start = float(design.x[int(np.argmax(design.x)) if direction < 0 else int(np.argmin(design.x))])
    span = decades(design.x) + PROFILE_DECADES
    k = math.ceil(2 * span)
    xs = start * np.logspace(0, direction * span, k + 1)
    if design.x_name == "d":
        xs = xs[xs <= 1e7]
    shifted = shifted_design(design, i, xs)
    if shifted is None:
        return ()
    vals = rules_curve(shifted, view, calibration).values
    with np.errstate(divide="ignore", invalid="ignore"):
        lv, lx = np.log(vals), np.log(xs)
    s = np.diff(lv) / np.diff(lx)
    mid = np.exp((lx[1:] + lx[:-1]) / 2)
    return tuple((float(a), float(b)) for a, b in zip(mid, s, strict=True) if math.isfinite(b))


def measured_link(design: Design, p: float, m: float, rival: float, rules_values: np.ndarray | None,
                  rng: np.random.Generator, profile: tuple[tuple[float, float], ...] = ()
                  ) -> MeasuredLink:
    """The row's measured claim link (module docstring). `rules_values`: the rules at the design
    points (None: no rules); `rng`: the row's own generator for the seeds' resamples."""
    span = decades(design.x)
    if span < MIN_DECADES - 1e-9:
        return MeasuredLink(False, f"the design spans {span:.2g} decades (< {MIN_DECADES:g}): "
                            "the claim link is the rules' asymptote")
    direction = LIMIT.get(design.x_name)
    if direction is None or not math.isfinite(p):
        return MeasuredLink(False, f"no claim limit for x = {design.x_name}")
    med = design.medians
    if not (np.isfinite(med) & (med > 0)).all():
        return MeasuredLink(False, "a design point's median is censored")
    lx, ly = np.log(design.x), np.log(med)
    end = lx.min() if direction < 0 else lx.max()
    other = lx.max() if direction < 0 else lx.min()
    width = DEEP_DECADES * math.log(10) + 1e-9
    deep_i = np.flatnonzero(np.abs(lx - end) <= width)
    first_i = np.flatnonzero(np.abs(lx - other) <= width)
    if len(deep_i) < 3 or len(first_i) < 3:
        return MeasuredLink(False, "fewer than 3 design points in a decade")
    boot = _boot_medians(design, np.arange(len(design)), rng)
    deep_b = _slopes(lx[deep_i], boot[:, deep_i])
    first_b = _slopes(lx[first_i], boot[:, first_i])
    deep = _ci(float(_slopes(lx[deep_i], ly[deep_i][None])[0]), deep_b)
    first = _ci(float(_slopes(lx[first_i], ly[first_i][None])[0]), first_b)
    trend = _ci(deep[0] - first[0], deep_b - first_b)
    local = []
    half = LOCAL_DECADES * math.log(10) + 1e-9
    j = 0
    while j < len(lx) - 1:
        sel = np.flatnonzero((lx >= lx[j] - 1e-12) & (lx <= lx[j] + half))
        if len(sel) >= 2:
            s = _ci(float(_slopes(lx[sel], ly[sel][None])[0]), _slopes(lx[sel], boot[:, sel]))
            local.append((float(np.exp(lx[sel].mean())), *s))
        j = int(sel[-1]) if len(sel) >= 2 and sel[-1] > j else j + 1
    rules_deep = math.nan
    if rules_values is not None:
        rv = np.asarray(rules_values, float)[deep_i]
        if (np.isfinite(rv) & (rv > 0)).all():
            rules_deep = float(_slopes(lx[deep_i], np.log(rv)[None])[0])
    reached = bool(math.isfinite(deep[1]) and p - m <= deep[1] and deep[2] <= p + m)
    excluded = bool(math.isfinite(rival) and abs(rival - p) > 1e-12 and math.isfinite(deep[1])
                    and (deep[1] > rival + m or deep[2] < rival - m))
    xw = np.exp(lx[deep_i])
    return MeasuredLink(True, "", deep, (float(xw.min()), float(xw.max())), first, trend,
                        rules_deep, tuple(local), profile, reached, excluded)


__all__ = ["DEEP_DECADES", "MIN_DECADES", "MeasuredLink", "measured_link", "rules_profile"]
