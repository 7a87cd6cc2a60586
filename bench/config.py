"""Sweep specs: parse a TOML file, validate all of it before any work, expand it into cells.

A spec (see bench/configs/quick.toml for a commented example):

    name = "quick"                 # required; names the default store results/<name>.sqlite
    description = "..."            # optional
    seed = 1                       # base seed (integer >= 0)
    repetitions = 5                # paired repetitions (integer >= 1)
    calibration = "tight"          # optional: tight | theory
    stop_at_target = true          # optional (target_alpha sweeps): end a run once alpha_SOSP
                                   # <= its target; n* is unchanged, later metrics are not measured
    target_metric = "alpha_sosp"   # optional (target_alpha sweeps): the metric every algorithm's
                                   # target is on (default: each algorithm's claim metric), so
                                   # one spec puts all on one axis; an algorithm that runs on n
                                   # records (DP-GD, DP-SGD, ...) gets its samples to the target
                                   # by a search over n inside each target cell (bench.n_search)
    search_cap = 2000000           # optional: the largest n such a search tries (default: the
                                   # budget; records mode holds n records in memory)
    reach = "output"               # optional, with target_metric: a search over n reads the best
                                   # iterate ("best") or the own output (config_grid_checks)
    data = "counts"                # optional: counts (exact batch statistics: samples are free)
                                   # | records; default: counts for each (problem, algorithm)
                                   # pair where it is exact, records for the others; "counts"
                                   # with a problem that has no counts mode, or with an
                                   # algorithm that re-reads its sample on a two-point
                                   # (product-layout) problem, is an error
    counts_stream = 4              # optional: the counts stream version counts cells draw
                                   # (problems.counts.stream; default the latest, 4; 3 draws the
                                   # data of the committed reference); a store holds one version
    controls_from = ["headline2"]  # optional: specs whose stores (beside this one, same seed,
                                   # calibration, data mode and counts stream) hold the eps = inf
                                   # controls of this spec's fits, where running them here would
                                   # duplicate those cells (analysis.verdict_engine.flags)

    [grid]                         # cartesian product over every list
    n = [100000, 1000000]          # sample budgets: the fixed-budget (error) view ...
    target_alpha = [0.1, 0.05]     # ... or target alphas (sample-complexity view) with
    budget = 10000000              #     one sample cap for every cell (not both n and target_alpha)
    d = [10]
    eps = [0.1, 1.0, inf]          # > 0; inf is non-private
    delta = [1e-6]                 # in (0, 1), or "1/n^p" (p > 0): 1 / budget^p per cell, the
                                   # budget being the cell's n (or grid.budget), e.g. "1/n^1.1"

    [limits]                       # optional, per cell: seconds of wall time (status "timeout")
    time = 120                     # and the address-space cap of a worker process (MB)
    memory_mb = 4000

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

Here: `SweepSpec`, `Limits`, `parse_spec`, `load_spec`; single values and `SpecError` in
`bench.config_values`, problems' and algorithms' parameters in `bench.config_parameters`, grids
that would measure nothing and `reach` in `bench.config_grid_checks`.
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
from bench.config_grid_checks import (
    _check_fit_against_grid,
    _check_targets_below_start,
    check_reach,
    check_search_cap,
)
from bench.config_parameters import check_problem_params, default_data_mode
from bench.config_values import (
    SpecError,
    _check_keys,
    _delta_entry,
    _grid_list,
    _int_like,
    _is_number,
    _number_list,
    _param_table,
    _where,
    delta_for,
)
from bench.n_search import runs_on_n_records
from problems import data_modes, instance_params
from problems.base import DATA_MODES
from problems.counts.stream import STREAM_VERSION, SUPPORTED_STREAM_VERSIONS

TOP_KEYS = {"name", "description", "seed", "repetitions", "calibration", "grid", "limits",
            "problem", "algorithm", "fit", "stop_at_target", "data", "plugins", "counts_stream",
            "controls_from", "target_metric", "search_cap", "reach"}
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
CALIBRATIONS = ("tight", "theory")


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
    counts_stream: int = STREAM_VERSION  # the counts stream version its counts cells draw
    controls_from: tuple[str, ...] = ()  # specs whose stores lend this one eps = inf controls
    target_metric: str | None = None  # the metric of every target (None: each claim metric)
    search_cap: int | None = None  # the largest n a search over n tries (None: grid.budget)
    reach: str = "best"  # what a search over n reads as reaching: best iterate | own output

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
                            data=self.data_mode(prob["name"], alg["name"]),
                            counts_stream=self.counts_stream,
                            metric=self.target_metric if ta is not None else None,
                            search_cap=self.search_cap if ta is not None and
                            runs_on_n_records(alg["name"]) else None,
                            reach=None if self.reach == "best" else self.reach))
        return out


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

    target_metric = raw.get("target_metric")
    if target_metric is not None:
        from bench.n_search import SEARCH_METRICS

        if target_metric not in SEARCH_METRICS:
            raise _where("target_metric", target_metric,
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
    search_cap = check_search_cap(raw.get("search_cap"), target_metric, grid)
    reach = check_reach(raw.get("reach", "best"), target_metric, alg_list, runs_on_n_records)
    if "target_alpha" in grid:
        _check_targets_below_start(grid, problem_list, alg_list, target_metric)

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
        _check_keys(where, {"problem", "algorithm", "d", "eps", "delta", "n", "target_alpha"},
                    f"fit[{i}].where")
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
    counts_version = raw.get("counts_stream", STREAM_VERSION)
    if isinstance(counts_version, bool) or counts_version not in SUPPORTED_STREAM_VERSIONS:
        raise _where("counts_stream", counts_version,
                     f"must be one of {', '.join(map(str, SUPPORTED_STREAM_VERSIONS))}")
    controls_from = raw.get("controls_from", [])
    if not isinstance(controls_from, list) or not all(
            isinstance(c, str) and re.fullmatch(r"[A-Za-z0-9_.-]+", c) and c != name
            for c in controls_from):
        raise _where("controls_from", controls_from,
                     "must be a list of other specs' names (letters, digits, _ . -)")
    for alg in alg_list:  # a calibration the algorithm does not implement is refused here
        try:
            algorithms.check_calibration(alg["name"], calibration)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
    if target_metric is not None:  # a records-mode search holds its n records in memory
        cap = search_cap or grid["budget"]
        for prob in problem_list:
            for alg in alg_list:
                if runs_on_n_records(alg["name"]) and cap > RECORDS_SEARCH_CAP and \
                        (data or default_data_mode(prob["name"], alg["name"])) == "records":
                    raise SpecError(f"search_cap={cap:g} is invalid for {alg['name']!r} on "
                                    f"{prob['name']!r} in records mode: a search may hold that "
                                    f"many records; set search_cap <= {RECORDS_SEARCH_CAP:g}")
    return SweepSpec(name=name, seed=seed, repetitions=reps, calibration=calibration, grid=grid,
                     problems=problem_list, algorithms=alg_list, fits=fits, limits=limits,
                     description=raw.get("description", ""), text=text, source=source,
                     stop_at_target=stop, data=data, plugins=plugins,
                     counts_stream=int(counts_version), controls_from=tuple(controls_from),
                     target_metric=target_metric, search_cap=search_cap, reach=reach)


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate the spec at `path`."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"spec path {str(p)!r} is invalid: no such file")
    # The absolute path: a store records it, and plugins named relative to the spec must still
    # resolve when the store is reopened from another directory.
    return parse_spec(p.read_text(encoding="utf-8"), source=str(p.resolve()))
