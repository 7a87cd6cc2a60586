"""Paired repetitions advanced together (issue 47 item 2): where a counts-mode Spider cell's
step goes, and why running a cell's repetitions as one array program cannot bring its
per-step cost to 1/3 of one-at-a-time (pytest-benchmark, `make bench`).

The cell: hard_valley, d 10, eps 0.1, theory calibration, counts mode (the default stream),
stop_at_target at alpha 1e-2, n 1e12 (headline2's design), gaussian_spider and
adaptive_tree_spider, 10 repetitions. Per repetition, interleaved (the machine is shared):

* `plain`: the cell as a sweep runs it (`bench.single_run.run_cell`): run wall / steps;
* `instrumented`: the same run with timers around the compiled O2 call (and a zero-step call
  of the same kernel before each, which measures numba's dispatch of its 30 arguments), the
  Python of `O2Kernel.run` around it, the target monitor, and the engine's loop (the rest);
* `unmonitored`: the same seeds with no monitor, timed to the step where the monitored run
  stopped (its records up to there are checked equal): the cost a step would have if the
  monitor did not hand every stored iterate back to Python.

Measured (`-s --benchmark-enable`, 2 cores shared with a long background job, load ~5;
medians of 10 repetitions, counts stream version 4; gaussian_spider / adaptive_tree_spider):

  steps to target                 36,000-59,000 (median 42,500) / 32,800
  steps a compiled call           2.0 / 2.0: the horizon T = 534,213 and the 4e6 stored floats
                                  give keep_every = 2, and with a monitor every stored iterate
                                  ends the compiled call (the monitor is Python's)
  per step, one at a time         63.4 us / 63.8 us (plain; 54-97 us over the runs)
  of it (instrumented run):
    numba dispatch                16.8 / 15.3 us (~30 us a call of 30 arguments, one in 2 steps)
    kernel arithmetic             4.1 / 6.3 us
    O2Kernel.run's Python         7.6 / 16.0 us
    target monitor                7.5 / 7.2 us
    engine loop (the rest)        25.7 / 14.8 us (records, stored iterates, O1 steps)
  unmonitored, to the same step   19.1 / 9.0 us (0.30x / 0.14x of plain)
  evaluation (metrics)            12.3 / 12.2 us a step (0.3-0.7 s a cell, once a run)

Why batching repetitions cannot pay: everything but numba's dispatch is per repetition. Each
repetition has its own stream (its own counts trees and walk state), its own noise draws, its
own O1 steps (at other steps than its siblings'), its own stored iterates, monitor calls and
records; one compiled call advancing R repetitions saves at most the dispatch (R - 1 of R
calls), so together / one-at-a-time >= (plain - dispatch) / plain = 0.74 / 0.76 (asserted
> 1/3 here in full mode), far from 1/3. Sharing the Python around the events as well (a
lockstep engine on (R, d) arrays) is a rewrite of the engine whose floats would all have to be
re-established, for a cost the monitor alone causes: without the hand-back the same run costs
0.30x / 0.14x, one repetition at a time. The goal's factor 3 is there, but in the monitor, not
in the pairing: a compiled screen of the monitor's first test (||grad F(x)|| > target, with a
relative margin of 1e-9 so that the decision is Python's exactly) keeps the stored iterates in
the kernel. Measured with that screen (the issue 47 report's diff to
`algorithms.sosp.compiled_o2` and `problems.evaluation.metrics.target_monitor`, applied in a scratch copy;
old and new runs alternating, 10 repetitions each): 60.0 -> 19.5 us a step (0.32x, 31 steps a
call, the rest O1 steps in Python) / 64.9 -> 9.7 us (0.14x), the same steps, n* and result
hashes (18 cells on hard_valley, strict_saddle and hard_ramp; tests/test_compiled_o2.py passes).
Once calls cover tens to thousands of steps, there is no per-call cost left for the pairing to
share; the evaluation (~12 us a step, per run) is then the next cost of a cell.

With --benchmark-disable (as `make test` passes) each algorithm runs 2 repetitions to alpha
0.05 once and only the exactness of the unmonitored prefix is asserted.

    pytest bench/benchmarks/test_repetitions_speed.py --benchmark-enable -s
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.sosp import compiled_o2
from bench.cells import Cell
from bench.single_run import run_cell
from problems import get_problem

ALGS = ["gaussian_spider", "adaptive_tree_spider"]
SEED = 20261130  # headline2's base seed
REPS, QUICK_REPS = 10, 2
TARGET, QUICK_TARGET = 1e-2, 5e-2
GOAL = 1 / 3


def _cell(name: str, rep: int, target: float) -> Cell:
    return Cell.make(problem="hard_valley", problem_params={}, algorithm=name, params={},
                     n=10**12, d=10, eps=0.1, delta=1e-6, rep=rep, calibration="theory",
                     base_seed=SEED, target_alpha=target, stop_at_target=True, data="counts")


def _run(cell: Cell) -> dict[str, Any]:
    """The cell as `bench.runner.compute_cell` runs it."""
    return run_cell(cell.algorithm, cell.problem, cell.n, cell.d, cell.eps, delta=cell.delta,
                    params=cell.run_params(), problem_params={}, calibration=cell.calibration,
                    data_seed=cell.data_seed(), rng=np.random.default_rng(cell.algorithm_seed()),
                    stop_at_target=True, data="counts", counts_version=cell.counts_stream)


def _instrumented(monkeypatch: pytest.MonkeyPatch, cell: Cell) -> dict[str, float]:
    """Seconds of one monitored run by part (module docstring), and its steps and calls."""
    import bench.single_run as single_run

    acc = dict.fromkeys(("kernel", "dispatch", "run", "monitor", "calls", "monitor_calls"), 0.0)
    kernel, run, make_monitor = (compiled_o2.o2_steps, compiled_o2.O2Kernel.run,
                                 single_run.target_monitor)

    def timed_kernel(max_steps: int, *args: Any) -> Any:
        t0 = time.perf_counter()
        kernel(0, *args)  # returns at the loop's head, writing back the state it read
        t1 = time.perf_counter()
        out = kernel(max_steps, *args)
        acc["dispatch"] += t1 - t0
        acc["kernel"] += time.perf_counter() - t1
        acc["calls"] += 1
        return out

    def timed_run(self: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return run(self, *args)
        finally:
            acc["run"] += time.perf_counter() - t0

    def timed_monitor(*args: Any, **kwargs: Any) -> Any:
        inner = make_monitor(*args, **kwargs)

        @functools.wraps(inner)  # the monitor's attributes too (a screen the kernel reads)
        def monitor(x: np.ndarray) -> bool:
            t0 = time.perf_counter()
            try:
                return inner(x)
            finally:
                acc["monitor"] += time.perf_counter() - t0
                acc["monitor_calls"] += 1
        return monitor

    with monkeypatch.context() as m:
        m.setattr(compiled_o2, "o2_steps", timed_kernel)
        m.setattr(compiled_o2.O2Kernel, "run", timed_run)
        m.setattr(single_run, "target_monitor", timed_monitor)
        res = _run(cell)
    acc["total"] = res["timing"]["run_wall"]
    acc["steps"] = res["metrics"]["n_steps"]
    return acc


def _unmonitored(monkeypatch: pytest.MonkeyPatch, cell: Cell, steps: int,
                 records: dict[str, np.ndarray], limit: float) -> float:
    """Seconds from the start of the run to step `steps`, the same seeds with no monitor
    (interpolated between the compiled calls around it); its records up to there must be the
    monitored run's."""
    marks: list[tuple[float, int]] = []
    run = compiled_o2.O2Kernel.run

    def marking_run(self: Any, *args: Any) -> Any:
        out = run(self, *args)
        if out[0]:
            marks.append((time.perf_counter(), int(out[2][0][8])))
        return out

    prob = get_problem(cell.problem, d=cell.d)
    alg = get_algorithm(cell.algorithm)(**cell.run_params())
    stream = prob.stream(cell.data_seed(), budget=cell.n, data="counts",
                         counts_version=cell.counts_stream)
    privacy = Privacy(cell.eps, cell.delta, cell.calibration)
    with monkeypatch.context() as m:
        m.setattr(compiled_o2.O2Kernel, "run", marking_run)
        t0 = time.perf_counter()
        traj = alg.run(prob, stream, privacy, np.random.default_rng(cell.algorithm_seed()),
                       time_limit=limit)
        marks.append((time.perf_counter(), traj.n_steps))  # its last steps may be Python's
    assert traj.n_steps >= steps, "the unmonitored run stopped before the monitored one"
    for key in ("oracle", "batch", "est_norm", "drift", "samples"):
        assert np.array_equal(traj.records[key][:steps], records[key][:steps]), key
    after = next(i for i, (_, t) in enumerate(marks) if t >= steps)
    (t_hi, s_hi), (t_lo, s_lo) = marks[after], marks[after - 1] if after else (t0, 0)
    return t_lo + (t_hi - t_lo) * (steps - s_lo) / (s_hi - s_lo) - t0


@pytest.mark.parametrize("name", ALGS)
def test_repetitions_step_breakdown(benchmark, monkeypatch, name):
    full = not benchmark.disabled
    reps, target = (REPS, TARGET) if full else (QUICK_REPS, QUICK_TARGET)
    _run(_cell(name, 10**6, QUICK_TARGET))  # kernels compiled / loaded first
    cells = [_cell(name, rep, target) for rep in range(reps)]
    out: dict[str, list[float]] = {k: [] for k in ("plain", "dispatch", "kernel", "wrapper",
                                                   "monitor", "engine", "unmonitored",
                                                   "steps_per_call", "eval")}

    def once() -> None:
        for cell in cells:  # interleaved: the three measures of a repetition side by side
            res = _run(cell)
            steps = res["metrics"]["n_steps"]
            traj = res["trajectory"]
            out["plain"].append(res["timing"]["run_wall"] / steps)
            out["eval"].append(res["timing"]["eval_wall"] / steps)
            acc = _instrumented(monkeypatch, cell)
            assert acc["steps"] == steps
            out["dispatch"].append(acc["dispatch"] / steps)
            out["kernel"].append((acc["kernel"] - acc["dispatch"]) / steps)
            out["wrapper"].append((acc["run"] - acc["kernel"] - acc["dispatch"]) / steps)
            out["monitor"].append(acc["monitor"] / steps)
            out["engine"].append((acc["total"] - acc["run"] - acc["monitor"]) / steps)
            out["steps_per_call"].append(steps / max(acc["calls"], 1))
            wall = _unmonitored(monkeypatch, cell, steps, traj.records,
                                limit=3 * res["timing"]["run_wall"] + 1)
            out["unmonitored"].append(wall / steps)

    benchmark.pedantic(once, rounds=1, iterations=1)
    med = {k: statistics.median(v) for k, v in out.items()}
    together = (med["plain"] - med["dispatch"]) / med["plain"]
    screened = med["unmonitored"] / med["plain"]
    figures = {f"{k}_us": v * 1e6 for k, v in med.items() if k != "steps_per_call"}
    benchmark.extra_info.update(figures, steps_per_call=med["steps_per_call"],
                                together_bound=together, unmonitored_ratio=screened,
                                repetitions=reps, target_alpha=target)
    print(f"\n{name} ({reps} repetitions to alpha {target:g}): plain {figures['plain_us']:.1f} "
          f"us/step, {med['steps_per_call']:.2f} steps a compiled call; dispatch "
          f"{figures['dispatch_us']:.1f}, kernel {figures['kernel_us']:.1f}, O2Kernel.run "
          f"{figures['wrapper_us']:.1f}, monitor {figures['monitor_us']:.1f}, engine "
          f"{figures['engine_us']:.1f} (instrumented); unmonitored {figures['unmonitored_us']:.1f}"
          f" ({screened:.2f}x); evaluation {figures['eval_us']:.1f} us/step; together >= "
          f"{together:.2f}x of one at a time (goal {GOAL:.2f})")
    if full:  # the measured reason: what one call for all repetitions could share is too little
        assert together > GOAL, (f"the dispatch is {1 - together:.0%} of a step: a batched "
                                 "kernel could reach the goal, the module docstring is stale")
