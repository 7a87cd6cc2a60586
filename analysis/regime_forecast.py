"""The regime gate before the run: where a claim can bind, computed from the claim itself.

A claim is a worst-case bound, metric <= sum of terms (constants and logs hidden), and a fit
tests its exponent only where that bound says something: below the start's metric (else every
run may sit at its start, a "ceiling") and, for a privacy exponent, where the privacy term
outweighs the statistical one (else the slope is the statistical term's, a "floor"). This
module evaluates the claim's own terms with every hidden constant at 1 (the reading the issue
tracker fixed for "out of reach": no constant of ours enters) at a fit's design points:

* `claim_bound` / `term_value`: the terms at (n, d, eps, rank), privacy = sqrt(d) / (n eps);
* `start_metric`: the claim's metric at the problem's start x0, exact (`analysis.metrics`);
* `binding_n`: the smallest n at which the bound first falls below a tenth of the start's
  metric (the size where the claim starts to bind; inf when no n does);
* `crossover_n`: the n at which the privacy term and the statistical term are equal;
* `forecast_points` / `forecast_fit`: per design point, the two terms, the bound against the
  start, and whether the point passes; per group of a fit, the verdict "in regime" or the
  reason it is not, with `binding_n`.

The forecast is the claim's, not the algorithm's: the rules' constants (e.g. a Spider's
log factors, a batch rule's c_b) can move where the measured curve saturates, which is why the
gate after the run (the data's own ceiling / floor flags, `analysis.claims`) still applies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from algorithms.claims import Claim, RateTerm

#: A claim binds where its bound is below this fraction of the start's metric (issue 28: "first
#: falls below a tenth of the start's metric"); the after-run ceiling flag uses the same 10x.
BINDING_FRACTION = 0.1
#: The largest n a reference window may use (counts mode streams up to 1e12 records).
N_BUDGET = 1e12


def term_value(t: RateTerm, n: float, d: float, eps: float, rank: float | None = None) -> float:
    """One term's value, prod over its variables of var^exponent, with privacy = sqrt(d)/(n eps).
    eps = inf (non-private) makes every term with a positive power of 1/eps vanish."""
    privacy = math.sqrt(d) / (n * eps) if math.isfinite(eps) else 0.0
    values = {"n": float(n), "d": float(d), "eps": float(eps), "privacy": privacy,
              "rank": math.nan if rank is None else float(rank)}
    out = 1.0
    for var, e in t.exponents:
        v = values[var]
        if var == "eps" and math.isinf(v):
            if e < 0:
                return 0.0
            if e > 0:
                return math.inf
            continue
        if var == "privacy" and v == 0.0:
            if e > 0:
                return 0.0
            continue
        if math.isnan(v):
            raise ValueError(f"term {t.text!r} needs rank: the problem has no rank parameter")
        out *= v ** e
    return out


def claim_bound(claim: Claim, n: float, d: float, eps: float, rank: float | None = None) -> float:
    """The claim's bound with every hidden constant at 1: the sum of its terms."""
    return sum(term_value(t, n, d, eps, rank) for t in claim.terms)


def _decreasing_root(f, lo: float = 1.0, hi: float = 1e40) -> float:
    """The smallest n in [lo, hi] with f(n) <= 0 for f decreasing in n (bisection in log n to a
    relative 1e-10); inf when f(hi) > 0, lo when f(lo) <= 0."""
    if f(lo) <= 0:
        return lo
    if f(hi) > 0:
        return math.inf
    a, b = math.log(lo), math.log(hi)
    while b - a > 1e-10:
        m = 0.5 * (a + b)
        if f(math.exp(m)) <= 0:
            b = m
        else:
            a = m
    return math.exp(b)


def binding_n(claim: Claim, d: float, eps: float, start: float, rank: float | None = None,
              fraction: float = BINDING_FRACTION) -> float:
    """The smallest n at which the claim's bound (constants at 1) is at most `fraction` of the
    start's metric: the size where the claim first says something. inf when no n does (a term
    without n above that level)."""
    if not (start > 0 and math.isfinite(start)):
        raise ValueError(f"start={start!r} is invalid: must be a finite metric > 0 at x0")
    level = fraction * start
    return _decreasing_root(lambda n: claim_bound(claim, n, d, eps, rank) - level)


def crossover_n(claim: Claim, d: float, eps: float, rank: float | None = None) -> float | None:
    """The n at which the privacy term equals the statistical term (None when the claim lacks
    one of them or they never cross). Below it the faster-decaying term dominates."""
    p, s = claim.privacy_term, claim.statistical_term
    if p is None or s is None or not math.isfinite(eps):
        return None
    ep = -1.0 * p.exponent("n") + p.exponent("privacy")  # decay rate of p in n
    es = -1.0 * s.exponent("n")
    if ep == es:
        return None
    # log p(n) - log s(n) is linear in log n: solve at two points.
    def gap(n: float) -> float:
        return math.log(term_value(p, n, d, eps, rank)) - math.log(term_value(s, n, d, eps, rank))
    g1, g2 = gap(1.0), gap(math.e)
    return math.exp(-g1 / (g2 - g1))


def start_metric(problem: Any, metric: str) -> float:
    """The claim's metric at the problem's start x0, from the exact population oracles:
    alpha_SOSP, ||grad F(x0)|| (for emp_grad_norm too: the empirical gradient at x0 is an
    average of records whose mean is grad F(x0)), or F(x0) - min F."""
    import numpy as np

    from analysis.metrics import sosp_alpha

    x0 = np.asarray(problem.x0, dtype=float)
    if metric == "alpha_sosp":
        return float(sosp_alpha(problem, x0)["alpha"])
    if metric in ("grad_norm", "emp_grad_norm"):
        return float(np.linalg.norm(problem.population_grad(x0)))
    if metric == "excess_risk":
        return float(problem.excess_risk(x0))
    raise ValueError(f"metric={metric!r} is invalid: must be alpha_sosp, grad_norm, emp_grad_norm "
                     "or excess_risk")


@dataclass(frozen=True)
class PointForecast:
    """One design point of a fit: its (n, d, eps), the claim's two terms and bound there."""

    x: float
    n: float
    d: float
    eps: float
    privacy_term: float
    statistical_term: float
    bound: float
    ceiling: bool  # the bound is above a tenth of the start's metric
    statistical_dominates: bool  # a private point whose statistical term outweighs its privacy term


def forecast_points(claim: Claim, view: str, points: Iterable[tuple[float, float, float, float]],
                    start: float, rank: float | None = None) -> list[PointForecast]:
    """Per design point (x, n, d, eps) of an error-view fit, or (alpha, nan, d, eps) of a
    samples-to-target fit (n is then the claim's n*(alpha): where the bound reaches alpha)."""
    out = []
    p_t, s_t = claim.privacy_term, claim.statistical_term
    for x, n, d, eps in points:
        if view == "sample_complexity":
            n = _decreasing_root(lambda m, a=x, dd=d, ee=eps: claim_bound(claim, m, dd, ee, rank) - a)
            metric_level = x  # the target itself is the level the runs must reach
        else:
            metric_level = None
        if not math.isfinite(n):
            out.append(PointForecast(x, n, d, eps, math.nan, math.nan, math.inf, True, False))
            continue
        pv = term_value(p_t, n, d, eps, rank) if p_t is not None else 0.0
        sv = term_value(s_t, n, d, eps, rank) if s_t is not None else 0.0
        bound = claim_bound(claim, n, d, eps, rank) if metric_level is None else metric_level
        private = math.isfinite(eps) and p_t is not None
        out.append(PointForecast(x, n, d, eps, pv, sv, bound, bound > BINDING_FRACTION * start,
                                 private and sv > pv))
    return out


def forecast_reason(points: list[PointForecast], start: float, metric: str, private: bool) -> str:
    """"" when every point passes, else why the window is not in the claim's regime."""
    if not points:
        return "no design point in the window"
    reasons = []
    ceil = [p for p in points if p.ceiling]
    if ceil:
        reasons.append(f"ceiling: the claim's bound (constants at 1) is above a tenth of the start's "
                       f"{metric} ({start:.3g}) at {len(ceil)} of {len(points)} design points")
    stat = [p for p in points if p.statistical_dominates]
    if private and stat:
        reasons.append(f"floor: the claim's statistical term outweighs its privacy term at "
                       f"{len(stat)} of {len(points)} design points")
    return "; ".join(reasons)


def describe_n(n: float) -> str:
    """An n for a verdict line: "1.2e+13", or "no n" for inf."""
    return "no n" if not math.isfinite(n) else f"{n:.2g}"
