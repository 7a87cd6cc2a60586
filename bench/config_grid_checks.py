"""Refusals of a spec whose grid would measure nothing (run by `bench.config.parse_spec` before
any work): a target alpha at or above the start's value of the metric it targets, and a fit
whose `where` names values the grid lacks or whose window holds fewer than two design values."""

from __future__ import annotations

import math
from typing import Any

from analysis.declarations import FitSpec
from bench.config_values import SpecError


def start_metric(problem: str, d: int, params: dict, metric: str) -> tuple[float, str]:
    """The value of a claim metric at the problem's public start x0, and its name: alpha_SOSP
    (alpha_sosp), ||grad F(x0)|| (grad_norm; also emp_grad_norm, whose value at x0 is the
    population one up to sampling error), or F(x0) - min F (excess_risk)."""
    import problems
    from analysis.metrics import sosp_alpha

    prob = problems.get_problem(problem, d=d, **params)
    if metric in ("alpha_sosp", "emp_alpha_sosp"):  # the empirical one: up to sampling error
        return float(sosp_alpha(prob, prob.x0)["alpha"]), "alpha_SOSP(x0)"
    if metric == "excess_risk" and hasattr(prob, "excess_risk"):
        return float(prob.excess_risk(prob.x0)), "F(x0) - min F"
    import numpy as np

    return float(np.linalg.norm(prob.population_grad(prob.x0))), "||grad F(x0)||"


def target_at_start(problem: str, d: int, params: dict, target: float, metric: str,
                    users: str, cache: dict | None = None) -> str:
    """"" when `target` is below the start's value of `metric`, else why it measures nothing
    (the text after "<parameter>=<value> ..." in the one-line refusal the spec check and
    `dprates run --target-alpha` share)."""
    key = (problem, d, repr(sorted(params.items())), metric)
    cache = {} if cache is None else cache
    if key not in cache:
        cache[key] = start_metric(problem, d, params, metric)
    start, what = cache[key]
    if target < start:
        return ""
    return (f"at or above the start's {what} = {start:.3g} on {problem} (d={d}; the metric of "
            f"{users}), so the target is met at step 0 and measures nothing; targets must be "
            f"< {start:.3g}")


def _check_targets_below_start(grid: dict[str, Any], problem_list: list[dict],
                               alg_list: list[dict], metric: str | None = None) -> None:
    """Refuse a target at or above the start's value of the metric it targets: such a cell
    is "reached" at step 0 (samples_to_target 0) and measures nothing (issue 28, point 1)."""
    import problems
    from analysis.verdict_engine.predictions import claim_metric

    def metric_of(alg: str) -> str:  # the spec's target_metric, else the claim metric
        return metric or claim_metric(alg)

    metrics = sorted({metric_of(a["name"]) for a in alg_list})
    cache: dict[tuple, tuple[float, str]] = {}
    for prob in problem_list:
        for d in grid["d"]:
            for ta in grid["target_alpha"]:
                params = problems.instance_params(prob["name"], prob["params"], ta)
                for m in metrics:
                    users = ", ".join(a["name"] for a in alg_list
                                      if metric_of(a["name"]) == m)
                    why = target_at_start(prob["name"], d, params, ta, m, users, cache)
                    if why:
                        raise SpecError(f"grid.target_alpha contains {ta:g}: {why}")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return str(a) == str(b)
    return math.isclose(float(a), float(b), rel_tol=1e-9) or float(a) == float(b)


def _check_fit_against_grid(i: int, fit: FitSpec, grid: dict[str, Any], problem_list: list[dict],
                            alg_list: list[dict]) -> None:
    """Before any run: a fit's `where` names values the grid has, and its window holds at least
    two of the design values of its x (in x's units), so it cannot silently fit nothing."""
    names = {"problem": [p["name"] for p in problem_list],
             "algorithm": [a["name"] for a in alg_list]}
    axis = {**names, **{k: v for k, v in grid.items() if isinstance(v, list)}}
    for k, v in fit.where.items():
        values = axis.get(k)
        if values is None:
            raise SpecError(f"fit[{i}].where.{k} is invalid: the grid has no {k} axis")
        if not any(_same(v, u) for u in values):
            shown = ", ".join(str(u) for u in values)
            raise SpecError(f"fit[{i}].where.{k}={v!r} is invalid: not in the grid ({k}: {shown})")
    def pick(k: str) -> list[float]:
        vals = [float(u) for u in grid.get(k) or []]
        if k in fit.where:
            vals = [u for u in vals if _same(u, fit.where[k])]
        return [u for u in vals if math.isfinite(u)]

    if fit.x == "alpha":
        if "target_alpha" not in grid:
            return  # budget cells: thresholds of the samples-to-accuracy curves, any window
        design, unit = pick("target_alpha"), "target alpha"
    elif fit.x == "privacy":
        design = [math.sqrt(d) / (n * e) for d in pick("d") for n in pick("n") for e in pick("eps")]
        unit = "sqrt(d)/(n eps)"
    elif fit.x == "rank":  # a problem parameter: one [[problem]] table per rank
        design = [float(p["params"]["rank"]) for p in problem_list if "rank" in p["params"]
                  and p["name"] == fit.where.get("problem", p["name"])]
        unit = "problem rank"
    else:
        design, unit = pick(fit.x), fit.x
    if not design:
        raise SpecError(f"fit[{i}] ({fit.name}) is invalid: the grid has no finite {unit} values "
                        f"for x = {fit.x}")
    lo, hi = fit.window
    inside = {u for u in design if lo * (1 - 1e-9) <= u <= hi * (1 + 1e-9)}
    if len(inside) < 2:
        raise SpecError(f"fit[{i}].window=[{lo:g}, {hi:g}] is invalid: it holds {len(inside)} of the "
                        f"design values of x = {fit.x} ({unit}: {min(design):.3g} to "
                        f"{max(design):.3g} in this grid); a fit needs at least 2")
