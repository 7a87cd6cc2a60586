"""The language-model experiment's grid, its store and the resumable parallel driver (issue 74,
item 4). `python -m bench.lm` (`make reference-lm`) runs it into results/lm_experiment.sqlite.

The grid, reduced from the paper's (seed 002, arXiv 2106.13756: step-size multipliers
{0.1, 0.2, 0.4, 0.8, 1, 10, 50}, B in {0.05, 0.1, 0.5, 1}, eps in {0.5, 1, 3} and non-private,
each setting tuned per eps) so that it runs in about two hours on 2 cores (46 runs of about
150 s of CPU each on an idle core; measured 335 s a run with the machine loaded 3x):

1. **tune** (seed 0): every private method at eps 1 over `LMGrid.lr_mults_private` x
   `LMGrid.B` (2 x 2), the two non-private methods over `LMGrid.lr_mults` (3; B unused); the
   setting with the lowest final validation perplexity is the method's, at every eps
   [CHOICE: tuned at eps 1 once, not per eps; the same rule for every method];
2. **seeds**: each method's setting at every eps of `LMGrid.eps` (inf for the non-private
   ones) over `LMGrid.seeds` (seed 0 at eps 1 is the tuning run itself: the winner's first seed
   is selected, a small optimistic bias every method shares).

Each run is a cell of a suite store (`bench.store`): its row, its validation-perplexity curve
(curves kind "perplexity"). The parent process writes; workers return records; a failure is
recorded and never loses another run; a rerun skips every stored "ok" or "diverged" cell.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.lm.setup import LMSetup
from bench.lm.train import METHODS, PRIVATE, LMCell, run_cell

SPEC_NAME = "lm_experiment"


@dataclass(frozen=True)
class LMGrid:
    """The grid (module docstring): private eps, the tuning eps, the step-size multipliers, the
    thresholds B and the seeds."""

    eps: tuple[float, ...] = (0.5, 1.0, 3.0)
    tune_eps: float = 1.0
    lr_mults: tuple[float, ...] = (0.3, 1.0, 3.0)
    lr_mults_private: tuple[float, ...] = (1.0, 3.0)
    B: tuple[float, ...] = (0.3, 1.0)
    seeds: tuple[int, ...] = (0, 1, 2)

    def as_dict(self) -> dict:
        return asdict(self)


_GRID = LMGrid()


def tune_cells(grid: LMGrid = _GRID) -> list[LMCell]:
    cells = []
    for m in METHODS:
        if m in PRIVATE:
            cells += [LMCell(m, grid.tune_eps, lr, B, 0) for lr in grid.lr_mults_private
                      for B in grid.B]
        else:
            cells += [LMCell(m, math.inf, lr, 1.0, 0) for lr in grid.lr_mults]
    return cells


def seed_cells(tuned: dict[str, tuple[float, float]], grid: LMGrid = _GRID) -> list[LMCell]:
    cells = []
    for m, (lr, B) in tuned.items():
        for eps in (grid.eps if m in PRIVATE else (math.inf,)):
            cells += [LMCell(m, eps, lr, B, s) for s in grid.seeds]
    return cells


def tuned_settings(rows: Iterable[dict], grid: LMGrid = _GRID) -> dict[str, tuple[float, float]]:
    """method -> (lr_mult, B) of its tuning run with the lowest final validation perplexity
    (ties: the smaller multiplier, then the smaller B); methods with no finished run left out."""
    tune = {c.key for c in tune_cells(grid)}
    best: dict[str, tuple] = {}
    for r in rows:
        if r["key"] not in tune or r["status"] != "ok" or not math.isfinite(r["final_validation"]):
            continue
        score = (r["final_validation"], r["lr_mult"], r["B"])
        if r["algorithm"] not in best or score < best[r["algorithm"]]:
            best[r["algorithm"]] = score
    return {m: (s[1], s[2]) for m, s in best.items()}


def stored_rows(path: Path) -> list[dict]:
    """Every stored run: key, algorithm, status, lr_mult, B and its final validation."""
    from bench.store import Store

    if not path.exists():
        return []
    with Store(path) as st:
        rows = st.conn.execute("SELECT c.key, c.algorithm, c.status, c.params, v.data FROM cells c "
                               "LEFT JOIN curves v ON v.key = c.key AND v.kind = 'perplexity'"
                               ).fetchall()
    out = []
    for key, alg, status, params, curve in rows:
        p, cv = json.loads(params or "{}"), json.loads(curve) if curve else {}
        fv = cv.get("final_validation")
        out.append({"key": key, "algorithm": alg, "status": status, "lr_mult": p.get("lr_mult"),
                    "B": p.get("B"), "final_validation": math.nan if fv is None else fv})
    return out


def _guarded(cell: LMCell, setup: LMSetup, corpus_dir: str | None) -> dict:
    """run_cell, with a failure recorded as the cell's row (never lost, never fatal)."""
    try:
        return run_cell(cell, setup, corpus_dir)
    except Exception as exc:  # recorded: one failed run never loses the others
        return {"key": cell.key, "problem": "lstm_language_model", "algorithm": cell.method,
                "params": {"lr_mult": cell.lr_mult, "B": cell.B}, "eps": cell.eps,
                "delta": setup.delta, "rep": cell.seed, "status": "error",
                "error_type": type(exc).__name__, "error_message": str(exc),
                "traceback": traceback.format_exc()}


def _single_threaded_workers() -> None:
    """One XLA thread per worker: the grid's parallelism is its runs (set before the workers
    start, which then import jax)."""
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                          "intra_op_parallelism_threads=1")


def run_phase(cells: list[LMCell], path: Path, setup: LMSetup, corpus_dir: str | None,
              jobs: int, prov: dict) -> dict[str, int]:
    """Run the cells not yet stored (ok or diverged), writing each as it lands; status counts."""
    import joblib

    from bench.store import Store

    done = {r["key"] for r in stored_rows(path) if r["status"] in ("ok", "diverged")}
    todo = [c for c in cells if c.key not in done]
    counts: dict[str, int] = {}
    if not todo:
        return counts
    _single_threaded_workers()
    tasks = (joblib.delayed(_guarded)(c, setup, corpus_dir) for c in todo)
    with Store(path) as store:
        for i, rec in enumerate(joblib.Parallel(n_jobs=jobs, return_as="generator_unordered",
                                                batch_size=1)(tasks), 1):
            rec.update(prov)
            store.write(rec)
            counts[rec["status"]] = counts.get(rec["status"], 0) + 1
            print(f"  [{i}/{len(todo)}] {rec['key']}: {rec['status']}"
                  + (f" (validation {rec['curves']['perplexity']['final_validation']:.1f}, "
                     f"{rec['wall']:.0f} s)" if rec.get("curves") else
                     f" ({rec.get('error_message', '')})"), file=sys.stderr, flush=True)
    return counts


def run_grid(path: str | Path, setup: LMSetup | None = None, corpus_dir: str | None = None,
             jobs: int = 2, grid: LMGrid | None = None) -> dict[str, tuple[float, float]]:
    """Both phases (module docstring) into the store at `path`; the tuned settings. Defaults:
    the stated `LMSetup()` and `LMGrid()`."""
    setup, grid = setup or LMSetup(), grid or LMGrid()
    from bench.runner import now, provenance
    from bench.store import Store

    path = Path(path)
    prov = provenance()
    t0 = time.perf_counter()
    from bench.lm.setup import load_data

    data = load_data(setup, corpus_dir)  # the corpus's summary for the report (2 s)
    spec = {"setup": setup.as_dict(), **grid.as_dict(), "corpus_summary": data.summary,
            "windows": {"train": len(data.train), "public": len(data.public),
                        "validation": len(data.validation), "test": len(data.test)}}
    with Store(path) as st:
        st.set_spec(SPEC_NAME, json.dumps(spec, sort_keys=True), "bench/lm/grid.py",
                    [c.key for c in tune_cells(grid)], now(), stream_version=None)
    print(f"tuning: {len(tune_cells(grid))} runs", file=sys.stderr)
    run_phase(tune_cells(grid), path, setup, corpus_dir, jobs, prov)
    tuned = tuned_settings(stored_rows(path), grid)
    final = seed_cells(tuned, grid)
    keys = sorted({c.key for c in tune_cells(grid)} | {c.key for c in final})
    with Store(path) as st:
        st.set_spec(SPEC_NAME, json.dumps({**spec, "tuned": tuned}, sort_keys=True),
                    "bench/lm/grid.py", keys, now(), stream_version=None)
    print(f"seeds: {len(final)} runs at the tuned settings {tuned}", file=sys.stderr)
    run_phase(final, path, setup, corpus_dir, jobs, prov)
    print(f"done in {time.perf_counter() - t0:.0f} s: {path}", file=sys.stderr)
    return tuned


__all__ = ["LMGrid", "run_grid", "seed_cells",
           "stored_rows", "tune_cells", "tuned_settings"]
