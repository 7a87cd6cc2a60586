"""A declared two-point loss whose difference reads many record coordinates, and the compile
cost a worker pays before its first cell (issue 72, items 2 and 3; pytest-benchmark,
`make bench`).

The loss is `plugins/my_scaled_valley.py` (`scaled_valley`: the valley, each other coordinate's
curvature scaled by its own record coordinate, so its O2 map reads m = d - 1 coordinates),
loaded as a plugin is.

* `test_many_coordinate_step_against_hard_valley`: the adaptive tree Spider (b = 1e8, eps 0.1,
  counts mode) a step, (wall(T2) - wall(T1)) / (T2 - T1), the plugin and hard_valley
  alternated REPEATS times, medians; goal <= GOAL_RATIO x hard_valley at d 10 and 100. Not met
  (2026-12-07: 3.9x at d 10, ~16x at d 100): the step's cost is the counts stream's walks, one
  per coordinate read, ~25 hypergeometric splits each at this batch size (228 nodes a step
  against hard_valley's 57 at d 10; 2,469 against 132 at d 100), the same draws in compiled and
  Python code; the test says so with pytest's xfail and its figures, and passes once the stream
  reads a take's m counts for less.
* `test_second_worker_compile_excess`: fresh interpreters (a sweep's workers) sharing one
  `DPRATES_JIT_CACHE`: the first worker on a machine compiles; a second one finds the
  plugin's functions and wrappers on disk. Each runs four cells (d 10, T 300) and reports its
  first cell's wall minus the median of the others; hard_valley's second worker beside it.
  Goal: the plugin's second worker within EXCESS_SLACK s of hard_valley's excess (numba's own
  start-up, paid by every problem).

With --benchmark-disable (as `make test` passes) each runs once at a quick size and no goal is
asserted.

    pytest bench/benchmarks/test_many_coordinate_speed.py --benchmark-enable -s
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from problems import get_problem

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = Path(__file__).resolve().parent / "plugins" / "my_scaled_valley.py"
GOAL_RATIO = 1.5
EXCESS_SLACK = 0.25
REPEATS = 5
B = 10**8


@pytest.fixture(scope="module")
def scaled_valley():
    import problems
    from bench import plugins as registry

    info = registry.load_plugin(str(PLUGIN))
    yield info.problems[0]
    registry._LOADED.pop(info.entry, None)
    for name in info.problems:
        problems._REGISTRY.pop(name, None)


def _wall(problem: str, d: int, T: int) -> float:
    """Seconds for one adaptive tree Spider run of T steps (b = B, eps 0.1, counts mode)."""
    pr = get_problem(problem, d=d)
    alg = get_algorithm("adaptive_tree_spider")(b=B, T=T)
    stream = pr.stream(np.random.SeedSequence([5, d]), budget=10**16, data="counts")
    t0 = time.perf_counter()
    traj = alg.run(pr, stream, Privacy(0.1), np.random.default_rng(0))
    wall = time.perf_counter() - t0
    assert traj.n_steps == T
    return wall


def _per_step(problem: str, d: int, T1: int, T2: int) -> float:
    return (_wall(problem, d, T2) - _wall(problem, d, T1)) / (T2 - T1)


@pytest.mark.parametrize("d", [10, 100])
def test_many_coordinate_step_against_hard_valley(benchmark, scaled_valley, d):
    full = not benchmark.disabled
    T1, T2 = (200, 1200) if full else (5, 10)
    for problem in (scaled_valley, "hard_valley"):  # compiled (or loaded) before timing
        _wall(problem, d, 3)
    out = {}

    def run():
        out["plugin"] = _per_step(scaled_valley, d, T1, T2)

    benchmark.pedantic(run, rounds=1, iterations=1)
    if not full:
        return
    mine, ref = [out["plugin"]], []
    for k in range(REPEATS):
        if k:
            mine.append(_per_step(scaled_valley, d, T1, T2))
        ref.append(_per_step("hard_valley", d, T1, T2))
    mine_us, ref_us = statistics.median(mine) * 1e6, statistics.median(ref) * 1e6
    ratio = mine_us / ref_us
    benchmark.extra_info.update(plugin_us=mine_us, hard_valley_us=ref_us, ratio=ratio,
                                m=d - 1, goal_ratio=GOAL_RATIO)
    line = (f"scaled_valley (m = {d - 1}) adaptive_tree_spider d={d} b={B:.0e}: {mine_us:.1f} "
            f"us/step, hard_valley {ref_us:.1f} ({ratio:.2f}x, goal <= {GOAL_RATIO}x)")
    print("\n" + line)
    if ratio > GOAL_RATIO:
        pytest.xfail(f"{line}: the counts stream's per-coordinate walks (~25 hypergeometric "
                     "splits per coordinate read per O2 step) dominate; see the module docstring")


#: A worker: load the plugin (or not), run four cells, print their walls.
WORKER = """
import json, sys, time
import numpy as np
from bench.plugins import load_plugin
from algorithms import Privacy, get_algorithm
from problems import get_problem

problem, plugin, T = sys.argv[1], sys.argv[2], int(sys.argv[3])
if plugin:
    load_plugin(plugin)
walls = []
for seed in range(4):
    pr = get_problem(problem, d=10)
    alg = get_algorithm("adaptive_tree_spider")(b=10**8, T=T)
    stream = pr.stream(np.random.SeedSequence([seed, 10]), budget=10**16, data="counts")
    t0 = time.perf_counter()
    alg.run(pr, stream, Privacy(0.1), np.random.default_rng(seed))
    walls.append(time.perf_counter() - t0)
print(json.dumps(walls))
"""


def _excess(problem: str, plugin: str, cache: Path, T: int) -> float:
    """A fresh worker's first cell's wall minus the median of its three later cells."""
    env = {**os.environ, "DPRATES_JIT_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", WORKER, problem, plugin, str(T)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    walls = json.loads(done.stdout.strip().splitlines()[-1])
    return walls[0] - statistics.median(walls[1:])


def test_second_worker_compile_excess(benchmark, tmp_path):
    full = not benchmark.disabled
    T = 300 if full else 20
    plugin = tmp_path / "plugins" / PLUGIN.name  # a fresh copy: numba's own cache beside it
    plugin.parent.mkdir()
    shutil.copy(PLUGIN, plugin)
    cache = tmp_path / "jit"
    out = {}

    def run():
        out["first"] = _excess("scaled_valley", str(plugin), cache, T)

    benchmark.pedantic(run, rounds=1, iterations=1)
    if not full:
        return
    second = [_excess("scaled_valley", str(plugin), cache, T) for _ in range(3)]
    builtin = [_excess("hard_valley", "", cache, T) for _ in range(3)]
    warm, ref = statistics.median(second), statistics.median(builtin)
    benchmark.extra_info.update(first_worker_excess_s=out["first"], second_worker_excess_s=warm,
                                hard_valley_excess_s=ref, slack_s=EXCESS_SLACK)
    print(f"\nscaled_valley first cell's excess: first worker {out['first']:.2f} s, second "
          f"worker {warm:.2f} s; hard_valley {ref:.2f} s")
    assert warm <= ref + EXCESS_SLACK, (f"second worker's compile excess {warm:.2f} s against "
                                        f"hard_valley's {ref:.2f} s (slack {EXCESS_SLACK} s)")
