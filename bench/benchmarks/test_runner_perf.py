"""Performance of the sweep runner and store (pytest-benchmark).

Per-cell overhead: a sweep of cells that do nothing (the cell function returns at once): wall
time per cell of runner + store transaction, target <= 20 ms. Parallel efficiency on a
CPU-bound sweep of real cells: time(1 job) / (2 x time(2 jobs)), target >= 0.85 on a 2-core
machine (both on loky, so the ratio measures scaling, not backend start-up), measured inside
one benchmark. `make test` runs both once at a quick size.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from bench.cells import Cell
from bench.config import parse_spec
from bench.runner import run_sweep

SPEC = """
name = "perf"
seed = 1
repetitions = {reps}
data = "records"
[grid]
n = [{n}]
d = [10]
eps = [0.5]
[[problem]]
name = "hard_valley"
[[algorithm]]
name = "adaptive_tree_spider"
[[algorithm]]
name = "gaussian_spider"
"""


def noop_cell(cell: Cell, time_limit: float | None) -> dict[str, Any]:
    """A cell that does nothing: what remains is the runner's and the store's own cost."""
    return {"metrics": {}, "params": {}, "timing": {}, "curves": {}}


def _sweep(spec, jobs: int, **kw: Any) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = run_sweep(spec, Path(tmp) / "s.sqlite", jobs=jobs, progress=False, **kw)
        wall = time.perf_counter() - t0
    assert res.ran == len(spec.cells()) and set(res.counts) == {"ok"}, res.counts
    return wall


@pytest.mark.parametrize("jobs", [1, 2])
def test_per_cell_overhead(benchmark, jobs):
    full = not benchmark.disabled
    spec = parse_spec(SPEC.format(reps=200 if full else 5, n=1000))
    cells = len(spec.cells())
    walls = []

    def run():
        walls.append(_sweep(spec, jobs, cell_fn=noop_cell))

    benchmark.pedantic(run, rounds=3 if full else 1, iterations=1)
    per_cell_ms = 1000 * min(walls) / cells
    benchmark.extra_info.update(cells=cells, per_cell_ms=per_cell_ms)
    if full:
        assert per_cell_ms <= 20, f"{per_cell_ms:.1f} ms per no-op cell with {jobs} job(s)"


def test_parallel_efficiency(benchmark):
    full = not benchmark.disabled
    spec = parse_spec(SPEC.format(reps=20 if full else 2, n=2_000_000 if full else 20_000))
    _sweep(parse_spec(SPEC.format(reps=1, n=10_000)), 2)  # start the loky workers
    out = {}

    def run():
        out["one"] = _sweep(spec, 1)
        out["two"] = _sweep(spec, 2)

    benchmark.pedantic(run, rounds=1, iterations=1)
    eff = out["one"] / (2 * out["two"])
    benchmark.extra_info.update(one_job_s=out["one"], two_jobs_s=out["two"], efficiency=eff)
    if full and (os.cpu_count() or 1) >= 2:
        assert eff >= 0.85, f"parallel efficiency {eff:.2f} < 0.85"
