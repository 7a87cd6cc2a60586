"""The empirical route to a population SOSP (seed 000, arXiv 2410.07502, Appendix A.2): a
private SOSP finder for the empirical loss F_S of a fixed data set S of n records (Ganesh et
al. 2023, *Private (Stochastic) Non-Convex Optimization Revisited*, arXiv 2302.09699, their
Theorem 3.9, as reconstructed here), carried to the population by uniform convergence on a
bounded domain (seed 000, Theorem A.2).

What is stated, by whom:
* seed 000, App. A.2: Ganesh et al. find an O~((sqrt(d)/(n eps))^{2/3})-SOSP of F_S privately;
  Theorem A.2 gives ||grad F - grad F_S|| and ||hess F - hess F_S|| <= O~(sqrt(d/n)) on a
  domain of diameter R (a net of (R/r)^d points and a union bound: R enters only through a
  log); combined, "alpha = O~(sqrt(d)/n + (sqrt(d)/(n eps))^{2/3})". The printed statistical
  term sqrt(d)/n does not follow from Theorem A.2's sqrt(d/n) (that would give
  O~(sqrt(d/n) + ...)): the claims declare the printed rate and the suite measures which
  exponent of n the runs follow (`analysis.empirical_route`).
* the frame (seed 000 Sec. 1.2 on Ganesh et al., our notes): SpiderBoost steps
  nabla_t = nabla_{t-1} + O2(x_t, x_{t-1}), O1 refreshes when the drift (sum of squared steps
  since the last O1) reaches kappa, Gaussian noise per oracle answer scaled to its public
  sensitivity, the saddle escape of seed 000 Algorithm 2 lines 9-11.
Ganesh et al.'s text is not among our sources; everything below that is not in the two
bullets is ours, tagged *derived* (follows from the stated frame by the computation given)
or *chosen* (a reading where the sources leave it open: the parameter rules' constants are
knobs and tested; the structural choices, full-batch O1 and O2 and no drift reset on an
escape, are fixed, stated and tested here).

The algorithm (x_0 the problem's start, Pi the projection onto the ball B(x_0, R)):
* O1(x) = (1/n) sum_{z in S} clip_G(grad f(x; z)) + N(0, s1^2 I): the full data set (chosen:
  full-batch anchors, as any multi-pass method can afford; sensitivity 2G/n, replace-one);
* O2(x_t, x_{t-1}) = (1/n) sum_{z in S} clip_{C_t}(grad f(x_t; z) - grad f(x_{t-1}; z))
  + N(0, s2_t^2 I), C_t = M ||x_t - x_{t-1}|| (public): the full data set again (chosen; see
  "left out" below), sensitivity 2 C_t / n, noise scaled to it;
* escape (seed 000 Alg. 2 lines 9-11, the engine's `escape_params`): when the previous
  released norm is <= the threshold and no window is open, add N(0, zeta^2/d I) to the step
  and freeze the test for Gamma steps; the drift is not reset (Ganesh's restart rule counts
  every squared step since the last O1, as `gaussian_spider`);
* x_{t+1} = Pi(x_t - eta nabla~_t); drift += ||x_{t+1} - x_t||^2 (the step actually taken).

Privacy (enforced by the clips; calibrated by `algorithms.privacy.accounting` only). Every release is
a Gaussian mechanism on a clipped full-batch mean: an O1 answer with noise s1 = (2G/n)/mu1 is
mu1-GDP, an O2 answer with s2_t = (2 C_t/n)/mu2 is mu2-GDP whatever C_t. Which kind step t
makes depends on earlier releases (the drift is a function of public iterates), so the
composition is fully adaptive: by Smith and Thakurta 2022 (*Fully Adaptive Composition for
Gaussian Differential Privacy*, arXiv 2210.17520) a GDP filter sum_i mu_i^2 <= mu^2 is
mu-GDP. The run makes at most A_max O1 answers (it stops with stop_reason
"anchors_exhausted" before one more; a public decision) and at most T - 1 O2 answers, so
    A_max mu1^2 + (T - 1) mu2^2 = mu^2,  mu = gdp_mu(eps, delta) (exact GDP),
    mu1 = mu sqrt(beta / A_max),  mu2 = mu sqrt((1 - beta) / (T - 1))   (beta = 1 when T = 1).
The ledger stores mu (the filter's guarantee), not the realized sum.

Parameter rules (knobs in parentheses, all 1 by default unless said; x = sqrt(d)/(n mu)):
* derived: the expected anchor-noise norm is 2 G x sqrt(A_max / beta) and the O2 noise
  accumulated over an epoch (drift <= kappa) has norm <= 2 M x sqrt(kappa (T - 1)/(1 - beta));
  both <= gamma, with T = B0 M / gamma^2 (Prop. 3.4's horizon), A_max = 3 B0 / (M kappa)
  epochs (the squared path length is <= 2 B0 / M by the descent lemma plus T (gamma/M)^2 of
  noise: 3 B0 / M) and kappa = G gamma / M^2 (the geometric mean of the interval of
  feasible kappa), gives gamma^3 >= 12 G B0 M x^2 / beta and gamma^3 >= 4 G B0 M x^2 / (1 - beta);
  they balance at beta = 3/4 (`anchor_share`), where
      gamma_priv = (16 G B0 M x^2)^{1/3}   -- the claimed (sqrt(d)/(n eps))^{2/3};
* chosen: gamma = alpha_mult max(gamma_priv, c_stat G sqrt(d/n)): descending F_S below
  Theorem A.2's statistical precision cannot improve the population alpha, and at eps = inf
  it is the only finite accuracy (a direct `target_alpha` replaces the max);
* kappa = c_kappa G gamma / M^2, T = c_T B0 M / gamma^2, A_max = c_A (1 + 3 B0 / (M kappa)),
  eta = eta_mult / M; escape threshold, zeta and Gamma from `algorithms.sosp.noise_rules.escape_params`
  (noise-scaled rule, c_escape, c_zeta, c_Gamma, omega) with the bound on the noise norm above.

The bounded domain (item 2 of issue 29): Theorem A.2 needs a domain of finite diameter. The
iterates are projected onto B(x_0, R) (post-processing of public values, no privacy cost),
    R = c_R B0 / gamma  (derived: along gradient flow dF/ds = -||grad F||, so the flow travels
    at most B0 / gamma from x_0 before it first reaches a gamma-stationary point).
Effect on the hard instances (x_0 the saddle at 0, tested): on `hard_valley` the gradient
decays like c / u along the valley, so the walk to ||grad F|| = gamma ends at u = c / gamma,
inside the ball (B0 = 8.9 c); the minima at u = w sqrt(1/beta^2 - 1) ~ 1e4 lie outside it for
gamma > 9e-4, and on the sphere the valley's gradient is c gamma / B0 < gamma: every boundary
point of the valley is gamma-stationary, so the projection never hides a non-stationary point
the metric would see. On `hard_ramp` the ramp ends at its minimum u ~ L = drop c / (k alpha) <
B0 / gamma whenever gamma < k alpha: the minimum is inside the ball and the projection is
inactive on the whole path. Only runs far past their own accuracy (or c_R < 1) touch it.

Left out (said, with the reason): O2 on Poisson subsamples of S. Subsampling amplifies by q
and averages over q n records, so the averaged noise is the full batch's to first order; it
saves computation (free in counts mode) and adds sampling error; and its adaptive interleaving
with the anchors has no valid PLD filter (f-DP filters fail in general; Smith and Thakurta's
result is for GDP). On the product-layout hard families a re-read subsample would also not be
exact from counts (`problems.counts.dataset`). The private output selection of Ganesh et al.
(AboveThreshold) is replaced, as for every SOSP family here, by the suite's best / last /
smallest-estimate iterates. Target-alpha (sample-complexity) cells: `target_alpha` sets
gamma, but the run still reads the whole budget as its data set, so its samples-to-target is
the budget; the empirical route's sample complexity is read off its fixed-budget error curve
(the smallest n of the grid whose runs reach alpha), not from target cells.

Counts mode: every read is the full data set (`counts_rereads = ""`), exact on atoms and on
product layouts (clip G and C_t are the identity on the whole support, the guard of
`algorithms.counts_maps`); the escape noise and all noise draws come from the run's rng in the
same order in both modes.
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
from algorithms.first_order.base import FirstOrderAlgorithm, TrajectoryBuilder
from algorithms.privacy.accounting import gdp_mu, ledger_gdp, ledger_none
from algorithms.privacy.noise_engine import NoiseEngine
from algorithms.rule_constants import require_rule_constants
from algorithms.sosp.noise_rules import escape_params
from problems.base import Constants, Problem

_SEED000 = "Adaptive Batch Size for Privately Finding SOSPs, arXiv 2410.07502"
_GANESH = "Ganesh et al. 2023, arXiv 2302.09699 (reconstruction)"

#: Knobs (the constants O~ hides) at their theory values; anchor_share = 3/4 is derived.
KNOBS: dict[str, float] = {"alpha_mult": 1.0, "c_T": 1.0, "c_kappa": 1.0, "c_A": 1.0,
                           "c_stat": 1.0, "c_R": 1.0, "c_escape": 1.0, "c_zeta": 1.0,
                           "c_Gamma": 1.0, "omega": 0.1, "anchor_share": 0.75, "eta_mult": 1.0}
#: Direct values a run may fix (then no rule computes them).
DIRECT = ("T", "eta", "kappa", "A_max", "R")


def gamma_private(constants: Constants, n: int, d: int, mu: float) -> float:
    """gamma_priv = (16 G B0 M x^2)^{1/3}, x = sqrt(d) / (n mu) (module docstring); 0 at mu = inf."""
    if not math.isfinite(mu):
        return 0.0
    x = math.sqrt(d) / (n * mu)
    return (16.0 * constants.G * constants.B0 * constants.M * x * x) ** (1 / 3)


def gamma_statistical(constants: Constants, n: int, d: int) -> float:
    """Theorem A.2's statistical precision with its constant at 1: G sqrt(d / n)."""
    return constants.G * math.sqrt(d / n)


def _direct(kn: dict[str, Any], key: str, rule: float) -> float:
    """A directly given parameter (> 0, else one clear error) or the rule's value."""
    if kn.get(key) is None:
        return float(rule)
    v = float(kn[key])
    if not v > 0:
        raise ValueError(f"parameter {key}={kn[key]!r} is invalid: must be > 0")
    return v


def privacy_split(mu: float, A_max: int, T: int, beta: float) -> tuple[float, float]:
    """(mu1, mu2) with A_max mu1^2 + (T - 1) mu2^2 = mu^2 (module docstring: the GDP filter)."""
    if T <= 1:
        return mu / math.sqrt(A_max), math.inf
    return mu * math.sqrt(beta / A_max), mu * math.sqrt((1 - beta) / (T - 1))


def project_ball(x: np.ndarray, center: np.ndarray, R: float) -> np.ndarray:
    """Euclidean projection onto the ball B(center, R)."""
    v = x - center
    r = math.sqrt(float(v @ v))
    return x if r <= R else center + v * (R / r)


class EmpiricalSospSpider(FirstOrderAlgorithm):
    """Private SOSP finder for F_S plus uniform convergence (module docstring)."""

    name = "empirical_sosp_spider"
    description = "empirical route: full-batch Spider on F_S, Gaussian noise, GDP filter, ball R"
    paper = _GANESH + "; " + _SEED000 + ", Appendix A.2"
    setting = "empirical"
    family = "first_order"
    noise = "gaussian"
    data_modes = ("records", "counts")
    counts_rereads = ""  # every read is the whole data set: exact on product layouts too
    params_used = (*DIRECT, *KNOBS)
    knob_defaults: ClassVar[dict[str, Any]] = dict(KNOBS)
    rule_constants: ClassVar[dict[str, str]] = {
        "M": "eta = eta_mult / M and kappa = c_kappa G gamma / M^2",
        "G": "kappa = c_kappa G gamma / M^2"}
    claims = (
        Claim("empirical_sosp_spider", "population", "alpha_sosp",
              (term("sqrt(d)/n", n=-1.0, d=0.5), term("(sqrt(d)/(n eps))^(2/3)", privacy=2 / 3)),
              _SEED000, "Appendix A.2 (Theorem A.2 + Ganesh et al. Theorem 3.9)",
              "printed statistical term; Theorem A.2 as stated gives sqrt(d/n)",
              logs=LOGS["empirical_sosp_spider"]),
        Claim("empirical_sosp_spider", "empirical", "emp_alpha_sosp",
              (term("(sqrt(d)/(n eps))^(2/3)", privacy=2 / 3),),
              _GANESH, "Theorem 3.9 (via seed 000 Appendix A.2)", "rules reconstructed",
              logs=LOGS["empirical_sosp_spider"]),
    )
    #: The statistical exponents of n the population claim's two readings predict at eps = inf
    #: (`analysis.empirical_route`): as printed, and as Theorem A.2 states.
    statistical_readings: ClassVar[tuple[tuple[str, float], ...]] = (
        ("printed sqrt(d)/n", -1.0), ("Theorem A.2's sqrt(d/n)", -0.5))

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.empirical_sosp_bound`)."""
        return rules_bounds.empirical_sosp_bound(cls, problem, n, d, privacy, KNOBS,
                                                 gamma_statistical)

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **kn: Any) -> dict[str, Any]:
        """Every parameter from the rules of the module docstring (knobs in `kn`)."""
        if n is None or not isinstance(n, int) or n < 1:
            raise ValueError(f"n={n!r} is invalid for {cls.name}: needs a finite data set (n >= 1)")
        G, M, B0 = constants.G, constants.M, constants.B0
        mu = gdp_mu(privacy.eps, privacy.delta) if privacy.private else math.inf
        target = kn.get("target_alpha")
        g_priv, g_stat = gamma_private(constants, n, d, mu), kn["c_stat"] * gamma_statistical(constants, n, d)
        base = float(target) if target is not None else max(g_priv, g_stat)
        gamma = kn["alpha_mult"] * base
        if not gamma > 0:
            raise ValueError(f"{cls.name}: the accuracy gamma={gamma!r} is invalid (constants.G "
                             "and constants.B0 must be > 0, or give target_alpha)")
        kappa = _direct(kn, "kappa", kn["c_kappa"] * G * gamma / M**2)
        T = math.ceil(_direct(kn, "T", max(1.0, kn["c_T"] * B0 * M / gamma**2)))
        A_max = math.ceil(_direct(kn, "A_max", max(1.0, kn["c_A"] * (1 + 3 * B0 / (M * kappa)))))
        R = _direct(kn, "R", kn["c_R"] * max(B0, 1e-300) / gamma)
        beta = kn["anchor_share"]
        mu1, mu2 = privacy_split(mu, A_max, T, beta)
        if privacy.private:
            noise_norm = max(math.sqrt(d) * 2 * G / (n * mu1),
                             math.sqrt(d) * 2 * M * math.sqrt(kappa) / (n * mu2)
                             if math.isfinite(mu2) else 0.0)
        else:
            noise_norm = 0.0
        p = {"alpha": gamma, "gamma": gamma, "gamma_priv": g_priv, "gamma_stat": g_stat,
             "kappa": kappa, "T": T, "A_max": A_max, "R": R,
             "eta": _direct(kn, "eta", kn["eta_mult"] / M),
             "mu": mu, "mu1": mu1, "mu2": mu2, "noise_norm": noise_norm, "C": G, "b": n}
        p.update(escape_params(constants, d, gamma, noise_norm, T, {**kn, "escape_rule": "noise_scaled"}))
        p["Gamma"] = int(p["Gamma"])  # the frozen window the run uses (a whole number of steps)
        return p

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        require_rule_constants(self.name, problem, self.rule_constants)
        kn = self.knobs()
        beta, omega = float(kn["anchor_share"]), float(kn["omega"])
        if not 0 < beta < 1:
            raise ValueError(f"parameter anchor_share={beta!r} is invalid: must be in (0, 1)")
        if not 0 < omega < 1:
            raise ValueError(f"parameter omega={omega!r} is invalid: must be in (0, 1)")
        direct = {k: self.overrides[k] for k in (*DIRECT, "target_alpha") if k in self.overrides}
        for key in ("T", "A_max"):
            if key in direct and float(direct[key]) != int(float(direct[key])):
                raise ValueError(f"parameter {key}={direct[key]!r} is invalid: must be an integer >= 1")
        p = self.theory_params(problem.constants, n, problem.d, privacy, **kn, **direct)
        p.update(kn)
        p["max_iterate_floats"] = float(self.overrides.get("max_iterate_floats", 4_000_000))
        return p

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        d, G, M = problem.d, problem.constants.G, problem.constants.M
        n = int(n)
        T, A_max, kappa, eta, R = int(p["T"]), int(p["A_max"]), p["kappa"], p["eta"], p["R"]
        mu1, mu2 = p["mu1"], p["mu2"]
        threshold, zeta, Gamma = p["escape_threshold"], p["zeta"], int(p["Gamma"])
        # the engine's: the clipped full-batch sums, the noise std (2 C / n) / mu_i, the generator
        engine = NoiseEngine(problem, rng, private=privacy.private, faults=self.planted_faults)
        engine.use_gaussian(mu1, "s/mu", "o1", draw_at_zero=True)
        engine.use_gaussian(mu2, "s/mu", "o2", draw_at_zero=True)
        sample = stream.take(n)
        x = np.array(problem.x0, dtype=float)
        center = x.copy()
        x_prev = x_prev2 = x.copy()
        nu = np.zeros(d)
        traj = TrajectoryBuilder(x, T, p["max_iterate_floats"])
        oracle_rec: list[int] = []
        escape_rec: list[bool] = []
        drift_rec: list[float] = []
        drift, frozen_prev, prev_norm = kappa, 1, math.inf
        anchors, evals, t, stop = 0, 0, 0, "T_reached"
        sqrt_d = math.sqrt(d)
        while t < T:
            if drift >= kappa:  # O1: the whole data set
                if anchors >= A_max:  # the filter: one more anchor would exceed the budget
                    stop = "anchors_exhausted"
                    break
                r = engine.gaussian_release(x, sample, G, n, oracle="O1", name="o1")
                nu = released_part = r.value
                drift, oracle, anchors = 0.0, 1, anchors + 1
                evals += n
            else:  # O2: the whole data set, noise scaled to the step taken (public)
                c_true = M * math.sqrt(float((x - x_prev) @ (x - x_prev)))
                if engine.wrong_step:  # planted: the previous step's length, no clip
                    c_told = M * math.sqrt(float((x_prev - x_prev2) @ (x_prev - x_prev2)))
                    r = engine.gaussian_release(x, sample, math.inf, n, y=x_prev, oracle="O2",
                                                name="o2", told_clip=c_told)
                else:
                    r = engine.gaussian_release(x, sample, c_true, n, y=x_prev, oracle="O2",
                                                name="o2")
                released_part = r.value
                nu = nu + released_part
                oracle = 2
                evals += 2 * n
            leaf, clip, told, std = r.leaf, r.clip, r.told, r.std
            frozen = frozen_prev - 1
            step_dir = nu
            escape = False
            if prev_norm <= threshold and frozen_prev <= 0:  # seed 000 Alg. 2 line 9
                frozen = Gamma
                step_dir = nu + engine.perturbation(zeta / sqrt_d, loc_form=True)
                escape = True
            est_norm = math.sqrt(float(step_dir @ step_dir))
            if probe is not None:
                probe.release(t=t + 1, oracle=oracle, x=x.copy(), x_prev=x_prev.copy(),
                              batch=sample, clip=clip, leaf=leaf, told=told, noise_std=std,
                              nabla=nu.copy(), released=released_part.copy(),
                              restart=oracle == 1, escape=escape, denom=n)
            x_new = project_ball(x - eta * step_dir, center, R)
            dx = x_new - x
            drift += float(dx @ dx)
            x_prev2, x_prev, x = x_prev, x, x_new
            frozen_prev, prev_norm = frozen, est_norm
            t += 1
            oracle_rec.append(oracle)
            escape_rec.append(escape)
            drift_rec.append(drift)
            if not math.isfinite(float(x.sum())):
                stop = "diverged"
                break
            if traj.step(x, t, n, n, std, est_norm) and monitor is not None and monitor(x):
                stop = "target_reached"
                break
            if time.perf_counter() > deadline:
                stop = "timeout"
                break
        spent = ledger_gdp(p["mu"], privacy.delta) if privacy.private else ledger_none(privacy.delta)
        p.update(privacy_mu=p["mu"], anchors_used=anchors)
        out = traj.build(x, t, n, evals, stop, spent, p, sample, [])
        out.records["oracle"] = np.array(oracle_rec, dtype=np.int8)
        out.records["escape"] = np.array(escape_rec, dtype=bool)
        out.records["drift"] = np.array(drift_rec)
        return out


__all__ = ["EmpiricalSospSpider", "gamma_private", "gamma_statistical", "privacy_split",
           "project_ball"]
