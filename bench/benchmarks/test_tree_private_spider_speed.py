"""The tree-based private Spider's compiled leaves (issue 58; pytest-benchmark, `make bench`).

Arora et al.'s Algorithm 1 at the reference's own shape (seed001_population3: D = 10, b =
D 2^(D+1) = 20,480, eps 0.01, counts mode), on hard_valley (start 1) and on the guide's
`quadratic_valley` (a loss of another form declared by `problems.compiled_loss`, loaded as a
plugin), at d = 10 and 100. Three figures a step, in one test per (problem, d): the compiled
right-child leaves (`algorithms.first_order.compiled_tree`), the Python loop (the compiled
leaves off: what every run took before), and for the plugin hard_valley's compiled figure.
Each is (wall(T2 rounds) - wall(T1 rounds)) / (leaves between), so the set-up (calibration,
rules, the plugin's check) cancels; they run in alternation, REPEATS times, and the medians
are kept (the machine is shared). Goals (asserted): the compiled leaves at least
`GOAL_SPEEDUP` times faster than the Python loop, and the plugin within 1.5x of hard_valley.
With --benchmark-disable (as `make test` passes) each runs once at a quick size and the goals
are not asserted.

    pytest bench/benchmarks/test_tree_private_spider_speed.py --benchmark-enable -s
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.first_order import compiled_tree
from bench.benchmarks.test_plugin_profile_speed import plugins  # noqa: F401 (the guides' plugins)
from problems import get_problem

D = 10
B = D * 2 ** (D + 1)
GOAL_SPEEDUP = 5.0
GOAL_RATIO = 1.5
REPEATS = 5


def _wall(problem: str, d: int, rounds: int, compiled: bool) -> float:
    """Seconds for one whole run of `rounds` rounds (2^D leaves each; eps 0.01, counts)."""
    params = {"start": 1.0} if problem == "hard_valley" else {}
    pr = get_problem(problem, d=d, **params)
    alg = get_algorithm("tree_private_spider")(T=rounds, D=D, b=B)
    stream = pr.stream(np.random.SeedSequence([5, d]), budget=10**16, data="counts")
    compiled_tree.ENABLED = compiled
    try:
        t0 = time.perf_counter()
        traj = alg.run(pr, stream, Privacy(0.01), np.random.default_rng(0))
        wall = time.perf_counter() - t0
    finally:
        compiled_tree.ENABLED = True
    assert traj.n_steps == rounds * 2**D
    return wall


def _per_step(problem: str, d: int, r1: int, r2: int, compiled: bool) -> float:
    return (_wall(problem, d, r2, compiled) - _wall(problem, d, r1, compiled)) / ((r2 - r1) * 2**D)


@pytest.mark.parametrize("guide", ["hard_valley", "my_quadratic_valley.py"])
@pytest.mark.parametrize("d", [10, 100])
def test_compiled_tree_private_spider_step(benchmark, plugins, guide, d):  # noqa: F811
    problem = guide if guide == "hard_valley" else plugins[guide]
    full = not benchmark.disabled
    r1, r2 = (2, 12) if full else (1, 2)
    for name in {problem, "hard_valley"}:  # compiled kernels and the plugin's wrapper loaded
        _wall(name, d, 1, True)
    out = {}

    def run():
        out["compiled"] = _per_step(problem, d, r1, r2, True)

    benchmark.pedantic(run, rounds=1, iterations=1)
    if not full:
        return
    figures = {"compiled": [out["compiled"]], "python_loop": [], "hard_valley": []}
    for k in range(REPEATS):
        if k:
            figures["compiled"].append(_per_step(problem, d, r1, r2, True))
        figures["python_loop"].append(_per_step(problem, d, r1, r2, False))
        if problem != "hard_valley":
            figures["hard_valley"].append(_per_step("hard_valley", d, r1, r2, True))
    mine = statistics.median(figures["compiled"])
    loop = statistics.median(figures["python_loop"])
    ref = statistics.median(figures["hard_valley"]) if figures["hard_valley"] else mine
    benchmark.extra_info.update(per_step_us=mine * 1e6, old_per_step_us=loop * 1e6,
                                hard_valley_us=ref * 1e6, speedup=loop / mine,
                                ratio=mine / ref, goal_speedup=GOAL_SPEEDUP)
    print(f"\n{problem} d={d}: compiled {mine * 1e6:.2f} us/step, Python loop {loop * 1e6:.1f} "
          f"({loop / mine:.1f}x), hard_valley compiled {ref * 1e6:.2f} ({mine / ref:.2f}x)")
    assert loop / mine >= GOAL_SPEEDUP, (f"compiled {mine * 1e6:.2f} us a step, only "
                                         f"{loop / mine:.1f}x the Python loop's {loop * 1e6:.1f}")
    assert mine / ref <= GOAL_RATIO, (f"{problem} {mine * 1e6:.2f} us a step, {mine / ref:.2f}x "
                                      f"hard_valley's {ref * 1e6:.2f} (goal <= {GOAL_RATIO}x)")
