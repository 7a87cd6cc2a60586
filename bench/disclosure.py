"""What a store keeps, by what a run releases.

A run of an (eps, delta)-DP algorithm releases its noised values; its accountant says what
stays hidden. Everything a store keeps about a run is one of these kinds (`COLUMN_KINDS`
names the kind of every column of `bench.store`):

- ``input``: the cell's public configuration (problem, algorithm, n, d, eps, seed, ...).
- ``release``: what the run releases, or a function of it and public inputs: the parameters
  used, the step log (batch, noise, released norms), the privacy ledger, and the population
  metrics at released iterates (the population is public: the problem states it).
- ``evaluation``: the suite's own measurement with the private sample in hand (the empirical
  metrics of F_S, the sample's digest, the plugin audit) or over several runs (the samples to
  the target, n*, and the n search that finds it: its runs share the cell's seed across n): a
  result about the run, never something the run released.
- ``evaluation-only``: values that depend on what the accountant keeps hidden. A Poisson-
  sampled step's realized size |B_t| is one: the subsampled accountant (replace-one) treats
  it as hidden, and with the sizes public the eps of what is released is larger (dp-accounting,
  a Binomial(n, q) mixture of (k/n)-subsampled Gaussians: +1.24% at n 2000, d 5, eps 0.3,
  c_T 0.5; none at n 20000). These sit in the one `evaluation_only` column (JSON:
  ``realized_first_batch``, ``realized_grad_evals``), for cost studies; exports leave it out
  unless asked (`dprates export --with-evaluation-only`), and no report or summary reads it.
- ``machine``: timings and provenance (versions, host, start and end). Wall times vary with
  the realized batch sizes as any timing does; they measure the machine, not the run's output.
- ``status``: how the cell ended (status, error type and message, traceback).

A Poisson-sampled family (`hidden_batch_sizes` on its class) logs the expected batch q n in
its step log and `first_o1_batch`, and counts q n T gradient evaluations in `grad_evals`
(`public_batch`, `public_grad_evals`). Stores written before this rule keep the realized
values in those columns: `public_cells` and `public_trajectory` move them under
`evaluation_only` when a store is read, so nothing downstream prints them as run facts.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from bench.store_columns import ALL_COLUMNS, CELL_COLUMNS

INPUT, RELEASE, EVALUATION, EVALUATION_ONLY, MACHINE, STATUS = (
    "input", "release", "evaluation", "evaluation-only", "machine", "status")
KINDS = (INPUT, RELEASE, EVALUATION, EVALUATION_ONLY, MACHINE, STATUS)

_EVALUATION = ("emp_grad_best", "emp_grad_last", "emp_grad_selected", "emp_alpha_best",
               "emp_alpha_last", "emp_alpha_selected", "emp_lambda_min_best",
               "alpha_at_emp_best",  # the iterate is chosen by the empirical alpha (reads S)
               "data_digest", "privacy_check",
               "n_search",  # which n reached the target is read from population values
               # n*: the experimenter's measurement with the exact population oracle (a
               # deployment has none); a searched cell's is read over all its search's runs,
               # which share the cell's seed across n (nested prefixes, the same first noise
               # draws: common random numbers across n), so it is no release of any one run
               # and no ledger covers it (issue 71, item 5)
               "samples_to_target")
_MACHINE = ("wall", "cpu", "run_wall", "eval_wall", "dprates_version", "git_commit", "python",
            "numpy", "plugins", "host", "pid", "started", "finished")
_STATUS = ("status", "error_type", "error_message", "traceback")


def column_kinds() -> dict[str, str]:
    """Every column of the cells table -> its kind (module docstring)."""
    kinds: dict[str, str] = {"key": INPUT}
    for col in ALL_COLUMNS:
        if col in CELL_COLUMNS:
            kinds[col] = INPUT
        elif col == "evaluation_only":
            kinds[col] = EVALUATION_ONLY
        elif col in _EVALUATION:
            kinds[col] = EVALUATION
        elif col in _MACHINE:
            kinds[col] = MACHINE
        elif col in _STATUS:
            kinds[col] = STATUS
        else:
            kinds[col] = RELEASE
    return kinds


COLUMN_KINDS = column_kinds()
#: The columns no export prints unless asked and no report reads.
EVALUATION_ONLY_COLUMNS = tuple(c for c, k in COLUMN_KINDS.items() if k == EVALUATION_ONLY)


def hidden_sizes_class(algorithm: str) -> Any | None:
    """The algorithm's class when its batches are Poisson-sampled (hidden sizes), else None
    (an unknown name, e.g. a plugin not loaded, is None: its store rows are left as written)."""
    import algorithms

    try:
        cls = algorithms.get_algorithm(algorithm)
    except ValueError:
        return None
    return cls if getattr(cls, "hidden_batch_sizes", False) else None


def _steps_read(params: dict, n: float) -> int:
    """The records the steps read: n less a held-out moment sample (Pagan's private scales)."""
    return int(n) - int(params.get("moment_m", 0) or 0)


def public_cells(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of Poisson-sampled families stored with realized sizes (before this rule) get the
    public values, and the realized ones move under `evaluation_only` (marked `moved`)."""
    if "evaluation_only" not in df or not len(df):
        return df
    for i in df.index:
        if df.at[i, "evaluation_only"] is not None:
            continue
        cls = hidden_sizes_class(df.at[i, "algorithm"])
        params, steps = df.at[i, "params_used"], df.at[i, "n_steps"]
        if cls is None or not isinstance(params, dict) or not _finite(steps):
            continue
        read = _steps_read(params, df.at[i, "n"])
        first, evals = df.at[i, "first_o1_batch"], df.at[i, "grad_evals"]
        df.at[i, "evaluation_only"] = {
            "realized_first_batch": int(first) if _finite(first) else None,
            "realized_grad_evals": int(evals) if _finite(evals) else None, "moved": True}
        if _finite(first):
            df.at[i, "first_o1_batch"] = cls.public_batch(params, read, cls.step_oracle(params, 1))
        if _finite(evals):
            df.at[i, "grad_evals"] = float(cls.public_grad_evals(params, read, int(steps)))
    return df


def public_trajectory(cell: dict, curve: dict) -> dict:
    """A stored trajectory profile with its per-step batches public: a Poisson-sampled
    family's realized sizes (stores written before this rule) become the expected ones."""
    cls = hidden_sizes_class(cell.get("algorithm", ""))
    params = cell.get("params_used")
    if cls is None or not isinstance(params, dict) or "batch" not in curve \
            or cell.get("evaluation_only") is not None:
        return curve
    read = _steps_read(params, cell["n"])
    steps = curve.get("step", range(1, len(curve["batch"]) + 1))
    return {**curve, "batch": [cls.public_batch(params, read, cls.step_oracle(params, t))
                               for t in steps]}


def _finite(v: Any) -> bool:
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


__all__ = ["COLUMN_KINDS", "EVALUATION", "EVALUATION_ONLY", "EVALUATION_ONLY_COLUMNS", "INPUT",
           "KINDS", "MACHINE", "RELEASE", "STATUS", "column_kinds", "hidden_sizes_class",
           "public_cells", "public_trajectory"]
