"""Benchmark of the sweep runner (issue 4 targets; a script, not a timed unit test).

1. Parallel efficiency on a CPU-bound sweep of >= 40 real cells:
   time(1 job) / (2 x time(2 jobs)) (target >= 0.85 on a 2-core machine). Both runs use the
   same loky backend, so the ratio measures scaling, not backend start-up differences.
2. Per-cell overhead of runner + store: a sweep of cells that do nothing (the cell function
   returns at once), wall time per cell including the store's transaction (target <= 20 ms).

Both measured in one process, one after the other:

    python bench/perf_runner.py [--cells 40] [--n 400000] [--noop-cells 400]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.cells import Cell
from bench.config import parse_spec
from bench.runner import run_sweep

SPEC = """
name = "perf"
seed = 1
repetitions = {reps}
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
    """A cell that does nothing: measures the runner's and the store's own cost."""
    return {"metrics": {}, "params": {}, "timing": {}, "curves": {}}


def timed_sweep(spec, jobs: int, **kw: Any) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = run_sweep(spec, Path(tmp) / "s.sqlite", jobs=jobs, progress=False, **kw)
        wall = time.perf_counter() - t0
        assert res.ran == len(spec.cells()), res
        assert set(res.counts) == {"ok"}, res.counts
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", type=int, default=40)
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--noop-cells", type=int, default=400)
    args = ap.parse_args()

    spec = parse_spec(SPEC.format(reps=max(1, args.cells // 2), n=args.n))
    cells = len(spec.cells())
    timed_sweep(parse_spec(SPEC.format(reps=2, n=10_000)), 2)  # warm the loky workers
    t1 = timed_sweep(spec, 1)
    t2 = timed_sweep(spec, 2)
    eff = t1 / (2 * t2)
    print(f"parallel efficiency: {cells} cells, 1 job {t1:.2f} s, 2 jobs {t2:.2f} s, "
          f"efficiency {eff:.3f} (target >= 0.85)")

    noop = parse_spec(SPEC.format(reps=max(1, args.noop_cells // 2), n=1000))
    k = len(noop.cells())
    for jobs in (1, 2):
        w = timed_sweep(noop, jobs, cell_fn=noop_cell)
        print(f"overhead per no-op cell, {jobs} job(s): {1000 * w / k:.2f} ms over {k} cells "
              f"(target <= 20 ms)")


if __name__ == "__main__":
    main()
