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

Here: `SweepSpec`, `Limits`, `parse_spec`, `load_spec`; each table's parser in
`bench.config_tables`; single values and `SpecError` in `bench.config_values`, problems' and
algorithms' parameters in `bench.config_parameters`, grids that would measure nothing,
`search_cap` and `reach` in `bench.config_grid_checks`.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.declarations import FitSpec
from bench.cells import Cell
from bench.config_grid_checks import (
    check_reach,
    check_search_cap,
    check_targets_below_start,
)
from bench.config_parameters import default_data_mode
from bench.config_tables import (
    check_search_memory,
    parse_algorithms,
    parse_data,
    parse_fits,
    parse_grid,
    parse_limits,
    parse_problems,
    parse_target_metric,
)
from bench.config_values import (
    SpecError,
    check_keys,
    delta_for,
    int_like,
    invalid_value,
)
from bench.n_search import runs_on_n_records
from problems import instance_params
from problems.counts.stream import STREAM_VERSION, SUPPORTED_STREAM_VERSIONS

TOP_KEYS = {"name", "description", "seed", "repetitions", "calibration", "grid", "limits",
            "problem", "algorithm", "fit", "stop_at_target", "data", "plugins", "counts_stream",
            "controls_from", "target_metric", "search_cap", "reach"}
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

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source} is not valid TOML: {exc}") from None
    check_keys(raw, TOP_KEYS, "")
    for req in ("name", "seed", "grid", "problem", "algorithm"):
        if req not in raw:
            raise SpecError(f"{req} is missing: a spec needs name, seed, grid, problem and algorithm")
    # Plugins first: they register the names the rest of the spec may use.
    plugins_raw = raw.get("plugins", [])
    if not isinstance(plugins_raw, list) or not all(isinstance(e, str) for e in plugins_raw):
        raise invalid_value("plugins", plugins_raw, "must be a list of .py paths (relative to the spec) "
                            "or module names")
    from bench.plugins import load_plugins, resolve

    src = Path(source)
    base = src.resolve().parent if source and src.is_file() else None
    plugins = tuple(resolve(e, base) for e in plugins_raw)
    load_plugins(list(plugins))
    name = raw["name"]
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise invalid_value("name", name, "must be a non-empty string of letters, digits, '-', '_', '.'")
    if not isinstance(raw.get("description", ""), str):
        raise invalid_value("description", raw["description"], "must be a string")
    seed = int_like("seed", raw["seed"], 0)
    reps = int_like("repetitions", raw.get("repetitions", 1), 1)
    calibration = raw.get("calibration", "tight")
    if calibration not in CALIBRATIONS:
        raise invalid_value("calibration", calibration, f"must be one of {', '.join(CALIBRATIONS)}")

    # the tables one at a time (bench.config_tables), each validated whole
    grid = parse_grid(raw["grid"])
    limits = Limits(*parse_limits(raw.get("limits", {})))
    problem_list = parse_problems(raw["problem"], grid)
    alg_list = parse_algorithms(raw["algorithm"])
    target_metric = parse_target_metric(raw, grid, problem_list)
    search_cap = check_search_cap(raw.get("search_cap"), target_metric, grid)
    reach = check_reach(raw.get("reach", "best"), target_metric, alg_list, runs_on_n_records)
    if "target_alpha" in grid:
        check_targets_below_start(grid, problem_list, alg_list, target_metric)

    fits = parse_fits(raw.get("fit", []), grid, problem_list, alg_list)
    stop, data = parse_data(raw, grid, problem_list, alg_list)
    counts_version = raw.get("counts_stream", STREAM_VERSION)
    if isinstance(counts_version, bool) or counts_version not in SUPPORTED_STREAM_VERSIONS:
        raise invalid_value("counts_stream", counts_version,
                            f"must be one of {', '.join(map(str, SUPPORTED_STREAM_VERSIONS))}")
    controls_from = raw.get("controls_from", [])
    if not isinstance(controls_from, list) or not all(
            isinstance(c, str) and re.fullmatch(r"[A-Za-z0-9_.-]+", c) and c != name
            for c in controls_from):
        raise invalid_value("controls_from", controls_from,
                            "must be a list of other specs' names (letters, digits, _ . -)")
    for alg in alg_list:  # a calibration the algorithm does not implement is refused here
        try:
            algorithms.check_calibration(alg["name"], calibration)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
    check_search_memory(target_metric, search_cap, grid, problem_list, alg_list, data)
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
