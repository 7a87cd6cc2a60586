"""Parameter rules the Spider engine and its three variants share: how many tree nodes a record
moves, the noise calibration of the tree or Gaussian releases (through the accountant), the eps
each release gets, and the saddle-escape threshold and perturbation (seed 000, Algorithm 2
lines 9-11; Proposition 3.4)."""

from __future__ import annotations

import math
from typing import Any

from algorithms.base import Privacy
from algorithms.privacy.accounting.gdp import Calibration, calibrate
from algorithms.privacy.mechanisms import TreeMechanism
from problems.base import Constants


def tree_nodes(depth: int, scope: str) -> int:
    """Gaussian node values one record can move in the tree (`algorithms.sosp.spider`'s docstring)."""
    return 2 * depth if scope == "global" else depth



def noise_calibration(privacy: Privacy, sensitivity: float, noise: str, T: int,
                      scope: str) -> Calibration:
    """The accountant's calibration for this algorithm's mechanism."""
    if noise == "tree":
        depth = TreeMechanism.depth(T)
        return calibrate(privacy.eps, privacy.delta, sensitivity,
                         nodes=tree_nodes(depth, scope), method=privacy.calibration,
                         tree_steps=T)
    return calibrate(privacy.eps, privacy.delta, sensitivity, method=privacy.calibration)



def effective_eps(privacy: Privacy, noise: str, T: int, scope: str, budget_mult: float) -> float:
    """The eps the batch rules budget for, so that the noise they plan for is the noise added.

    The papers' rules make a release's sensitivity ~ eps alpha / sqrt(d) assuming noise std =
    sensitivity / eps. The accountant adds std = multiplier x sensitivity (x sqrt(popcount(t))
    <= sqrt(depth) for a tree prefix), and the replace-one sensitivity carries a factor 2.
    eps_eff = budget_mult / (2 x multiplier [x sqrt(depth)]) puts both on the same footing
    (fair rules; without it the tree's rules carried a hidden factor of ~200, measured).
    """
    if not privacy.private:
        return math.inf
    cal = noise_calibration(privacy, 1.0, noise, T, scope)
    factor = cal.multiplier
    if noise == "tree":
        factor *= math.sqrt(TreeMechanism.depth(T))
    return budget_mult / (2.0 * factor)



def escape_params(constants: Constants, d: int, gamma: float, noise_norm: float, T: float,
                  knobs: dict[str, Any]) -> dict[str, float]:
    """Escape threshold, noise zeta and frozen window Gamma (seed 000 Alg. 2 line 9, Lemma 3.3,
    Proposition 3.4), with the `escape_rule` choice described in `algorithms.sosp.spider`'s docstring."""
    M, B0 = constants.M, constants.B0
    rho = constants.rho if constants.rho > 0 else 1e-12 * M  # rho = 0: no saddles
    omega = knobs["omega"]
    L = max(1.0, math.log(d * M * B0 / (rho * gamma * omega)))
    Gamma = knobs["c_Gamma"] * M * L / math.sqrt(rho * gamma)
    log_d = max(1.0, math.log(d / omega))
    if knobs["escape_rule"] == "literal":
        threshold = knobs["c_escape"] * gamma * max(1.0, math.log(B0 * M * d / (rho * omega))) ** 3
        zeta = knobs["c_zeta"] * gamma / math.sqrt(log_d)
    else:
        scale = max(gamma, noise_norm)
        threshold = knobs["c_escape"] * scale
        zeta = knobs["c_zeta"] * scale / math.sqrt(log_d)
    return {"escape_threshold": threshold, "zeta": zeta, "Gamma": min(Gamma, max(T, 1.0))}
