"""The JL method for generalized linear models (Arora, Bassily, Gonzalez, Guzman, Menart, Ullah
2023, *Faster Rates of Convergence to Stationary Points in Differentially Private Optimization*,
arXiv 2206.00846: Section 6, Algorithm 4, Theorem 6.1, Corollary 6.2).

For a GLM f(w; (x, y)) = phi_y(<w, x>) with features in R^d, Algorithm 4 draws a JL matrix
Phi (k x d; here Gaussian entries N(0, 1/k), the example after Definition E.1), runs a base
private algorithm A on the projected records (Phi x_i, y_i) with Lipschitz and smoothness
constants 2 L0 ||X|| and 2 L1 ||X||^2 and budget (eps, delta/2), and outputs wbar = Phi^T w~.
Because <Phi^T w~, x> = <w~, Phi x>, the base algorithm works on the k-dimensional GLM whose
feature of a record is Phi x; our GLM problems build that problem (`project(Phi)`) over the
same records, so the base algorithm reads the very data the wrapper was given.

Privacy: Phi is data-independent (drawn from the run's seed); the base algorithm clips its
per-sample gradients at its C = 2 L0 ||X|| (the projected problem's G), so its releases keep
their sensitivity whatever distortion Phi has; the output is post-processing. Theorem 6.1's
delta/2 (for the event that Phi stretches some feature by more than 2) is kept, although the
clip makes it unnecessary.

Embedding dimension (Theorem 6.1):
  k = c_k min{argmin_j [g(j) + L0 ||X|| log(n) / sqrt(j)], rank log(2n/delta)},
with g(j) the base algorithm's claimed empirical rate in dimension j (its privacy term
(sqrt(j)/(n eps))^p with the constants hidden, p from its declared claim) and rank the
dimension of the feature subspace. Choices:
* The rank is the problem's declared subspace dimension, treated as public. The theorem uses
  the rank of the design matrix, which is data-dependent (and, released through k, not private);
  a researcher who knows the features' subspace knows r.
* k is capped at d: an embedding into k >= d dimensions cannot save anything (the theorem's
  bound then equals the base algorithm's own).
* The stored iterates are mapped back (Phi^T w~) and thinned to at most `MAX_STORED` (log-spaced,
  plus the smallest-estimate one and the last), so memory stays O(d) per kept iterate at d = 1e4.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from algorithms import rules_bounds
from algorithms.base import Privacy, Trajectory
from algorithms.claim_logs import LOGS
from algorithms.claims import Claim, RulesBound, term
from algorithms.convex.recursive_regularization import RecursiveRegularization
from algorithms.first_order.base import FirstOrderAlgorithm
from algorithms.first_order.noisy_gd import DPGD
from algorithms.first_order.private_spiderboost import PrivateSpiderBoost
from algorithms.privacy.accounting.ledger import ledger_jl
from problems.base import Problem

_ARORA = "Arora, Bassily, Gonzalez, Guzman, Menart, Ullah 2023 (arXiv 2206.00846)"
MAX_STORED = 512


def jl_matrix(k: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Phi with i.i.d. N(0, 1/k) entries: E <Phi u, Phi v> = <u, v> (Definition 2.1 / E.1)."""
    return rng.standard_normal((k, d)) / math.sqrt(k)


def embedding_dim(n: int, d: int, rank: int, privacy: Privacy, p: float | None, G: float,
                  c_k: float = 1.0) -> int:
    """Theorem 6.1's k (module docstring): the j in 1..d minimizing
    (sqrt(j)/(n eps))^p + G log(n)/sqrt(j), against rank log(2n/delta), times c_k, at most d."""
    by_rank = rank * math.log(2 * n / privacy.delta)
    if privacy.private and p:
        j = np.arange(1, d + 1, dtype=float)
        bound = (np.sqrt(j) / (n * privacy.eps)) ** p + G * math.log(n) / np.sqrt(j)
        by_rate = float(j[int(np.argmin(bound))])
    else:
        by_rate = math.inf  # no privacy term: the approximation error alone, largest j wins
    return int(min(d, max(1, math.ceil(c_k * min(by_rate, by_rank)))))


def _thin(traj: Trajectory) -> np.ndarray:
    count = len(traj.iterates)
    if count <= MAX_STORED:
        return np.arange(count)
    idx = np.unique(np.geomspace(1, count, MAX_STORED - 3).astype(int) - 1)
    return np.unique(np.concatenate([[0], idx, [int(np.argmin(traj.est_norm_at)), count - 1]]))


class JLMethod(FirstOrderAlgorithm):
    """Algorithm 4: run `base` in a k-dimensional JL projection of a GLM, map the output back
    (module docstring). Subclasses set `base`; every override of the base algorithm passes
    through, plus c_k (multiplier on Theorem 6.1's k) and k (the dimension itself)."""

    base: ClassVar[type[FirstOrderAlgorithm]]
    knob_defaults: ClassVar[dict[str, Any]] = {"c_k": 1.0}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.params_used = (*cls.base.params_used, "c_k", "k")
        cls.knob_defaults = {**cls.base.knob_defaults, "c_k": 1.0}
        cls.multi_pass = getattr(cls.base, "multi_pass", False)
        cls.setting = cls.base.setting
        cls.data_modes = cls.base.data_modes
        cls.counts_rereads = cls.base.counts_rereads
        cls.hidden_batch_sizes = cls.base.hidden_batch_sizes

    @classmethod
    def public_batch(cls, p: dict[str, Any], n: int, oracle: int = 1) -> int:
        """The base algorithm's (the projection changes no batch)."""
        return cls.base.public_batch(p, n, oracle)

    @classmethod
    def public_grad_evals(cls, p: dict[str, Any], n: int, n_steps: int) -> int:
        return cls.base.public_grad_evals(p, n, n_steps)

    @classmethod
    def step_oracle(cls, p: dict[str, Any], t: int) -> int:
        return cls.base.step_oracle(p, t)

    def __init__(self, *, planted_faults: tuple[str, ...] = (), **overrides: Any) -> None:
        super().__init__(planted_faults=planted_faults, **overrides)
        self.projected_problem: Problem | None = None  # the last run's (tests, audits)

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """Its rules' bound at (n, d, eps, delta) (`rules_bounds.jl_bound`)."""
        return rules_bounds.jl_bound(cls, problem, n, d, privacy, jl_matrix)

    def embedding(self, problem: Problem, n: int, privacy: Privacy) -> int:
        if "k" in self.overrides:
            return int(min(problem.d, int(float(self.overrides["k"]))))
        p = self.base.claims[0].privacy_exponent if self.base.claims else None
        return embedding_dim(n, problem.d, int(problem.rank), privacy, p, problem.constants.G,
                             float(self.overrides.get("c_k", 1.0)))

    def _base(self) -> FirstOrderAlgorithm:
        overrides = {key: v for key, v in self.overrides.items() if key not in ("c_k", "k")}
        return self.base(planted_faults=self.planted_faults, **overrides)

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        """An estimate of the run's rules for dry runs and the cost model: the base algorithm's
        rules on a projection by a stand-in Phi (seeded, not the run's draw), plus k. The
        constants the projection passes (2 L0 ||X||, 2 L1 ||X||^2) do not depend on Phi; a rule
        that reads the projected problem itself (recursive regularization's R = ||w~*||) does,
        so the run's own schedule can differ a little (it is stored with the run)."""
        self._check_glm(problem)
        if n is None:
            raise ValueError(f"n=None is invalid for {self.name}: k depends on n (Theorem 6.1)")
        k = self.embedding(problem, n, privacy)
        stand_in = problem.project(jl_matrix(k, problem.d, np.random.default_rng(0)))
        p = self._base().resolve_params(stand_in, n, Privacy(privacy.eps, privacy.delta / 2))
        return {**p, "k": k}

    def _check_glm(self, problem: Problem) -> None:
        if not callable(getattr(problem, "project", None)) or not hasattr(problem, "rank"):
            raise ValueError(f"problem {problem.name!r} is invalid for {self.name}: the JL method "
                             "needs a generalized linear model (a problem with rank and project())")

    def run(self, problem: Problem, data: Any, privacy: Privacy, rng: np.random.Generator, *,
            time_limit: float | None = None, probe: Any = None, monitor: Any = None) -> Trajectory:
        self._check_glm(problem)
        stream = problem.as_stream(data)
        n = None if math.isinf(stream.remaining) else int(stream.remaining)
        if n is None:
            raise ValueError(f"n=None is invalid for {self.name}: k depends on n (Theorem 6.1)")
        k = self.embedding(problem, n, privacy)
        # The matrix from its own child of the run's generator, drawn before the base runs.
        phi = jl_matrix(k, problem.d, np.random.default_rng(rng.integers(2**63)))
        projected = problem.project(phi)
        self.projected_problem = projected
        base = self._base()
        lifted_monitor = None if monitor is None else (lambda w: monitor(phi.T @ w))
        traj = base.run(projected, stream, Privacy(privacy.eps, privacy.delta / 2), rng,
                        time_limit=time_limit, probe=probe, monitor=lifted_monitor)
        keep = _thin(traj)
        params = {**traj.params, "k": k, "c_k": float(self.overrides.get("c_k", 1.0)),
                  "rank": int(problem.rank), "base": self.base.name, "delta_base": privacy.delta / 2}
        # The run is (eps, delta)-DP: the base spent delta / 2, the JL event the other half.
        spent = ledger_jl(traj.privacy_spent, privacy.delta / 2) if privacy.private \
            else {**traj.privacy_spent, "delta": privacy.delta}
        return dataclasses.replace(
            traj, iterates=traj.iterates[keep] @ phi, steps=traj.steps[keep],
            samples_at=traj.samples_at[keep], est_norm_at=traj.est_norm_at[keep], params=params,
            privacy_spent=spent)


def _jl_claims(name: str, base_rate: str, p: float, paper: str, where: str,
               note: str) -> tuple[Claim, ...]:
    rank_term = term(f"(sqrt(rank)/(n eps))^{base_rate}", rank=p / 2, n=-p, eps=-p)
    return (Claim(name, "empirical", "emp_grad_norm", (rank_term,), paper, where, note,
                  logs=LOGS[name]),
            Claim(name, "population", "grad_norm", (term("n^-1/2", n=-1 / 2), rank_term), paper,
                  where, note, logs=LOGS[name]))


class JLPrivateSpiderBoost(JLMethod):
    """Algorithm 4 around private SpiderBoost (Algorithm 2): Corollary 6.2 (1),
    ||grad F|| ~ 1/sqrt(n) + min{(sqrt(rank)/(n eps))^{2/3}, (n eps)^{-2/5}}."""

    name = "jl_private_spiderboost"
    description = "JL method (GLMs) around private SpiderBoost"
    paper = _ARORA + ", Algorithm 4 + Algorithm 2"
    base = PrivateSpiderBoost
    claims = _jl_claims(name, "(2/3)", 2 / 3, _ARORA, "Corollary 6.2 (1), Table 1 (GLM, non-convex)",
                        "the min with (n eps)^(-2/5) binds when rank > (n eps)^(4/5)")


class JLRecursiveRegularization(JLMethod):
    """Algorithm 4 around recursive regularization with NoisyGD (Algorithm 3): Corollary 6.2
    (2), convex GLMs, ||grad F|| ~ 1/sqrt(n) + min{sqrt(rank)/(n eps), 1/sqrt(n eps)}."""

    name = "jl_recursive_regularization"
    description = "JL method (convex GLMs) around recursive regularization"
    paper = _ARORA + ", Algorithm 4 + Algorithm 3"
    base = RecursiveRegularization
    claims = (Claim(name, "population", "grad_norm",
                    (term("n^-1/2", n=-1 / 2), term("sqrt(rank)/(n eps)", rank=1 / 2, n=-1.0, eps=-1.0)),
                    _ARORA, "Corollary 6.2 (2), Table 1 (GLM, convex)",
                    "the min with (n eps)^(-1/2) binds when rank > n eps",
                    logs=LOGS[name]),)


class JLDPGD(JLMethod):
    """Algorithm 4 around DP-GD: Theorem 6.1 with DP-GD's g(j) = (sqrt(j)/(n eps))^{1/2}
    (our instantiation, not a corollary of the paper): ||grad F_S|| ~ (sqrt(rank)/(n eps))^{1/2}."""

    name = "jl_dp_gd"
    description = "JL method (GLMs) around DP-GD"
    paper = _ARORA + ", Algorithm 4 + DP-GD (instantiated here)"
    base = DPGD
    claims = _jl_claims(name, "(1/2)", 1 / 2, "Theorem 6.1 instantiated with DP-GD (derived here)",
                        "Theorem 6.1", "baseline for the rank claims")
