"""The language-model experiment's store read back for the analysis (`analysis.lm_results`,
`analysis.lm_report` never import bench: the data flows one way)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from bench.store import Store, load_meta


def _num(v) -> float:
    return math.nan if v is None else float(v)


def read_runs(path: str | Path) -> pd.DataFrame:
    """One row per stored run: method, eps, lr_mult, B, seed, status, final validation and test
    perplexity, wall and CPU, the noise multiplier, the curve (steps, validation)."""
    with Store(path, create=False) as st:
        rows = st.conn.execute(
            "SELECT c.key, c.algorithm, c.eps, c.rep, c.status, c.params, c.params_used, c.wall, "
            "c.cpu, c.d, c.privacy_ledger, v.data FROM cells c LEFT JOIN curves v ON v.key = c.key AND "
            "v.kind = 'perplexity' WHERE c.key IN (SELECT key FROM spec_cells)").fetchall()
    out = []
    for key, alg, eps, rep, status, params, used, wall, cpu, d, ledger, curve in rows:
        p, u = json.loads(params or "{}"), json.loads(used or "{}")
        cv, led = json.loads(curve) if curve else {}, json.loads(ledger) if ledger else {}
        out.append({"key": key, "method": alg, "eps": math.inf if eps is None else float(eps),
                    "seed": rep, "d": d, "status": status, "lr_mult": p.get("lr_mult"), "B": p.get("B"),
                    "validation": _num(cv.get("final_validation")), "test": _num(cv.get("test")),
                    "wall": _num(wall), "cpu": _num(cpu), "z": _num(u.get("noise_multiplier")),
                    "eps_rdp": _num((led or {}).get("eps_rdp_add_remove")),
                    "steps": cv.get("step", []), "curve": cv.get("validation", [])})
    return pd.DataFrame(out)


def _num(v) -> float:
    return math.nan if v is None else float(v)


def read_spec(path: str | Path) -> dict:
    """The grid's spec as run_grid recorded it (setup, grid, corpus summary, tuned settings)."""
    return json.loads(load_meta(path)["spec_text"])


__all__ = ["read_runs", "read_spec"]
