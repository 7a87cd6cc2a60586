"""The tuned envelope (README, the protocol, items 2 and 3): at each design point the smallest
median of y over a knob grid, then the slope of log(envelope) on log x (`envelope_fit`).

Medians are Harrell-Davis's (`hd_median`): smooth in the data, so the bootstrap of the envelope
is not lumpy. The bootstrap is the stratified one of `analysis.verdict_engine.rates`, with the same repetition
ids for every knob setting at a design point (seeds are paired), taking the minimum again, so the
CI includes the selection. A censored run counts as n* = inf (never reached is the worst
outcome), so a knob setting that censors loses to one that does not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from analysis.verdict_engine.rates import LEVEL, N_BOOT, ExponentFit, ols_fit, percentile_ci, row_slopes


def envelope_fit(xv: np.ndarray, combo: np.ndarray, rep: np.ndarray, yv: np.ndarray, *,
                 group: dict | None = None, x: str = "x", y: str = "y",
                 window: tuple[float, float] | None = None, n_boot: int = N_BOOT,
                 level: float = LEVEL, rng: np.random.Generator | None = None,
                 combo_labels: Sequence[Any] | None = None) -> ExponentFit:
    """Tuned envelope: at each design point x, the smallest median of y over knob settings
    (`combo` ids), then the slope of log(envelope) on log x. The bootstrap resamples repetition
    ids within each design point (the same ids for every knob setting: seeds are paired) and
    takes the minimum again, so the CI includes the selection. NaN y (censored) counts as inf."""
    rng = rng if rng is not None else np.random.default_rng(0)
    xv, yv = np.asarray(xv, float), np.where(np.isfinite(yv), np.asarray(yv, float), np.inf)
    combo, rep = np.asarray(combo), np.asarray(rep)
    if window is not None:
        keep = (xv >= window[0] * (1 - 1e-12)) & (xv <= window[1] * (1 + 1e-12))
        xv, yv, combo, rep = xv[keep], yv[keep], combo[keep], rep[keep]
    ux = np.unique(xv)
    ucombo = np.unique(combo)
    ureps = np.unique(rep)
    cube = np.full((len(ux), len(ucombo), len(ureps)), np.nan)
    cube[np.searchsorted(ux, xv), np.searchsorted(ucombo, combo), np.searchsorted(ureps, rep)] = yv
    env, best = _envelope(cube)
    finite = np.isfinite(env) & (env > 0)
    censored = int(np.sum(np.isinf(cube)))
    chosen_ids = [ucombo[b] for b in best[finite]]
    chosen = {f"{u:g}": (combo_labels[c] if combo_labels is not None else c)
              for u, c in zip(ux[finite], chosen_ids, strict=True)}
    if finite.sum() < 2:
        return ExponentFit(group=group or {}, x=x, y=y, exponent=math.nan, ci_low=math.nan,
                           ci_high=math.nan, se_ols=math.nan, intercept=math.nan, r2=math.nan,
                           n_points=int(finite.sum()), n_design=int(finite.sum()),
                           n_censored=censored, dropped_design=int((~finite).sum()), window=window,
                           method="envelope-hd-median", n_boot=0, chosen=chosen)
    lx, ly = np.log(ux[finite]), np.log(env[finite])
    slope, intercept, r2, se = ols_fit(lx, ly)
    cube_f = cube[finite]
    m = cube_f.shape[2]
    boot = np.empty(n_boot)
    for start in range(0, n_boot, 256):  # blocks bound the memory of (B, D, C, m)
        stop = min(n_boot, start + 256)
        ids = rng.integers(0, m, size=(stop - start, cube_f.shape[0], 1, m))
        res = np.take_along_axis(cube_f[None], ids, axis=3)
        e, _ = _envelope(res)
        ok = np.all(np.isfinite(e) & (e > 0), axis=1)
        with np.errstate(all="ignore"):
            sl = row_slopes(lx, np.log(np.where(e > 0, e, 1.0)))
        boot[start:stop] = np.where(ok, sl, np.nan)
    lo, hi = percentile_ci(boot, level)
    return ExponentFit(group=group or {}, x=x, y=y, exponent=slope, ci_low=lo, ci_high=hi,
                       se_ols=se, intercept=intercept, r2=r2, n_points=int(np.isfinite(cube_f).sum()),
                       n_design=int(finite.sum()), n_censored=censored,
                       dropped_design=int((~finite).sum()), window=window, method="envelope-hd-median",
                       n_boot=n_boot, chosen=chosen, x_design=tuple(ux[finite].tolist()),
                       y_design=tuple(env[finite].tolist()))


def hd_median(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """Harrell-Davis median along `axis`: a Beta((m+1)/2, (m+1)/2)-weighted average of the
    order statistics. Smooth in the data, unlike the sample median, so its bootstrap
    distribution is not lumpy (the sample median of 5-20 seeds takes few distinct values).
    Where a slice holds inf (censored runs) the sample median is returned instead: inf only
    when at least half the runs are censored."""
    from scipy.special import betainc

    v = np.sort(np.moveaxis(values, axis, -1), axis=-1)
    m = v.shape[-1]
    a = (m + 1) / 2
    w = np.diff(betainc(a, a, np.arange(m + 1) / m))
    has_inf = np.isinf(v).any(axis=-1)
    finite_v = np.where(np.isinf(v), 0.0, v)
    hd = finite_v @ w
    if has_inf.any():
        hd = np.where(has_inf, np.median(v, axis=-1), hd)
    return hd


def _envelope(cube: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Min over knob settings (axis -2) of the median over repetitions (axis -1); settings
    with no run are skipped. The median is Harrell-Davis's (see hd_median)."""
    with np.errstate(all="ignore"):
        if np.isnan(cube).any():  # ragged: a knob setting missing some repetitions
            med = np.nanmedian(cube, axis=-1)
        else:
            med = hd_median(cube, axis=-1)
    med = np.where(np.isnan(med), np.inf, med)
    best = np.argmin(med, axis=-1)
    return np.take_along_axis(med, best[..., None], axis=-1)[..., 0], best
