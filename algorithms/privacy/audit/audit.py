"""Privacy verification, layer 3: a black-box audit of the released output, and the table of
algorithms and planted bugs over all three layers (`dprates audit`).

Audit: neighbouring data sets D and D' differ in one canary record. The algorithm runs R times
on each (fresh randomness per run); each run is scored by the final iterate projected on the
canary's direction. On a random half of the scores we choose the test (a threshold and its
side) that maximizes the empirical eps; on the other half, Clopper-Pearson bounds (97.5% each,
95% jointly) on its true- and false-positive rates give a lower confidence bound

    eps_lb = log((TPR_low - delta) / FPR_high),

which a correct (eps, delta)-DP algorithm exceeds with probability at most 5%. Where the output
is Gaussian (one release), the empirical Gaussian-DP mu = (mean' - mean) / sd is reported beside
the accountant's mu.

The audit instance makes one release as revealing as it can be: mean estimation with no
spread (every ordinary record is the mean), a start at distance G from it, one O1 step (T = 1)
with step size 1 and batch b, and a canary whose clipped gradient points exactly opposite to
the others', so the release moves by its full sensitivity 2G/b.
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from algorithms import Privacy, available, get_algorithm
from algorithms.privacy.faults import check_faults
from problems import get_problem

AUDIT_D, AUDIT_B = 2, 16


def _instance(faults: tuple[str, ...]) -> tuple[Any, dict[str, Any], np.ndarray, np.ndarray, np.ndarray]:
    """Problem, overrides, D, D' (canary in the batch) and the canary direction."""
    prob = get_problem("mean_estimation", d=AUDIT_D, spread=0.0, start_dist=2.0, radius=2.0)
    v = (prob.x0 - prob.mean) / np.linalg.norm(prob.x0 - prob.mean)
    steps = 2 if "reuse_sample" in faults else 1
    n = steps * AUDIT_B + 1
    data = np.tile(prob.mean, (n, 1))  # spread 0: every ordinary record is the mean
    canary = prob.x0 + 1e3 * v  # gradient x0 - canary = -1e3 v: clipped to -G v
    other = data.copy()
    # With the planted reuse fault the last record of batch 1 is fed again to batch 2.
    other[AUDIT_B - 1 if "reuse_sample" in faults else 0] = canary
    params = {"T": steps, "eta": 1.0, "b": AUDIT_B, "kappa": 1e-300, "saddle_noise": False}
    return prob, params, data, other, v


#: The first-order family on the audit instance: one release that the canary's record enters
#: (the full-batch step of DP-GD, SpiderBoost's anchor, one fresh batch of noisy SGD, one
#: Poisson batch of DP-SGD, the tree Spider's root), then a plain step of size 1 (the tree
#: Spider's steps are normalized, so only the direction is released).
FIRST_ORDER_AUDIT = {
    "dp_gd": {"T": 1, "eta": 1.0},
    "dp_sgd": {"T": 1, "eta": 1.0, "b": AUDIT_B},
    "noisy_sgd": {"b": AUDIT_B, "eta": 1.0},
    "private_spiderboost": {"T": 1, "q": 1, "eta": 1.0, "b": AUDIT_B},
    "tree_private_spider": {"T": 1, "D": 1, "b": 4, "stop_rule": "none"},
    # one stage (lambda >= M) of two iterates: one release, output a linear map of it
    "recursive_regularization": {"R": 1.0, "c_lambda": 1e6, "K_max": 2},
    # one stage; the canary in the first phase, whose noisy output later phases post-process
    "recursive_regularization_linear": {"R": 1.0, "c_lambda": 1e6},
    # the empirical route: one full-batch anchor (the whole budget: T = A_max = 1), a plain
    # step of size 1, a ball too large to project (issue 29)
    "empirical_sosp_spider": {"T": 1, "A_max": 1, "eta": 1.0, "R": 1e9},
}
#: The ellipsoid methods (seed 002) project onto a box and shape their noise by coordinate
#: scales, so their instance is `_ellipsoid_instance`: one full batch (q = 1, a plain Gaussian
#: release), ordinary records and a canary whose projected gradients are opposite boundary
#: points of the ellipsoid along e_1, the direction where a covariance bug (noise_isotropic)
#: adds too little noise. Pagan and isotropic AdaGrad take a step linear in the release
#: (delta0 = alpha = 1e6: H_1 = (|g| + delta0) / alpha ~ 1); the AdaGrad-norm methods release
#: only the step's direction (non-Gaussian output).
ELLIPSOID_AUDIT = {
    "pagan": {"T": 1, "b": AUDIT_B, "alpha": 1e6, "delta0": 1e6, "B": 0.25},
    "private_adagrad_iso": {"T": 1, "b": AUDIT_B, "alpha": 1e6, "delta0": 1e6, "B": 0.25},
    "pasan": {"T": 1, "b": AUDIT_B, "alpha": 0.5},
    "private_sgd_iso": {"T": 1, "b": AUDIT_B, "alpha": 0.5},
    "pdp_sgd": {"T": 1, "b": AUDIT_B, "alpha": 0.5, "k": 2, "public_m": 10},
    # Pagan with C from public records (their moments cost nothing), and from private moments
    # of held-out records: the canary sits among the records the steps read (the last one;
    # the first ceil(0.1 n) are held out), so the audited release is the Pagan step under a
    # data-independent (public) or canary-independent (held-out, disjoint) random C
    "pagan_public_scales": {"T": 1, "b": AUDIT_B, "alpha": 1e6, "delta0": 1e6, "B": 0.25,
                            "public_m": 10},
    "pagan_private_scales": {"T": 1, "b": AUDIT_B, "alpha": 1e6, "delta0": 1e6, "B": 0.25},
}
#: The ellipsoid instance puts the canary at the last record for these (see above).
CANARY_LAST = ("pagan_private_scales",)
#: The JL method (issue 26: every counts family audited) on `_glm_instance`: one release of
#: its base algorithm in the projected space (T = 1 / one anchor / one stage of two iterates).
JL_AUDIT = {
    "jl_dp_gd": {"T": 1, "eta": 1.0, "k": 2},
    "jl_private_spiderboost": {"T": 1, "q": 1, "eta": 1.0, "b": AUDIT_B, "k": 2},
    "jl_recursive_regularization": {"R": 1.0, "c_lambda": 1e6, "K_max": 2, "k": 2},
}


def _ellipsoid_instance(canary_last: bool = False) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """Problem (the stylized box problem, d = 2, scales 1 and 2^-3/2: Pagan's A_22 = 4 A_11),
    D, D' (the canary replacing the first record, or the last) and the canary's direction."""
    prob = get_problem("scaled_linear", d=AUDIT_D, power=1.5, mean_frac=0.0)
    # linear loss: the gradient is the record; every record projects onto the ellipsoid's
    # boundary along -e_1 and the canary's along +e_1 (whitened distance 2: the full
    # replace-one sensitivity)
    data = np.tile([-1e3, 0.0], (AUDIT_B, 1))
    other = data.copy()
    other[-1 if canary_last else 0, 0] = 1e3
    return prob, data, other, np.array([1.0, 0.0])


def _glm_instance() -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """The JL audit: a convex GLM (logistic, d = 4, rank 2). At x0 = 0 a record [y = 1, z]
    has gradient phi'(0) B z = -(1/2) B z, so in the projected space the ordinary records
    [1, -1e3 e_1] clip to +C u and the canary [1, 1e3 e_1] to -C u, u = Phi B e_1 /
    ||Phi B e_1|| (the full replace-one sensitivity 2C / n); the direction is B e_1. Scores
    are divided by ||Phi B e_1|| (Phi is public and data-independent), which makes the lifted
    output <Phi^T w~, B e_1> / ||Phi B e_1|| one Gaussian shift with the base's noise."""
    prob = get_problem("glm", d=AUDIT_D * 2, rank=AUDIT_D, link="logistic", n_atoms=50)
    data = np.tile(np.array([1.0, -1e3, 0.0]), (AUDIT_B + 1, 1))
    other = data.copy()
    other[0] = [1.0, 1e3, 0.0]
    return prob, data, other, prob.basis[:, 0].copy()


#: Algorithms no audit instance here can run (none since issue 26: the JL method runs on
#: `_glm_instance`, the estimated-scale Pagans on the ellipsoid instance).
NOT_AUDITED: dict[str, str] = {}
#: Outputs that are not one Gaussian shift (a Poisson mixture, a normalized direction): the
#: audit reports eps_lb for them, and no mu.
NON_GAUSSIAN_OUTPUT = ("dp_sgd", "tree_private_spider", "recursive_regularization_linear",
                       "pasan", "private_sgd_iso", "pdp_sgd",
                       # the step's scale follows the privately estimated C (a scale mixture)
                       "pagan_private_scales")


def audit_instance_name(algorithm: str) -> str | None:
    """The algorithm whose audit instance `algorithm` runs: itself for a built-in, else the
    nearest built-in class it derives from (a plugin subclassing DPGD runs DP-GD's instance);
    None when there is none (a first-order plugin on its own base, or one without an instance)."""
    from algorithms import BUILTIN

    for klass in get_algorithm(algorithm).__mro__:
        name = klass.__dict__.get("name")
        if name in BUILTIN and name not in NOT_AUDITED:
            return name
    return None


def _scores(algorithm: str, eps: float, delta: float, faults: tuple[str, ...], which: int,
            seeds: range, seed: int, setup: Any = None) -> tuple[np.ndarray, float]:
    if setup is not None:  # e.g. load the plugins that registered `algorithm` in this worker
        setup()
    prob, params, data, other, v = _instance(faults)
    cls = get_algorithm(algorithm)
    like = audit_instance_name(algorithm)
    if like is None:
        raise ValueError(f"algorithm={algorithm!r} has no one-release audit instance: it derives "
                         "from no audited built-in algorithm")
    if like in ELLIPSOID_AUDIT:
        prob, data, other, v = _ellipsoid_instance(like in CANARY_LAST)
        params = ELLIPSOID_AUDIT[like]
    elif like in JL_AUDIT:
        prob, data, other, v = _glm_instance()
        params = JL_AUDIT[like]
    elif getattr(cls, "family", "") == "first_order":
        params = FIRST_ORDER_AUDIT[like]
    elif cls.bounded_step:  # no step-length cap: the released estimate reaches the output as is
        params = {**params, "D": 1e9}
    if cls.noise == "tree":
        # One release is one leaf of one tree (epoch scope, depth 1), whose sensitivity is O1's
        # own 2G/b: the O2 terms of the leaf sensitivity (2 M D / B, 2 alpha eps / sqrt(d)) are
        # made negligible so the noise is calibrated to exactly what the canary can move.
        params = {**params, "tree_scope": "epoch", "alpha": 1e-9}
        if cls.batch_rule == "fixed":
            params["B"] = 10**15
    ds = other if which else data
    out = np.empty(len(seeds))
    mu = math.nan
    for i, r in enumerate(seeds):
        alg = cls(planted_faults=faults, **params)
        rng = np.random.default_rng([seed, zlib.crc32(algorithm.encode()), which, r])
        traj = alg.run(prob, ds, Privacy(eps, delta), rng)
        out[i] = float((traj.iterates[-1] - prob.x0) @ v)
        if algorithm in JL_AUDIT:  # the public Phi's stretch of v (see _glm_instance)
            out[i] /= float(np.linalg.norm(alg.projected_problem.projection @ v))
        mu = traj.params["privacy_mu"]
    return out, mu


def audit_scores(algorithm: str, eps: float, delta: float = 1e-6, runs: int = 4000,
                 faults: tuple[str, ...] = (), seed: int = 0, n_jobs: int = 1, setup: Any = None
                 ) -> tuple[np.ndarray, np.ndarray, float]:
    """Scores on D and on D' (R runs each) and the accountant's mu of these runs."""
    from joblib import Parallel, delayed

    check_faults(faults)
    chunks = [range(s, min(runs, s + 500)) for s in range(0, runs, 500)]
    jobs = [delayed(_scores)(algorithm, eps, delta, faults, which, ch, seed, setup)
            for which in (0, 1) for ch in chunks]
    res = Parallel(n_jobs=n_jobs)(jobs)
    k = len(chunks)
    neg = np.concatenate([r[0] for r in res[:k]])
    pos = np.concatenate([r[0] for r in res[k:]])
    return neg, pos, res[0][1]


def eps_lower_bound(neg: np.ndarray, pos: np.ndarray, delta: float, level: float = 0.95,
                    rng: np.random.Generator | None = None) -> dict[str, float]:
    """A (level) lower confidence bound on eps from scores of M(D) (`neg`) and M(D') (`pos`):
    the test is chosen on one half, its rates bounded on the other (Clopper-Pearson)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    neg, pos = rng.permutation(np.asarray(neg)), rng.permutation(np.asarray(pos))
    ha, hb = len(neg) // 2, len(pos) // 2
    na, nb, pa, pb = neg[:ha], neg[ha:], pos[:hb], pos[hb:]
    qs = np.quantile(np.concatenate([na, pa]), np.linspace(0.001, 0.999, 400))
    best = (-math.inf, 0.0, 1, False)
    for sign in (1, -1):
        for swap in (False, True):
            p_, n_ = (na, pa) if swap else (pa, na)
            for tau in qs:
                tpr = np.mean(sign * p_ > sign * tau)
                fpr = max(np.mean(sign * n_ > sign * tau), 1.0 / len(n_))
                if tpr > delta:
                    est = math.log((tpr - delta) / fpr)
                    if est > best[0]:
                        best = (est, tau, sign, swap)
    _, tau, sign, swap = best
    p_, n_ = (nb, pb) if swap else (pb, nb)
    tp = int(np.sum(sign * p_ > sign * tau))
    fp = int(np.sum(sign * n_ > sign * tau))
    a = (1 - level) / 2
    tpr_lo = float(stats.beta.ppf(a, tp, len(p_) - tp + 1)) if tp > 0 else 0.0
    fpr_hi = float(stats.beta.ppf(1 - a, fp + 1, len(n_) - fp)) if fp < len(n_) else 1.0
    lb = math.log((tpr_lo - delta) / fpr_hi) if tpr_lo > delta else 0.0
    return {"eps_lb": max(0.0, lb), "tpr_low": tpr_lo, "fpr_high": fpr_hi, "threshold": float(tau)}


def empirical_mu(neg: np.ndarray, pos: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """(mean' - mean) / pooled sd with a normal-theory interval (Gaussian outputs; the
    standard error of a standardized mean difference)."""
    sd = math.sqrt((np.var(neg, ddof=1) + np.var(pos, ddof=1)) / 2)
    gap = abs(float(np.mean(pos) - np.mean(neg)))
    if sd == 0:  # deterministic outputs (e.g. no noise left after a clip to the domain)
        return (math.inf, math.inf, math.inf) if gap > 0 else (0.0, 0.0, 0.0)
    mu = gap / sd
    se = math.sqrt(1 / len(neg) + 1 / len(pos) + mu * mu / (2 * (len(neg) + len(pos))))
    z = float(stats.norm.ppf(1 - (1 - level) / 2))
    return mu, mu - z * se, mu + z * se


@dataclass
class AuditResult:
    algorithm: str
    eps: float
    faults: tuple[str, ...]
    runs: int
    eps_lb: float
    mu_empirical: float
    mu_low: float
    mu_high: float
    mu_accountant: float
    seconds: float

    mu_low_999: float = math.nan

    @property
    def eps_flagged(self) -> bool:
        return self.eps_lb > self.eps

    gaussian_output: bool = True

    @property
    def mu_flagged(self) -> bool:
        """The empirical mu's 99.9% lower bound lies above the accountant's mu (where the output
        is Gaussian on the audit instance, this is the sharper check)."""
        return self.gaussian_output and self.mu_low_999 > self.mu_accountant

    @property
    def flagged(self) -> bool:
        return self.eps_flagged or self.mu_flagged


def audit(algorithm: str, eps: float, delta: float = 1e-6, runs: int = 4000,
          faults: tuple[str, ...] = (), seed: int = 0, n_jobs: int = 1,
          setup: Any = None) -> AuditResult:
    """Layer 3 for one algorithm at one eps (see the module docstring). `setup`: a picklable
    callable each worker runs first (the CLI passes the loading of the plugins that registered
    `algorithm`, so worker processes know its name)."""
    if algorithm not in available():
        raise ValueError(f"algorithm={algorithm!r} is invalid: must be one of {', '.join(available())}")
    if not (isinstance(runs, int) and runs >= 100):
        raise ValueError(f"runs={runs!r} is invalid: must be an integer >= 100")
    if not 0 < eps < math.inf:
        raise ValueError(f"eps={eps!r} is invalid: must be a finite number > 0")
    t0 = time.perf_counter()
    neg, pos, mu_acc = audit_scores(algorithm, eps, delta, runs, faults, seed, n_jobs, setup)
    lb = eps_lower_bound(neg, pos, delta, rng=np.random.default_rng([seed, 7]))
    mu, lo, hi = empirical_mu(neg, pos)
    lo999 = empirical_mu(neg, pos, 0.998)[1]  # one-sided 99.9%
    return AuditResult(algorithm, eps, tuple(faults), runs, lb["eps_lb"], mu, lo, hi, mu_acc,
                       time.perf_counter() - t0, lo999,
                       audit_instance_name(algorithm) not in NON_GAUSSIAN_OUTPUT)
