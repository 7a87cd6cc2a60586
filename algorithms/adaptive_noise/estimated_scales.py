"""Pagan with estimated scales (seed 002, reconstructed): the second moments that shape the
ellipsoid estimated privately from the data (`PaganPrivateScales`, paying part of the budget)
or from public data (`PaganPublicScales`)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from algorithms.adaptive_noise.ellipsoid import ASI_PAPER, Pagan
from algorithms.adaptive_noise.private_moments import capped_squares, moment_noise_std
from algorithms.adaptive_noise.projections import pagan_diagonal_from_moments
from algorithms.base import Privacy
from algorithms.claim_logs import LOGS
from algorithms.claims import Claim
from algorithms.counts_maps import mapped_rows_mean
from problems.base import Problem


class PaganPrivateScales(Pagan):
    """Pagan with C from privately estimated scales (the seed's Algorithm 3 route, reconstructed
    in `private_moments`): the first m = ceil(moment_frac n) records are held out, their
    gradients at x0 (a public point) give private second moments (each squared coordinate
    capped at moment_cap^2, one Gaussian release at (eps, delta), estimates floored at
    moment_floor_mult times that release's noise std, below which a scale cannot be told from
    0), C = Pagan's stylized optimum at sigma_hat = sqrt(estimate); Pagan then runs on the other
    n - m records at (eps, delta) with T = c_T (n - m)^2 / b^2. The two parts read disjoint
    records, so the run is (eps, delta)-DP by parallel composition [DERIVED]. The split, the
    gradient point, the uniform cap and the floor are [CHOICE]s (knobs)."""

    name = "pagan_private_scales"
    description = "Pagan with C from privately estimated second moments (held-out records)"
    scale_source = "private"
    params_used = (*Pagan.params_used, "moment_frac", "moment_cap", "moment_floor_mult")
    knob_defaults: ClassVar[dict[str, Any]] = {**Pagan.knob_defaults, "moment_frac": 0.1,
                                               "moment_cap": 1.0, "moment_floor_mult": 1.0}
    claims = (Claim("pagan_private_scales", "population", "excess_risk", Pagan.claims[0].terms, ASI_PAPER,
                    "Theorem 2 with C from Algorithm 3's private moments, stylized case",
                    "Pagan's rate up to the estimate's accuracy (the moments-ratio constant r)",
                    logs=LOGS["pagan_private_scales"]),)

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        p = super().resolve_params(problem, n, privacy)
        if not p["moment_frac"] < 1:
            raise ValueError(f"parameter moment_frac={p['moment_frac']!r} is invalid: must be in "
                             "(0, 1), the fraction of records held out for the moments")
        if n is not None and not 1 <= math.ceil(p["moment_frac"] * n) < n:
            raise ValueError(f"parameter moment_frac={p['moment_frac']!r} is invalid with n={n}: "
                             "it must hold out at least one record and leave at least one")
        return p

    def _take_sample(self, stream, n, p):
        # the first m records held out, the next n - m for the steps (records: the same rows
        # as taking n and splitting; counts: two consecutive takes, exact and disjoint)
        m = math.ceil(float(p["moment_frac"]) * n)
        return stream.take(m), stream.take(n - m)

    def _estimate_scales(self, problem, held, sample, privacy, engine, rng_public, p):
        tau = np.full(problem.d, float(p["moment_cap"]))
        eps = privacy.eps if privacy.private else math.inf
        # the capped squared coordinates' mean (per atom from counts), then one noisy release
        mean, m = mapped_rows_mean(problem, np.asarray(problem.x0, dtype=float), held,
                                   lambda g: capped_squares(g, tau), "second-moment cap")
        std = moment_noise_std(tau, m, eps, privacy.delta)
        # the release (the engine's noise), floored (post-processing)
        est = np.maximum(engine.moment_release(mean, std),
                         max(float(p["moment_floor_mult"]) * std, 1e-300))
        p.update(moment_m=m, moment_noise_std=std)
        return sample, pagan_diagonal_from_moments(est)



class PaganPublicScales(Pagan):
    """Pagan with C from public data (the seed's LSTM experiment's route): the second moments of
    the gradients at x0 of `public_m` records drawn from the population by a child generator
    (independent of the private sample, so no privacy cost), C = Pagan's stylized optimum at
    their square roots (floored at 1e-12 of the largest, so C stays finite) [CHOICE]."""

    name = "pagan_public_scales"
    description = "Pagan with C from the second moments of public records"
    scale_source = "public"
    uses_public = True
    params_used = (*Pagan.params_used, "public_m")
    knob_defaults: ClassVar[dict[str, Any]] = {**Pagan.knob_defaults, "public_m": 1000}
    claims = (Claim("pagan_public_scales", "population", "excess_risk", Pagan.claims[0].terms, ASI_PAPER,
                    "Theorem 2 with C from public second moments, stylized case",
                    "Pagan's rate up to the estimate's accuracy",
                    logs=LOGS["pagan_public_scales"]),)

    def _estimate_scales(self, problem, held, sample, privacy, engine, rng_public, p):
        public = problem.sample(int(p["public_m"]), rng_public)
        second = np.mean(problem.per_sample_grads(np.asarray(problem.x0, dtype=float), public) ** 2,
                         axis=0)
        return sample, pagan_diagonal_from_moments(np.maximum(second, 1e-12 * second.max()))
