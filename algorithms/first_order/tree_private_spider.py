"""Tree-based private Spider for population stationary points (Arora, Bassily, Gonzalez, Guzman,
Menart, Ullah 2023, *Faster Rates of Convergence to Stationary Points in Differentially Private
Optimization*, ICML 2023, arXiv 2206.00846: Algorithm 1, Theorems 3.1 and 3.2).

Rounds t = 1..T, each a complete binary tree of depth D visited depth first (the root excluded
from the visit):
* root (line 6): b fresh records, the mean of their gradients clipped to G, plus Gaussian
  noise (replace-one sensitivity 2G/b);
* a left child copies its parent's iterate and estimate (lines 9-11);
* a right child s at depth |s| (lines 13-16): b / 2^|s| fresh records, the mean of their
  gradient differences between its iterate and its parent's, each clipped to
  C2 = M ||w_s - w_parent|| (public), added to the parent's estimate with Gaussian noise
  (sensitivity 2 C2 2^|s| / b; Theorem 3.1's 2 beta 2^{D/2} / b when every step has its full
  length);
* each leaf (lines 18-24): return its iterate if ||estimate|| <= 2 alpha~ (early return);
  otherwise a normalized step of length beta / (2^{D/2} M) along -estimate.
Every record enters one release (disjoint batches), so each release is calibrated to the whole
(eps, delta) by the accountant (parallel composition, Theorem 3.1); the clips enforce the
sensitivities whatever the problem's constants.

Parameters (Theorem 3.2; G, M, B0 the problem's Lipschitz, smoothness and gap constants):
  b*     = c_b max{n^{2/3}, sqrt(n) d^{1/4} / sqrt(eps)}
  D      = the largest integer with D 2^{D+1} <= b*, then b = D 2^{D+1}
  T      = floor(n / (b (D/2 + 1)))                  (one pass: b (D/2+1) records a round)
  alpha  = alpha_mult sqrt(2) G max{n^{-1/3}, (sqrt(d)/(n eps))^{1/2}}
  beta   = alpha min{1, sqrt(b) eps / sqrt(d)}
  alpha~ = C~ alpha.
Choices where the paper is silent or unusable (each a knob, each tested):
* D 2^{D+1} = b has no integer solution in general: D is rounded down and b set to D 2^{D+1}
  (the proof needs only D 2^{D+1} <= b; b / 2^D = 2D keeps every batch an integer).
* Theorem 3.2's C~ = 256 log(1.25/delta) log(2 T 2^{D+1} / p) + 8 M B0 sqrt(2D) (D/2+1) / (2 G^2)
  is about 4e4 at n = 1e4, so 2 alpha~ exceeds G and the literal algorithm returns w0 at its
  first leaf. `stop_rule="scaled"` (default) uses C~ = c_stop (default 1); "literal" uses the
  formula (p = `p_fail`); "none" never returns early. The literal value is kept in the run's
  params (`c_tilde_literal`).
* The last leaf of a round has no next vertex (line 22): its step is taken and the next root
  starts from the result (the reading Lemma C.2's descent count uses).
* Sample-complexity cells (target_alpha): the theorem's output satisfies ||grad F|| <= 3 alpha~,
  so alpha = alpha_mult target / (3 C~) and n in the rules is the n at which Theorem 3.2's
  alpha equals it, n(alpha) = max{(sqrt(2) G / alpha)^3, sqrt(d) (sqrt(2) G / alpha)^2 / eps};
  the rounds then continue until the data budget runs out.
* In sample-complexity cells the early return is off unless `stop_rule` is set: with C~ = 1
  it fired on hard_valley (eps 0.01) with ||grad F|| 1.3-1.9x the target (the estimate error
  Lemma C.1 bounds only with the large C~), ending 4 of 6 runs before the target.
* Noise: the accountant's tight Gaussian calibration (`calibration="theory"` gives the paper's
  sqrt(2 log(1.25/delta)) / eps).

In counts mode on a separable strict saddle or a declared two-point loss the right-child leaves
run compiled (`algorithms.first_order.compiled_tree`: the same floats as this loop, tested whole
runs bit for bit); the root releases, the monitor and every other case run the loop below.
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import numpy as np

from algorithms import rules_bounds
from algorithms.base import Privacy, Trajectory
from algorithms.claim_logs import LOGS
from algorithms.claims import Claim, RulesBound, term
from algorithms.first_order import compiled_tree
from algorithms.first_order.base import FirstOrderAlgorithm, TrajectoryBuilder
from algorithms.privacy.accounting.gdp import calibrate
from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_none
from algorithms.privacy.noise_engine import NoiseEngine
from algorithms.rule_constants import require_rule_constants
from problems.base import Constants, Problem

_ARORA = "Arora et al. 2023, arXiv 2206.00846"
STOP_RULES = ("scaled", "literal", "none")


def tree_depth_for(b_star: float) -> int:
    """The largest D >= 1 with D 2^{D+1} <= b* (D = 1 when b* < 4)."""
    D = 1
    while (D + 1) * 2 ** (D + 2) <= b_star:
        D += 1
    return D


def theorem_alpha(G: float, n: float, d: int, eps: float) -> float:
    """Theorem 3.2's alpha = sqrt(2) G max{n^{-1/3}, (sqrt(d)/(n eps))^{1/2}}."""
    priv = math.sqrt(math.sqrt(d) / (n * eps)) if math.isfinite(eps) else 0.0
    return math.sqrt(2) * G * max(n ** (-1 / 3), priv)


def n_for_alpha(G: float, alpha: float, d: int, eps: float) -> float:
    """The n at which theorem_alpha equals alpha: each branch inverted, the larger n."""
    r = math.sqrt(2) * G / alpha
    n_stat = r**3
    n_priv = math.sqrt(d) * r**2 / eps if math.isfinite(eps) else 0.0
    return max(n_stat, n_priv)


def _release(engine: NoiseEngine, probe: Any, x_node: np.ndarray, rows: Any, clip: float,
             scale: float, t_step: int, oracle: int, base: np.ndarray | None = None,
             x_par: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """One Gaussian release of the tree private Spider (root: base None; right child: the
    parent's estimate plus it), through the noise engine; (estimate, noise std)."""
    r = engine.gaussian_release(x_node, rows, clip, 1.0 / scale, y=x_par, scale=scale)
    # a zero std adds 0.0 (signed zeros as the compiled kernel's `add_gaussian`)
    noisy = r.value if r.std > 0 else r.leaf + 0.0
    est = noisy if base is None else base + noisy
    if probe is not None:
        prev = x_par if x_par is not None else x_node
        probe.release(t=t_step, oracle=oracle, x=x_node.copy(), x_prev=prev.copy(), batch=rows,
                      clip=r.clip, leaf=r.leaf, told=r.told, noise_std=r.std, nabla=est.copy(),
                      released=noisy.copy(), restart=base is None, escape=False,
                      denom=1.0 / scale)
    return est, r.std


class TreePrivateSpider(FirstOrderAlgorithm):
    """Arora et al. 2023, Algorithm 1 with Theorem 3.2's parameters (module docstring).
    Claim (Theorem 3.2): ||grad F|| ~ n^{-1/3} + (sqrt(d)/(n eps))^{1/2}, single pass."""

    name = "tree_private_spider"
    description = "Arora et al. Alg. 1: rounds of depth-D trees, normalized steps, early return"
    paper = _ARORA + ", Algorithm 1, Theorem 3.2"
    setting = "population"
    params_used = ("b", "T", "c_b", "alpha_mult", "c_stop", "p_fail", "stop_rule", "D")
    claims = (Claim("tree_private_spider", "population", "grad_norm",
                    (term("n^-1/3", n=-1 / 3), term("(sqrt(d)/(n eps))^(1/2)", privacy=1 / 2)),
                    _ARORA, "Theorem 3.2 (Table 1, non-convex population)",
                    logs=LOGS["tree_private_spider"]),)
    knob_defaults: ClassVar[dict[str, Any]] = {"alpha_mult": 1.0, "c_b": 1.0, "c_stop": 1.0,
                                                "p_fail": 0.1, "stop_rule": "scaled"}
    _CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"stop_rule": STOP_RULES}
    #: "theory": the single-release formula sqrt(2 log(1.25/delta)) / eps per tree node
    #: (`accounting.calibrate`), floored at tight.
    calibrations: ClassVar[tuple[str, ...]] = ("tight", "theory")
    data_modes = ("records", "counts")  # one pass: consecutive takes of the stream
    rule_constants: ClassVar[dict[str, str]] = {
        "M": "step length = beta / (2^(D/2) M)", "G": "C~ = ... + 8 M B0 sqrt(2D) (D/2+1) / (2 G^2)"}

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        require_rule_constants(self.name, problem, self.rule_constants)
        k = self.knobs()
        const, d = problem.constants, problem.d
        G, M, B0 = const.G, const.M, const.B0
        eps = privacy.eps
        if k["p_fail"] >= 1:
            raise ValueError(f"parameter p_fail={k['p_fail']!r} is invalid: must be in (0, 1)")
        target = self.overrides.get("target_alpha")
        c_stop = float(k["c_stop"])
        if target is not None:
            alpha = float(k["alpha_mult"]) * float(target) / (3 * c_stop)
            n_rule = n_for_alpha(G, alpha, d, eps)
        else:
            if n is None:
                raise ValueError(f"n=None is invalid for {self.name} without target_alpha: "
                                 "its rules need the budget n")
            n_rule = float(n)
            alpha = float(k["alpha_mult"]) * theorem_alpha(G, n_rule, d, eps)
        b_star = k["c_b"] * max(n_rule ** (2 / 3),
                                math.sqrt(n_rule) * d**0.25 / math.sqrt(eps) if math.isfinite(eps) else 0)
        D = int(self.overrides.get("D", tree_depth_for(b_star)))
        b = int(self.overrides.get("b", D * 2 ** (D + 1)))
        if b % 2**D:
            raise ValueError(f"parameter b={b!r} is invalid: must be a multiple of 2^D = {2**D}")
        per_round = b * (D / 2 + 1)
        if "T" in self.overrides:
            T = int(self.overrides["T"])
        elif target is not None:
            T = 2**62  # until the data budget runs out (the monitor ends sample-complexity cells)
        else:
            T = max(1, math.floor(n_rule / per_round))
        beta = alpha * (min(1.0, math.sqrt(b) * eps / math.sqrt(d)) if math.isfinite(eps) else 1.0)
        c_lit = (256 * math.log(1.25 / privacy.delta) * math.log(2 * min(T, 2**40) * 2 ** (D + 1)
                                                                  / k["p_fail"])
                 + 8 * M * B0 * math.sqrt(2 * D) * (D / 2 + 1) / (2 * G**2))
        # Sample-complexity cells measure the samples the path needs to reach the target; an
        # early return on a noisy estimate would end them first (censored), so it is off there
        # unless the spec sets stop_rule.
        rule = k["stop_rule"] if (target is None or "stop_rule" in self.overrides) else "none"
        alpha_tilde = {"scaled": c_stop * alpha, "literal": c_lit * alpha, "none": 0.0}[rule]
        return {**k, "stop_rule": rule, "alpha": alpha, "b": b, "D": D, "T": T, "beta": beta,
                "n_rule": n_rule,
                "step_length": beta / (2 ** (D / 2) * M), "alpha_tilde": alpha_tilde,
                "c_tilde_literal": c_lit, "C": G,
                "max_iterate_floats": float(self.overrides.get("max_iterate_floats", 4_000_000))}

    def __init__(self, **overrides: Any) -> None:
        super().__init__(**overrides)
        for key in ("D",):
            if key in self.overrides and float(self.overrides[key]) != int(self.overrides[key]):
                raise ValueError(f"parameter {key}={self.overrides[key]!r} is invalid: must be an "
                                 "integer >= 1")

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        raise NotImplementedError("tree_private_spider resolves its parameters in resolve_params")

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.tree_private_spider_bound`)."""
        return rules_bounds.tree_private_spider_bound(cls, problem, n, d, privacy)

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        d, G, M = problem.d, problem.constants.G, problem.constants.M
        b, D, T = int(p["b"]), int(p["D"]), int(p["T"])
        step_len, stop_at = p["step_length"], 2 * p["alpha_tilde"]
        # Every release is calibrated alone to the whole (eps, delta) (parallel composition):
        # one multiplier, sigma = multiplier x sensitivity (2 C scale) as `calibrate` computes
        # it; the engine clips, noises and keeps the generator
        multiplier = calibrate(privacy.eps, privacy.delta, 1.0, method=privacy.calibration
                               ).multiplier if privacy.private else 0.0
        engine = NoiseEngine(problem, rng, private=privacy.private, faults=self.planted_faults)
        engine.use_gaussian(multiplier, "z*s")

        x = np.array(problem.x0, dtype=float)
        # Steps the data budget allows (2^D per round of b (D/2 + 1) records), not an open horizon:
        # storage, and so how often the target monitor looks, follow the real run length.
        rounds = min(T, int(min(stream.remaining, 2**50) // (b * (D / 2 + 1))))
        traj = TrajectoryBuilder(x, max(1, rounds) * 2**D, p["max_iterate_floats"])
        t, stop, evals, warnings = 0, "T_reached", 0, []
        done = False
        # Right-child leaves in compiled code where their floats are the loop's (compiled_tree);
        # it hands back the round's end, a stored iterate the monitor must see (the monitor is
        # Python's) and every leaf that needs Python.
        kernel = compiled_tree.tree_kernel_for(self, problem, stream, privacy, p, probe, monitor,
                                               traj.keep_every, multiplier,
                                               engine.kernel_generator())
        W = np.empty((D + 1, d))  # the iterate of the node at each depth on the current path
        E = np.empty((D + 1, d))  # its estimate
        for _ in range(T):
            if stream.remaining < b * (D / 2 + 1):
                stop = "data_exhausted"
                break
            rows = stream.take(b)
            evals += b
            est, sigma = _release(engine, probe, x, rows, G, 1.0 / b, t + 1, 1)
            W[:] = x
            E[:] = est
            k = 0
            python_next = False
            while k < 2**D:
                if kernel is not None and k > 0 and not python_next:
                    n_done, why, k, x, res = kernel.run(k, x, W, E, t, traj.best_est, evals,
                                                        engine.kernel_generator())
                    python_next = why == compiled_tree.PYTHON
                    t, traj.best_est, evals, recs, stored = res  # an early-return leaf's evals too
                    if n_done:
                        traj.log.extend(n_done, *recs)
                        traj.kept.extend(len(stored[1]), *stored)
                    if why == compiled_tree.EARLY:  # lines 19-20: early return
                        stop, done = "early_return", True
                        break
                    if why == compiled_tree.POST and monitor is not None and monitor(x):
                        stop, done = "target_reached", True
                        break
                    if n_done and time.perf_counter() > deadline:
                        stop, done = "timeout", True
                        break
                    if not python_next:
                        continue
                python_next = False
                batch_here, sigma_here = (b if k == 0 else 0), (sigma if k == 0 else 0.0)
                if k > 0:  # the right child at depth j = D - trailing zeros of k
                    j = D - ((k & -k).bit_length() - 1)
                    size = b // 2**j
                    rows = stream.take(size)
                    evals += 2 * size
                    x_par = W[j - 1]
                    step = x - x_par  # np.linalg.norm's sqrt(v.dot(v)), without its dispatch
                    c2 = min(M * math.sqrt(step.dot(step)), 2 * G)
                    est, sigma_here = _release(engine, probe, x, rows, c2, 2**j / b, t + 1, 2,
                                               E[j - 1], x_par)
                    batch_here = size
                    W[j:] = x  # the right child and its left descendants
                    E[j:] = est
                est = E[D]
                norm = math.sqrt(est.dot(est))  # np.linalg.norm's formula
                if norm <= stop_at:  # line 19-20: early return
                    stop = "early_return"
                    done = True
                    break
                x = x - step_len * est / norm
                t += 1
                k += 1
                if traj.step(x, t, stream.used, batch_here, sigma_here, norm) and monitor is not None \
                        and monitor(x):
                    stop, done = "target_reached", True
                    break
                if time.perf_counter() > deadline:
                    stop, done = "timeout", True
                    break
            if done:
                break
        mu = (1.0 / calibrate(privacy.eps, privacy.delta, 1.0, method=privacy.calibration).multiplier
              if privacy.private else math.inf)
        spent = ledger_gdp(mu, privacy.delta) if privacy.private else ledger_none(privacy.delta)
        p["privacy_mu"] = mu
        return traj.build(x, t, int(stream.used), evals, stop, spent, p, None, warnings)
