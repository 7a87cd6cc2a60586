"""A spec's tables parsed one at a time (issue 75, item 2; `bench.config.parse_spec` calls
them in order): the grid, the limits, the problems, the algorithms, the target metric, the fits,
the data mode, and the search over n's memory bound. Each validates its table completely and
raises `SpecError` naming the key, the value and what is allowed, before any work."""

from __future__ import annotations

import itertools
import math
from typing import Any

from analysis.declarations import FitSpec
from bench.cells import canonical_number
from bench.config_grid_checks import check_fit_against_grid
from bench.config_parameters import check_problem_params, default_data_mode
from bench.config_values import (
    SpecError,
    check_keys,
    delta_entry,
    delta_for,
    grid_list,
    int_like,
    invalid_value,
    is_number,
    number_list,
    param_table,
)
from bench.n_search import runs_on_n_records
from problems import data_modes
from problems.base import DATA_MODES

GRID_KEYS = {"n", "target_alpha", "budget", "d", "eps", "delta"}
#: The largest search_cap (or budget, without one) a records-mode search over n may have.
RECORDS_SEARCH_CAP = 10**8
LIMIT_KEYS = {"time", "memory_mb"}
PROBLEM_KEYS = {"name", "params"}
ALGORITHM_KEYS = {"name", "params", "grid"}
FIT_KEYS = {"name", "view", "x", "y", "window", "mode", "where"}
FIT_VIEWS = ("sample_complexity", "error")
FIT_X = ("alpha", "privacy", "n", "d", "eps", "rank")
FIT_MODES = ("tuned", "theory")


def parse_grid(g: Any) -> dict[str, Any]:
    """[grid]: d, eps, delta and either n or target_alpha with budget."""
    check_keys(g, GRID_KEYS, "grid")
    for req in ("d", "eps"):
        if req not in g:
            raise SpecError(f"grid.{req} is missing: the grid needs d, eps and either n or target_alpha")
    grid: dict[str, list] = {}
    grid["d"] = [int_like("grid.d", x, 1) for x in grid_list("grid.d", g["d"])]
    grid["eps"] = [float(x) for x in number_list("grid.eps", g["eps"], lambda x: x > 0,
                                                 "every eps must be a number > 0 (inf: non-private)")]
    grid["delta"] = [delta_entry(x) for x in grid_list("grid.delta", g.get("delta", [1e-6]))]
    if ("n" in g) == ("target_alpha" in g):
        raise SpecError("grid needs exactly one of n (fixed budgets) or target_alpha (with budget)")
    if "n" in g:
        if "budget" in g:
            raise SpecError("grid.budget is only allowed with grid.target_alpha (use grid.n for budgets)")
        grid["n"] = [int_like("grid.n", x, 1) for x in grid_list("grid.n", g["n"])]
    else:
        grid["target_alpha"] = [float(x) for x in number_list(
            "grid.target_alpha", g["target_alpha"], lambda x: 0 < x < math.inf,
            "every target alpha must be a finite number > 0")]
        if "budget" not in g:
            raise SpecError("grid.budget is missing: target_alpha sweeps need a sample cap")
        grid["budget"] = int_like("grid.budget", g["budget"], 1)

    for entry in grid["delta"]:
        for b in grid.get("n") or [grid["budget"]]:
            if isinstance(entry, str) and not 0 < delta_for(entry, b) < 1:
                raise SpecError(f"grid.delta={entry!r} is invalid with budget {b}: 1/{b}^p must "
                                "be in (0, 1)")
    return grid


def parse_limits(lim: Any) -> tuple[float | None, float | None]:
    """[limits]: (time, memory_mb), each a finite number > 0 or None."""
    check_keys(lim, LIMIT_KEYS, "limits")
    for k, v in lim.items():
        if not is_number(v) or not 0 < v < math.inf:
            raise invalid_value(f"limits.{k}", v, "must be a finite number > 0")
    return lim.get("time"), lim.get("memory_mb")


def parse_problems(probs: Any, grid: dict[str, Any]) -> list[dict[str, Any]]:
    """[[problem]]: each a registered problem whose parameters build an instance at every d (and
    target alpha) of the grid."""
    import problems

    if not isinstance(probs, list) or not probs:
        raise invalid_value("problem", probs, "must be one or more [[problem]] tables")
    problem_list = []
    for i, p in enumerate(probs):
        check_keys(p, PROBLEM_KEYS, f"problem[{i}]")
        pname = p.get("name")
        if pname not in problems.available():
            raise invalid_value(f"problem[{i}].name", pname,
                                f"must be one of {', '.join(problems.available())}")
        params = param_table(f"problem[{i}].params", p.get("params"))
        if "d" in params:
            raise SpecError(f"problem[{i}].params.d is not allowed: set dimensions in grid.d")
        check_problem_params(pname, params, f"problem[{i}].params")
        for d, ta in itertools.product(grid["d"], grid.get("target_alpha") or [None]):
            try:
                problems.get_problem(pname, d=d, **problems.instance_params(pname, params, ta))
            except (ValueError, TypeError) as exc:
                at = "" if ta is None else f", target_alpha={ta}"
                raise SpecError(f"problem[{i}] ({pname}, d={d}{at}): {exc}") from None
        problem_list.append({"name": pname, "params": params})
    return problem_list


def parse_algorithms(algs: Any) -> list[dict[str, Any]]:
    """[[algorithm]]: each a registered algorithm built at every combination of its knob grid."""
    import algorithms

    if not isinstance(algs, list) or not algs:
        raise invalid_value("algorithm", algs, "must be one or more [[algorithm]] tables")
    alg_list = []
    for i, a in enumerate(algs):
        check_keys(a, ALGORITHM_KEYS, f"algorithm[{i}]")
        aname = a.get("name")
        if aname not in algorithms.available():
            raise invalid_value(f"algorithm[{i}].name", aname,
                                f"must be one of {', '.join(algorithms.available())}")
        params = param_table(f"algorithm[{i}].params", a.get("params"))
        kgrid_raw = a.get("grid", {})
        if not isinstance(kgrid_raw, dict):
            raise invalid_value(f"algorithm[{i}].grid", kgrid_raw, "must be a table of name = [values]")
        kgrid = {k: grid_list(f"algorithm[{i}].grid.{k}", v) for k, v in kgrid_raw.items()}
        both = set(kgrid) & set(params)
        if both:
            raise SpecError(f"algorithm[{i}] sets {sorted(both)} in both params and grid: choose one")
        if "target_alpha" in params or "target_alpha" in kgrid:
            raise SpecError(f"algorithm[{i}]: set target_alpha in grid.target_alpha, not per algorithm")
        cls = algorithms.get_algorithm(aname)
        for combo in itertools.product(*kgrid.values()):
            try:
                cls(**{**params, **dict(zip(kgrid, combo, strict=True))})
            except (ValueError, TypeError) as exc:
                raise SpecError(f"algorithm[{i}] ({aname}): {exc}") from None
        alg_list.append({"name": aname, "params": params, "grid": kgrid})
    return alg_list


def parse_target_metric(raw: dict[str, Any], grid: dict[str, Any],
                        problem_list: list[dict[str, Any]]) -> str | None:
    """The top-level target_metric: a population metric of `bench.n_search.SEARCH_METRICS`, with
    grid.target_alpha; None where the spec sets none."""
    target_metric = raw.get("target_metric")
    if target_metric is not None:
        from bench.n_search import SEARCH_METRICS

        if target_metric not in SEARCH_METRICS:
            raise invalid_value("target_metric", target_metric,
                                f"must be one of {', '.join(SEARCH_METRICS)} (population metrics)")
        if "target_alpha" not in grid:
            raise SpecError("target_metric is only allowed with grid.target_alpha")
        if raw.get("stop_at_target") is True and target_metric not in ("alpha_sosp", "grad_norm"):
            raise SpecError(f"target_metric={target_metric!r} is invalid with stop_at_target = "
                            "true: a run stops on alpha_sosp or grad_norm (population metrics) only")
        if target_metric == "excess_risk":
            from problems import get_problem_class

            for prob in problem_list:
                if not hasattr(get_problem_class(prob["name"]), "excess_risk"):
                    raise SpecError(f"target_metric='excess_risk' is invalid for problem "
                                    f"{prob['name']!r}: it states no excess risk (min F unknown)")
    return target_metric


def parse_fits(raw_fits: Any, grid: dict[str, Any], problem_list: list[dict[str, Any]],
               alg_list: list[dict[str, Any]]) -> list[FitSpec]:
    """[[fit]]: each with a unique name, a view, an x, a y, a window, a mode and a `where` the
    grid can satisfy."""
    fits = []
    if not isinstance(raw_fits, list):
        raise invalid_value("fit", raw_fits, "must be [[fit]] tables")
    seen = set()
    for i, f in enumerate(raw_fits):
        check_keys(f, FIT_KEYS, f"fit[{i}]")
        for req in ("name", "view", "x", "window"):
            if req not in f:
                raise SpecError(f"fit[{i}].{req} is missing: a fit needs name, view, x and window")
        if not isinstance(f["name"], str) or f["name"] in seen:
            raise invalid_value(f"fit[{i}].name", f["name"], "must be a string not used by another fit")
        seen.add(f["name"])
        if f["view"] not in FIT_VIEWS:
            raise invalid_value(f"fit[{i}].view", f["view"], f"must be one of {', '.join(FIT_VIEWS)}")
        if f["x"] not in FIT_X:
            raise invalid_value(f"fit[{i}].x", f["x"], f"must be one of {', '.join(FIT_X)}")
        y = f.get("y", "n_star" if f["view"] == "sample_complexity" else "alpha_best")
        if not isinstance(y, str):
            raise invalid_value(f"fit[{i}].y", y, "must be a column name")
        if f["view"] == "sample_complexity" and y != "n_star":
            raise invalid_value(f"fit[{i}].y", y, "must be n_star in the sample_complexity view")
        w = f["window"]
        if (not isinstance(w, list) or len(w) != 2 or not all(is_number(v) for v in w)
                or not 0 < w[0] < w[1] < math.inf):
            raise invalid_value(f"fit[{i}].window", w, "must be [low, high] with 0 < low < high < inf")
        mode = f.get("mode", "tuned")
        if mode not in FIT_MODES:
            raise invalid_value(f"fit[{i}].mode", mode, f"must be one of {', '.join(FIT_MODES)}")
        where = param_table(f"fit[{i}].where", f.get("where"))
        check_keys(where, {"problem", "algorithm", "d", "eps", "delta", "n", "target_alpha"},
                   f"fit[{i}].where")
        fit = FitSpec(name=f["name"], view=f["view"], x=f["x"], y=y,
                      window=(float(w[0]), float(w[1])), mode=mode,
                      where={k: canonical_number(v) for k, v in where.items()})
        check_fit_against_grid(i, fit, grid, problem_list, alg_list)
        fits.append(fit)
    return fits


def parse_data(raw: dict[str, Any], grid: dict[str, Any], problem_list: list[dict[str, Any]],
               alg_list: list[dict[str, Any]]) -> tuple[bool, str | None]:
    """stop_at_target (with grid.target_alpha) and the data mode (every problem and algorithm
    supports it; counts exact for every pair): (stop, data)."""
    import algorithms

    stop = raw.get("stop_at_target", False)
    if not isinstance(stop, bool):
        raise invalid_value("stop_at_target", stop, "must be true or false")
    if stop and "target_alpha" not in grid:
        raise SpecError("stop_at_target = true is only allowed with grid.target_alpha")
    data = raw.get("data")
    if data is not None:
        if data not in DATA_MODES:
            raise invalid_value("data", data, f"must be one of {', '.join(DATA_MODES)}")
        for prob in problem_list:
            if data not in data_modes(prob["name"]):
                raise SpecError(f"data={data!r} is invalid for problem {prob['name']!r}: it supports "
                                f"{', '.join(data_modes(prob['name']))} only")
        for alg in alg_list:
            modes = algorithms.get_algorithm(alg["name"]).data_modes
            if data not in modes:
                raise SpecError(f"data={data!r} is invalid for algorithm {alg['name']!r}: it runs "
                                f"on {', '.join(modes)} only")
        if data == "counts":
            from problems import get_problem_class
            from problems.counts.dataset import counts_exact

            for prob in problem_list:
                for alg in alg_list:
                    cls = algorithms.get_algorithm(alg["name"])
                    if not counts_exact(get_problem_class(prob["name"]), cls):
                        raise SpecError(f"data='counts' is invalid for algorithm {alg['name']!r} "
                                        f"on problem {prob['name']!r}: it re-reads its sample "
                                        f"({cls.counts_rereads}), exact from counts on atoms "
                                        "problems only")
    return stop, data


def check_search_memory(target_metric: str | None, search_cap: int | None, grid: dict[str, Any],
                        problem_list: list[dict[str, Any]], alg_list: list[dict[str, Any]],
                        data: str | None) -> None:
    """A records-mode search over n holds its n records in memory: its cap at most
    RECORDS_SEARCH_CAP."""
    if target_metric is not None:  # a records-mode search holds its n records in memory
        cap = search_cap or grid["budget"]
        for prob in problem_list:
            for alg in alg_list:
                if runs_on_n_records(alg["name"]) and cap > RECORDS_SEARCH_CAP and \
                        (data or default_data_mode(prob["name"], alg["name"])) == "records":
                    raise SpecError(f"search_cap={cap:g} is invalid for {alg['name']!r} on "
                                    f"{prob['name']!r} in records mode: a search may hold that "
                                    f"many records; set search_cap <= {RECORDS_SEARCH_CAP:g}")
