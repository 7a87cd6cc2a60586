"""A `bench.single_run.run_cell` result as a sweep cell's record (its curves, first batch,
gradient evaluations and privacy ledger): shared by `bench.runner.compute_cell` and a search
over n (`bench.n_search`)."""

from __future__ import annotations

from typing import Any

from bench.cells import Cell


def finish_cell(cell: Cell, res: dict[str, Any]) -> dict[str, Any]:
    """A run_cell result as a cell's record: its curves, first batch, gradient evaluations and
    privacy ledger."""
    from problems.evaluation.metrics import trajectory_profile

    traj = res.pop("trajectory")
    prob = res.pop("problem_obj")
    res["curves"] = {
        "samples_to_accuracy": {"threshold": res["curve"]["threshold"].tolist(),
                                "samples": res["curve"]["samples"].tolist()},
        "trajectory": trajectory_profile(prob, traj),
    }
    res["first_o1_batch"] = int(traj.records["batch"][0]) if len(traj.records["batch"]) else None
    # per-sample gradient evaluations: with n, the exact passes over the data (dprates compare)
    res["grad_evals"] = int(traj.grad_evals) if getattr(traj, "grad_evals", None) is not None else None
    spent = traj.privacy_spent
    res["delta_spent"] = float(spent["delta"])
    # mu only where the run is mu-GDP; a PLD-calibrated run stores its composed releases
    # instead, from which `algorithms.privacy.accounting.ledger_eps` re-derives eps at any delta.
    res["mu_spent"] = None if spent.get("mu") is None else float(spent["mu"])
    res["accountant"] = spent.get("accountant", "gdp")
    res["privacy_ledger"] = {k: v for k, v in spent.items()
                             if k not in ("eps", "delta", "mu", "accountant")} or None
    if cell.data == "counts":  # its float rounding, declared (accounting.rounding)
        from algorithms.privacy.accounting.rounding import run_rounding_entry

        res["privacy_ledger"] = {**(res["privacy_ledger"] or {}), **run_rounding_entry(traj)}
    return res


__all__ = ["finish_cell"]
