"""The float rounding of a counts-mode release, declared as a relative sensitivity allowance.

A counts-mode batch sum is built from the batch's exact value counts: the mean record
(counts / k, one division and one affine map per field), the per-record map at it, then
times k (`algorithms.counts_maps`). Each step rounds once (relative 2^-53), and the result is
a float of magnitude up to k C (C the per-record bound), so two neighbouring batches' computed
sums differ by their exact difference (<= 2C, the told sensitivity) plus at most a few
k C 2^-53. Relative to 2C that excess is below k 2^-52 (measured on hard_valley, d 10, 50
neighbouring pairs: 5.1e-11 at k 1e6, 5.7e-8 at 1e9, 3.8e-6 at 1e11, against the allowance's
2.2e-10, 2.2e-7, 2.2e-5; `tests/test_disclosure.py`). The guard's relative slack of 1e-12
(`problems.counts.stream.require_identity_clip`) adds to it.

So a counts-mode release of a batch of k records has the sensitivity its accountant is told
times 1 + `counts_rounding_allowance(k)`. The noise is calibrated to the told sensitivity (a
change would move every stored number); the run's ledger declares the allowance at its
largest batch and, where the run is mu-GDP, the eps that holds with it
(`rounding_ledger_entry`): at the reference's largest batches (k ~ 1e9) it moves eps by a
relative ~2e-7.
"""

from __future__ import annotations

import math
from typing import Any

from algorithms.privacy.accounting.gdp import spent_eps

#: The guard's relative slack on a per-record bound (problems.counts.stream).
GUARD_SLACK = 1e-12


def counts_rounding_allowance(k: int | float) -> float:
    """Relative sensitivity allowance of a counts-mode batch of k records: k 2^-52 plus the
    guard's slack (module docstring)."""
    if not (k >= 0 and math.isfinite(float(k))):
        raise ValueError(f"k={k!r} is invalid: must be a finite batch size >= 0")
    return float(k) * 2.0 ** -52 + GUARD_SLACK


def rounding_ledger_entry(k_max: int | float, mu: float | None, delta: float) -> dict:
    """What a counts-mode run's ledger declares: the allowance at its largest batch and, for a
    mu-GDP run, the eps of mu (1 + allowance) at the run's delta (None otherwise)."""
    rho = counts_rounding_allowance(k_max)
    eps = spent_eps(mu * (1.0 + rho), delta) if mu is not None and math.isfinite(mu) else None
    return {"sensitivity_rounding": rho, "largest_batch": int(k_max),
            "eps_with_rounding": eps}


def run_rounding_entry(traj: Any) -> dict:
    """`rounding_ledger_entry` of a counts-mode run (a `Trajectory`), {} if non-private. Its
    largest batch from public values only: the step log's largest, or the records it read
    where realized batch sizes are hidden (a Poisson subsample of n records has at most n)."""
    spent = traj.privacy_spent
    if spent.get("accountant", "gdp") == "none":
        return {}
    logged = traj.records["batch"]
    k_max = traj.samples_used if traj.evaluation_only or not len(logged) else int(logged.max())
    return rounding_ledger_entry(k_max, spent.get("mu"), spent["delta"])


__all__ = ["GUARD_SLACK", "counts_rounding_allowance", "rounding_ledger_entry",
           "run_rounding_entry"]
