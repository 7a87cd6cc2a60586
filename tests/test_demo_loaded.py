"""The demo on a loaded machine (issue 73, item 6): on a cold numba cache the first demo cell
of each worker spent ~22 s compiling on an idle 2-core machine and 160 s beside other work, all
inside that cell's time limit (at 60 s, two cells were lost). A sweep run with `warm=True`
(`dprates demo`) first runs one small cell per kernel group in the parent, with no limit, and
discards it; these tests plant the cells and count the calls."""

from __future__ import annotations

from bench.config import parse_spec
from bench.runner import run_sweep, warm_cells
from bench.store import load

SPEC = """
name = "warm"
seed = 3
repetitions = 2
[grid]
target_alpha = [0.05, 0.09]
budget = 1000000
d = [4]
eps = [0.5]
[limits]
time = 60
[[problem]]
name = "hard_valley"
[[problem]]
name = "strict_saddle"
[[algorithm]]
name = "gaussian_spider"
[[algorithm]]
name = "adaptive_tree_spider"
grid = { alpha_mult = [1, 2] }
"""
#: 2 problems x (1 + 2 knob settings) x 2 targets x 2 repetitions.
CELLS = 24
#: (algorithm, problem) pairs: the kernel groups of this spec.
GROUPS = {("gaussian_spider", "hard_valley"), ("gaussian_spider", "strict_saddle"),
          ("adaptive_tree_spider", "hard_valley"), ("adaptive_tree_spider", "strict_saddle")}


def _recorder(calls: list):
    def cell_fn(cell, limit):
        calls.append((cell, limit))
        return {"metrics": {}, "params": {}, "curves": {}, "warnings": [], "timing": {}}
    return cell_fn


def test_warm_cells_are_one_per_kernel_group_at_the_easiest_target():
    cells = parse_spec(SPEC).cells()
    assert len(cells) == CELLS
    warm = warm_cells(cells)
    assert {(c.algorithm, c.problem) for c in warm} == GROUPS and len(warm) == len(GROUPS)
    assert {c.target_alpha for c in warm} == {0.09}  # the largest target: fewest steps


def test_a_warm_sweep_compiles_outside_every_cells_limit_and_stores_only_the_cells(tmp_path):
    calls: list = []
    store = tmp_path / "warm.sqlite"
    res = run_sweep(parse_spec(SPEC), store, backend="sequential", progress=False,
                    cell_fn=_recorder(calls), warm=True)
    first, rest = calls[:len(GROUPS)], calls[len(GROUPS):]
    assert [limit for _, limit in first] == [None] * len(GROUPS)
    assert {(c.algorithm, c.problem) for c, _ in first} == GROUPS
    assert len(rest) == CELLS and {limit for _, limit in rest} == {60}
    assert res.ran == CELLS and len(load(store)) == CELLS  # the warm runs are not stored
    calls.clear()  # a resumed sweep with nothing pending warms nothing
    run_sweep(parse_spec(SPEC), store, backend="sequential", progress=False,
              cell_fn=_recorder(calls), warm=True)
    assert calls == []


def test_a_sweep_without_warm_runs_only_its_cells(tmp_path):
    calls: list = []
    run_sweep(parse_spec(SPEC), tmp_path / "cold.sqlite", backend="sequential", progress=False,
              cell_fn=_recorder(calls))
    assert len(calls) == CELLS and {limit for _, limit in calls} == {60}
