"""The regime gate before the run: where a claim can bind, computed from the claim itself.

A claim is a worst-case bound, metric <= sum of terms (constants and logs hidden), and a fit
tests its exponent only where that bound says something: below the start's metric (else every
run may sit at its start, a "ceiling") and, for a privacy exponent, where the privacy term
outweighs the statistical one (else the slope is the statistical term's, a "floor"). This
module evaluates the claim's own terms with every hidden constant at 1 (the reading the issue
tracker fixed for "out of reach": no constant of ours enters) at a fit's design points:

* `claim_bound` / `term_value`: the terms at (n, d, eps, rank), privacy = sqrt(d) / (n eps);
* `start_metric`: the claim's metric at the problem's start x0, exact (`problems.evaluation.metrics`);
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

import numpy as np

from algorithms.claims import Claim, RateTerm
from algorithms.regime_flags import (  # the forecast says why a window fails in these
    FlagKind,
    ForecastSource,
    RegimeFlag,
    render_flags,
)

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


def decreasing_root(f, lo: float = 1.0, hi: float = 1e40) -> float:
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
    return decreasing_root(lambda n: claim_bound(claim, n, d, eps, rank) - level)


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
    alpha_SOSP (for emp_alpha_sosp too), ||grad F(x0)|| (for emp_grad_norm too: the empirical
    gradient at x0 is an average of records whose mean is grad F(x0)), or F(x0) - min F."""
    from problems.evaluation.metrics import sosp_alpha

    x0 = np.asarray(problem.x0, dtype=float)
    if metric in ("alpha_sosp", "emp_alpha_sosp"):  # F_S at x0 averages records of mean F's
        return float(sosp_alpha(problem, x0)["alpha"])
    if metric in ("grad_norm", "emp_grad_norm"):
        return float(np.linalg.norm(problem.population_grad(x0)))
    if metric == "excess_risk":
        return float(problem.excess_risk(x0))
    raise ValueError(f"metric={metric!r} is invalid: must be alpha_sosp, emp_alpha_sosp, grad_norm, "
                     "emp_grad_norm or excess_risk")


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
            n = decreasing_root(lambda m, a=x, dd=d, ee=eps: claim_bound(claim, m, dd, ee, rank) - a)
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


def forecast_reason(points: list[PointForecast], start: float, metric: str, private: bool,
                    balance: str = "the claim's statistical term outweighs its privacy term"
                    ) -> list[RegimeFlag]:
    """No flag when every point passes, else why the window is not in the claim's regime
    (`balance` says what a floor point's two parts are)."""
    if not points:
        return [RegimeFlag(FlagKind.NO_POINTS, "no design point in the window")]
    reasons = []
    ceil = [p for p in points if p.ceiling]
    if ceil:
        reasons.append(RegimeFlag(FlagKind.CEILING,
                                  f"the claim's bound (constants at 1) is above a tenth of the "
                                  f"start's {metric} ({start:.3g}) at {len(ceil)} of "
                                  f"{len(points)} design points"))
    stat = [p for p in points if p.statistical_dominates]
    if private and stat:
        reasons.append(RegimeFlag(FlagKind.FLOOR,
                                  f"{balance} at {len(stat)} of {len(points)} design points"))
    return reasons


def describe_n(n: float) -> str:
    """An n for a verdict line: "1.2e+13", or "no n" for inf."""
    return "no n" if not math.isfinite(n) else f"{n:.2g}"


def spider_split(cls: Any, problem: Any, d: int, eps: float, delta: float, calibration: str,
                 alpha: float) -> tuple[float, float]:
    """The Spiders' own rules at a target alpha: (privacy part, statistical part) of the sample
    budget, i.e. theory_budget(eps) - theory_budget(inf) and theory_budget(inf), knobs at 1."""
    from algorithms import Privacy
    from algorithms.sosp.spider import KNOB_DEFAULTS

    def budget(e: float) -> float:
        p = cls.theory_params(problem.constants, None, d, Privacy(e, delta, calibration),
                              target_alpha=alpha, **KNOB_DEFAULTS)
        return float(p["theory_budget"])

    stat = budget(math.inf)
    return max(budget(eps) - stat, 0.0), stat


def spider_accuracy_split(cls: Any, problem: Any, n: int, d: int, eps: float, delta: float,
                          calibration: str) -> tuple[float, float]:
    """The Spiders' own rules at a budget n: (privacy part, statistical part) of the accuracy
    they configure, i.e. alpha(n, eps) - alpha(n, inf) and alpha(n, inf), knobs at 1."""
    from algorithms import Privacy
    from algorithms.sosp.spider import KNOB_DEFAULTS

    def alpha(e: float) -> float:
        return float(cls.theory_params(problem.constants, n, d, Privacy(e, delta, calibration),
                                       **KNOB_DEFAULTS)["alpha"])

    stat = alpha(math.inf)
    return max(alpha(eps) - stat, 0.0), stat


def _cell_value(cell: Any, key: str) -> Any:
    if key in ("problem", "algorithm", "n", "d", "eps", "delta", "target_alpha", "calibration"):
        return getattr(cell, key)
    return dict(cell.problem_params).get(key, dict(cell.params).get(key))


def _matches(cell: Any, where: dict[str, Any]) -> bool:
    for k, v in where.items():
        got = _cell_value(cell, k)
        if k in ("problem", "algorithm"):
            if got != v:
                return False
        elif got is None or not math.isclose(float(got), math.inf if v == "inf" else float(v)):
            return False
    return True


def _x_of(x: str, n: float, d: float, eps: float, rank: float | None) -> float:
    if x == "privacy":
        return math.sqrt(d) / (n * eps)
    if x == "rank":
        return math.nan if rank is None else float(rank)
    return {"n": n, "d": d, "eps": eps}[x]


#: The cell fields a fit against x folds into one curve (as `analysis.claims.FOLDED` groups).
_FOLDED = {"privacy": {"n", "eps", "d"}, "n": {"n"}, "eps": {"eps"}, "d": {"d"}, "alpha": set(),
           "rank": {"rank"}}


#: What decides a verdict when the forecast says a window is not in regime (issue 46, item 4:
#: the dry run forecast "floor" where the fit then read "in regime", without a word).
ADVISORY = ("advisory only: what decides the verdict is the fit's regime gate on the measured "
            "data after the run, its ceiling / floor flags in `dprates fit`, which may read "
            "\"in regime\"")
RULES_GATE = ("its floor gates the verdict, together with the fit's regime gate on the measured "
              "data in `dprates fit`")


def who_decides(flags: list[RegimeFlag], source: ForecastSource) -> str:
    """The note a failing forecast carries in the dry run: which check decides the verdict.
    Only a floor from the Spiders' own rules gates it (`gate_flags`); anything from the claim's
    terms with constants at 1 is advisory."""
    if not flags:
        return ""
    kinds = {f.kind for f in flags}
    if source.from_rules and FlagKind.FLOOR in kinds:
        return RULES_GATE + ("; its ceiling is " + ADVISORY if FlagKind.CEILING in kinds else "")
    return ADVISORY


def forecast_fit(fit: Any, cells: Iterable[Any], metric_of: Any,
                 say_who_decides: bool = True) -> list[dict[str, Any]]:
    """The regime forecast of one declared fit over a spec's cells: one row per curve the fit
    draws (algorithm, problem, instance and whatever of d, eps the fit's x does not fold), with
    its design points in the window, the verdict ("in regime" or why not), the largest n at
    which the claim first binds over the curve's settings (`binding_n`), where its two terms
    cross (`crossover_n`, at the curve's first setting) and what the balance rests on
    (`source`: the Spiders' own budget rules in the samples-to-target view, else the claim's
    terms with constants at 1; a `ForecastSource`), the typed flags (`flags`, `RegimeFlag`s) and
    their text (`forecast`). `metric_of(fit, algorithm)` names the metric the fit measures.
    `say_who_decides`: a failing forecast ends with which check decides the verdict in
    parentheses (`who_decides`; the dry run prints it; the claims tables' column omits it)."""
    from algorithms import get_algorithm
    from problems import get_problem, get_problem_class

    lo, hi = fit.window
    folded = _FOLDED.get(fit.x, set())
    groups: dict[tuple, set] = {}
    for c in cells:
        if not _matches(c, fit.where):
            continue
        if not math.isfinite(c.eps) and fit.x in ("privacy", "eps"):
            continue
        per_target = get_problem_class(c.problem).per_target_param  # one curve across targets
        pparams = tuple(kv for kv in c.problem_params
                        if not (fit.x == "rank" and kv[0] == "rank") and kv[0] != per_target)
        key = (c.algorithm, c.problem, pparams, None if "d" in folded else c.d,
               None if "eps" in folded else c.eps, c.delta, c.calibration)
        groups.setdefault(key, set()).add((c.n, c.d, c.eps, c.target_alpha, c.problem_params))
    problems: dict[tuple, Any] = {}

    def instance(name: str, d: int, pparams: tuple) -> Any:
        if (name, d, pparams) not in problems:
            problems[name, d, pparams] = get_problem(name, d=int(d), **dict(pparams))
        return problems[name, d, pparams]

    rows = []
    for (alg, prob_name, _pp, d_key, eps_key, delta, calibration), design in sorted(groups.items(),
                                                                                    key=str):
        cls = get_algorithm(alg)
        metric = metric_of(fit, alg)
        claim = next((c for c in getattr(cls, "claims", ()) if c.metric == metric), None)
        row = {"fit": fit.name, "algorithm": alg, "problem": prob_name, "d": d_key, "eps": eps_key}
        if claim is None:
            rows.append({**row, "points": 0, "forecast": f"no claim of {alg} on {metric}",
                         "binding_n": math.nan, "crossover_n": math.nan, "source": "",
                         "flags": []})
            continue
        settings = sorted({(d, eps, pp) for _n, d, eps, _a, pp in design}, key=str)
        pts: list[PointForecast] = []
        starts, binds = [], []
        source = ForecastSource.CLAIM_TERMS
        balance = "the claim's statistical term outweighs its privacy term"
        for d, eps, pp in settings:
            problem = instance(prob_name, d, pp)
            rank = getattr(problem, "rank", None)
            start = start_metric(problem, metric)
            starts.append(start)
            binds.append(binding_n(claim, d, eps, start, rank))
            mine = [r for r in design if (r[1], r[2], r[4]) == (d, eps, pp)]
            if fit.view == "sample_complexity":
                alphas = sorted({a for *_, a, _p in mine
                                 if a is not None and lo * (1 - 1e-9) <= a <= hi * (1 + 1e-9)})
                if not alphas:  # budget cells: the thresholds across the window
                    alphas = [float(a) for a in np.geomspace(lo, hi, 5)]
                here = forecast_points(claim, "sample_complexity",
                                       [(a, math.nan, d, eps) for a in alphas], start, rank)
                if getattr(cls, "family", "") == "sosp_spider" and math.isfinite(eps):
                    split = [spider_split(cls, problem, int(d), eps, delta, calibration, a)
                             for a in alphas]
                    here = [PointForecast(p.x, p.n, p.d, p.eps, pv, sv, p.bound, p.ceiling, sv > pv)
                            for p, (pv, sv) in zip(here, split, strict=True)]
                    source = ForecastSource.RULES_BUDGET
                    balance = "the rules' non-private sample budget outweighs their privacy part"
            else:
                xs = sorted({(_x_of(fit.x, float(n), float(d), float(eps), rank), float(n))
                             for n, *_ in mine if n is not None})
                xs = [(x, n) for x, n in xs if lo * (1 - 1e-9) <= x <= hi * (1 + 1e-9)]
                here = forecast_points(claim, "error", [(x, n, d, eps) for x, n in xs], start, rank)
                if getattr(cls, "family", "") == "sosp_spider" and math.isfinite(eps):
                    split = [spider_accuracy_split(cls, problem, int(n), int(d), eps, delta,
                                                   calibration) for _x, n in xs]
                    here = [PointForecast(q.x, q.n, q.d, q.eps, pv, sv, q.bound, q.ceiling, sv > pv)
                            for q, (pv, sv) in zip(here, split, strict=True)]
                    source = ForecastSource.RULES_ACCURACY
                    balance = "the rules' non-private accuracy outweighs their privacy part"
            pts.extend(here)
        d0, eps0, pp0 = settings[0]
        flags = forecast_reason(pts, min(starts), metric, math.isfinite(eps0), balance)
        reason = render_flags(flags)
        cross = crossover_n(claim, d0, eps0, getattr(instance(prob_name, d0, pp0), "rank", None))
        note = who_decides(flags, source) if say_who_decides else ""
        rows.append({**row, "points": len(pts),
                     "forecast": (reason + f" ({note})" if note else reason) or "in regime",
                     "binding_n": max(binds), "crossover_n": math.nan if cross is None else cross,
                     "source": source, "flags": flags})
    return rows


@dataclass(frozen=True)
class GroupForecast:
    """The forecast of one group of a fit's points: the claims table's columns (`columns`:
    forecast, forecast_source, binding_n, crossover_n) and the typed flags and source they were
    rendered from, which the gate reads (`gate_flags`)."""
    columns: dict[str, Any]
    flags: tuple[RegimeFlag, ...] = ()
    source: ForecastSource | None = None


def forecast_group(fit: Any, points: Any, calibration: str, metric_of: Any) -> GroupForecast:
    """The forecast of one group of a fit's measured points (`analysis.points.fit_points_table`
    rows of one curve): `forecast_fit` on the cells those points come from (the first row that
    fails, if any)."""
    import json
    from types import SimpleNamespace

    cells = []
    for r in points.to_dict("records"):
        target = r.get("alpha") if fit.view == "sample_complexity" else None
        cells.append(SimpleNamespace(
            algorithm=r["algorithm"], problem=r["problem"], params=(),
            problem_params=tuple(sorted(json.loads(r["instance_params"]).items())),
            n=None if fit.view == "sample_complexity" else r["n"], d=int(r["d"]),
            eps=float(r["eps"]), delta=float(r["delta"]), calibration=calibration,
            target_alpha=None if target is None else float(target)))
    rows = forecast_fit(_without_where(fit), cells, metric_of, say_who_decides=False)
    if not rows:
        return GroupForecast({"forecast": "", "forecast_source": "", "binding_n": math.nan,
                              "crossover_n": math.nan})
    row = next((r for r in rows if r["forecast"] != "in regime"), rows[0])
    source = row["source"] or None
    return GroupForecast({"forecast": row["forecast"], "forecast_source": str(row["source"]),
                          "binding_n": row["binding_n"], "crossover_n": row["crossover_n"]},
                         tuple(row["flags"]), source)


def _without_where(fit: Any) -> Any:
    """The fit without its `where` filter (the points are already the filtered ones)."""
    from dataclasses import replace

    return replace(fit, where={})


def gate_flags(forecast: GroupForecast) -> list[RegimeFlag]:
    """The forecast's failures that gate a verdict: only the balance the algorithm's own rules
    give (the Spiders' budget or accuracy split, a floor); whatever comes from the claim's terms
    with every constant at 1 (a ceiling, or the balance of another family) is reported beside
    the fit but does not overrule the data (it ignores the problem's scales, e.g. seed 002's
    stylized sigma)."""
    if forecast.source is None or not forecast.source.from_rules:
        return []
    return [RegimeFlag(f.kind, f"{f.text} (forecast from the rules)") for f in forecast.flags
            if f.kind is FlagKind.FLOOR]
