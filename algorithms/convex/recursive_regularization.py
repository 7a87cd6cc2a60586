"""Recursive regularization for population stationary points of convex losses (Arora, Bassily,
Gonzalez, Guzman, Menart, Ullah 2023, *Faster Rates of Convergence to Stationary Points in
Differentially Private Optimization*, ICML 2023, arXiv 2206.00846: Section 5, Algorithm 3 with
NoisyGD = Algorithm 7 as the private subroutine, Theorem 5.1 part 1, Lemmas D.1-D.3).

The technique (Allen-Zhu 2018; Foster et al. 2019): stage t = 1..T minimizes, on its own
disjoint chunk of floor(n / T) records, the regularized objective
  F^(t-1)(w) = F(w) + sum_{s<t} lambda_s / 2 ||w - wbar_s||^2,  lambda_s = 2^s lambda,
with wbar_0 = x0 (the paper's w0 = 0: our problems start at x0, so every ball below is
centered there), and the next stage re-centers a stronger regularizer at that stage's output
wbar_t. The output is wbar_T. Each stage runs NoisyGD (Algorithm 7): K_t - 1 projected steps
w <- Pi_{B(x0, R_t)}(w - eta_t (grad F^(t-1)(w; chunk) + xi)) from w_1 = x0, then the
selector S_t: the average of w_1..w_{K_t} with weights (1 - eta_t lambda_t)^{-k}.

Privacy. Only the data term of a step depends on records: per-sample gradients are clipped to
C (default G) before the chunk mean, so a release has replace-one sensitivity 2C/m (m the
chunk size); the regularizer's gradient involves only earlier outputs (post-processing).
A stage's K_t - 1 releases compose exactly in GDP (`accounting.composed_gaussian_multiplier`),
and the stages read disjoint chunks (parallel composition), so each gets the whole (eps, delta),
as in the proof of Theorem 5.1. The paper's sigma^2 = 64 L0^2 K log(1/delta) / (n eps)^2
(advanced composition) writes n where a stage holds only m = n/T records, which would
under-noise by a factor T; we calibrate to the chunk's 2C/m.

Parameters (Theorem 5.1, part 1; G = L0, M = L1 the problem's Lipschitz and smoothness
constants, R = ||w* - x0||, m = floor(n / T)):
  lambda   = c_lambda G^2 / (M R^2) max{1/n, d / (n eps)^2}
  T        = ceil(log2(M / lambda))           (at least 1)
  R_t      = sqrt(2)^t R
  lambda_t = 2^t lambda
  K_t      = c_K max{kappa_t log kappa_t, m^2 eps^2 (G^2 + Gd_t^2) / (d G^2 log(1/delta))},
             kappa_t = (M + H_t) / lambda_t (Lemma D.3's T), capped at K_max
  eta_t    = min{log(K_t) / (lambda_t K_t), 1 / (M + H_t)}
where H_t = sum_{s<t} lambda_s is the regularizer's smoothness (and strong convexity) and
Gd_t = 2 H_t R_t its Lipschitz constant on the ball (Lemma D.3's H_Delta and G_Delta).
Choices where the paper is ambiguous or unusable (each tested):
* lambda's printed L0^2 / (L1 ||w*||) lacks a square: lambda has the units of L1 and L0 those of
  L1 ||w*||, and the proof's last step needs sqrt(lambda L1) ||w*||, so R^2 it is.
* lambda: the theorem prints min{1/n, d/(n eps)^2}; its proof's last step only needs
  sqrt(lambda M) R <= G / sqrt(n) + sqrt(d) G / (n eps), i.e. the max (the largest lambda
  allowed, fewest stages). The min makes lambda = 0 and T infinite without privacy, so we use
  the max; a smaller lambda changes only the log factor (T) in the bound.
* Algorithm 3's loop runs t = 1..T-1 and outputs wbar_T: we run T stages and output the last.
* R = ||w* - x0|| is an input the theorem assumes known: by default the problem's exact
  population minimizer (`population_minimizer`); the override `R` replaces it. It sets the
  radii and lambda only, never the noise.
* K_t: the second branch makes the non-smooth 1/(lambda K) optimization error negligible
  against the noise; it reaches 1e6-1e9 full passes at n >= 1e5 and is capped at K_max
  (default 20,000; a warning names the stages it cut). The step then stays the stable
  1 / (M + H_t) (the analysis needs eta <= 1/(L1 + H_Delta); log K / (lambda K) exceeds it when
  K is cut). Without privacy the second branch is m (excess risk G^2 / (lambda m), the
  statistical level).
* Lemma D.3's chunk sample count n is the stage's m = floor(n / T) (Theorem 5.1 prints T^2 in
  its K_t for the same reason).
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
from algorithms.first_order.base import FirstOrderAlgorithm, TrajectoryBuilder, batch_size
from algorithms.privacy.accounting.gdp import composed_gaussian_multiplier, gdp_mu
from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_none
from algorithms.privacy.noise_engine import NoiseEngine
from algorithms.rule_constants import require_rule_constants
from problems.base import Constants, Problem

_ARORA = "Arora, Bassily, Gonzalez, Guzman, Menart, Ullah 2023 (arXiv 2206.00846)"
K_MAX_DEFAULT = 20_000


def _minimizer_distance(problem: Problem) -> float:
    finder = getattr(problem, "population_minimizer", None)
    if finder is None:
        raise ValueError(f"problem {problem.name!r} has no population_minimizer: recursive "
                         "regularization needs R = ||w* - x0|| (Theorem 5.1); pass the override R")
    return float(np.linalg.norm(finder() - problem.x0))


def stage_schedule(constants: Constants, n: int, d: int, privacy: Privacy, R: float,
                   c_lambda: float = 1.0, c_K: float = 1.0,
                   K_max: float = K_MAX_DEFAULT) -> dict[str, Any]:
    """Theorem 5.1's rules (module docstring): lambda, T, and per stage R_t, lambda_t, K_t
    (before and after the cap), eta_t, the chunk size m."""
    G, M = constants.G, constants.M
    eps, delta = privacy.eps, privacy.delta
    if not (R > 0 and math.isfinite(R)):
        raise ValueError(f"R={R!r} is invalid: must be a finite number > 0 (||w* - x0||)")
    priv = d / (n * eps) ** 2 if privacy.private else 0.0
    lam = c_lambda * G**2 / (M * R**2) * max(1.0 / n, priv)
    T = max(1, math.ceil(math.log2(M / lam))) if lam < M else 1
    m = n // T
    if m < 1:
        raise ValueError(f"n={n} is invalid for recursive regularization: its T = {T} stages "
                         "need at least one record each")
    stages = []
    for t in range(1, T + 1):
        lam_t = 2**t * lam
        H = lam * (2**t - 1)  # sum_{s<t} lambda_s, with lambda_0 = lambda
        R_t = math.sqrt(2) ** t * R
        kappa = (M + H) / lam_t
        first = kappa * math.log(max(kappa, math.e))
        if privacy.private:
            second = m**2 * eps**2 * (G**2 + (2 * H * R_t) ** 2) / (d * G**2 * math.log(1 / delta))
        else:
            second = float(m)
        K_theory = max(2.0, c_K * max(first, second))
        K = int(min(K_theory, K_max))
        K = max(K, 2)
        eta = min(math.log(K) / (lam_t * K), 1.0 / (M + H))
        stages.append({"t": t, "lambda_t": lam_t, "H": H, "R_t": R_t, "K": K,
                       "K_theory": K_theory, "eta": eta})
    return {"lambda": lam, "T": T, "m": m, "stages": stages}


class RecursiveRegularization(FirstOrderAlgorithm):
    """Algorithm 3 (recursive regularization) with NoisyGD (Algorithm 7), Theorem 5.1 part 1:
    ||grad F(wbar)|| ~ 1/sqrt(n) + sqrt(d)/(n eps) for convex smooth Lipschitz losses, tight
    up to logs (module docstring for every rule and choice)."""

    name = "recursive_regularization"
    description = "recursive regularization (convex): NoisyGD stages on disjoint chunks"
    paper = _ARORA + ", Algorithm 3 + Algorithm 7"
    setting = "population"
    multi_pass = True  # each stage re-reads its own chunk (bench.cost prices its steps)
    data_modes = ("records", "counts")
    params_used = ("C", "R", "c_lambda", "c_K", "K_max")
    knob_defaults: ClassVar[dict[str, Any]] = {"c_lambda": 1.0, "c_K": 1.0, "K_max": K_MAX_DEFAULT}
    rule_constants: ClassVar[dict[str, str]] = {
        "M": "lambda = c_lambda G^2 / (M R^2) max{1/n, d/(n eps)^2}", "G": "T = ceil(log2(M / lambda))"}
    claims = (Claim("recursive_regularization", "population", "grad_norm",
                    (term("n^-1/2", n=-1 / 2), term("sqrt(d)/(n eps)", privacy=1.0)),
                    _ARORA, "Theorem 5.1 (1), Table 1 (convex, population; optimal)",
                    "convex losses only", logs=LOGS["recursive_regularization"]),)

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.recursive_regularization_bound`)."""
        return rules_bounds.recursive_regularization_bound(cls, problem, n, d, privacy,
                                                           stage_schedule, _minimizer_distance)

    def _check_input(self, problem: Problem, n: int | None, why: str = "") -> None:
        if n is None:
            raise ValueError(f"n=None is invalid for {self.name}: its stages split a sample of n")
        require_rule_constants(self.name, problem, self.rule_constants)
        if not getattr(problem, "convex", False):
            raise ValueError(f"problem {problem.name!r} is invalid for {self.name}: Theorem 5.1 "
                             f"assumes a convex loss{why} (the problem does not declare "
                             "convex = True)")

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        self._check_input(problem, n)
        knobs = self.knobs()
        R = float(self.overrides.get("R", 0.0)) or _minimizer_distance(problem)
        sched = stage_schedule(problem.constants, n, problem.d, privacy, R, float(knobs["c_lambda"]),
                               float(knobs["c_K"]), float(knobs["K_max"]))
        p = {**knobs, "R": R, "C": float(self.overrides.get("C", problem.constants.G)),
             "lambda": sched["lambda"], "stages": sched["T"], "m": sched["m"],
             "K_t": [s["K"] for s in sched["stages"]], "eta_t": [s["eta"] for s in sched["stages"]],
             "K_t_theory": [s["K_theory"] for s in sched["stages"]],
             "max_iterate_floats": float(self.overrides.get("max_iterate_floats", 4_000_000))}
        p["schedule"] = sched["stages"]
        p["T"] = sum(p["K_t"]) - len(p["K_t"])  # releases in all (the stages compose in parallel)
        return p

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        C, m = float(p["C"]), int(p["m"])
        self.stage_outputs: list[np.ndarray] = []  # wbar_1..wbar_T of the last run (tests)
        # the engine's: the clipped sums, the noise z 2C/m, the generator
        engine = NoiseEngine(problem, rng, private=privacy.private, faults=self.planted_faults)
        x0 = np.array(problem.x0, dtype=float)
        stages = p.pop("schedule")
        traj = TrajectoryBuilder(x0, sum(s["K"] for s in stages), p["max_iterate_floats"])
        centers, weights = [x0], [p["lambda"]]  # wbar_0 = x0 with lambda_0 = lambda
        capped = [str(s["t"]) for s in stages if s["K_theory"] > float(p["K_max"])]
        warnings = [f"K_t capped at K_max = {float(p['K_max']):g} in stage(s) {', '.join(capped)}"] \
            if capped else []
        t_global, used, grad_evals, stop, out = 0, 0, 0, "T_reached", x0
        chunk_releases = []
        for s in stages:
            chunk = stream.take(m)
            used += m
            K, eta, lam_t, R_t = s["K"], s["eta"], s["lambda_t"], s["R_t"]
            z = composed_gaussian_multiplier(privacy.eps, privacy.delta, K - 1) if privacy.private else 0.0
            engine.use_gaussian(z, "z*s", draw_at_zero=True)  # this stage's K_t - 1 releases
            cen, wts = np.array(centers), np.array(weights)
            w = x0.copy()
            # Selector S_t: weights gamma_k = (1 - eta lambda_t)^-k, k = 1..K, as a running
            # average; u = (sum_{j<=k} gamma_j) / gamma_k obeys u <- 1 + (1 - eta lambda_t) u,
            # which never overflows (gamma_K itself can exceed 1e308 once eta is capped).
            shrink = 1.0 - eta * lam_t
            avg, u = w.copy(), 1.0
            releases = 0
            for _ in range(K - 1):
                r = engine.gaussian_release(w, chunk, C, m)
                grad_evals += batch_size(chunk)
                reg = (wts[:, None] * (w[None, :] - cen)).sum(axis=0)
                released, noise_std = r.value, r.std
                if probe is not None:
                    probe.release(t=t_global + 1, oracle=1, x=w.copy(), x_prev=w.copy(),
                                  batch=chunk, clip=r.clip, leaf=r.leaf, told=r.told,
                                  noise_std=noise_std,
                                  nabla=released.copy(), released=released.copy(), restart=False,
                                  escape=False, denom=m, chunk=s["t"])
                releases += 1
                step = released + reg
                w = w - eta * step
                shift = w - x0
                norm = float(np.linalg.norm(shift))
                if norm > R_t:
                    w = x0 + shift * (R_t / norm)
                t_global += 1
                u = 1.0 + shrink * u
                avg += (w - avg) / u
                if not np.all(np.isfinite(w)):
                    stop = "diverged"
                    break
                traj.step(w, t_global, used, m, noise_std, float(np.linalg.norm(step)))
                if time.perf_counter() > deadline:
                    stop = "timeout"
                    break
            chunk_releases.append(releases)
            out = avg
            self.stage_outputs.append(out.copy())
            traj.keep(out, t_global, used)  # the stage's output wbar_t (what the next stage sees)
            if stop != "T_reached":
                break
            centers.append(out)
            weights.append(lam_t)
        p["chunk_releases"] = chunk_releases
        p["stage_outputs"] = len(chunk_releases)
        mu = gdp_mu(privacy.eps, privacy.delta) if privacy.private else math.inf
        spent = ledger_gdp(mu, privacy.delta) if privacy.private else ledger_none(privacy.delta)
        p["privacy_mu"] = mu
        return traj.build(out, t_global, used, grad_evals, stop, spent, p, None, warnings)


def phase_sizes(m: int) -> list[int]:
    """Algorithm 5's phases on a chunk of m records: K = ceil(log2 m) phases, phase k reading
    the next floor(m / 2^k) records (k = 1..K-1, disjoint and consecutive; sizes 0 dropped)."""
    K = max(2, math.ceil(math.log2(max(m, 2))))
    return [s for s in (m // 2**k for k in range(1, K)) if s > 0]


class RecursiveRegularizationLinear(RecursiveRegularization):
    """Algorithm 3 with PhasedSGD (Algorithm 5, OutputPerturbedSGD = Algorithm 6) as the
    private subroutine: Theorem 5.1 part 2, linear time (every record read once),
    ||grad F(wbar)|| ~ 1/sqrt(n) + sqrt(d)/(n eps) + M R / sqrt(n).

    Rules (Theorem 5.1 (2), Lemmas D.4-D.6; G, M, R, T, R_t, lambda_t, H_t as in the module
    docstring, m = floor(n / T) the stage's chunk):
      lambda = max{c_lambda G^2 / (M R^2) min{1/n, d/(n eps)^2}, M log(n) / n}  (as printed)
      stage t: PhasedSGD on its chunk, from w_1 = x0: phases k = 1..ceil(log2 m) - 1 on disjoint
      consecutive segments of floor(m / 2^k) records, step eta_k = 4^-k eta with
      eta = min{log(m) / (lambda_t m), 1 / (M + H_t)}; each phase is one pass of projected SGD
      (per-sample gradients clipped to C) from the previous phase's output, the selector
      average with weights (1 - eta_k lambda_t)^-j, plus Gaussian noise (output perturbation).
    Privacy (Lemma D.5): a replaced record moves one SGD step by at most 2 C eta_k, and later
    steps contract (1 - eta_k lambda_t <= 1 when the stage objective is convex and
    (M + H_t)-smooth and eta_k <= 1/(M + H_t)), so the phase output has sensitivity 2 C eta_k;
    the noise is 2 C eta_k / mu(eps, delta) (each record in one phase of one stage: parallel
    composition; the paper's sigma^2 = 64 L0^2 K^2 log^2(n) log(1/delta) / (lambda n eps)^2 has
    the same shape). Unlike every other algorithm here, this sensitivity rests on a property of
    the loss (convex and M-smooth per record), not on clipping alone: the algorithm refuses a
    problem that does not declare `convex`, caps the step at 1/(M + H_t), and the tests measure
    the sensitivity by rerunning phases on neighbouring data. Smoothness cannot be clipped into
    a record, so each chunk first goes through the problem's `enforce_domain` (a fixed map that
    is the identity on every record P draws and puts any record where the stated M holds: a
    GLM's label to its sign and its features into the atoms' ball); problems without one are
    refused. A review found the phase output moving 2.5-4.8x its told sensitivity on
    neighbouring data sets that shared records of feature norm 1e6 before this map existed.
    Choices: log is log2 in K (halving segments); the selector's lambda is lambda_t; a phase
    of s records takes s steps and averages its start and the s iterates (Algorithm 6 takes
    s - 1 steps and averages s: we use every record); a phase's start is the previous phase's
    noisy output (Algorithm 5 line 5), so later phases are post-processing.
    """

    name = "recursive_regularization_linear"
    description = "recursive regularization (convex), linear time: PhasedSGD stages"
    paper = _ARORA + ", Algorithm 3 + Algorithm 5"
    data_modes = ("records",)
    records_only_reason = ("PhasedSGD takes one sequential step per record, so a run costs n "
                           "steps in any data mode: counts could not make n free")
    multi_pass = False  # every record is read once
    params_used = ("C", "R", "c_lambda")
    knob_defaults: ClassVar[dict[str, Any]] = {"c_lambda": 1.0}
    claims = (Claim("recursive_regularization_linear", "population", "grad_norm",
                    (term("n^-1/2", n=-1 / 2), term("sqrt(d)/(n eps)", privacy=1.0)),
                    _ARORA, "Theorem 5.1 (2), Table 1 (convex, population; linear time)",
                    "plus M ||w*|| / sqrt(n), which has the statistical term's exponent",
                    logs=LOGS["recursive_regularization_linear"]),)

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.recursive_regularization_linear_bound`)."""
        return rules_bounds.recursive_regularization_linear_bound(cls, problem, n, d, privacy)

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        self._check_input(problem, n, ", and PhasedSGD's privacy (output perturbation by "
                                      "stability) needs it")
        try:
            has_domain = problem.enforce_domain(problem.sample(1, np.random.default_rng(0))) is not None
        except (NotImplementedError, ValueError, IndexError):
            has_domain = False
        if not has_domain:
            raise ValueError(f"problem {problem.name!r} is invalid for {self.name}: PhasedSGD's "
                             "sensitivity needs every record's loss M-smooth, and the problem has no "
                             "enforce_domain map that makes any record satisfy its constants")
        G, M = problem.constants.G, problem.constants.M
        c_lambda = float(self.overrides.get("c_lambda", 1.0))
        R = float(self.overrides.get("R", 0.0)) or _minimizer_distance(problem)
        priv = problem.d / (n * privacy.eps) ** 2 if privacy.private else math.inf
        lam = max(c_lambda * G**2 / (M * R**2) * min(1.0 / n, priv), M * math.log(n) / n)
        T = max(1, math.ceil(math.log2(M / lam))) if lam < M else 1
        m = n // T
        if m < 2:
            raise ValueError(f"n={n} is invalid for {self.name}: its T = {T} stages need at least "
                             "two records each")
        stages = []
        for t in range(1, T + 1):
            lam_t, H = 2**t * lam, lam * (2**t - 1)
            eta = min(math.log(m) / (lam_t * m), 1.0 / (M + H))
            stages.append({"t": t, "lambda_t": lam_t, "H": H, "R_t": math.sqrt(2) ** t * R,
                           "eta": eta})
        return {"c_lambda": c_lambda, "R": R, "C": float(self.overrides.get("C", G)), "lambda": lam,
                "stages": T, "m": m, "phases": phase_sizes(m), "eta_t": [s["eta"] for s in stages],
                "schedule": stages, "T": T * len(phase_sizes(m)),
                "max_iterate_floats": float(self.overrides.get("max_iterate_floats", 4_000_000))}

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        C, m = float(p["C"]), int(p["m"])
        mu = gdp_mu(privacy.eps, privacy.delta) if privacy.private else math.inf
        # the engine's: each record's clip, the output noise (2 C eta_k) / mu, the generator
        engine = NoiseEngine(problem, rng, private=privacy.private, faults=self.planted_faults)
        engine.use_gaussian(mu, "s/mu")
        x0 = np.array(problem.x0, dtype=float)
        stages = p.pop("schedule")
        traj = TrajectoryBuilder(x0, n or 1, p["max_iterate_floats"])
        self.stage_outputs = []
        # per phase: (pre-noise output, released output, told sensitivity, noise std) (tests)
        self.phase_outputs: list[tuple[np.ndarray, np.ndarray, float, float]] = []
        centers, weights = [x0], [p["lambda"]]
        used, evals, stop, t_global, out = 0, 0, "T_reached", 0, x0
        for s in stages:
            # Every record into the domain where the stated M holds (identity on P's records):
            # the stability argument behind the phase sensitivity needs it for any record.
            chunk = stream.take(m)
            chunk = engine.domain(chunk)
            used += m
            cen, wts = np.array(centers), np.array(weights)
            w = x0.copy()
            offset = 0
            for k, size in enumerate(p["phases"], start=1):
                eta_k = 4.0**-k * s["eta"]
                shrink = 1.0 - eta_k * s["lambda_t"]
                avg, u = w.copy(), 1.0
                for j in range(size):
                    record = chunk[offset + j: offset + j + 1]
                    g = engine.clipped_rows(problem.per_sample_grads(w, record), C)[0]
                    w = w - eta_k * (g + (wts[:, None] * (w[None, :] - cen)).sum(axis=0))
                    shift = w - x0
                    norm = float(np.linalg.norm(shift))
                    if norm > s["R_t"]:
                        w = x0 + shift * (s["R_t"] / norm)
                    u = 1.0 + shrink * u
                    avg += (w - avg) / u
                offset += size
                evals += size
                sens = 2 * C * eta_k  # the phase's stability sensitivity at the clip C
                w, noise_std = engine.output_release(avg, sens)
                self.phase_outputs.append((avg.copy(), w.copy(), sens, noise_std))
                t_global += 1
                traj.step(w, t_global, used, size, noise_std, math.inf)
                if time.perf_counter() > deadline:
                    stop = "timeout"
                    break
            out = w
            self.stage_outputs.append(out.copy())
            traj.keep(out, t_global, used)
            if stop != "T_reached":
                break
            centers.append(out)
            weights.append(s["lambda_t"])
        spent = ledger_gdp(mu, privacy.delta) if privacy.private else ledger_none(privacy.delta)
        p["privacy_mu"] = mu
        return traj.build(out, t_global, used, evals, stop, spent, p, None, [])
