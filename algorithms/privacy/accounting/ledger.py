"""The privacy ledger: what a run stores as spent (GDP mu, or a PLD composition with the
discretization that certifies it and eps at a few deltas), and `ledger_eps`, which re-derives
any stored eps from the ledger alone."""

from __future__ import annotations

import math

from algorithms.privacy.accounting.gdp import spent_eps
from algorithms.privacy.accounting.pld import PldCalibration, full_batch_mu, pld_epsilons

#: The deltas (multiples of the run's delta) at which a PLD ledger also stores eps, so a reader
#: sees the accountant's eps(delta) curve, not one point of it.
LEDGER_DELTA_FACTORS = (0.1, 1.0, 10.0)


def ledger_gdp(mu: float, delta: float) -> dict:
    """The spent record of a mu-GDP run (exact GDP composition: the Spiders, DP-GD, noisy SGD,
    recursive regularization, any all-full-batch composition). mu = inf: non-private."""
    if math.isinf(mu):
        return ledger_none(delta)
    return {"eps": spent_eps(mu, delta), "delta": delta, "mu": mu, "accountant": "gdp"}


def ledger_none(delta: float) -> dict:
    """The spent record of a non-private run."""
    return {"eps": math.inf, "delta": delta, "mu": math.inf, "accountant": "none"}


def ledger_pld(cal: PldCalibration) -> dict:
    """The spent record of a PLD-calibrated run: no mu where the composition is not mu-GDP (a
    Poisson-subsampled Gaussian is not), the composed families and the interval that certify
    eps (so `ledger_eps` re-derives it), and eps at a few deltas around the run's."""
    mu = full_batch_mu(cal.families)
    if mu is not None:  # every release full-batch: exact GDP, no discretization
        return ledger_gdp(mu, cal.delta)
    deltas = tuple(f * cal.delta for f in LEDGER_DELTA_FACTORS if f * cal.delta < 1)
    eps_at = pld_epsilons(cal.families, deltas, cal.discretization)
    return {"eps": cal.eps, "delta": cal.delta, "mu": None, "accountant": "pld",
            "families": [list(f) for f in cal.families], "discretization": cal.discretization,
            "eps_at": {f"{d:.3g}": e for d, e in zip(deltas, eps_at, strict=True)}}


def ledger_parallel(parts: list[dict]) -> dict:
    """The spent record of a run whose parts read disjoint records (parallel composition:
    Pagan with private scales, its moment release on held-out records and its optimization on
    the rest): the run spends the worst part's eps at every delta."""
    delta = parts[0]["delta"]
    return {"eps": max(p["eps"] for p in parts), "delta": delta, "mu": None,
            "accountant": "parallel", "parts": parts}


def ledger_jl(base: dict, delta_failure: float) -> dict:
    """The spent record of the JL method (Arora et al. 2023, Theorem 6.1): its base algorithm's
    ledger at delta - delta_failure, plus the JL embedding's failure probability delta_failure
    (so no mu: the run is not mu-GDP)."""
    return {"eps": base["eps"], "delta": base["delta"] + delta_failure, "mu": None,
            "accountant": "jl", "base": base, "delta_failure": delta_failure}


def ledger_eps(spent: dict, delta: float | None = None) -> float:
    """Re-derive a stored run's eps at `delta` (default: its own) from its ledger alone."""
    delta = spent["delta"] if delta is None else delta
    kind = spent.get("accountant", "gdp")
    if kind == "none":
        return math.inf
    if kind == "gdp":
        return spent_eps(float(spent["mu"]), delta)
    if kind == "pld":
        fams = tuple((float(z), float(q), int(c)) for z, q, c in spent["families"])
        return pld_epsilons(fams, (delta,), float(spent["discretization"]))[0]
    if kind == "parallel":
        return max(ledger_eps(part, delta) for part in spent["parts"])
    if kind == "jl":
        rest = delta - float(spent["delta_failure"])
        return ledger_eps(spent["base"], rest) if rest > 0 else math.inf
    raise ValueError(f"accountant={kind!r} is invalid: must be one of gdp, pld, parallel, jl, none")
