"""The baselines people use: DP-GD, DP-SGD (empirical risk) and single-pass noisy SGD
(population risk).

All three step x <- x - eta (mean of per-sample gradients clipped to C + Gaussian noise);
they differ in which records a step reads and so in how the noise is calibrated:

* `dp_gd`: the whole sample S (n records) at every step. Each release has replace-one
  sensitivity 2C/n; T releases of noise std z 2C/n compose to exactly sqrt(T)/z-GDP, so
  z = sqrt(T) / mu(eps, delta) (`accounting.composed_gaussian_multiplier`).
* `dp_sgd` (Abadi et al. 2016, *Deep Learning with Differential Privacy*, arXiv 1607.00133,
  Algorithm 1): each step a Poisson subsample (rate q = b/n) of S; the sum of clipped gradients
  plus N(0, (z C)^2 I), divided by the expected batch b. z comes from dp-accounting's privacy
  loss distribution for T compositions of the Poisson-subsampled Gaussian
  (`accounting.poisson_gaussian_multiplier`).
* `noisy_sgd`: one pass; step t reads the next b records of the stream, so every record
  enters one release and the run is DP by parallel composition: z = 1 / mu(eps, delta).

Theory settings (constants exposed as knobs c_T, c_b, eta_mult; G, M, B0 the problem's
stated Lipschitz, smoothness and initial-gap constants; mu = mu(eps, delta) the GDP budget).
With eta = 1/M the descent lemma gives, for noise of variance s^2 per coordinate,
  (1/T) sum_t ||grad F(x_t)||^2 <= 2 M B0 / T + E||noise||^2 (+ sampling variance),
* DP-GD: s = sqrt(T) 2C / (n mu), so the bound 2 M B0 / T + 4 d C^2 T / (n mu)^2 is smallest at
  T = c_T n mu sqrt(M B0 / 2) / (C sqrt(d)), where ||grad F_S|| ~ (sqrt(d) / (n eps))^{1/2}
  (up to logs in delta), the rate Table 1 of Arora et al. 2023 cites from Wang et al. 2017.
  Non-private (eps = inf): T = c_T 2 M B0 n / G^2, where 2 M B0 / T equals G^2 / n.
* DP-SGD: the same T; for small q the subsampled Gaussian (replace-one: the sum moves by 2C)
  is close to 2 q sqrt(T) / z-GDP, so its noise matches DP-GD's once the sampling variance C^2 / b is below
  it: b = c_b n mu / sqrt(d) (at most n).
* noisy SGD: T = floor(n / b) and s = 2C / (b mu), so the bound is
  2 M B0 b / n + C^2 / b + 4 d C^2 / (b mu)^2; b = c_b max(C sqrt(n / (2 M B0)),
  (2 n d C^2 / (M B0 mu^2))^{1/3}) balances the first term with each of the others and gives
  ||grad F|| ~ n^{-1/4} + (sqrt(d) / (n eps))^{1/3}; for a target accuracy (sample-complexity
  cells) the rules take the n at which that bound, with G as its constant, equals the target.
  That claim is our derivation (a standard
  one-pass analysis); Table 1's earlier population rate (Zhou et al. 2020) is for another
  algorithm and is not attached here.

On the separable problems DP-SGD's and DP-GD's steps run compiled where their floats are this
loop's (`algorithms.first_order.compiled_sgd`: records, and DP-GD's full batch from counts);
the loop below is the reference the tests hold them equal to, and runs every other case.
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
from algorithms.first_order import compiled_sgd
from algorithms.first_order.base import FirstOrderAlgorithm, TrajectoryBuilder
from algorithms.privacy.accounting.gdp import gdp_mu
from algorithms.privacy.engine import ReleaseDesk, ReleasePlan
from algorithms.privacy.poisson_gaps import SAMPLERS
from problems.base import Constants, Problem

#: The engine's plan of each sampling (`algorithms.privacy.engine.ReleasePlan`).
_PLANS = {"full": "full", "poisson": "poisson", "stream": "one_pass"}

_WANG = "Wang, Ye, Xu 2017 (arXiv 1802.05251), as cited by Arora et al. 2023 (arXiv 2206.00846)"


def _empirical_baseline_claim(name: str) -> Claim:
    """Table 1's previous empirical rate, which DP-GD and DP-SGD share."""
    return Claim(name, "empirical", "emp_grad_norm",
                 (term("(sqrt(d)/(n eps))^(1/2)", privacy=1 / 2),), _WANG,
                 "Arora et al. 2023 Table 1 (non-convex, empirical, previous)", logs=LOGS[name])


def _budget_mu(privacy: Privacy) -> float:
    return gdp_mu(privacy.eps, privacy.delta) if privacy.private else math.inf


def dp_gd_horizon(constants: Constants, n: int, d: int, privacy: Privacy, c_T: float = 1.0) -> float:
    """T = c_T n mu sqrt(M B0 / 2) / (C sqrt(d)) with C = G (module docstring)."""
    mu = _budget_mu(privacy)
    G, M, B0 = constants.G, constants.M, constants.B0
    if not math.isfinite(mu):  # non-private: descend until 2 M B0 / T reaches G^2 / n, the
        return max(1.0, c_T * 2 * M * B0 * n / G**2)  # sample's own statistical precision
    return max(1.0, c_T * n * mu * math.sqrt(M * B0 / 2) / (G * math.sqrt(d)))


class _NoisyGradientMethod(FirstOrderAlgorithm):
    params_used = ("T", "eta", "b", "C", "c_T", "c_b", "eta_mult", "noise_multiplier")
    rule_constants: ClassVar[dict[str, str]] = {
        "M": "eta = eta_mult / M", "G": "T = c_T n mu sqrt(M B0 / 2) / (G sqrt(d))"}
    #: "full" (DP-GD), "poisson" (DP-SGD) or "stream" (one pass)
    sampling = "full"

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        return {**super().resolve_params(problem, n, privacy), "sampling": self.sampling}

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        """T steps x <- x - eta g~, each g~ one release of the engine (`algorithms.privacy.
        engine`: it draws the batch, clips each record to C, adds the noise its accountant
        calibrates for the plan, keeps the ledger); a larger `noise_multiplier` is the
        engine's to check and account."""
        T, eta, C = int(p["T"]), float(p["eta"]), float(p["C"])
        b = int(p.get("b", n or 1))
        sampler = self.overrides.get("sampler", "mask")
        plan = ReleasePlan(_PLANS[self.sampling], T, C, None if self.sampling == "full" else b,
                           sampler)
        if sampler != "mask":
            p["sampler"] = sampler
        desk = ReleaseDesk(problem, stream, n, privacy, rng, plan, probe,
                           noise_multiplier=self.overrides.get("noise_multiplier"),
                           faults=self.planted_faults)
        p.update(noise_multiplier=desk.multiplier, sampling=self.sampling)
        sample = desk.sample
        x = np.array(problem.x0, dtype=float)
        # A one-pass run ends when its data does: size the storage (and so how often the
        # target monitor looks) by the steps the budget allows, not by an open horizon.
        steps_max = T if sample is not None else min(T, int(min(stream.remaining, 2**50)) // b)
        traj = TrajectoryBuilder(x, steps_max, p["max_iterate_floats"])
        used = n if sample is not None else 0
        stop, t = "T_reached", 0
        # Consecutive steps in compiled code where their floats are this loop's (compiled_sgd:
        # records, a separable saddle); it hands back a stored iterate the monitor must see
        # and every step that needs Python.
        kernel = compiled_sgd.sgd_kernel_for(problem, desk, p, monitor, traj.keep_every,
                                             desk.kernel_generator())
        python_next = False
        while t < T:
            if kernel is not None and not python_next:
                n_done, why, x, (t, traj.best_est, norms, s_x, s_t, realized) = kernel.run(
                    x, t, T - t, traj.best_est, desk.kernel_generator())
                desk.note_kernel_releases(n_done + (why == compiled_sgd.DIVERGED), realized,
                                          kernel.noise_std)
                if n_done:
                    traj.log.extend(n_done, desk.last_batch, desk.last_noise_std, norms, used)
                    traj.kept.extend(len(s_t), s_x, s_t, used)
                if why == compiled_sgd.DIVERGED:
                    stop = "diverged"
                    break
                if why == compiled_sgd.POST and monitor is not None and monitor(x):
                    stop = "target_reached"
                    break
                if time.perf_counter() > deadline:
                    stop = "timeout"
                    break
                python_next = why == compiled_sgd.PYTHON
                continue
            python_next = False
            if not desk.data_left(b):
                stop = "data_exhausted"
                break
            released = desk.mean_gradient(x)
            if sample is None:
                used += b
            est_norm = float(np.linalg.norm(released))
            x = x - eta * released
            t += 1
            if not np.all(np.isfinite(x)):
                stop = "diverged"
                break
            if traj.step(x, t, used, desk.last_batch, desk.last_noise_std, est_norm) \
                    and monitor is not None and monitor(x):
                stop = "target_reached"
                break
            if time.perf_counter() > deadline:
                stop = "timeout"
                break
        spent = desk.ledger()
        p["privacy_mu"] = math.nan if spent["mu"] is None else spent["mu"]
        return traj.build(x, t, used, desk.grad_evals, stop, spent, p, sample, [],
                          desk.hidden.record() if desk.hidden is not None else None)


class DPGD(_NoisyGradientMethod):
    """DP-GD: full-batch noisy gradient descent on the empirical risk F_S (module docstring).

    Claim (Arora et al. 2023, Table 1, the previous empirical rate, from Wang et al. 2017):
    ||grad F_S|| ~ (sqrt(d) / (n eps))^{1/2} at the best iterate.
    """

    name = "dp_gd"
    description = "DP-GD: full-batch clipped gradients, Gaussian noise composed over T steps"
    #: What the algorithm returns (`bench.n_search`, reach = "output"): its last iterate x_T, as
    #: run_cell returns it. The rules' bound speaks of the average over iterates (a uniformly
    #: random iterate's guarantee); the last iterate is what the code, and a user, gets.
    output_rule = "last"
    paper = _WANG
    setting = "empirical"
    sampling = "full"
    data_modes = ("records", "counts")
    params_used = ("T", "eta", "C", "c_T", "eta_mult", "noise_multiplier")
    claims = (_empirical_baseline_claim("dp_gd"),)

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.dp_gd_bound`)."""
        return rules_bounds.dp_gd_bound(cls, problem, n, d, privacy)

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        return {"T": dp_gd_horizon(constants, int(n), d, privacy, knobs["c_T"]),
                "eta": knobs["eta_mult"] / constants.M, "C": constants.G, "b": int(n)}


class DPSGD(_NoisyGradientMethod):
    """DP-SGD (Abadi et al. 2016, Algorithm 1) on the empirical risk F_S, Poisson sampling,
    noise from dp-accounting's PLD accountant (module docstring). Same claim as DP-GD."""

    name = "dp_sgd"
    description = "DP-SGD: Poisson-subsampled clipped gradients, PLD-calibrated noise"
    #: Abadi et al. 2016, Algorithm 1, outputs theta_T: the last iterate (see DPGD.output_rule).
    output_rule = "last"
    paper = "Abadi et al. 2016 (arXiv 1607.00133); rate: " + _WANG
    setting = "empirical"
    sampling = "poisson"
    hidden_batch_sizes = True
    #: How the Poisson subsample of records is drawn (`algorithms.privacy.poisson_gaps`): "mask"
    #: (n uniforms a step: the runs and stores before it) or "gaps" (the same law from ~q n
    #: uniforms, other draws; for small q). Counts are thinned exactly either way.
    _CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"sampler": SAMPLERS}
    data_modes = ("records", "counts")
    counts_rereads = "Poisson subsamples of one sample"
    claims = (_empirical_baseline_claim("dp_sgd"),)

    @classmethod
    def public_batch(cls, p: dict[str, Any], n: int, oracle: int = 1) -> int:
        """The expected Poisson batch q n = min(b, n) (q = b / n, at most 1)."""
        return min(int(p["b"]), int(n))

    @classmethod
    def public_grad_evals(cls, p: dict[str, Any], n: int, n_steps: int) -> int:
        """q n T: the expected batch at each of the steps run."""
        return cls.public_batch(p, n) * int(n_steps)

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.dp_sgd_bound`)."""
        return rules_bounds.dp_sgd_bound(cls, problem, n, d, privacy)

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        n = int(n)
        mu = _budget_mu(privacy)
        b = n if not math.isfinite(mu) else knobs["c_b"] * n * mu / math.sqrt(d)
        return {"T": dp_gd_horizon(constants, n, d, privacy, knobs["c_T"]),
                "eta": knobs["eta_mult"] / constants.M, "C": constants.G,
                "b": min(n, max(1.0, b))}


class NoisySGD(_NoisyGradientMethod):
    """Single-pass noisy SGD on the population risk F (module docstring). Claim (our
    derivation): ||grad F|| ~ n^{-1/4} + (sqrt(d) / (n eps))^{1/3}."""

    name = "noisy_sgd"
    description = "one-pass noisy SGD: fresh batches, parallel composition"
    paper = "standard one-pass analysis (derived in algorithms/first_order/noisy_gd.py)"
    setting = "population"
    sampling = "stream"
    data_modes = ("records", "counts")
    params_used = ("eta", "b", "C", "c_b", "eta_mult", "noise_multiplier")
    rule_constants: ClassVar[dict[str, str]] = {
        "M": "eta = eta_mult / M and b = c_b G sqrt(n / (2 M B0))"}
    claims = (Claim("noisy_sgd", "population", "grad_norm",
                    (term("n^-1/4", n=-1 / 4), term("(sqrt(d)/(n eps))^(1/3)", privacy=1 / 3)),
                    "derived here (descent lemma, one pass)", "module docstring",
                    "baseline for tree_private_spider", logs=LOGS["noisy_sgd"]),)

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.noisy_sgd_bound`)."""
        return rules_bounds.noisy_sgd_bound(cls, problem, n, d, privacy)

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        G, M, B0 = constants.G, constants.M, constants.B0
        if n is None:
            raise ValueError(f"n=None is invalid for {cls.name}: its batch rule needs the budget n")
        mu = _budget_mu(privacy)
        if B0 <= 0:  # started at a minimizer: nothing to descend, one full batch
            b = float(n)
        else:
            b = G * math.sqrt(n / (2 * M * B0))
            if math.isfinite(mu):
                b = max(b, (2 * n * d * G**2 / (M * B0 * mu**2)) ** (1 / 3))
        b = min(float(n), max(1.0, knobs["c_b"] * b))
        # T: the steps one pass makes at the batch the run rounds b up to (resolve_params sets
        # the same value, or an open horizon for a target)
        return {"b": b, "eta": knobs["eta_mult"] / M, "C": G, "T": max(1, int(n) // max(1, math.ceil(b)))}

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        target = self.overrides.get("target_alpha")
        if target is None:
            p = super().resolve_params(problem, n, privacy)
            p["T"] = int(n) // int(p["b"])  # one pass: every record once
            return p
        # Sample-complexity cells: the rules' n is where the claim reaches the target,
        # n(alpha) = max{(G / alpha)^4, sqrt(d) (G / alpha)^3 / mu}; the pass then runs until
        # the data budget ends (the monitor stops it at the target).
        G, mu = problem.constants.G, _budget_mu(privacy)
        r = G / float(target)
        n_rule = max(r**4, math.sqrt(problem.d) * r**3 / mu if math.isfinite(mu) else 0.0)
        p = super().resolve_params(problem, math.ceil(n_rule), privacy)
        p.update(n_rule=n_rule, T=2**62)
        return p
