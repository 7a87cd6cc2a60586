"""DP-SGD's and DP-GD's compiled steps on records (issue 72, item 4; pytest-benchmark,
`make bench`).

The practitioners' atlas's shape: DP-SGD on hard_valley in record mode at n = 2e5 with the batch
its rules give at eps 1 (b = 14,971 at d = 10, 4,735 at d = 100), DP-GD at n = 2e4 (its full
batch each step) and DP-GD in counts mode (seed001_empirical3's and the practitioners' mode: the
full batch's mean record, n = 1e6). Two figures a step, in one test per (algorithm, d): the
compiled steps (`algorithms.first_order.compiled_sgd`) and the Python loop (the kernel off:
every run before it). Each is (wall(T2 steps) - wall(T1 steps)) / (T2 - T1), so the set-up (the
sample's draw) cancels; the runs are non-private (eps = inf) so that no calibration, whose cost
grows with T (~1.2 s for DP-SGD's PLD at eps 1), sits in the difference: a step's d Gaussian
draws are all it leaves out. They run in alternation, REPEATS times, and the medians are kept.
Goal (asserted): the compiled steps at least `GOAL_SPEEDUP` times faster than the loop; 2.5x
for DP-SGD, whose Poisson mask's n uniforms (numpy's draws, kept so that a run is the loop's to
the bit) are about half of a compiled step at n = 2e5. With
--benchmark-disable (as `make test` passes) each runs once at a quick size and the goal is not
asserted.

    pytest bench/benchmarks/test_dp_sgd_records_speed.py --benchmark-enable -s
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.first_order import compiled_sgd
from problems import get_problem

GOAL_SPEEDUP = {"dp_sgd": 2.5, "dp_gd": 5.0, "dp_gd_counts": 5.0}
REPEATS = 3
N = {"dp_sgd": 200_000, "dp_gd": 20_000, "dp_gd_counts": 1_000_000}
#: DP-SGD's batch by its rules at n = 2e5, eps 1, delta 1e-6 (b = n mu / sqrt(d)).
B = {10: 14_971, 100: 4_735}


def _wall(alg: str, d: int, n: int, steps: int, compiled: bool) -> float:
    """Seconds for one whole run of `steps` steps (non-private, records, no monitor)."""
    pr = get_problem("hard_valley", d=d)
    data = "counts" if alg == "dp_gd_counts" else "records"
    stream = pr.stream(np.random.SeedSequence([5, d]), budget=n, data=data)
    kw = {"b": min(B[d], n)} if alg == "dp_sgd" else {}
    algorithm = get_algorithm(alg.removesuffix("_counts"))(T=steps, **kw)
    compiled_sgd.ENABLED = compiled
    try:
        t0 = time.perf_counter()
        traj = algorithm.run(pr, stream, Privacy(math.inf), np.random.default_rng(0))
        wall = time.perf_counter() - t0
    finally:
        compiled_sgd.ENABLED = True
    assert traj.n_steps == steps
    return wall


def _per_step(alg: str, d: int, n: int, t1: int, t2: int, compiled: bool) -> float:
    return (_wall(alg, d, n, t2, compiled) - _wall(alg, d, n, t1, compiled)) / (t2 - t1)


def _medians(first_new: float, new: Callable[[], float],
             old: Callable[[], float]) -> tuple[float, float]:
    """The medians of REPEATS figures each, new and old alternated (the first new one given)."""
    news, olds = [first_new], []
    for k in range(REPEATS):
        if k:
            news.append(new())
        olds.append(old())
    return statistics.median(news), statistics.median(olds)


@pytest.mark.parametrize("alg", ["dp_sgd", "dp_gd", "dp_gd_counts"])
@pytest.mark.parametrize("d", [10, 100])
def test_compiled_records_step(benchmark, alg, d):
    full = not benchmark.disabled
    n = N[alg] if full else 2000
    t1, t2 = ((50, 450) if alg != "dp_gd_counts" else (500, 20500)) if full else (2, 4)
    _wall(alg, d, 2000, 2, True)  # the kernel compiled (or loaded from numba's cache)
    out = {}

    def run():
        out["compiled"] = _per_step(alg, d, n, t1, t2, True)

    benchmark.pedantic(run, rounds=1, iterations=1)
    if not full:
        return
    mine, loop = _medians(out["compiled"], lambda: _per_step(alg, d, n, t1, t2, True),
                          lambda: _per_step(alg, d, n, t1, t2, False))
    benchmark.extra_info.update(per_step_us=mine * 1e6, old_per_step_us=loop * 1e6,
                                speedup=loop / mine, goal_speedup=GOAL_SPEEDUP[alg])
    print(f"\n{alg} d={d} n={n}: compiled {mine * 1e6:.1f} us/step, Python loop "
          f"{loop * 1e6:.1f} ({loop / mine:.1f}x)")
    assert loop / mine >= GOAL_SPEEDUP[alg], (f"compiled {mine * 1e6:.1f} us a step, only "
                                         f"{loop / mine:.1f}x the Python loop's {loop * 1e6:.1f}")


#: The practitioners' small-q shape: d 100, eps 0.1, n* ~ 4e5 (the rules' b 1,102: q 0.0028).
SMALL_Q = {"n": 400_000, "b": 1_102, "d": 100}
GOAL_GAPS = 3.0


def _wall_sampler(sampler: str, n: int, steps: int) -> float:
    pr = get_problem("hard_valley", d=SMALL_Q["d"])
    stream = pr.stream(np.random.SeedSequence([5, SMALL_Q["d"]]), budget=n, data="records")
    algorithm = get_algorithm("dp_sgd")(T=steps, b=min(SMALL_Q["b"], n), sampler=sampler)
    t0 = time.perf_counter()
    traj = algorithm.run(pr, stream, Privacy(math.inf), np.random.default_rng(0))
    wall = time.perf_counter() - t0
    assert traj.n_steps == steps
    return wall


def _step_sampler(sampler: str, n: int, t1: int, t2: int) -> float:
    return (_wall_sampler(sampler, n, t2) - _wall_sampler(sampler, n, t1)) / (t2 - t1)


def test_gap_sampler_step(benchmark):
    """DP-SGD's compiled step at small q with the gap sampler against the mask (both compiled,
    per step, (wall(T2) - wall(T1)) / (T2 - T1), alternated, medians). Goal: GOAL_GAPS x."""
    full = not benchmark.disabled
    n = SMALL_Q["n"] if full else 2000
    t1, t2 = (50, 850) if full else (2, 4)
    _wall_sampler("gaps", 2000, 2)
    out = {}

    def run():
        out["gaps"] = _step_sampler("gaps", n, t1, t2)

    benchmark.pedantic(run, rounds=1, iterations=1)
    if not full:
        return
    gaps, mask = _medians(out["gaps"], lambda: _step_sampler("gaps", n, t1, t2),
                          lambda: _step_sampler("mask", n, t1, t2))
    benchmark.extra_info.update(per_step_us=gaps * 1e6, old_per_step_us=mask * 1e6,
                                speedup=mask / gaps, goal_speedup=GOAL_GAPS)
    print(f"\ndp_sgd d=100 n={n} q={SMALL_Q['b'] / n:.4f}: gaps {gaps * 1e6:.1f} us/step, mask "
          f"{mask * 1e6:.1f} ({mask / gaps:.1f}x)")
    assert mask / gaps >= GOAL_GAPS, f"gaps {gaps * 1e6:.1f} us, only {mask / gaps:.1f}x the mask's"
