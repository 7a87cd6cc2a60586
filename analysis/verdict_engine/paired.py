"""Paired differences (README, the protocol): log y_A - log y_B on pairs that share a design
point and a repetition, hence a data seed (`paired_difference`): the mean per design point with a
CI, the slope of the difference (its prediction is the difference of the two exponents) and where
its fitted line crosses 0, the two algorithms needing the same y (`_crossover`). One stratified
bootstrap (`analysis.verdict_engine.rates`) resamples pairs within each design point for all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.verdict_engine.rates import (
    LEVEL,
    N_BOOT,
    design_groups,
    percentile_ci,
    resample_indices,
    row_slopes,
)


@dataclass(frozen=True)
class PairedDifference:
    """log y_A - log y_B on paired seeds: per design point mean with CI, and its slope."""

    x_design: tuple[float, ...]
    mean: tuple[float, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]
    n_pairs: tuple[int, ...]
    slope: float
    slope_ci_low: float
    slope_ci_high: float
    #: Where the fitted line of the difference crosses 0 (A and B need the same y), with a
    #: bootstrap CI; NaN when the slope's CI contains 0 (no crossing can be located).
    #: `crossover_where`: "inside" the design range, "below" / "above" it (an extrapolation
    #: of the line), or "none".
    crossover: float = math.nan
    crossover_ci_low: float = math.nan
    crossover_ci_high: float = math.nan
    crossover_where: str = "none"


def _crossover(lx: np.ndarray, means: np.ndarray, boot_means: np.ndarray, slope: float,
               s_lo: float, s_hi: float, level: float) -> tuple[float, float, float, str]:
    """x where c + s log x = 0 for the OLS line through the design-point means, and its
    percentile CI from the same bootstrap replicates (replicates with slope of the other sign
    have no crossing of the same kind and count as beyond either end)."""
    if not (math.isfinite(s_lo) and math.isfinite(s_hi)) or s_lo <= 0 <= s_hi:
        return math.nan, math.nan, math.nan, "none"
    def root(m: np.ndarray, s: np.ndarray) -> np.ndarray:
        center = m.mean(axis=-1)  # the difference at the mean log x
        with np.errstate(divide="ignore", invalid="ignore"):
            r = lx.mean() - center / s
        # A replicate whose slope has the other sign never crosses this way: put its crossing
        # beyond the end the measured line points to.
        return np.where(np.sign(s) == np.sign(slope), r, -np.sign(slope) * np.sign(center) * np.inf)

    lroot = float(root(means, np.array(slope)))
    boot = root(boot_means, row_slopes(lx, boot_means))
    a = (1 - level) / 2
    lo, hi = np.quantile(np.nan_to_num(boot, nan=np.inf), [a, 1 - a])
    where = "inside" if lx.min() <= lroot <= lx.max() else ("below" if lroot < lx.min() else "above")
    return float(np.exp(lroot)), float(np.exp(lo)), float(np.exp(hi)), where


def paired_difference(xv: np.ndarray, rep: np.ndarray, ya: np.ndarray, yb: np.ndarray, *,
                      n_boot: int = N_BOOT, level: float = LEVEL,
                      rng: np.random.Generator | None = None) -> PairedDifference:
    """Pairs (same x and repetition, hence the same data seed) of y_A and y_B; pairs with a
    censored side are dropped. Resamples pairs within each design point."""
    rng = rng if rng is not None else np.random.default_rng(0)
    xv, ya, yb = np.asarray(xv, float), np.asarray(ya, float), np.asarray(yb, float)
    ok = np.isfinite(ya) & np.isfinite(yb) & (ya > 0) & (yb > 0)
    diff = np.log(ya[ok]) - np.log(yb[ok])
    ux, groups = design_groups(xv[ok], diff)
    groups = [g for g in groups if len(g)]
    idx = resample_indices([len(g) for g in groups], n_boot, rng)
    boot_means = np.stack([g[i].mean(axis=1) for g, i in zip(groups, idx, strict=True)], axis=1)
    means = np.array([g.mean() for g in groups])
    a = (1 - level) / 2
    lo = np.quantile(boot_means, a, axis=0)
    hi = np.quantile(boot_means, 1 - a, axis=0)
    cross = (math.nan, math.nan, math.nan, "none")
    if len(ux) >= 2:
        lx = np.log(ux)
        slope = float(row_slopes(lx, means[None, :])[0])
        s_lo, s_hi = percentile_ci(row_slopes(lx, boot_means), level)
        cross = _crossover(lx, means, boot_means, slope, s_lo, s_hi, level)
    else:
        slope, s_lo, s_hi = math.nan, math.nan, math.nan
    return PairedDifference(x_design=tuple(ux.tolist()), mean=tuple(means.tolist()),
                            ci_low=tuple(lo.tolist()), ci_high=tuple(hi.tolist()),
                            n_pairs=tuple(len(g) for g in groups), slope=slope,
                            slope_ci_low=s_lo, slope_ci_high=s_hi, crossover=cross[0],
                            crossover_ci_low=cross[1], crossover_ci_high=cross[2],
                            crossover_where=cross[3])
