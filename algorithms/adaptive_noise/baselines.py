"""The baselines seed 002 compares Pasan and Pagan with: private SGD and AdaGrad with isotropic
noise on the same ellipsoid frame, and PDP-SGD (noisy gradients projected on the top subspace of
public gradients)."""

from __future__ import annotations

from typing import Any

import numpy as np

from algorithms import rules_bounds
from algorithms.adaptive_noise.ellipsoid import ASI_PAPER, EllipsoidMethod
from algorithms.base import Privacy
from algorithms.claim_logs import LOGS
from algorithms.claims import Claim, RulesBound, term
from problems.base import Problem


class PrivateSGDIsotropic(EllipsoidMethod):
    """The seed's "naive private SGD" baseline: A = I / B^2 (Euclidean clipping at B, isotropic
    noise), Pasan's AdaGrad-norm step (`algorithms.adaptive_noise.ellipsoid`'s docstring)."""

    name = "private_sgd_iso"
    description = "private SGD baseline: isotropic clipping and noise, AdaGrad-norm step"
    paper = ASI_PAPER + ", baseline"
    step_rule = "pasan"
    shaped = False
    claims = (Claim("private_sgd_iso", "population", "excess_risk",
                    (term("sqrt(d)/sqrt(n)", n=-1 / 2, d=1 / 2), term("d/(n eps)", d=1.0, n=-1.0, eps=-1.0)),
                    ASI_PAPER, "Section 3 (isotropic baseline), stylized case",
                    "baseline: diam_2 sqrt(d) G / (n eps), the isotropic value sqrt(d) sqrt(d) ||sigma||",
                    logs=LOGS["private_sgd_iso"]),)



class PrivateAdaGradIsotropic(EllipsoidMethod):
    """The seed's "private AdaGrad with A_k = I" baseline: isotropic clipping and noise,
    Pagan's diagonal AdaGrad step (`algorithms.adaptive_noise.ellipsoid`'s docstring)."""

    name = "private_adagrad_iso"
    description = "private AdaGrad baseline: isotropic clipping and noise, diagonal AdaGrad step"
    paper = ASI_PAPER + ", baseline"
    step_rule = "pagan"
    shaped = False
    claims = (Claim("private_adagrad_iso", "population", "excess_risk",
                    (term("n^-1/2", n=-1 / 2), term("d/(n eps)", d=1.0, n=-1.0, eps=-1.0)),
                    ASI_PAPER, "Section 3 (isotropic baseline), stylized case",
                    "baseline: diam_inf sum_j noise_j, d isotropic coordinates; the seed: behaves "
                    "like private SGD even at eps = 4", logs=LOGS["private_adagrad_iso"]),)



def top_subspace(public_grads: np.ndarray, k: int) -> np.ndarray:
    """The top-k eigenvectors (d x k, orthonormal columns) of the public gradients' second
    moment (1/m) sum g g^T, from the SVD of the m x d matrix of gradients."""
    _, _, vt = np.linalg.svd(public_grads, full_matrices=False)
    return vt[:k].T



class PDPSGD(EllipsoidMethod):
    """PDP-SGD (Zhou, Wu, Banerjee 2021, *Bypassing the Ambient Dimension: Private SGD with
    Gradient Subspace Identification*, arXiv 2007.03813), the seed's baseline with k = 20 and
    50: isotropic clipping and noise as private SGD, then the released gradient projected onto
    the top-k eigenvectors of the second moment of gradients on public data (post-processing:
    no privacy cost). How we estimate it [CHOICE]: `public_m` fresh records from the
    population (public: a child generator of the run's, independent of the private sample),
    their gradients at the current iterate, recomputed every `refresh` steps; the step is
    Pasan's AdaGrad-norm, so the comparison isolates the noise geometry."""

    name = "pdp_sgd"
    description = "PDP-SGD: private SGD projected onto a public top-k gradient subspace"
    paper = "Zhou, Wu, Banerjee 2021 (arXiv 2007.03813), as the baseline of " + ASI_PAPER
    step_rule = "pasan"
    shaped = False
    uses_public = True
    params_used = (*EllipsoidMethod.params_used, "k", "public_m", "refresh")
    claims = (Claim("pdp_sgd", "population", "excess_risk",
                    (term("n^-1/2", n=-1 / 2), term("sqrt(k)/(n eps)", n=-1.0, eps=-1.0)),
                    "Zhou, Wu, Banerjee 2021 (arXiv 2007.03813)",
                    "their main theorem (rank-k gradient subspace), as the seed cites it",
                    "baseline; its bound assumes gradients near a k-dimensional subspace",
                    logs=LOGS["pdp_sgd"]),)

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.ellipsoid_bound`)."""
        return rules_bounds.ellipsoid_bound(cls, problem, n, d, privacy, kept=20)

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        p = super().resolve_params(problem, n, privacy)
        p["k"] = int(min(problem.d, float(self.overrides.get("k", 20))))
        p["public_m"] = int(float(self.overrides.get("public_m", 1000)))
        p["refresh"] = int(float(self.overrides.get("refresh", 1)))
        return p

    def _post_process(self, released, problem, x, t, rng_public, p):
        if t % p["refresh"] == 0:  # t = 0 first: a run never reuses an earlier run's basis
            public = problem.sample(p["public_m"], rng_public)
            self._basis = top_subspace(problem.per_sample_grads(x, public), p["k"])
        return self._basis @ (self._basis.T @ released)
