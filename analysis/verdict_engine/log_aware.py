"""The measured curve against the claim times its declared logs (`log_power_fit`).

Model: log median(y)(x) = c + p log x + t z(x), p the claimed slope, z the composite log
regressor (`analysis.verdict_engine.log_factors`), t in [0, 1] the share of the declared log
powers the curve needs. t is the OLS coefficient of log median - p log x on z over the design
points; its CI comes from a stratified bootstrap (seeds resampled within each design point,
Harrell-Davis medians, as in `analysis.verdict_engine.envelope`), drawn together with the plain slope's so the
two CIs are about the same resamples. A polylog claim (p = 0, a log factor on x itself, e.g.
Pagan in d) is read through t: the curve is fitted against log x, not as a power of x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.verdict_engine.design import Design
from analysis.verdict_engine.envelope import hd_median
from analysis.verdict_engine.rates import LEVEL, percentile_ci

#: Bootstrap size of the log-power fit (the slope's own CI keeps analysis.verdict_engine.rates.N_BOOT).
N_BOOT_LOGS = 1000


@dataclass(frozen=True)
class LogPowerFit:
    """t (the fraction of the declared log powers the curve needs, point and CI) and the slope
    of log median y on log x from the same bootstrap (median-based: `slope`, `slope_low`,
    `slope_high`)."""

    t: float
    t_low: float
    t_high: float
    slope: float
    slope_low: float
    slope_high: float


def _coef(lx: np.ndarray, z: np.ndarray, ly: np.ndarray) -> np.ndarray:
    """OLS coefficient of ly (..., D) on z (D,) with an intercept, along the last axis."""
    zc = z - z.mean()
    return (ly - ly.mean(axis=-1, keepdims=True)) @ zc / float(zc @ zc)


def _slope(lx: np.ndarray, ly: np.ndarray) -> np.ndarray:
    return _coef(lx, lx, ly)


def log_power_fit(design: Design, predicted: float, z: np.ndarray, n_boot: int = N_BOOT_LOGS,
                  level: float = LEVEL, rng: np.random.Generator | None = None) -> LogPowerFit:
    """t and the median-based slope with their bootstrap CIs (module docstring). t is NaN where
    z does not vary over the design (no declared log moves with x: the logs cannot explain a
    slope) or with fewer than three design points."""
    rng = rng if rng is not None else np.random.default_rng(0)
    x = design.x
    nan = LogPowerFit(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
    if len(x) < 2:
        return nan
    lx = np.log(x)
    boot = np.empty((n_boot, len(x)))
    for i, r in enumerate(design.reps):
        idx = rng.integers(0, len(r), size=(n_boot, len(r)))
        boot[:, i] = hd_median(r[idx], axis=-1)
    ok = np.all(np.isfinite(boot) & (boot > 0), axis=1)
    lb = np.log(np.where(ok[:, None], boot, 1.0))
    ly = np.log(design.medians)
    s = float(_slope(lx, ly))
    s_boot = np.where(ok, _slope(lx, lb), np.nan)
    s_lo, s_hi = percentile_ci(s_boot, level)
    zc = z - z.mean()
    if len(x) < 3 or float(zc @ zc) < 1e-12 * max(1.0, float(z @ z)):
        return LogPowerFit(math.nan, math.nan, math.nan, s, s_lo, s_hi)
    resid = ly - predicted * lx
    t = float(_coef(lx, z, resid))
    t_boot = np.where(ok, _coef(lx, z, lb - predicted * lx), np.nan)
    t_lo, t_hi = percentile_ci(t_boot, level)
    return LogPowerFit(t, t_lo, t_hi, s, s_lo, s_hi)
