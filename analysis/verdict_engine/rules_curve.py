"""Every family's own rules at a fit's design points (issue 42, items 1 and 4).

The claim is a stylized O~; the bound the implemented rules optimize (`rules_bound` of each
algorithm: the theorem's bound with the rules' T, step, batch and noise substituted, the
problem's constants, logs included, knobs at 1) is what a run can be held to. At each design
point (`rules_curve`):

- the rules' value: in the error view the bound at (n, d, eps); in the samples-to-target view
  the rules' sample budget at the target (the Spiders' `theory_budget`; for the others the
  smallest n whose bound reaches the target);
- its private share (the part that vanishes at eps = inf over the whole), which gates a window
  (`PRIVATE_SHARE_MIN`: a window whose median share is below it is carried by the statistical
  term and reads "not in regime");
- measured / rules: the constant the rules leave, measured, and its trend (the slope of its log
  on log x: 0 when the measured curve follows its rules);
- the rules' horizon T, which the log factor "T" is evaluated from.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms import Privacy, get_algorithm
from algorithms.regime_forecast import decreasing_root, spider_accuracy_split, spider_split
from algorithms.sosp.spider import KNOB_DEFAULTS
from analysis.verdict_engine.design import Design

#: The declared threshold of the privacy-share gate: the median over the window of the rules'
#: private share must reach it, or the window's slope is (partly) the statistical term's.
PRIVATE_SHARE_MIN = 0.9


@dataclass(frozen=True)
class RulesCurve:
    values: np.ndarray  # the rules' bound (error view) or sample budget (samples-to-target)
    share: np.ndarray  # private share of the rules' bound at each design point
    horizon: np.ndarray  # the rules' T (NaN where the rules state none)
    source: str  # "" when the family states no rules bound

    @property
    def available(self) -> bool:
        return bool(self.source) and bool(np.all(np.isfinite(self.values) & (self.values > 0)))

    def slope(self, x: np.ndarray) -> float:
        if not self.available or len(x) < 2:
            return math.nan
        slope = float(np.polyfit(np.log(x), np.log(self.values), 1)[0])
        # a rules bound free of x (a dimension-free claim in d) fits a slope of ~1e-16: it is 0
        return 0.0 if abs(slope) < 1e-9 else slope


def problem_of(ctx_row: Any) -> Any:
    from problems import get_problem

    return get_problem(ctx_row["problem"], d=int(ctx_row["d"]), **json.loads(ctx_row["instance_params"]))


def _horizon(cls: Any, problem: Any, n: float | None, d: int, privacy: Privacy,
             alpha: float | None) -> float:
    knobs = {**KNOB_DEFAULTS, **getattr(cls, "knob_defaults", {})}
    if getattr(cls, "family", "") != "sosp_spider":
        knobs = {"c_T": 1.0, "c_b": 1.0, "eta_mult": 1.0, **getattr(cls, "knob_defaults", {})}
    extra = {"target_alpha": alpha} if alpha is not None and n is None else {}
    try:
        p = cls.theory_params(problem.constants, None if n is None else int(n), d, privacy,
                              **extra, **knobs)
        return float(p.get("T", math.nan))
    except Exception:  # a family without rules for this point has no horizon
        return math.nan


def rules_curve(design: Design, view: str, calibration: str) -> RulesCurve:
    """The rules at every design point (module docstring); an empty source where the family
    states no rules bound (its values NaN, its horizon still filled where theory_params gives
    one)."""
    k = len(design)
    values, share, horizon = np.full(k, math.nan), np.full(k, math.nan), np.full(k, math.nan)
    if not k:
        return RulesCurve(values, share, horizon, "")
    ctx = design.context
    cls = get_algorithm(str(ctx["algorithm"].iloc[0]))
    spider = getattr(cls, "family", "") == "sosp_spider"
    source = ""
    for i in range(k):
        r = ctx.iloc[i]
        problem = problem_of(r)
        d, eps, delta = int(r["d"]), float(r["eps"]), float(r["delta"])
        privacy = Privacy(eps, delta, calibration)
        # samples-to-target: the target is x in a fit against alpha, the cell's target otherwise
        target = (float(design.x[i]) if design.x_name == "alpha" else float(r["alpha"])) \
            if view == "sample_complexity" else None
        n = None if view == "sample_complexity" else float(r["n"])
        try:
            if spider and view == "sample_complexity":
                priv, stat = spider_split(cls, problem, d, eps, delta, calibration, target)
                source = "the Spider's rules: theory_budget at the target, knobs at 1"
            elif spider:
                priv, stat = spider_accuracy_split(cls, problem, int(n), d, eps, delta, calibration)
                source = "the Spider's rules: the alpha theory_params configure at n, knobs at 1"
            else:
                priv, stat, src = _bound_or_budget(cls, problem, n, d, privacy, target)
                source = src
        except (NotImplementedError, AttributeError):
            horizon[i] = _horizon(cls, problem, n, d, privacy, target)
            continue
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        values[i] = priv + stat
        share[i] = priv / (priv + stat) if priv + stat > 0 else math.nan
        horizon[i] = _horizon(cls, problem, n if n is not None else None, d, privacy, target)
    return RulesCurve(values, share, horizon, source)


def _bound_or_budget(cls: Any, problem: Any, n: float | None, d: int, privacy: Privacy,
                     target: float | None) -> tuple[float, float, str]:
    """(private, statistical, source) of a non-Spider's rules: its bound at n (error view), or
    at the smallest n whose bound reaches the target (samples-to-target: the budget is that n,
    split in the bound's proportions)."""
    if target is None:
        b = cls.rules_bound(problem, int(n), d, privacy)
        return b.private, b.statistical, b.source
    n_star = decreasing_root(lambda m: cls.rules_bound(problem, int(max(m, 2)), d, privacy).total
                             - target, lo=2.0, hi=1e15)
    if not math.isfinite(n_star):
        raise ValueError("the rules' bound never reaches the target")
    b = cls.rules_bound(problem, int(n_star), d, privacy)
    return n_star * b.private_share, n_star * (1 - b.private_share), b.source + " (inverted for n)"


def ratio_trend(x: np.ndarray, measured: np.ndarray, rules: RulesCurve) -> tuple[np.ndarray, float]:
    """measured / rules at each design point and the slope of its log on log x (NaN without a
    rules curve)."""
    if not rules.available:
        return np.full(len(x), math.nan), math.nan
    ratio = measured / rules.values
    if len(x) < 2:
        return ratio, math.nan
    return ratio, float(np.polyfit(np.log(x), np.log(ratio), 1)[0])


def rules_binding_n(design: Design, calibration: str, start: float, fraction: float = 0.1) -> float:
    """The smallest n at which this algorithm's own rules' bound (error view, at the design's
    first (d, eps, delta) and instance) falls to `fraction` of the start's metric: where the
    algorithm, not the stylized claim, first says something. inf when no n up to 1e40 does (an
    output that stalls, e.g. at ~1/log n, can reach it only at astronomically large n), NaN
    where the family states no rules bound."""
    if not len(design) or not (start > 0 and math.isfinite(start)):
        return math.nan
    r = design.context.iloc[0]
    cls = get_algorithm(str(r["algorithm"]))
    if getattr(cls, "family", "") == "sosp_spider":
        return math.nan  # the Spiders' binding size comes from their sample budget (forecast)
    problem = problem_of(r)
    privacy = Privacy(float(r["eps"]), float(r["delta"]), calibration)

    def bound(n: float) -> float:
        return cls.rules_bound(problem, int(min(n, 1e18)), int(r["d"]), privacy).total

    # the smallest n the rules accept (e.g. a staged method needs records in every stage)
    lo = 2.0
    while lo < 1e9:
        try:
            bound(lo)
            break
        except ValueError:
            lo *= 2
    try:
        return decreasing_root(lambda n: bound(n) - fraction * start, lo=lo, hi=1e40)
    except (NotImplementedError, AttributeError, ValueError, ZeroDivisionError, OverflowError):
        return math.nan
