"""Pasan and Pagan: private adaptive gradient methods with noise shaped to the gradient
geometry (Asi, Duchi, Fallah, Javidbakht, Talwar 2021, *Private Adaptive Gradient Methods for
Convex Optimization*, ICML 2021, arXiv 2106.13756, Algorithms 1 and 2, Lemma 3.1, Theorems 1-2).

Our seed lost the algorithm bodies; what follows is a reconstruction. Tags say where each line
comes from: [SEED] the seed text states it; [DERIVED] standard analysis consistent with it;
[CHOICE] a reading we picked (a knob where it could matter). None of [DERIVED] / [CHOICE] is
presented as the paper's.

Each step (both algorithms) [SEED]: a batch; every per-sample gradient projected onto the
ellipsoid E_A = {g : g^T A g <= 1}, A = C / B^2 with C diagonal positive definite; the mean of
the projected gradients; Gaussian noise with covariance sigma^2 A^{-1}; then the adaptive step.
* Projection [CHOICE, knob `projection`]: radial by default, g min(1, 1 / ||g||_A) with
  ||g||_A = sqrt(g^T A g) (stays in E_A, so privacy is that of any projection onto E_A)
  [DERIVED]; "euclidean" the alternative (below).
* Privacy [DERIVED]: in whitened coordinates u = A^{1/2} g every projected gradient has norm
  <= 1, so the whitened sum is a Poisson-subsampled Gaussian sum with clip 1: noise N(0, z^2 I)
  there, i.e. N(0, z^2 A^{-1}) on the sum; z from dp-accounting's PLD for T Poisson steps at
  rate q = b/n (Lemma 3.1's moments accountant with its unknown constant replaced by the
  accountant) [CHOICE]. T = c_T n^2 / b^2 (Lemma 3.1's T = c n^2 / b^2) [SEED].
* Pasan (Algorithm 1): AdaGrad-norm step x <- Proj_X(x - alpha_k g~), alpha_k = alpha /
  sqrt(sum_{i<=k} ||g~_i||^2) [CHOICE]; output the average iterate [CHOICE]. alpha = alpha_mult
  diam_2(X) (Theorem 1's alpha = diam_2(X) [SEED]; Pagan: alpha_mult diam_inf(X), Theorem 2).
* Pagan (Algorithm 2): diagonal AdaGrad, H_k = diag(sqrt(sum_{i<=k} g~_i^2) + delta0) / alpha,
  x <- Proj_X(x - H_k^{-1} g~) (a coordinate clip on a box) [DERIVED]; average iterate.
* C [SEED: Theorems 1-2 and the stylized case]: from known scales sigma_j, the optimal
  diagonals of the stylized case, Pasan c_j = sigma_j^{-1} / sum_i sigma_i and Pagan
  c_j = sigma_j^{-4/3} / sum_i sigma_i^{2/3} [DERIVED], or C = I (the isotropic baselines:
  private SGD with Pasan's step, private AdaGrad with Pagan's). B (the ellipsoid's scale) is a
  knob, default 1. C can also be estimated at run time: `PaganPrivateScales` (Algorithm 3,
  reconstructed in `private_moments`, on held-out records) and `PaganPublicScales` (public
  records); both replace sigma_j by the estimate's square root in Pagan's optimum.
* Batch b = 70 (the seed's experiment; the stylized theorems take b = 1); the projection is
  the only privacy-relevant step, so a problem's claimed constants are never trusted: rows
  with non-finite entries are zeroed, and the sensitivity 2/b in whitened coordinates holds
  for any record (tests/test_ellipsoid.py; layer 3 in algorithms/privacy/audit/audit.py).
* `projection = "euclidean"` [CHOICE, knob]: the note's alternative, the Euclidean projection
  (I + lambda A)^{-1} g onto E_A (`project_ellipsoid_euclidean`); same privacy (its output
  is in E_A), a different bias on large gradients (it shrinks the stiff coordinates more).
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import numpy as np

from algorithms import rules_bounds
from algorithms.adaptive_noise.projections import (
    optimal_diagonal,
    project_ellipsoid,
    project_ellipsoid_euclidean,
)
from algorithms.adaptive_noise.steps import adaptive_step
from algorithms.base import Privacy, Trajectory
from algorithms.claim_logs import LOGS
from algorithms.claims import Claim, RulesBound, term
from algorithms.first_order.base import (
    FirstOrderAlgorithm,
    RealizedCounts,
    TrajectoryBuilder,
    batch_size,
)
from algorithms.privacy.accounting.gdp import gdp_mu
from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_none, ledger_parallel, ledger_pld
from algorithms.privacy.accounting.pld import poisson_gaussian_calibration, with_noise_factor
from algorithms.privacy.noise_engine import NoiseEngine
from problems.base import Constants, Problem

ASI_PAPER = ("Asi, Duchi, Fallah, Javidbakht, Talwar 2021 (arXiv 2106.13756), reconstructed "
        "(algorithms/adaptive_noise/ellipsoid.py)")


class EllipsoidMethod(FirstOrderAlgorithm):
    """Shared step of Pasan / Pagan and their isotropic baselines (module docstring)."""

    setting = "empirical"
    hidden_batch_sizes = True
    params_used = ("alpha", "alpha_mult", "b", "B", "c_T", "T", "delta0", "noise_multiplier",
                   "projection")
    knob_defaults: ClassVar[dict[str, Any]] = {"c_T": 1.0, "B": 1.0, "alpha_mult": 1.0,
                                               "projection": "radial"}
    _CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"projection": ("radial", "euclidean")}
    #: "pasan" (AdaGrad-norm) or "pagan" (diagonal AdaGrad)
    step_rule = "pasan"
    #: True: C from the problem's coordinate scales (the stylized optimum); False: C = I
    shaped = True
    #: draws public data (PDP-SGD's subspace estimate, public moments)
    uses_public = False
    #: where C comes from: "true" (the problem's scales, or I when not shaped), "private"
    #: (Algorithm 3 on held-out records) or "public" (second moments of public records)
    scale_source = "true"
    #: counts mode on atoms layouts: Poisson thinning and the projection per atom (exact)
    data_modes: ClassVar[tuple[str, ...]] = ("records", "counts")
    counts_rereads: ClassVar[str] = "Poisson subsamples of one sample"

    @classmethod
    def public_batch(cls, p: dict[str, Any], n: int, oracle: int = 1) -> int:
        """The expected Poisson batch q n = min(b, n), rounded to a whole record, for the n
        records the steps read (a held-out moment sample's m records excluded: `n` here)."""
        return round(min(float(p["b"]), float(n)))

    @classmethod
    def public_grad_evals(cls, p: dict[str, Any], n: int, n_steps: int) -> int:
        """q n T: the expected batch (unrounded) times the steps run, rounded once."""
        return round(min(float(p["b"]), float(n)) * int(n_steps))

    def _take_sample(self, stream: Any, n: int, p: dict[str, Any]) -> tuple[Any, Any]:
        """(records held out for the scale estimate or None, the sample the steps read): the
        first n records of the stream, records or counts."""
        return None, stream.take(n)

    def _estimate_scales(self, problem: Problem, held: Any, sample: Any, privacy: Privacy,
                         engine: NoiseEngine, rng_public: np.random.Generator | None,
                         p: dict[str, Any]) -> tuple[Any, np.ndarray]:
        raise NotImplementedError

    def _post_process(self, released: np.ndarray, problem: Problem, x: np.ndarray, t: int,
                      rng_public: np.random.Generator | None, p: dict[str, Any]) -> np.ndarray:
        """A data-independent map of the released gradient (identity here)."""
        return released

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        b = 70.0  # the seed's experiment
        # the step scale of Theorems 1-2 [SEED]: alpha = diam_2(X) for Pasan's AdaGrad-norm,
        # diam_inf(X) for Pagan's diagonal AdaGrad; on the box [-r, r]^d (domain_radius =
        # r sqrt(d)) these are 2 r sqrt(d) and 2 r
        diam_2 = 2.0 * constants.domain_radius
        diam = diam_2 if cls.step_rule == "pasan" else diam_2 / math.sqrt(d)
        return {"b": b, "T": knobs["c_T"] * float(n) ** 2 / b**2,
                "alpha": knobs["alpha_mult"] * diam, "eta": 0.0}

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.ellipsoid_bound`)."""
        return rules_bounds.ellipsoid_bound(cls, problem, n, d, privacy)

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        if not hasattr(problem, "box"):
            raise ValueError(f"problem {problem.name!r} is invalid for {self.name}: it projects "
                             "onto a box domain (a problem with `box`)")
        p = super().resolve_params(problem, n, privacy)
        for key in ("alpha", "B", "delta0"):
            if key in self.overrides:
                p[key] = float(self.overrides[key])
        p.setdefault("delta0", 1e-8)
        p["b"] = min(float(n), p["b"])
        if self.shaped and self.scale_source == "true":
            if not hasattr(problem, "sigma"):
                raise ValueError(f"problem {problem.name!r} is invalid for {self.name}: the shaped "
                                 "noise needs the coordinate scales `sigma`")
            c = optimal_diagonal(problem.sigma, self.step_rule)
        else:
            c = np.ones(problem.d)
        self._set_shape(p, c, n)
        return p

    def _set_shape(self, p: dict[str, Any], c: np.ndarray, n: int) -> None:
        """A = C / B^2 and Lemma 3.1's T = c_T n^2 / b^2 at the batch in use (unless T is
        overridden) for the n records the optimization reads."""
        with np.errstate(divide="ignore", over="ignore"):  # a degenerate A is refused in _run
            p["A_diag"] = (c / p["B"] ** 2).tolist()
        if "T" not in self.overrides:
            p["T"] = max(1, math.ceil(p["c_T"] * float(n) ** 2 / p["b"] ** 2))

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        held, sample = self._take_sample(stream, int(n), p)
        # the engine's: the projection, the shaped noise, the Poisson subsample, the generator
        engine = NoiseEngine(problem, rng, private=privacy.private, faults=self.planted_faults)
        # public data (PDP-SGD, public moments) from its own child generator, drawn first
        rng_public = engine.child_generator() if self.uses_public else None
        if self.scale_source != "true":  # C estimated at run time (PaganEstimatedScales)
            sample, c = self._estimate_scales(problem, held, sample, privacy, engine, rng_public,
                                              p)
            n = batch_size(sample)
            self._set_shape(p, c, n)  # on the n - m records it reads
        T, b = int(p["T"]), float(p["b"])
        a = np.array(p["A_diag"])
        if not np.all(np.isfinite(a) & (a > 0)):  # e.g. B^2 or a scale underflowing to 0
            raise ValueError(f"parameter B={p['B']!r} (with the scales of C) is invalid here: A = C/B^2 "
                             "must be finite and > 0 in every coordinate, or the ellipsoid and its "
                             "noise degenerate")
        project = project_ellipsoid_euclidean if p["projection"] == "euclidean" else project_ellipsoid
        q = min(1.0, b / n)
        cal = poisson_gaussian_calibration(privacy.eps, privacy.delta, q, T) if privacy.private \
            else None
        z = cal.scale if cal is not None else 0.0
        if "noise_multiplier" in self.overrides:
            if float(self.overrides["noise_multiplier"]) < z:
                raise ValueError(f"parameter noise_multiplier={self.overrides['noise_multiplier']!r} "
                                 f"is invalid: must be >= {z:.6g}, the noise (eps, delta) needs")
            z = float(self.overrides["noise_multiplier"])
        spent = ledger_pld(with_noise_factor(cal, z / cal.scale)) if cal is not None \
            else ledger_none(privacy.delta)
        if cal is not None and "moment_m" in p:  # the held-out moment release: one Gaussian
            # release at mu(eps, delta) on records the optimization never reads (parallel)
            spent = ledger_parallel([spent, ledger_gdp(gdp_mu(privacy.eps, privacy.delta),
                                                       privacy.delta)])
        engine.use_shaped(z, a, project)  # noise N(0, z^2 A^-1) on the sum
        p.update(noise_multiplier=z, sampling="poisson")
        box = float(problem.box)
        x = np.array(problem.x0, dtype=float)
        avg = x.copy()
        traj = TrajectoryBuilder(x, T, p["max_iterate_floats"])
        stepper = adaptive_step(self.step_rule, float(p["alpha"]), problem.d, float(p["delta0"]))
        stop, t, hidden = "T_reached", 0, RealizedCounts()
        while t < T:
            batch = engine.poisson(sample, q)  # records, or counts thinned
            # each per-sample gradient projected onto E_A: per atom from counts (counts_maps)
            r = engine.shaped_release(x, batch, b)
            hidden.add(batch_size(batch))  # |B_t| is the accountant's secret (RealizedCounts)
            read = self.public_batch(p, n)
            released = r.value
            if probe is not None:
                probe.release(t=t + 1, oracle=1, x=x.copy(), x_prev=x.copy(), batch=batch,
                              clip=r.clip, leaf=r.leaf, told=r.told, noise_std=r.std,
                              nabla=released.copy(), released=released.copy(), restart=False,
                              escape=False, denom=b, whiten=np.sqrt(a),
                              projection=engine.projection)
            released = self._post_process(released, problem, x, t, rng_public, p)
            x = np.clip(stepper.step(x, released), -box, box)
            t += 1
            avg += (x - avg) / (t + 1)  # the average of x_0..x_t
            traj.step(avg, t, n, read, z / b, float(np.linalg.norm(released)))
            if time.perf_counter() > deadline:
                stop = "timeout"
                break
        p["privacy_mu"] = math.nan if spent["mu"] is None else spent["mu"]  # None: not mu-GDP
        return traj.build(avg, t, n, self.public_grad_evals(p, n, t), stop, spent, p, sample,
                          [], hidden.record())


class Pasan(EllipsoidMethod):
    """Pasan (Algorithm 1, reconstructed): ellipsoid projection, noise N(0, sigma^2 A^-1),
    AdaGrad-norm step, C = the stylized optimum sigma_j^-1 (module docstring)."""

    name = "pasan"
    description = "Pasan: ellipsoid-shaped clipping and noise, AdaGrad-norm step (reconstructed)"
    paper = ASI_PAPER
    claims = (Claim("pasan", "population", "excess_risk",
                    (term("sqrt(d)/sqrt(n)", n=-1 / 2, d=1 / 2), term("sqrt(d)/(n eps)", privacy=1.0)),
                    ASI_PAPER,
                    "Theorem 1, stylized case (X = [-1, 1]^d, sigma_j = j^-3/2)",
                    "privacy term's d-scaling for this scale profile", logs=LOGS["pasan"]),)
    step_rule = "pasan"
    shaped = True


class Pagan(EllipsoidMethod):
    """Pagan (Algorithm 2, reconstructed): ellipsoid projection, noise N(0, sigma^2 A^-1),
    diagonal AdaGrad, C = the stylized optimum sigma_j^-4/3 (module docstring)."""

    name = "pagan"
    description = "Pagan: ellipsoid-shaped clipping and noise, diagonal AdaGrad (reconstructed)"
    paper = ASI_PAPER
    claims = (Claim("pagan", "population", "excess_risk",
                    (term("n^-1/2", n=-1 / 2), term("polylog(d)/(n eps)", n=-1.0, eps=-1.0)), ASI_PAPER,
                    "Theorem 2, stylized case (X = [-1, 1]^d, sigma_j = j^-3/2)",
                    "privacy term poly(log d): exponent 0 in d up to logs", logs=LOGS["pagan"]),)
    step_rule = "pagan"
    shaped = True


