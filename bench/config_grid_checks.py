"""Refusals of a spec whose grid would measure nothing (run by `bench.config.parse_spec` before
any work): a target alpha at or above the start's value of the metric it targets, and a fit
whose `where` names values the grid lacks or whose window holds fewer than two design values;
and the search over n's two options, `search_cap` and `reach` (`check_search_cap`,
`check_reach`)."""

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
    from problems.evaluation.metrics import sosp_alpha

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


def check_targets_below_start(grid: dict[str, Any], problem_list: list[dict],
                              alg_list: list[dict], metric: str | None = None) -> None:
    """Refuse a target at or above the start's value of the metric it targets: such a cell
    is "reached" at step 0 (samples_to_target 0) and measures nothing (issue 28, point 1)."""
    import problems
    from algorithms import claim_metric

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


def check_fit_against_grid(i: int, fit: FitSpec, grid: dict[str, Any], problem_list: list[dict],
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


def check_search_cap(search_cap: Any, target_metric: str | None, grid: dict[str, Any]) -> int | None:
    """The spec's `search_cap`: an integer >= 1, with target_metric (the search's opt-in), at
    most grid.budget; None where the spec sets none."""
    from bench.config_values import invalid_value

    if search_cap is None:
        return None
    if isinstance(search_cap, bool) or not isinstance(search_cap, (int, float)) \
            or search_cap != int(search_cap) or search_cap < 1:
        raise invalid_value("search_cap", search_cap, "must be an integer >= 1")
    if target_metric is None:
        raise SpecError("search_cap is only allowed with target_metric (the search's opt-in)")
    if search_cap > grid["budget"]:
        raise invalid_value("search_cap", search_cap, f"must be at most grid.budget = {grid['budget']}")
    return int(search_cap)


#: What a search over n may read as reaching its target (`bench.n_search`).
REACH = ("best", "output")


def check_reach(reach: Any, target_metric: str | None, alg_list: list[dict[str, Any]],
                searches: Any) -> str:
    """The spec's `reach` (issue 70, item 5): "best" (default: a search over n reads the best
    iterate by the population oracle, the oracle's n*) or "output" (the point the algorithm
    returns, its class's `output_rule`: DP-GD's and DP-SGD's last iterate). "output" needs
    target_metric (a search over n reads it) and every algorithm searching over n with an output
    rule: the Spiders' papers' output rules are not implemented, so they are refused.
    `searches(name)`: whether the algorithm searches over n (`bench.n_search.runs_on_n_records`)."""
    import algorithms
    from bench.config_values import invalid_value

    if reach not in REACH:
        raise invalid_value("reach", reach, f"must be one of {', '.join(REACH)}")
    if reach == "output":
        if target_metric is None:
            raise SpecError("reach is only allowed with target_metric (a search over n reads it)")
        for alg in alg_list:
            rule = getattr(algorithms.get_algorithm(alg["name"]), "output_rule", None)
            if not searches(alg["name"]) or rule is None:
                raise SpecError(f"reach='output' is invalid for algorithm {alg['name']!r}: "
                                "only an algorithm that searches over n and states its output "
                                "rule (DP-GD, DP-SGD: the last iterate) can be read at its own "
                                "output; the Spiders' output rules are not implemented")
    return str(reach)
