"""Samples to a target for an algorithm that runs on n records (DP-GD, DP-SGD, private
SpiderBoost, Pagan, ...): the smallest data set size whose run reaches the target, found by a
search over n inside one target cell (issue 57, item 1), so that one spec puts one-pass and
multi-pass algorithms on one axis.

A one-pass method reads records until it reaches the target, so its samples are counted (the
cell's `samples_to_target`). A method that runs on n records uses all n whatever the target, so
its samples to the target are the smallest n whose run reaches it. Per repetition (a cell):

1. doubling: runs at n0, 2 n0, 4 n0, ... (the last at the cap n_max itself) until one reaches
   the target; none reaching is censored: "> n_max";
2. bisection on the log scale between the largest n that did not reach and the smallest that
   did (the geometric mean, rounded) until their ratio is at most `RATIO` (2^(1/4): n* known to
   19%).

Every run of the search reads the first n records of the cell's one data stream (prefix-
consistent: the run at a larger n sees the same records and more) with the cell's algorithm
seed, so the runs differ in n alone; "reaches" reads the best iterate so far by the metric's
population value (the column `problems.evaluation.metrics.METRIC_COLUMN` names, the reading
of one-pass cells; `SEARCH_METRICS` only: an empirical metric would read the private sample):
the oracle's n*. With the spec's `reach = "output"` it reads instead the point the algorithm
itself returns (its class's `output_rule`, `OUTPUT_COLUMN`: DP-GD's and DP-SGD's last iterate),
the samples a user needs who takes the algorithm's output as it comes (issue 70, item 5).
The run is not stopped at the target: its gradient evaluations are what a practitioner pays,
who has no population oracle to stop on.

What is private and what is measured: each run is one private run with its own ledger, and
the stored run (the one at n*) keeps its ledger; n* and which run is stored are the
experimenter's evaluation, read from population values of the runs' released iterates over
all the runs of the search, as a one-pass cell's samples_to_target is read by its population
monitor. They are a measurement of the algorithm, not something it releases: a deployment
runs once, at an n chosen before it sees data. The search's runs share the cell's seed across n
(nested prefixes of one sample, the same first noise draws: common random numbers, which make
n* a paired comparison across n), so n* is no release of any one run and no ledger covers it;
`bench.disclosure` files `samples_to_target` as an evaluation (issue 71, item 5). The search
is opt-in: only a spec that sets
`target_metric` searches (the cell's key then differs from a one-run cell's).

Reaching need not be monotone in n for one seed (the noise differs between runs), so n* is the
smallest n on the search path that reached, bracketed below by the largest that did not (`lo`,
stored): the bracket is the search's own resolution, and a non-monotone seed shows as a
reaching n below `lo`.

The cell stores the run at n* (its metrics, curves and gradient evaluations: passes = grad
evaluations / n*), `samples_to_target` = n* (NaN when censored), and in `n_search` (JSON, an
evaluation column: which n reached is read from population values) every run of the search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: The bracket's ratio at which the bisection stops.
RATIO = 2 ** 0.25
#: The doubling's first n: the cap / 2^START_DOUBLINGS, at least MIN_START.
START_DOUBLINGS = 10
MIN_START = 64


@dataclass
class SearchResult:
    """A search's outcome: n* (None: censored, no n <= n_max reached), its bracket and the runs
    (n, reached, value of the metric, gradient evaluations, wall seconds) in the order run."""

    n_star: int | None
    lo: int | None  # the largest n on the path below n* that did not reach (None: n0 reached)
    n_max: int
    runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def censored(self) -> bool:
        return self.n_star is None

    def to_json(self) -> dict[str, Any]:
        return {"n_star": self.n_star, "lo": self.lo, "n_max": self.n_max, "ratio": RATIO,
                "censored": self.censored, "runs": self.runs,
                "total_grad_evals": sum(int(r["grad_evals"] or 0) for r in self.runs),
                "total_wall": sum(float(r["wall"]) for r in self.runs)}


def start_size(n_max: int) -> int:
    """The doubling's first n."""
    return max(1, min(n_max, max(MIN_START, math.ceil(n_max / 2 ** START_DOUBLINGS))))


def search_n_star(reaches: Callable[[int], tuple[bool, float, int | None]], n_max: int,
                  n0: int | None = None, ratio: float = RATIO) -> SearchResult:
    """The smallest n <= n_max on a doubling-then-bisection path at which `reaches(n)` (->
    (reached, metric value, gradient evaluations)) is true (module docstring)."""
    if not (isinstance(n_max, int) and n_max >= 1):
        raise ValueError(f"n_max={n_max!r} is invalid: must be an integer >= 1")
    if not ratio > 1:
        raise ValueError(f"ratio={ratio!r} is invalid: must be > 1")
    res = SearchResult(None, None, n_max)

    def run(n: int) -> bool:
        t0 = time.perf_counter()
        reached, value, evals = reaches(n)
        res.runs.append({"n": int(n), "reached": bool(reached), "value": float(value),
                         "grad_evals": None if evals is None else int(evals),
                         "wall": time.perf_counter() - t0})
        return bool(reached)

    n = start_size(n_max) if n0 is None else max(1, min(int(n0), n_max))
    lo = hi = None
    while True:
        if run(n):
            hi = n
            break
        lo = n
        if n >= n_max:
            return res  # censored: not reached by n_max
        n = min(2 * n, n_max)
    while lo is not None and hi / lo > ratio:
        mid = round(math.sqrt(lo * hi))
        if mid <= lo or mid >= hi:  # adjacent integers: the bracket is exact
            break
        if run(mid):
            hi = mid
        else:
            lo = mid
    res.n_star, res.lo = hi, lo
    return res


def runs_on_n_records(algorithm: str) -> bool:
    """Whether the algorithm optimizes over n records it may read many times (its `setting`
    is "empirical", as `analysis.comparisons.compare` reads it), so that its samples to a
    target are a search over n."""
    from algorithms import get_algorithm

    try:
        cls = get_algorithm(algorithm)
    except ValueError:
        return False
    return getattr(cls, "setting", None) == "empirical"


#: The metrics a search may read: population values of the runs' released iterates (an
#: empirical metric would choose n* and the stored run by reading the private sample).
SEARCH_METRICS = ("alpha_sosp", "grad_norm", "excess_risk")
#: The columns a search reads at the algorithm's own output (reach = "output") by its
#: `output_rule`: "last", the last iterate x_T the algorithm returns.
OUTPUT_COLUMN = {("last", "alpha_sosp"): "alpha_last", ("last", "grad_norm"): "pop_grad_last",
                 ("last", "excess_risk"): "excess_last"}


def searches_n(cell: Any) -> bool:
    """A target cell of an algorithm that runs on n records, in a spec that opted in with
    `target_metric` (the cell's `metric`, part of its key: a target cell of such an algorithm
    from a spec without it is one run, as before, under its old key)."""
    return (cell.target_alpha is not None and cell.metric is not None
            and runs_on_n_records(cell.algorithm))


def compute_search_cell(cell: Any, time_limit: float | None) -> dict[str, Any]:
    """A target cell of an algorithm that runs on n records: the search of the module
    docstring, each run `bench.single_run.run_cell` at n (n_max: the cell's `search_cap`, else
    its budget `cell.n`),
    the record of the run at n* (at n_max when censored) with `samples_to_target` = n* and
    `n_search` = every run. A run that hits the time limit ends the search: the cell is then
    a timeout, whatever was found."""
    import numpy as np

    from algorithms import claim_metric
    from bench.cell_record import finish_cell
    from bench.single_run import run_cell
    from problems.evaluation.metrics import METRIC_COLUMN

    metric = cell.metric or claim_metric(cell.algorithm)
    if metric not in SEARCH_METRICS:
        raise ValueError(f"target_metric={metric!r} is invalid for a search over n: must be one of "
                         f"{', '.join(SEARCH_METRICS)} (population metrics)")
    column = METRIC_COLUMN[metric]
    if getattr(cell, "reach", None) == "output":  # the algorithm's own output (validated)
        from algorithms import get_algorithm

        rule = getattr(get_algorithm(cell.algorithm), "output_rule", None)
        if (rule, metric) not in OUTPUT_COLUMN:
            raise ValueError(f"reach='output' is invalid for {cell.algorithm!r}: no output rule "
                             f"read on {metric} (output_rule={rule!r})")
        column = OUTPUT_COLUMN[(rule, metric)]
    target = float(cell.target_alpha)
    params = {k: v for k, v in cell.run_params().items() if k != "target_alpha"}
    t_start = time.perf_counter()
    results: dict[int, dict[str, Any]] = {}
    timed_out = []

    def reaches(n: int) -> tuple[bool, float, int | None]:
        left = None if time_limit is None else max(1e-3, time_limit - (time.perf_counter() - t_start))
        res = run_cell(cell.algorithm, cell.problem, n, cell.d, cell.eps, delta=cell.delta,
                       params=params, problem_params=dict(cell.problem_params),
                       calibration=cell.calibration, data_seed=cell.data_seed(),
                       rng=np.random.default_rng(cell.algorithm_seed()), time_limit=left,
                       data=cell.data, counts_version=cell.counts_stream, metric=metric)
        results[n] = res
        value = float(res["metrics"].get(column, math.nan))
        reached = bool(value <= target)
        # memory: keep the smallest reaching run so far (n*, if nothing smaller reaches) and
        # this one (the cap's run, if it is the last); a run holds its n records
        best = min((m for m, r in results.items() if r.get("_reached")), default=None)
        res["_reached"] = reached
        if reached and (best is None or n < best):
            best = n
        for m in [m for m in results if m not in (best, n)]:
            del results[m]
        if res["metrics"].get("stop_reason") == "timeout":
            timed_out.append(n)
            raise _SearchTimeout
        evals = res["trajectory"].grad_evals if getattr(res["trajectory"], "grad_evals", None) \
            is not None else None
        return reached, value, evals

    try:
        found = search_n_star(reaches, int(cell.search_cap or cell.n))
        n_read = found.n_star if found.n_star is not None else found.runs[-1]["n"]
    except _SearchTimeout:
        found, n_read = None, timed_out[-1]
    res = finish_cell(cell, {k: v for k, v in results[n_read].items() if k != "_reached"})
    m = res["metrics"]
    m["target_metric"] = metric
    m["target_reach"] = "output" if getattr(cell, "reach", None) == "output" else "best"
    if found is None:  # the run at n_read stopped on the time limit: stop_reason says timeout
        m["samples_to_target"] = math.nan
        res["n_search"] = {"timeout_at": n_read, "runs": sorted(results)}
        return res
    m["samples_to_target"] = float(found.n_star) if found.n_star is not None else math.nan
    res["n_search"] = found.to_json()
    return res


class _SearchTimeout(Exception):
    """A run of the search hit the cell's time limit."""


__all__ = ["MIN_START", "RATIO", "SEARCH_METRICS", "START_DOUBLINGS", "SearchResult",
           "compute_search_cell",
           "runs_on_n_records", "search_n_star", "searches_n", "start_size"]
