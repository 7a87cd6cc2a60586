"""Private SpiderBoost for empirical stationary points (Arora, Bassily, Gonzalez, Guzman,
Menart, Ullah 2023, *Faster Rates of Convergence to Stationary Points in Differentially Private
Optimization*, ICML 2023, arXiv 2206.00846: Algorithm 2, Theorem 4.2 / B.3, privacy by
Theorem B.2).

On a finite sample S of n records, steps t = 0..T-1, phases of length q:
* t = 0 mod q (lines 6-9): the anchor, the mean over a batch of b1 records of gradients clipped
  to G, plus N(0, sigma1^2 I);
* otherwise (lines 10-14): a batch of b2 records, the mean of gradient differences between w_t
  and w_{t-1}, each clipped to C2 = min{M ||w_t - w_{t-1}||, 2G} (public; lines 3-4's
  min{sigma2 ||w_t - w_{t-1}||, sigma2^}), plus N(0, sigma2^2 I), added to the estimate;
* w_{t+1} = w_t - eta estimate (line 16, a plain step).
Theorem B.3's parameters (G, M, B0 the problem's Lipschitz, smoothness and gap constants;
abar = sqrt(d log(1/delta)) / (n eps)):
  eta = eta_mult / (2 M),  b1 = n,
  T   = c_T max{((M B0)^{1/4} / (sqrt(G) abar))^{4/3}, 1 / abar},
  q   = max{1, floor(c_q / (T abar^2))}   (the proof's q; the printed one carries a stray M^2),
  b2  = c_b max{(G / (sqrt(B0 M) abar))^{2/3}, G^{1/3} n abar^{2/3} / (M B0)^{1/6}}, at most n.
Claim (Theorem 4.2): E ||grad F_S(w)|| ~ (sqrt(d) / (n eps))^{2/3} (+ sqrt(d)/(n eps)).

Privacy (our choices where the paper leaves them open, each documented and tested):
* the paper's noise has a universal constant c that it never gives (Theorem B.2, via the
  moments accountant, each oracle family at (eps, delta), together (2 eps, 2 delta) absorbed
  in c). We keep its *shape*, multipliers z1 = s max{1, sqrt(T/q)} for the ceil(T/q) anchors
  (b1 = n: no subsampling) and z2 = s max{1, b2 sqrt(T) / n} for the T - ceil(T/q)
  differences, and calibrate the one scale s so that both families *together* are
  (eps, delta)-DP under replace-one neighbours, by dp-accounting's PLD
  (`accounting.two_family_noise_scale`);
* "sample a batch of size b2" is unspecified (with or without replacement): we use Poisson
  sampling with rate b2 / n, whose amplification the accountant computes exactly, and divide
  the sum by b2;
* the output is "a uniformly random iterate"; the suite's metrics report the best, the last
  and the smallest-estimate iterates for every algorithm alike.
For eps = inf (the non-private reference) abar = sqrt(d) / n.
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
from algorithms.first_order.base import (
    FirstOrderAlgorithm,
    RealizedCounts,
    TrajectoryBuilder,
    batch_size,
)
from algorithms.privacy.accounting.ledger import ledger_none, ledger_pld
from algorithms.privacy.accounting.pld import two_family_calibration
from algorithms.privacy.noise_engine import NoiseEngine
from problems.base import Constants, Problem

_ARORA = "Arora et al. 2023, arXiv 2206.00846"


def abar(n: int, d: int, privacy: Privacy) -> float:
    """sqrt(d log(1/delta)) / (n eps) (Theorem B.3); sqrt(d) / n when non-private."""
    if not privacy.private:
        return math.sqrt(d) / n
    return math.sqrt(d * math.log(1 / privacy.delta)) / (n * privacy.eps)


class PrivateSpiderBoost(FirstOrderAlgorithm):
    """Arora et al. 2023, Algorithm 2 with Theorem B.3's parameters (module docstring)."""

    name = "private_spiderboost"
    description = "Arora et al. Alg. 2: SpiderBoost, full-batch anchors, subsampled differences"
    paper = _ARORA + ", Algorithm 2, Theorem 4.2 / B.3"
    setting = "empirical"
    params_used = ("T", "eta", "b", "c_T", "c_b", "c_q", "eta_mult", "q")
    claims = (Claim("private_spiderboost", "empirical", "emp_grad_norm",
                    (term("(sqrt(d)/(n eps))^(2/3)", privacy=2 / 3),), _ARORA,
                    "Theorem 4.2 / B.3 (Table 1, non-convex empirical)",
                    logs=LOGS["private_spiderboost"]),)
    knob_defaults: ClassVar[dict[str, Any]] = {"c_T": 1.0, "c_b": 1.0, "c_q": 1.0, "eta_mult": 1.0}
    data_modes = ("records", "counts")
    rule_constants: ClassVar[dict[str, str]] = {
        "M": "eta = eta_mult / (2 M)", "G": "T = c_T ((M B0)^(1/4) / (sqrt(G) abar))^(4/3)"}
    counts_rereads = "full-batch anchors and Poisson subsamples of one sample"
    hidden_batch_sizes = True

    @classmethod
    def public_batch(cls, p: dict[str, Any], n: int, oracle: int = 1) -> int:
        """n at an anchor (O1, full batch); the expected Poisson batch min(b, n) at a
        difference step (O2, q = b / n)."""
        return int(n) if oracle == 1 else min(int(p["b"]), int(n))

    @classmethod
    def public_grad_evals(cls, p: dict[str, Any], n: int, n_steps: int) -> int:
        """n a full-batch anchor (one every q steps, from t = 0), 2 q n a difference step
        (two gradients a record)."""
        anchors = -(-int(n_steps) // int(p["q"]))
        return int(n) * anchors + 2 * cls.public_batch(p, n, 2) * (int(n_steps) - anchors)

    @classmethod
    def step_oracle(cls, p: dict[str, Any], t: int) -> int:
        """Step t (1-based) is an anchor (O1) when t - 1 is a multiple of q."""
        return 1 if (int(t) - 1) % int(p["q"]) == 0 else 2

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.spiderboost_bound`)."""
        return rules_bounds.spiderboost_bound(cls, problem, n, d, privacy)

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        G, M, B0 = constants.G, constants.M, max(constants.B0, 1e-12)
        n = int(n)
        a = abar(n, d, privacy)
        T = knobs["c_T"] * max(((M * B0) ** 0.25 / (math.sqrt(G) * a)) ** (4 / 3), 1 / a)
        q = max(1.0, math.floor(knobs["c_q"] / (T * a * a)))
        b2 = knobs["c_b"] * max((G / (math.sqrt(B0 * M) * a)) ** (2 / 3),
                                G ** (1 / 3) * n * a ** (2 / 3) / (M * B0) ** (1 / 6))
        return {"T": T, "q": q, "b": min(float(n), max(1.0, b2)), "eta": knobs["eta_mult"] / (2 * M),
                "C": G, "abar": a}

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        p = super().resolve_params(problem, n, privacy)
        if "q" in self.overrides:
            p["q"] = float(self.overrides["q"])
        p["q"] = max(1, int(p["q"]))
        return p

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        d, G, M = problem.d, problem.constants.G, problem.constants.M
        T, q, b2, eta = int(p["T"]), int(p["q"]), int(p["b"]), float(p["eta"])
        n = int(n)
        anchors = math.ceil(T / q)
        r1 = max(1.0, math.sqrt(T / q))
        r2 = max(1.0, b2 * math.sqrt(T) / n)
        if privacy.private:
            cal = two_family_calibration(privacy.eps, privacy.delta, anchors, r1, T - anchors,
                                         b2 / n, r2)
            s, spent = cal.scale, ledger_pld(cal)
        else:
            s, spent = 0.0, ledger_none(privacy.delta)
        z1, z2 = s * r1, s * r2
        p.update(noise_multiplier_anchor=z1, noise_multiplier_diff=z2, anchors=anchors)
        # the engine's: the clipped sums, the Poisson subsample, the noise (PLD convention:
        # std z C on a sum of add/remove sensitivity C) and the generator
        engine = NoiseEngine(problem, rng, private=privacy.private, faults=self.planted_faults)
        engine.use_gaussian(z1, "z*C/n", "anchor", draw_at_zero=True)
        engine.use_gaussian(z2, "z*C/n", "diff", draw_at_zero=True)
        sample = stream.take(n)
        x = np.array(problem.x0, dtype=float)
        x_prev = x.copy()
        est = np.zeros(d)
        traj = TrajectoryBuilder(x, T, p["max_iterate_floats"])
        evals, stop = 0, "T_reached"
        hidden = RealizedCounts()
        t = 0
        while t < T:
            if t % q == 0:
                r = engine.gaussian_release(x, sample, G, n, name="anchor")
                batch, oracle = n, 1
                evals += n
                hidden.add(n)
                est = r.value
            else:
                rows = engine.poisson(sample, b2 / n)  # records, or counts thinned
                c2 = min(M * float(np.linalg.norm(x - x_prev)), 2 * G)
                r = engine.gaussian_release(x, rows, c2, b2, y=x_prev, name="diff")
                # |B_t| is the accountant's secret: the log and evals carry the expected q n
                hidden.add(batch_size(rows), 2)
                batch, oracle = self.public_batch(p, n, 2), 2
                evals += 2 * batch
                est = est + r.value
            leaf, clip, sens, noise_std, noisy = r.leaf, r.clip, r.told, r.std, r.value
            if probe is not None:
                probe.release(t=t + 1, oracle=oracle, x=x.copy(), x_prev=x_prev.copy(),
                              batch=sample if oracle == 1 else rows, clip=clip,
                              leaf=leaf, told=sens, noise_std=noise_std, nabla=est.copy(),
                              released=noisy.copy(), restart=oracle == 1, escape=False,
                              denom=n if oracle == 1 else b2)
            norm = float(np.linalg.norm(est))
            x_prev, x = x, x - eta * est
            t += 1
            if not np.all(np.isfinite(x)):
                stop = "diverged"
                break
            if traj.step(x, t, n, batch, noise_std, norm) and monitor is not None and monitor(x):
                stop = "target_reached"
                break
            if time.perf_counter() > deadline:
                stop = "timeout"
                break
        p["privacy_mu"] = math.nan if spent["mu"] is None else spent["mu"]  # None: not mu-GDP
        return traj.build(x, t, n, evals, stop, spent, p, sample, [], hidden.record())
