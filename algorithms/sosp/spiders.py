"""The three private SOSP Spiders and their parameter rules (`theory_params`).

All three run the engine of `algorithms.sosp.spider` and differ only where the papers differ.
Every rule below is written as its formula; the constants that O~ hides are the knobs of
`algorithms.sosp.spider.KNOB_DEFAULTS` (all 1 by default). `eps_eff` is the eps the rules budget
for (see `algorithms.sosp.spider.effective_eps`): each algorithm budgets for the noise its own
accountant adds, so no algorithm carries a hidden factor another does not.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from scipy.optimize import brentq, minimize_scalar

from algorithms.base import Privacy
from algorithms.claim_logs import LOGS
from algorithms.claims import Claim, term
from algorithms.privacy.mechanisms import TreeMechanism
from algorithms.sosp.noise_rules import effective_eps, escape_params, noise_calibration
from algorithms.sosp.spider import Spider
from problems.base import Constants


def _require_n_or_target(name: str, n: int | None, target: float | None) -> None:
    if n is None and target is None:
        raise ValueError(f"{name}: an unbudgeted stream needs target_alpha=... (n is None)")


def _check_n(n: int | None) -> None:
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"n={n!r} is invalid: must be an integer >= 1")


# ------------------------------------------------------------------------------------------
# Fixed-batch rules (Ganesh-style reconstruction; see GaussianSpider)
# ------------------------------------------------------------------------------------------
def fixed_batch_rules(G: float, M: float, B0: float, d: int, gamma: float, eps_eff: float,
                      kappa: float) -> dict[str, float]:
    """b, B(kappa) and the sample budget of the fixed-batch Spiders at accuracy gamma.

    b = G^2/gamma^2 + sqrt(d) G/(gamma eps_eff)      (O1: sampling error and privacy noise <= gamma)
    B = max(M^2 kappa/gamma^2, sqrt(d) M sqrt(kappa)/(gamma eps_eff))
        (O2 over an epoch: sampling variance M^2 drift/B <= gamma^2 with drift <= kappa; privacy
        noise accumulated over the epoch, d sum_t (2 m M |dx_t| / B)^2 <= 4 d m^2 M^2 kappa / B^2,
        for the Gaussian; for the tree the worst-case leaf sensitivity 2 M D / B with D =
        sqrt(kappa) and a prefix of <= depth nodes, which eps_eff already carries: the same form)
    budget = (B0/(M kappa)) b + (B0 M/gamma^2) B   (#epochs x O1 batch + T x O2 batch)
    """
    priv = math.isfinite(eps_eff)
    b = G**2 / gamma**2 + (math.sqrt(d) * G / (gamma * eps_eff) if priv else 0.0)
    B = M**2 * kappa / gamma**2
    if priv:
        B = max(B, math.sqrt(d) * M * math.sqrt(kappa) / (gamma * eps_eff))
    budget = B0 / (M * kappa) * b + B0 * M / gamma**2 * B
    return {"b": b, "B": B, "budget": budget}


def best_kappa(G: float, M: float, B0: float, d: int, gamma: float, eps_eff: float) -> float:
    """kappa minimizing the sample budget (numerically, over log kappa).

    Limits (tested): private regime kappa ~ G^{2/3} gamma^{4/3} / M^2 (up to d, eps factors),
    non-private kappa = G gamma / M^2.
    """
    def budget(log_k: float) -> float:
        return math.log(fixed_batch_rules(G, M, B0, d, gamma, eps_eff, math.exp(log_k))["budget"])

    center = math.log(G * gamma / M**2)
    res = minimize_scalar(budget, bounds=(center - 60, center + 60), method="bounded",
                          options={"xatol": 1e-10})
    return math.exp(res.x)


def solve_accuracy_and_horizon(privacy: Privacy, noise: str, scope: str, constants: Constants,
                               kn: dict[str, Any], accuracy_of: Any) -> tuple[float, float, float]:
    """eps_eff, the accuracy gamma and the horizon T = horizon_mult x B0 M / gamma^2 (Prop. 3.4).

    eps_eff depends on T through the tree depth, T on gamma and gamma (via `accuracy_of`) on
    eps_eff: iterate until the depth is stable (2-3 rounds in practice).
    """
    B0, M = constants.B0, constants.M
    T_guess = 2**20
    for _ in range(6):
        eps_eff = effective_eps(privacy, noise, T_guess, scope, kn["budget_mult"])
        gamma = accuracy_of(eps_eff)
        T = kn.get("T") or kn["horizon_mult"] * B0 * M / gamma**2
        if noise != "tree" or TreeMechanism.depth(int(T)) == TreeMechanism.depth(T_guess):
            break
        T_guess = int(T)
    return eps_eff, gamma, T


#: Solved parameters by their inputs: the fixed-point solve below is ~75% of a small run's
#: time, and an audit or a sweep asks it the same question thousands of times.
_FIXED_BATCH_CACHE: dict[tuple, dict[str, Any]] = {}


def fixed_batch_theory_params(noise: str, constants: Constants, n: int | None, d: int,
                              privacy: Privacy, **kn: Any) -> dict[str, Any]:
    """`_fixed_batch_theory_params`, memoized on its (hashable) inputs; a fresh dict each call."""
    try:
        key = (noise, constants, n, d, privacy, tuple(sorted(kn.items())))
        hash(key)
    except TypeError:  # an unhashable knob value: no memo
        return _fixed_batch_theory_params(noise, constants, n, d, privacy, **kn)
    if key not in _FIXED_BATCH_CACHE:
        if len(_FIXED_BATCH_CACHE) > 4096:
            _FIXED_BATCH_CACHE.clear()
        _FIXED_BATCH_CACHE[key] = _fixed_batch_theory_params(noise, constants, n, d, privacy, **kn)
    return dict(_FIXED_BATCH_CACHE[key])


def _fixed_batch_theory_params(noise: str, constants: Constants, n: int | None, d: int,
                               privacy: Privacy, **kn: Any) -> dict[str, Any]:
    """Parameters of `gaussian_spider` / `tree_spider` (see `fixed_batch_rules`).

    gamma: the target (target_alpha x alpha_mult) or, from n, alpha_mult x the smallest gamma
    whose minimal budget fits n (private regime: gamma ~ (sqrt(d)/(n eps))^{3/7} for the
    Gaussian, Ganesh et al. 2023 Thm 3.12 as reconstructed). eta = 1/M, T = horizon_mult x
    B0 M / gamma^2, D = sqrt(kappa). eps_eff depends on T through the tree depth, T on gamma
    and gamma on eps_eff: solved by fixed-point iteration.
    """
    _check_n(n)
    G, M, B0 = constants.G, constants.M, constants.B0
    target = kn.get("target_alpha", kn.get("alpha"))
    _require_n_or_target(noise + "_spider", n, target)
    scope = kn.get("tree_scope", "global")

    def gamma_of(eps_eff: float) -> float:
        if target is not None:
            return float(target) * kn["alpha_mult"]

        def excess(log_g: float) -> float:
            g = math.exp(log_g)
            k = best_kappa(G, M, B0, d, g, eps_eff)
            return math.log(fixed_batch_rules(G, M, B0, d, g, eps_eff, k)["budget"] / n)

        return kn["alpha_mult"] * math.exp(brentq(excess, math.log(1e-12), math.log(1e6)))

    eps_eff, gamma, T = solve_accuracy_and_horizon(privacy, noise, scope, constants, kn, gamma_of)
    kappa = float(kn.get("kappa") or best_kappa(G, M, B0, d, gamma, eps_eff))
    rules = fixed_batch_rules(G, M, B0, d, gamma, eps_eff, kappa)
    b = kn.get("b") or rules["b"]
    B = kn.get("B") or rules["B"]
    D = kn.get("D") or math.sqrt(kappa)
    # Bound on the privacy-noise norm in the released estimate (for the escape rule).
    if privacy.private:
        if noise == "tree":
            s = max(2 * G / b, 2 * M * D / B)
            cal = noise_calibration(privacy, s, "tree", int(T), scope)
            noise_norm = math.sqrt(d * TreeMechanism.depth(int(T))) * cal.sigma
        else:
            mult = noise_calibration(privacy, 1.0, "gaussian", int(T), scope).multiplier
            noise_norm = math.sqrt(d) * 2 * mult * math.hypot(G / b, M * math.sqrt(kappa) / B)
    else:
        noise_norm = 0.0
    p = {"alpha": gamma, "gamma": gamma, "eps_eff": eps_eff, "kappa": kappa, "b": b, "B": B,
         "D": D, "eta": kn.get("eta") or 1.0 / M, "T": T, "noise_norm": noise_norm,
         "theory_budget": fixed_batch_rules(G, M, B0, d, gamma, eps_eff, kappa)["budget"]}
    p.update(escape_params(constants, d, gamma, noise_norm, T, kn))
    return p


class GaussianSpider(Spider):
    """Ganesh-style private Spider for SOSP (Ganesh et al. 2023, *Private (Stochastic) Non-Convex
    Optimization Revisited*, NeurIPS 2023, arXiv 2302.09699, as described in seed 000 Sections
    1.1-1.2; its full text is not among our sources, so the parameter rules of
    `fixed_batch_rules` are our reconstruction from that description).

    Fresh Gaussian noise per oracle answer (O1: sensitivity 2 G / b; O2: 2 M |x_t - x_{t-1}| / B,
    scaled to the step actually taken, which is public); fixed O2 batch B; O1 refresh when the
    sum of squared steps since the last O1 reaches kappa; saddle escape as seed 000 Alg. 2
    lines 9-11, except that an escape does not reset the drift (it counts every squared step
    since the last O1 call, Ganesh et al.'s restart rule; see `algorithms.sosp.spider` on line 10).
    Disjoint batches: every release is (eps, delta)-DP by itself and the run is by
    parallel composition. Output: all iterates (seed 000's reading), not Ganesh's private
    AboveThreshold selection. Claimed rate n^{-1/3} + (sqrt(d)/(n eps))^{3/7} (their Thm 3.12;
    disputed by Tao et al. 2025, arXiv 2505.15647).
    """

    name = "gaussian_spider"
    description = "Ganesh-style Spider: Gaussian noise per step, fixed B, squared-step drift"
    paper = "Ganesh et al. 2023, arXiv 2302.09699 (reconstruction)"
    noise, batch_rule, drift_rule, bounded_step = "gaussian", "fixed", "squared_steps", False
    knob_defaults: ClassVar[dict[str, Any]] = {"reset_drift_on_escape": False}  # drift: since last O1
    claimed_exponent = 3 / 7
    claimed_rate = "n^-1/3 + (sqrt(d)/(n eps))^(3/7)"
    claims = (Claim("gaussian_spider", "population", "alpha_sosp",
                    (term("n^-1/3", n=-1 / 3), term("(sqrt(d)/(n eps))^(3/7)", privacy=3 / 7)),
                    "Ganesh et al. 2023, arXiv 2302.09699", "Theorem 3.12 (via seed 000 Sec. 1.2)",
                    "rules reconstructed; the rate is disputed by Tao et al. 2025",
                    logs=LOGS["gaussian_spider"]),)

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        return fixed_batch_theory_params("gaussian", constants, n, d, privacy, **knobs)


class TreeSpider(Spider):
    """Fixed-batch tree-mechanism Spider: the ablation between Ganesh et al. and seed 000.

    Seed 000 (Section 1.2) notes that replacing the Gaussian mechanism by the tree mechanism
    with a fixed batch "does not yield optimal results": the tree must be calibrated to the
    worst-case O2 sensitivity 2 M D / B. We bound every step by D = sqrt(kappa) *in code* (the
    released step is shortened to length D when longer) and derive B, b and kappa afresh for
    that worst case with the noise the tree really adds (eps_eff carries sqrt(depth) of the
    prefix and the calibration's sqrt(nodes)); see `fixed_batch_rules`. A naive reuse of the
    Gaussian rules makes the tree noise so large that O1 fires every step (measured early on).
    No rate is claimed.
    """

    name = "tree_spider"
    description = "ablation: one tree mechanism, fixed B, squared-step drift, step bound D"
    paper = "seed 000 Sec. 1.2 (ablation)"
    noise, batch_rule, drift_rule, bounded_step = "tree", "fixed", "squared_steps", True
    knob_defaults: ClassVar[dict[str, Any]] = {"reset_drift_on_escape": False}  # as Gaussian
    claimed_exponent = None
    claimed_rate = "none claimed"

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        return fixed_batch_theory_params("tree", constants, n, d, privacy, **knobs)


def adaptive_alpha(constants: Constants, n: int, d: int, eps: float) -> float:
    """Theorem 3.11 of seed 000 (constants of the O(.) at 1):
    alpha = ((B G M)^{1/3} + sqrt(B M)) (sqrt(d)/(n eps))^{1/2}
            + (B^{2/9} M^{2/9} G^{5/9} + B^{4/9} M^{4/9} G^{1/9}) / n^{1/3} + sqrt(M B / n)."""
    G, M, B = constants.G, constants.M, constants.B0
    priv = ((B * G * M) ** (1 / 3) + math.sqrt(B * M)) * math.sqrt(math.sqrt(d) / (n * eps)) \
        if math.isfinite(eps) else 0.0
    return (priv + (B ** (2 / 9) * M ** (2 / 9) * G ** (5 / 9) + B ** (4 / 9) * M ** (4 / 9)
                    * G ** (1 / 9)) / n ** (1 / 3) + math.sqrt(M * B / n))


class AdaptiveTreeSpider(Spider):
    """Seed 000's private Spider: tree mechanism + adaptive O2 batch (Algorithms 1-3,
    Lemmas 3.7-3.10, Theorem 3.11 of *Adaptive Batch Size for Privately Finding Second-Order
    Stationary Points*).

    Rules (Theorem 3.11 / Lemma 3.8, with eps -> eps_eff):
      b     = G sqrt(d) / (eps alpha) + G^2 / alpha^2      (Lemma 3.8; Theorem 3.11 prints
              G (sqrt(d)/(eps alpha) + 1/alpha^2), dimensionally inconsistent in G; we follow
              the lemma, whose proof needs G^2/b <= alpha^2)
      b_t   = max{ g sqrt(d) / (alpha eps), g kappa / alpha^2, 1 },  g = M |x_t - x_{t-1}|
      kappa = max{ alpha sqrt(d) / eps, (B G M)^{1/3} }
      sigma : the tree's node std from the accountant for leaf sensitivity
              s = max(2 G / b, 2 alpha eps / sqrt(d)) (Lemma 3.7 with replace-one factor 2;
              enforced by clipping O1 rows to s b / 2 and O2 rows to min(g, s b_t / 2))
      eta = 1/M, T = horizon_mult x B0 M / alpha^2 (Proposition 3.4), drift += |nabla~_t|
      alpha = alpha_mult x (target_alpha, or Theorem 3.11's formula at n and eps_eff)
    Claimed rate n^{-1/3} + (sqrt(d)/(n eps))^{1/2}.
    """

    name = "adaptive_tree_spider"
    description = "seed 000: tree mechanism, adaptive O2 batch b_t ~ |nabla~|, norm drift"
    paper = "seed 000, Algorithms 1-3, Theorem 3.11"
    noise, batch_rule, drift_rule, bounded_step = "tree", "adaptive", "estimate_norms", False
    claimed_exponent = 1 / 2
    claimed_rate = "n^-1/3 + (sqrt(d)/(n eps))^(1/2)"
    claims = (Claim("adaptive_tree_spider", "population", "alpha_sosp",
                    (term("n^-1/3", n=-1 / 3), term("(sqrt(d)/(n eps))^(1/2)", privacy=1 / 2)),
                    "Adaptive Batch Size for Privately Finding SOSPs, arXiv 2410.07502",
                    "Theorem 3.11", logs=LOGS["adaptive_tree_spider"]),)

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **kn: Any) -> dict[str, Any]:
        _check_n(n)
        G, M, B0 = constants.G, constants.M, constants.B0
        target = kn.get("target_alpha", kn.get("alpha"))
        _require_n_or_target(cls.name, n, target)
        scope = kn.get("tree_scope", "global")

        def alpha_of(eps_eff: float) -> float:
            base = float(target) if target is not None else adaptive_alpha(constants, n, d, eps_eff)
            return kn["alpha_mult"] * base

        eps_eff, alpha, T = solve_accuracy_and_horizon(privacy, "tree", scope, constants, kn, alpha_of)
        priv = math.isfinite(eps_eff)
        kappa = kn.get("kappa") or max(alpha * math.sqrt(d) / eps_eff if priv else 0.0,
                                       (B0 * G * M) ** (1 / 3))
        b = kn.get("b") or G * math.sqrt(d) / (eps_eff * alpha) * priv + G**2 / alpha**2
        if privacy.private:
            s = max(2 * G / b, 2 * alpha * eps_eff / math.sqrt(d))
            sigma = noise_calibration(privacy, s, "tree", int(T), scope).sigma
            noise_norm = math.sqrt(d * TreeMechanism.depth(int(T))) * sigma
        else:
            noise_norm = 0.0
        # Lemma 3.9's budget (constants 1):
        #   b B M / (kappa gamma) + B M (sqrt(d) / (gamma^2 eps) + kappa / gamma^3 + 1 / gamma^2)
        budget = b * B0 * M / (kappa * alpha) + B0 * M * (
            (math.sqrt(d) / (alpha**2 * eps_eff) if priv else 0.0) + kappa / alpha**3 + 1 / alpha**2)
        p = {"alpha": alpha, "gamma": alpha, "eps_eff": eps_eff, "kappa": kappa, "b": b,
             "B": None, "D": None, "eta": kn.get("eta") or 1.0 / M, "T": T,
             "noise_norm": noise_norm, "theory_budget": budget}
        p.update(escape_params(constants, d, alpha, noise_norm, T, kn))
        return p
