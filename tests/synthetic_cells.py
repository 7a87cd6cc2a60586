"""Synthetic cells and stores with planted values, shared by tests/test_atlas.py and
tests/test_compare.py: targeted one-pass cells (samples to a target per repetition), fixed-budget
cells (a value per n and repetition) and a store holding them as its current spec's cells."""

from __future__ import annotations

import math
from collections.abc import Callable


def _base(alg: str, rep: int) -> dict:
    return {"algorithm": alg, "problem": "hard_valley", "problem_params": {}, "params": {},
            "knobs": (), "d": 10, "eps": 0.5, "delta": 1e-6, "rep": rep, "base_seed": 1,
            "data": "counts", "calibration": "tight", "status": "ok", "n_steps": 100,
            "params_used": {}, "censored": False, "alpha_best": math.nan}


def targeted(alg: str, n_star: list[float], target: float, **over) -> list[dict]:
    """Targeted cells: repetition r read n_star[r] samples to reach `target` (inf: censored);
    `over` replaces any column."""
    return [{**_base(alg, r), "target_alpha": target, "target_metric": "alpha_sosp", "n": None,
             "samples_to_target": v if math.isfinite(v) else math.nan,
             "censored": not math.isfinite(v), "n_star": v, **over}
            for r, v in enumerate(n_star)]


def budgets(alg: str, ns: list[float], value: Callable[[float, int], float], reps: int,
            metrics: tuple[str, ...] = ("alpha_best",), **over) -> list[dict]:
    """Untargeted cells on n records: each of `metrics` is value(n, rep); `over` replaces any
    column."""
    return [{**_base(alg, r), "target_alpha": math.nan, "target_metric": None, "n": n,
             "samples_to_target": math.nan, "n_star": math.nan,
             **{m: value(n, r) for m in metrics}, **over} for n in ns for r in range(reps)]


def write_store(path, rows: list[dict]) -> str:
    """A synthetic store holding `rows` as cells of its current spec."""
    from bench.store import Store

    with Store(path) as st:
        st.set_spec("synthetic", "", str(path), [f"k{i}" for i in range(len(rows))], "now")
        for i, r in enumerate(rows):
            rec = {**r, "key": f"k{i}"}
            rec["target_alpha"] = None if math.isnan(r["target_alpha"]) else r["target_alpha"]
            st.write(rec)
    return str(path)
