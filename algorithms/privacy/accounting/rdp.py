"""The moments accountant beside the tight one: Renyi DP of T Poisson-subsampled Gaussian
releases by dp-accounting's `RdpAccountant` (Mironov, Talwar, Zhang 2019, the accountant of
Abadi et al. 2016 that seed 002's language-model experiment uses).

The suite calibrates noise with the PLD accountant (`accounting.pld`), which is tighter; this
module says what the paper's accountant would have charged for the same noise (issue 74,
item 3): the language-model report states both.
"""

from __future__ import annotations

import math


def poisson_gaussian_rdp_eps(noise_multiplier: float, q: float, steps: int, delta: float) -> float:
    """eps at `delta` of `steps` Poisson-subsampled Gaussian releases (rate q, noise multiplier
    z) by RDP, add-or-remove-one neighbours (the moments accountant's relation: dp-accounting's
    RDP accountant supports no other for Poisson sampling); inf when z is 0."""
    if noise_multiplier <= 0:
        return math.inf
    import dp_accounting
    from dp_accounting import dp_event

    acc = dp_accounting.rdp.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(noise_multiplier)),
                int(steps))
    return float(acc.get_epsilon(delta))


__all__ = ["poisson_gaussian_rdp_eps"]
