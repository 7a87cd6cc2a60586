"""Sweep specs: parse a TOML file, validate all of it before any work, expand it into cells.

A spec (see bench/configs/quick.toml for a commented example):

    name = "quick"                 # required; names the default store results/<name>.sqlite
    description = "..."            # optional
    seed = 1                       # base seed (integer >= 0)
    repetitions = 5                # paired repetitions (integer >= 1)
    calibration = "tight"          # optional: tight | theory
    stop_at_target = true          # optional (target_alpha sweeps): end a run once alpha_SOSP
                                   # <= its target; n* is unchanged, later metrics are not measured
    data = "counts"                # optional: counts (exact batch statistics: samples are free)
                                   # | records; default: counts for each (problem, algorithm)
                                   # pair where it is exact, records for the others; "counts"
                                   # with a problem that has no counts mode, or with an
                                   # algorithm that re-reads its sample on a two-point
                                   # (product-layout) problem, is an error

    [grid]                         # cartesian product over every list
    n = [100000, 1000000]          # sample budgets: the fixed-budget (error) view ...
    target_alpha = [0.1, 0.05]     # ... or target alphas (sample-complexity view) with
    budget = 10000000              #     one sample cap for every cell (not both n and target_alpha)
    d = [10]
    eps = [0.1, 1.0, inf]          # > 0; inf is non-private
    delta = [1e-6]                 # in (0, 1), or "1/n^p" (p > 0): 1 / budget^p per cell, the
                                   # budget being the cell's n (or grid.budget), e.g. "1/n^1.1"

    [limits]                       # optional, per cell
    time = 120                     # seconds of wall time; the cell ends with status "timeout"
    memory_mb = 4000               # address-space cap of a worker process while the cell runs

    [[problem]]                    # one table per problem
    name = "hard_valley"
    params = { w = 0.5 }           # optional fixed problem parameters

    [[algorithm]]                  # one table per algorithm
    name = "adaptive_tree_spider"
    params = { escape_rule = "noise_scaled" }   # fixed knobs / overrides
    grid = { alpha_mult = [0.5, 1, 2] }         # knob grid (cartesian) for the tuned envelope

    [[fit]]                        # fits the analysis runs, declared before the run
    name = "sample_complexity"
    view = "sample_complexity"     # sample_complexity (log n* vs log x) | error (log y vs log x)
    x = "alpha"                    # alpha | privacy (= sqrt(d)/(n eps)) | n | d | eps
    y = "n_star"                   # n_star, or a metric column (alpha_best, ...)
    window = [0.01, 0.1]           # inclusive range of x used by the fit
    mode = "tuned"                 # tuned (envelope over the knob grid) | theory (knobs at 1)
    where = { eps = 0.1 }          # optional: restrict to cells with these values

Validation names the key, the value and what is allowed, and raises `SpecError` (a
ValueError) before anything is run or written.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.declarations import FitSpec
from bench.cells import Cell, canonical_number
from problems import data_modes, instance_params
from problems.base import DATA_MODES

TOP_KEYS = {"name", "description", "seed", "repetitions", "calibration", "grid", "limits",
            "problem", "algorithm", "fit", "stop_at_target", "data", "plugins"}
GRID_KEYS = {"n", "target_alpha", "budget", "d", "eps", "delta"}
LIMIT_KEYS = {"time", "memory_mb"}
PROBLEM_KEYS = {"name", "params"}
ALGORITHM_KEYS = {"name", "params", "grid"}
FIT_KEYS = {"name", "view", "x", "y", "window", "mode", "where"}
FIT_VIEWS = ("sample_complexity", "error")
FIT_X = ("alpha", "privacy", "n", "d", "eps", "rank")
FIT_MODES = ("tuned", "theory")
CALIBRATIONS = ("tight", "theory")


class SpecError(ValueError):
    """An invalid sweep spec (the message names the key, the value and what is allowed)."""


@dataclass(frozen=True)
class Limits:
    time: float | None = None
    memory_mb: float | None = None


@dataclass(frozen=True)
class SweepSpec:
    name: str
    seed: int
    repetitions: int
    calibration: str
    grid: dict[str, list]
    problems: list[dict[str, Any]]
    algorithms: list[dict[str, Any]]
    fits: list[FitSpec]
    limits: Limits
    description: str = ""
    text: str = ""
    source: str = ""
    stop_at_target: bool = False
    data: str | None = None  # None: each problem's default data mode
    plugins: tuple[str, ...] = ()  # resolved plugin entries (absolute paths or module names)

    def data_mode(self, problem: str, algorithm: str) -> str:
        """The data mode of the cells of (`problem`, `algorithm`): the spec's, or the first of
        the problem's modes the algorithm runs on (validated in parse_spec)."""
        return self.data or default_data_mode(problem, algorithm)

    @property
    def mode(self) -> str:
        """"target" (sample-complexity cells) or "budget" (fixed-budget cells)."""
        return "target" if "target_alpha" in self.grid else "budget"

    def cells(self) -> list[Cell]:
        """Every cell of the sweep, in a deterministic order (which does not affect results)."""
        out = []
        budgets = self.grid.get("n") or [self.grid.get("budget")]
        targets = self.grid.get("target_alpha") or [None]
        for prob in self.problems:
            for alg in self.algorithms:
                knob_names = sorted(alg["grid"])
                for knob_values in itertools.product(*(alg["grid"][k] for k in knob_names)):
                    params = {**alg["params"], **dict(zip(knob_names, knob_values, strict=True))}
                    for d, n, ta, eps, delta, rep in itertools.product(
                            self.grid["d"], budgets, targets, self.grid["eps"], self.grid["delta"],
                            range(self.repetitions)):
                        out.append(Cell.make(
                            problem=prob["name"],
                            problem_params=instance_params(prob["name"], prob["params"], ta),
                            algorithm=alg["name"], params=params, n=n, d=d, eps=eps,
                            delta=delta_for(delta, n),
                            rep=rep, calibration=self.calibration, base_seed=self.seed,
                            target_alpha=ta, knobs=tuple(knob_names),
                            stop_at_target=self.stop_at_target,
                            data=self.data_mode(prob["name"], alg["name"])))
        return out


def _where(key: str, value: Any, allowed: str) -> SpecError:
    return SpecError(f"{key}={value!r} is invalid: {allowed}")


def _check_keys(table: Any, allowed: set[str], where: str) -> None:
    if not isinstance(table, dict):
        raise _where(where, table, "must be a table")
    for key in table:
        if key not in allowed:
            raise SpecError(f"{where}.{key} is an unknown key: allowed are {', '.join(sorted(allowed))}"
                            if where else
                            f"{key} is an unknown key: allowed are {', '.join(sorted(allowed))}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int_like(key: str, v: Any, lo: int) -> int:
    if _is_number(v) and math.isfinite(v) and float(v).is_integer() and v >= lo:
        return int(v)
    raise _where(key, v, f"must be an integer >= {lo}")


def _grid_list(key: str, v: Any) -> list:
    if not isinstance(v, list):
        raise _where(key, v, "must be a list of values")
    if not v:
        raise _where(key, v, "must not be empty")
    if len({repr(x) for x in v}) != len(v):
        raise _where(key, v, "must not repeat a value")
    return v


DELTA_RULE = re.compile(r"^1/n(?:\^(\d+(?:\.\d+)?))?$")


def _delta_entry(x: Any) -> float | str:
    """A number in (0, 1), or a rule "1/n^p" (p > 0) kept as its canonical string."""
    if _is_number(x) and 0 < float(x) < 1:
        return float(x)
    if isinstance(x, str):
        m = DELTA_RULE.match(x.replace(" ", ""))
        if m and (m.group(1) is None or float(m.group(1)) > 0):
            return f"1/n^{float(m.group(1) or 1):g}"
    raise SpecError(f"grid.delta contains {x!r}: every delta must be a number in (0, 1) or a "
                    'rule "1/n^p" with p > 0 (1 / budget^p per cell)')


def delta_for(entry: float | str, budget: int | None) -> float:
    """The delta of a cell: the number itself, or 1 / budget^p for a rule "1/n^p"."""
    if isinstance(entry, str):
        return float(budget) ** -float(entry.split("^")[1])
    return float(entry)


def _number_list(key: str, v: Any, check, allowed: str) -> list:
    vals = _grid_list(key, v)
    for x in vals:
        if not _is_number(x) or not check(float(x)):
            raise SpecError(f"{key} contains {x!r}: {allowed}")
    return vals


def _param_table(key: str, v: Any) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise _where(key, v, "must be a table of name = value")
    for k, x in v.items():
        if not isinstance(x, (int, float, str, bool)):
            raise SpecError(f"{key}.{k}={x!r} is invalid: must be a number, string or boolean")
    return dict(v)


def problem_parameters(name: str) -> dict[str, Any]:
    """The parameters problem `name` takes besides d, with their defaults (from its class)."""
    import inspect

    import problems

    sig = inspect.signature(problems.get_problem_class(name).__init__)
    return {k: (None if p.default is inspect.Parameter.empty else p.default)
            for k, p in sig.parameters.items()
            if k not in ("self", "d") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


def algorithm_parameters(name: str) -> list[str]:
    """The knobs and overrides algorithm `name` accepts, as its own validation lists them
    (every family refuses an unknown key with "...: allowed: a, b, ..."; we ask it)."""
    import algorithms

    cls = algorithms.get_algorithm(name)
    try:
        cls(**{"__no_such_parameter__": 0})
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if "allowed: " in msg:
            return [k.strip() for k in msg.split("allowed: ", 1)[1].split(",") if k.strip()]
    return []


def check_problem_params(name: str, params: dict[str, Any], where: str) -> None:
    """One line naming an unknown problem parameter and the allowed ones (not the constructor's
    "unexpected keyword argument" TypeError)."""
    allowed = problem_parameters(name)
    for k, v in params.items():
        if k not in allowed and k != "d":
            shown = ", ".join(allowed) or "none"
            at = f"{where} {k}={v!r}" if where.startswith("--") else f"{where}.{k}={v!r}"
            raise SpecError(f"{at} is invalid: {name} has no parameter {k!r}; its "
                            f"parameters are {shown} (`dprates list --params {name}`)")


def default_data_mode(problem: str, algorithm: str) -> str:
    """"counts" where counts mode is exact for the pair (`problems.counts.dataset.counts_exact`:
    e.g. DP-SGD re-reads its sample, exact on atoms problems only), else "records"."""
    import algorithms
    from problems import get_problem_class
    from problems.counts.dataset import counts_exact

    cls = algorithms.get_algorithm(algorithm)
    return "counts" if counts_exact(get_problem_class(problem), cls) else "records"


def parse_spec(text: str, source: str = "<spec>") -> SweepSpec:
    """Parse and completely validate a spec's TOML text (see the module docstring)."""
    import algorithms
    import problems

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source} is not valid TOML: {exc}") from None
    _check_keys(raw, TOP_KEYS, "")
    for req in ("name", "seed", "grid", "problem", "algorithm"):
        if req not in raw:
            raise SpecError(f"{req} is missing: a spec needs name, seed, grid, problem and algorithm")
    # Plugins first: they register the names the rest of the spec may use.
    plugins_raw = raw.get("plugins", [])
    if not isinstance(plugins_raw, list) or not all(isinstance(e, str) for e in plugins_raw):
        raise _where("plugins", plugins_raw, "must be a list of .py paths (relative to the spec) "
                     "or module names")
    from bench.plugins import load_plugins, resolve

    src = Path(source)
    base = src.resolve().parent if source and src.is_file() else None
    plugins = tuple(resolve(e, base) for e in plugins_raw)
    load_plugins(list(plugins))
    name = raw["name"]
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise _where("name", name, "must be a non-empty string of letters, digits, '-', '_', '.'")
    if not isinstance(raw.get("description", ""), str):
        raise _where("description", raw["description"], "must be a string")
    seed = _int_like("seed", raw["seed"], 0)
    reps = _int_like("repetitions", raw.get("repetitions", 1), 1)
    calibration = raw.get("calibration", "tight")
    if calibration not in CALIBRATIONS:
        raise _where("calibration", calibration, f"must be one of {', '.join(CALIBRATIONS)}")

    g = raw["grid"]
    _check_keys(g, GRID_KEYS, "grid")
    for req in ("d", "eps"):
        if req not in g:
            raise SpecError(f"grid.{req} is missing: the grid needs d, eps and either n or target_alpha")
    grid: dict[str, list] = {}
    grid["d"] = [_int_like("grid.d", x, 1) for x in _grid_list("grid.d", g["d"])]
    grid["eps"] = [float(x) for x in _number_list("grid.eps", g["eps"], lambda x: x > 0,
                                                  "every eps must be a number > 0 (inf: non-private)")]
    grid["delta"] = [_delta_entry(x) for x in _grid_list("grid.delta", g.get("delta", [1e-6]))]
    if ("n" in g) == ("target_alpha" in g):
        raise SpecError("grid needs exactly one of n (fixed budgets) or target_alpha (with budget)")
    if "n" in g:
        if "budget" in g:
            raise SpecError("grid.budget is only allowed with grid.target_alpha (use grid.n for budgets)")
        grid["n"] = [_int_like("grid.n", x, 1) for x in _grid_list("grid.n", g["n"])]
    else:
        grid["target_alpha"] = [float(x) for x in _number_list(
            "grid.target_alpha", g["target_alpha"], lambda x: 0 < x < math.inf,
            "every target alpha must be a finite number > 0")]
        if "budget" not in g:
            raise SpecError("grid.budget is missing: target_alpha sweeps need a sample cap")
        grid["budget"] = _int_like("grid.budget", g["budget"], 1)

    for entry in grid["delta"]:
        for b in grid.get("n") or [grid["budget"]]:
            if isinstance(entry, str) and not 0 < delta_for(entry, b) < 1:
                raise SpecError(f"grid.delta={entry!r} is invalid with budget {b}: 1/{b}^p must "
                                "be in (0, 1)")

    lim = raw.get("limits", {})
    _check_keys(lim, LIMIT_KEYS, "limits")
    for k, v in lim.items():
        if not _is_number(v) or not 0 < v < math.inf:
            raise _where(f"limits.{k}", v, "must be a finite number > 0")
    limits = Limits(time=lim.get("time"), memory_mb=lim.get("memory_mb"))

    probs = raw["problem"]
    if not isinstance(probs, list) or not probs:
        raise _where("problem", probs, "must be one or more [[problem]] tables")
    problem_list = []
    for i, p in enumerate(probs):
        _check_keys(p, PROBLEM_KEYS, f"problem[{i}]")
        pname = p.get("name")
        if pname not in problems.available():
            raise _where(f"problem[{i}].name", pname,
                         f"must be one of {', '.join(problems.available())}")
        params = _param_table(f"problem[{i}].params", p.get("params"))
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

    algs = raw["algorithm"]
    if not isinstance(algs, list) or not algs:
        raise _where("algorithm", algs, "must be one or more [[algorithm]] tables")
    alg_list = []
    for i, a in enumerate(algs):
        _check_keys(a, ALGORITHM_KEYS, f"algorithm[{i}]")
        aname = a.get("name")
        if aname not in algorithms.available():
            raise _where(f"algorithm[{i}].name", aname,
                         f"must be one of {', '.join(algorithms.available())}")
        params = _param_table(f"algorithm[{i}].params", a.get("params"))
        kgrid_raw = a.get("grid", {})
        if not isinstance(kgrid_raw, dict):
            raise _where(f"algorithm[{i}].grid", kgrid_raw, "must be a table of name = [values]")
        kgrid = {k: _grid_list(f"algorithm[{i}].grid.{k}", v) for k, v in kgrid_raw.items()}
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

    if "target_alpha" in grid:
        _check_targets_below_start(grid, problem_list, alg_list)

    fits = []
    raw_fits = raw.get("fit", [])
    if not isinstance(raw_fits, list):
        raise _where("fit", raw_fits, "must be [[fit]] tables")
    seen = set()
    for i, f in enumerate(raw_fits):
        _check_keys(f, FIT_KEYS, f"fit[{i}]")
        for req in ("name", "view", "x", "window"):
            if req not in f:
                raise SpecError(f"fit[{i}].{req} is missing: a fit needs name, view, x and window")
        if not isinstance(f["name"], str) or f["name"] in seen:
            raise _where(f"fit[{i}].name", f["name"], "must be a string not used by another fit")
        seen.add(f["name"])
        if f["view"] not in FIT_VIEWS:
            raise _where(f"fit[{i}].view", f["view"], f"must be one of {', '.join(FIT_VIEWS)}")
        if f["x"] not in FIT_X:
            raise _where(f"fit[{i}].x", f["x"], f"must be one of {', '.join(FIT_X)}")
        y = f.get("y", "n_star" if f["view"] == "sample_complexity" else "alpha_best")
        if not isinstance(y, str):
            raise _where(f"fit[{i}].y", y, "must be a column name")
        if f["view"] == "sample_complexity" and y != "n_star":
            raise _where(f"fit[{i}].y", y, "must be n_star in the sample_complexity view")
        w = f["window"]
        if (not isinstance(w, list) or len(w) != 2 or not all(_is_number(v) for v in w)
                or not 0 < w[0] < w[1] < math.inf):
            raise _where(f"fit[{i}].window", w, "must be [low, high] with 0 < low < high < inf")
        mode = f.get("mode", "tuned")
        if mode not in FIT_MODES:
            raise _where(f"fit[{i}].mode", mode, f"must be one of {', '.join(FIT_MODES)}")
        where = _param_table(f"fit[{i}].where", f.get("where"))
        for k in where:
            if k not in ("problem", "algorithm", "d", "eps", "delta", "n", "target_alpha"):
                raise SpecError(f"fit[{i}].where.{k} is an unknown key: allowed are problem, "
                                "algorithm, d, eps, delta, n, target_alpha")
        fit = FitSpec(name=f["name"], view=f["view"], x=f["x"], y=y,
                      window=(float(w[0]), float(w[1])), mode=mode,
                      where={k: canonical_number(v) for k, v in where.items()})
        _check_fit_against_grid(i, fit, grid, problem_list, alg_list)
        fits.append(fit)

    stop = raw.get("stop_at_target", False)
    if not isinstance(stop, bool):
        raise _where("stop_at_target", stop, "must be true or false")
    if stop and "target_alpha" not in grid:
        raise SpecError("stop_at_target = true is only allowed with grid.target_alpha")
    data = raw.get("data")
    if data is not None:
        if data not in DATA_MODES:
            raise _where("data", data, f"must be one of {', '.join(DATA_MODES)}")
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
    for alg in alg_list:  # a calibration the algorithm does not implement is refused here
        try:
            algorithms.check_calibration(alg["name"], calibration)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
    return SweepSpec(name=name, seed=seed, repetitions=reps, calibration=calibration, grid=grid,
                     problems=problem_list, algorithms=alg_list, fits=fits, limits=limits,
                     description=raw.get("description", ""), text=text, source=source,
                     stop_at_target=stop, data=data, plugins=plugins)


def start_metric(problem: str, d: int, params: dict, metric: str) -> tuple[float, str]:
    """The value of a claim metric at the problem's public start x0, and its name: alpha_SOSP
    (alpha_sosp), ||grad F(x0)|| (grad_norm; also emp_grad_norm, whose value at x0 is the
    population one up to sampling error), or F(x0) - min F (excess_risk)."""
    import problems
    from analysis.metrics import sosp_alpha

    prob = problems.get_problem(problem, d=d, **params)
    if metric == "alpha_sosp":
        return float(sosp_alpha(prob, prob.x0)["alpha"]), "alpha_SOSP(x0)"
    if metric == "excess_risk" and hasattr(prob, "excess_risk"):
        return float(prob.excess_risk(prob.x0)), "F(x0) - min F"
    import numpy as np

    return float(np.linalg.norm(prob.population_grad(prob.x0))), "||grad F(x0)||"


def _check_targets_below_start(grid: dict[str, Any], problem_list: list[dict],
                               alg_list: list[dict]) -> None:
    """Refuse a target at or above the start's value of the metric it targets: such a cell
    is "reached" at step 0 (samples_to_target 0) and measures nothing (issue 28, point 1)."""
    import problems
    from analysis.predictions import claim_metric

    metrics = sorted({claim_metric(a["name"]) for a in alg_list})
    cache: dict[tuple, tuple[float, str]] = {}
    for prob in problem_list:
        for d in grid["d"]:
            for ta in grid["target_alpha"]:
                params = problems.instance_params(prob["name"], prob["params"], ta)
                for metric in metrics:
                    key = (prob["name"], d, repr(sorted(params.items())), metric)
                    if key not in cache:
                        cache[key] = start_metric(prob["name"], d, params, metric)
                    start, what = cache[key]
                    if ta >= start:
                        users = ", ".join(a["name"] for a in alg_list
                                          if claim_metric(a["name"]) == metric)
                        raise SpecError(
                            f"grid.target_alpha contains {ta:g}: at or above the start's {what} = "
                            f"{start:.3g} on {prob['name']} (d={d}; the metric of {users}), so "
                            f"the target is met at step 0 and measures nothing; targets must be "
                            f"< {start:.3g}")


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


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate the spec at `path`."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"spec path {str(p)!r} is invalid: no such file")
    # The absolute path: a store records it, and plugins named relative to the spec must still
    # resolve when the store is reopened from another directory.
    return parse_spec(p.read_text(encoding="utf-8"), source=str(p.resolve()))
