"""Claims as data: each algorithm declares the rates its paper claims for it.

A claim names its setting (population risk F or the empirical risk F_S of the run's own
sample), the metric it bounds at the output, the terms of the rate with their exponents in
n, d, eps (the privacy term is written in the one variable the papers use,
privacy = sqrt(d) / (n eps)), and the paper and theorem it comes from. `dprates claims` prints
every claim of every registered algorithm; a report's claims table lists each with its measured
exponent and verdict, or "not measured".

Metrics (computed by `problems.evaluation.metrics` with exact oracles):
* alpha_sosp: max(||grad F||, lambda_-(hess F)^2 / rho), the SOSP accuracy (seed 000, Def. 1.2);
* grad_norm: ||grad F(x)||, population first-order stationarity;
* emp_grad_norm: ||grad F_S(x)|| on the run's own sample S (empirical stationarity);
* excess_risk: F(x) - min F;
* emp_alpha_sosp: alpha_SOSP of F_S on the run's own sample S (`problems.empirical_hessian`).
"""

from __future__ import annotations

from dataclasses import dataclass

SETTINGS = ("population", "empirical")
METRICS = ("alpha_sosp", "grad_norm", "emp_grad_norm", "excess_risk", "emp_alpha_sosp")
#: Variables a rate term can depend on; "privacy" is sqrt(d) / (n eps).
VARIABLES = ("n", "d", "eps", "privacy", "rank")


@dataclass(frozen=True)
class RateTerm:
    """One term of a claimed rate: prod over variables of var^exponent (constants and logs
    hidden)."""

    exponents: tuple[tuple[str, float], ...]
    text: str

    def __post_init__(self) -> None:
        for var, _ in self.exponents:
            if var not in VARIABLES:
                raise ValueError(f"rate variable {var!r} is invalid: must be one of {VARIABLES}")

    def exponent(self, var: str) -> float:
        return dict(self.exponents).get(var, 0.0)


def term(text: str, **exponents: float) -> RateTerm:
    return RateTerm(tuple(sorted(exponents.items())), text)


#: Quantities whose logarithm a claim's O~ may hide, as `analysis.verdict_engine` evaluates them
#: at a design point: T the rules' horizon (their `theory_params`' "T"), 1/alpha the target (or
#: the measured value in the error view), d, 1/delta, n, n eps, 1/eps, rank.
LOG_QUANTITIES = ("T", "1/alpha", "d", "1/delta", "n", "n eps", "1/eps", "rank",
                  "d M B0/(rho alpha omega)", "R/r", "L1/lambda", "2n/delta")


@dataclass(frozen=True)
class LogFactor:
    """A log factor a claim's O~ hides: (log quantity)^k with 0 <= k <= max_power, read from the
    theorem or its proof (`source` says where). A verdict allows the measured curve any such k
    (and a free constant) before it says "slower" or "faster"."""

    quantity: str
    max_power: float
    source: str

    def __post_init__(self) -> None:
        if self.quantity not in LOG_QUANTITIES:
            raise ValueError(f"log quantity={self.quantity!r} is invalid: must be one of "
                             f"{LOG_QUANTITIES}")
        if not self.max_power > 0:
            raise ValueError(f"max_power={self.max_power!r} is invalid: must be > 0")


@dataclass(frozen=True)
class RulesBound:
    """The bound an algorithm's own parameter rules configure at one design point (its
    `rules_bound` classmethod): the theorem's bound on the claim's metric with the rules' T,
    step, batch and noise substituted and the problem's constants, knobs at 1, logs included.
    `private` is the part that vanishes at eps = inf, `statistical` the rest; `source` names
    the theorem / lemma the formula is from."""

    private: float
    statistical: float
    source: str

    @property
    def total(self) -> float:
        return self.private + self.statistical

    @property
    def private_share(self) -> float:
        return self.private / self.total if self.total > 0 else float("nan")


@dataclass(frozen=True)
class Claim:
    """A rate claim: metric(output) <= sum of terms, up to constants and logs, w.h.p. `logs`:
    the log factors the O~ hides (empty: none, or none declared yet)."""

    algorithm: str
    setting: str
    metric: str
    terms: tuple[RateTerm, ...]
    paper: str
    where: str  # theorem / corollary / table row
    note: str = ""
    logs: tuple[LogFactor, ...] = ()

    def __post_init__(self) -> None:
        if self.setting not in SETTINGS:
            raise ValueError(f"setting={self.setting!r} is invalid: must be one of {SETTINGS}")
        if self.metric not in METRICS:
            raise ValueError(f"metric={self.metric!r} is invalid: must be one of {METRICS}")
        if not self.terms:
            raise ValueError("terms=() is invalid: a claim has at least one rate term")

    @property
    def rate(self) -> str:
        return " + ".join(t.text for t in self.terms)

    @property
    def privacy_term(self) -> RateTerm | None:
        """The first term that depends on eps (the privacy term), None if there is none."""
        for t in self.terms:
            if t.exponent("privacy") or t.exponent("eps"):
                return t
        return None

    @property
    def statistical_term(self) -> RateTerm | None:
        """The first term without eps that depends on n (e.g. n^-1/2), None if there is none."""
        for t in self.terms:
            if t is not self.privacy_term and t.exponent("n"):
                return t
        return None

    @property
    def privacy_exponent(self) -> float | None:
        """p of the claim's privacy term (sqrt(d)/(n eps))^p, None if it has none (a term in
        sqrt(rank)/(n eps) reports its exponent of 1/(n eps))."""
        t = self.privacy_term
        if t is None:
            return None
        return t.exponent("privacy") or -t.exponent("eps")

    def effective_exponent(self, var: str) -> float:
        """The privacy term's exponent in n, d, eps or rank, with privacy = sqrt(d)/(n eps)
        unfolded (p -> n^-p eps^-p d^(p/2))."""
        t = self.privacy_term
        if t is None:
            return 0.0
        unfold = {"n": -1.0, "eps": -1.0, "d": 0.5}.get(var, 0.0)
        return t.exponent(var) + unfold * t.exponent("privacy")

    def predicted_slope(self, view: str, x: str) -> float | None:
        """The log-log slope the claim predicts where its privacy term dominates.

        view "error": log metric against log x: the privacy term's exponent in x (privacy -> p,
        n -> -p, eps -> -p, d -> p/2 for a term in sqrt(d)/(n eps); d -> 0 and rank -> p/2 for
        one in sqrt(rank)/(n eps));
        view "sample_complexity": log n* against log x, from inverting metric = target
        (alpha -> -1/p, eps -> -1, d -> 1/2). None when the claim has no privacy term;
        ValueError for a (view, x) it predicts nothing for.
        """
        p = self.privacy_exponent
        if p is None:
            return None
        t = self.privacy_term
        if view == "error" and x in ("n", "d", "eps", "rank"):
            return self.effective_exponent(x)
        if view == "error" and x == "privacy":
            if not t.exponent("privacy"):
                raise ValueError(f"(view, x)=({view!r}, {x!r}) is invalid for {self.algorithm}'s "
                                 f"claim {t.text}: it is not a function of sqrt(d)/(n eps); fit "
                                 "against n, eps, d or rank")
            return p
        table = {("sample_complexity", "alpha"): -1 / p, ("sample_complexity", "eps"): -1.0,
                 ("sample_complexity", "d"): 0.5}
        if (view, x) not in table or not t.exponent("privacy"):
            raise ValueError(f"(view, x)=({view!r}, {x!r}) is invalid: the claim predicts "
                             "error/privacy, error/n, error/eps, error/d, error/rank"
                             + ("" if not t.exponent("privacy") else ", " + ", ".join(
                                 f"{v}/{k}" for v, k in table)))
        return table[(view, x)]

    def as_row(self) -> dict[str, str]:
        return {"algorithm": self.algorithm, "setting": self.setting, "metric": self.metric,
                "rate": self.rate, "paper": self.paper, "where": self.where, "note": self.note}


@dataclass(frozen=True)
class LowerBound:
    """A lower bound a paper proves for every (eps, delta)-DP algorithm on some instance: the
    floor no claim can beat on a worst case (a particular instance may sit below it)."""

    setting: str
    metric: str
    term: RateTerm
    paper: str
    where: str
    #: the factor the proof makes explicit, times the problem's Lipschitz constant G and
    #: sqrt(log(1/delta)); the rest of the Omega (the mean-estimation constant) is set to 1
    explicit_factor: float
    note: str = ""

    def as_row(self) -> dict[str, str]:
        return {"algorithm": "(any DP algorithm)", "setting": self.setting, "metric": self.metric,
                "rate": "Omega(" + self.term.text + ")", "paper": self.paper, "where": self.where,
                "note": self.note}


#: Arora et al. 2023, Theorem 4.3: ||grad F_S(w)|| = Omega(L0 min{1, sqrt(d log(1/delta))/(n eps)})
#: on a Huber-loss instance (convex), by reduction to DP mean estimation; the proof's explicit
#: factor is L1/2 * L0/(4 L1) = L0/8. The same bound holds for ||grad F|| up to logs.
LOWER_BOUNDS = (
    LowerBound("empirical", "emp_grad_norm",
               term("sqrt(d log(1/delta))/(n eps)", privacy=1.0),
               "Arora, Bassily, Gonzalez, Guzman, Menart, Ullah 2023 (arXiv 2206.00846)",
               "Theorem 4.3 (Section 4.2)", 1 / 8,
               "convex (Huber) instance; also for ||grad F|| up to logs; drawn as a slope-1 line "
               "(G sqrt(log(1/delta)) x / 8) on x = privacy plots of both metrics"),
)


def validate_claims(name: str, claims: tuple[Claim, ...]) -> None:
    """Every claim of an algorithm names it (a copy-paste slip would file a claim elsewhere)."""
    for c in claims:
        if c.algorithm != name:
            raise ValueError(f"claim of {c.algorithm!r} is declared on algorithm {name!r}")
