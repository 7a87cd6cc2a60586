"""Sample complexity for methods whose output is a function of a fixed data set of n records.

One-pass methods (the Spiders, noisy SGD, the tree-based private Spider) consume samples until
they reach a target, so their n* is counted (`samples_to_target`). Empirical methods (DP-GD,
DP-SGD, private SpiderBoost, the JL wrappers, recursive regularization, seed 002's methods)
run on all n records whatever the target: their n* is the smallest n whose *output* reaches
the target, read from the error against n (issue 28, point 3). Here:

* the curve is the median error over repetitions at each design n (medians, as the
  samples-to-target view: a run that fails to reach the target moves a median only once
  half of them do);
* n* is the first crossing of the target, log-log interpolated between the last design n
  above it and the first at or below it; a target reached already at the smallest n gives
  n* <= n_min ("left-censored"), one not reached by the largest gives inf ("censored");
* the 95% interval is the stratified bootstrap over repetitions within each n (the same
  resampling as the rate fits), percentile method; a bootstrap draw that never crosses counts
  as n* = inf, so a CI may be open upwards.

This puts an empirical method and a one-pass one on the same axis (n* against alpha), which is
the comparison a reader brings (DP-SGD against the adaptive tree Spider, say); the fit of
log n* on log alpha is then the samples-to-target view of the empirical claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.verdict_engine.rates import LEVEL, N_BOOT


@dataclass(frozen=True)
class EmpiricalNStar:
    """n* at one target: the point estimate, its percentile CI and how it is bounded."""

    target: float
    n_star: float
    ci_low: float
    ci_high: float
    status: str  # "crossed", "left-censored" (reached at the smallest n), "censored" (never)
    n_design: int


def first_crossing(ns: np.ndarray, med: np.ndarray, target: float) -> tuple[float, str]:
    """The first crossing of `target` by the median curve med(ns) (ns increasing)."""
    hit = np.flatnonzero(med <= target)
    if not len(hit):
        return math.inf, "censored"
    i = int(hit[0])
    if i == 0:
        return float(ns[0]), "left-censored"
    n0, n1, m0, m1 = ns[i - 1], ns[i], med[i - 1], med[i]
    if m1 <= 0 or m0 <= m1:  # an exact zero, or a flat step: the first design n that reaches it
        return float(n1), "crossed"
    t = (math.log(m0) - math.log(target)) / (math.log(m0) - math.log(m1))
    return float(math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0)))), "crossed"


def empirical_n_star(n: np.ndarray, rep: np.ndarray, y: np.ndarray, target: float,
                     n_boot: int = N_BOOT, rng: np.random.Generator | None = None,
                     level: float = LEVEL) -> EmpiricalNStar:
    """n* at `target` from error y of runs at design sizes n with repetitions rep (see the
    module docstring). ValueError on a target <= 0 or fewer than two design sizes."""
    if not (target > 0 and math.isfinite(target)):
        raise ValueError(f"target={target!r} is invalid: must be a finite error level > 0")
    n, y = np.asarray(n, float), np.asarray(y, float)
    ns = np.unique(n)
    if len(ns) < 2:
        raise ValueError(f"n has {len(ns)} design size(s): n* from the error needs at least two")
    groups = [y[n == v] for v in ns]
    med = np.array([np.median(g) for g in groups])
    est, status = first_crossing(ns, med, target)
    rng = rng if rng is not None else np.random.default_rng(0)
    draws = np.empty(n_boot)
    for b in range(n_boot):
        bmed = np.array([np.median(g[rng.integers(0, len(g), len(g))]) for g in groups])
        draws[b] = first_crossing(ns, bmed, target)[0]
    alpha = (1 - level) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha], method="inverted_cdf")
    return EmpiricalNStar(float(target), est, float(lo), float(hi), status, len(ns))
