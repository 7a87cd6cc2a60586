"""The private stochastic Spider engine (seed 000, Algorithm 2 with the oracles of Algorithm 3).

One loop, with the parts where the papers differ made pluggable:

* noise: fresh Gaussian noise per oracle answer (Ganesh et al. 2023) or one binary-tree
  mechanism (seed 000 Algorithm 1, Lemma 3.7);
* O2 batch: fixed B, or adaptive b_t = max{g sqrt(d)/(alpha eps), g kappa / alpha^2, 1} with
  g = M ||x_t - x_{t-1}|| (seed 000 Lemma 3.8 / Theorem 3.11; with eta = 1/M, g equals the
  paper's ||nabla~_{t-1}||);
* drift: sum of squared steps since the last O1 call (Ganesh) or sum of released estimate
  norms (seed 000 Algorithm 2 line 15); O1 is called when drift >= kappa (line 4);
* saddle escape (lines 9-11): when the previous released estimate is small and the frozen
  counter has run out, add g_t ~ N(0, zeta^2/d I) and freeze for Gamma steps.

Privacy is enforced here, not assumed: O1 averages per-sample gradients clipped to C1 and O2
averages per-sample gradient differences clipped to C2 <= M ||x_t - x_{t-1}||, so with
replace-one neighbours every release has L2 sensitivity at most 2 C / batch, whatever the
problem's stated constants. Each record is used once (disjoint batches from a stream).

Data: records (rows; O1 / O2 clip each per-sample row) or a counts stream (`problems.counts.stream`,
exact batch statistics). With counts, O1 / O2 take the batch mean from the problem's counts
oracles (`algorithms.counts_maps`): on an atoms layout every per-record clip is applied per
atom (exact at any threshold); on a product layout the mean equals the clipped mean only while
clipping is the identity, so `o1_leaf` and `o2_leaf` check at every call that the clip
threshold is at least the largest per-record norm over the whole support at the public
iterate (never over the values the batch holds: that would make the check a function of the
data; `CountsClipError` otherwise, before the release is noised). The privacy
verification (`probe`, planted faults) needs records.

A step that `bounded_step` shortens to length D adds exactly D^2 to the squared-step drift (not
its float norm^2): with D = sqrt(kappa) an ulp would otherwise decide "drift >= kappa".

Ambiguities of seed 000's pseudo-code and the readings taken (each a knob):
* line 10 resets the drift at each escape perturbation. `adaptive_tree_spider` takes it
  literally (`reset_drift_on_escape=True`): an escape inside an epoch postpones the next O1
  refresh. The squared-step Spiders (`gaussian_spider`, `tree_spider`) default to False: their
  drift is, by Ganesh et al.'s rule, the sum of squared steps since the last O1 call, and that
  sum bounds the O2 noise accumulated over an epoch. With the reset, on hard_valley (d 10,
  eps 0.1, target 0.05, 8 seeds) the Gaussian Spider stalled where its frozen epoch noise
  cancelled the gradient (released estimate 0.0065 against ||grad F|| ~ 0.1, steps 24x shorter
  than eta ||grad F||), escapes fired every Gamma + 1 steps and each reset the drift, so O1
  never refreshed (epochs up to 18,900 steps, squared steps 7-29x kappa, noise norm 0.20 against
  the rules' 0.065) and 3 of 8 runs ended at the horizon T; without it 8 of 8 reached the target
  in 0.07-0.13 T with 0.32-0.47x the adaptive Spider's samples (test_algorithms.py).
* NODE's line 14 ("k' <= k") is read as k' <= t (see `algorithms.privacy.mechanisms`).
* Algorithm 2 uses one TREE(t) over the global step t while nabla_t restarts at each O1 call
  (`tree_scope="global"`, default, literal). Written as a prefix sum, the O1 answer is the
  increment O1(x_t) - nabla_{t-1}, so a record moves its own leaf *and* the next restart's
  leaf: the accountant is told 2 x depth nodes. `tree_scope="epoch"` restarts the tree at
  each O1 call (Arora et al. 2023, Algorithm 1): a record moves one leaf, depth nodes.
* line 9's threshold gamma log^3(B M d / (rho omega)) and Proposition 3.4's zeta are far off
  the scale of the real estimator error once privacy noise is present (measured in early runs:
  perturbations fire every Gamma + 1 steps or never). Default `escape_rule="noise_scaled"`:
  threshold c_escape * max(gamma, noise_norm), zeta = c_zeta * max(gamma, noise_norm) /
  sqrt(log(d / omega)), where noise_norm is the bound on the privacy-noise norm in the
  released estimate; `escape_rule="literal"` uses the paper's formulas.
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import numpy as np

from algorithms.base import Privacy, Trajectory
from algorithms.claims import Claim, RulesBound
from algorithms.privacy.accounting.gdp import gdp_mu
from algorithms.privacy.faults import check_faults
from algorithms.rule_constants import require_rule_constants
from algorithms.sosp.engine import run_engine
from problems.base import Constants, Problem
from problems.counts.stream import CountsStream

#: Knobs for the constants that O~ hides; all default 1 (README, the protocol, items 3-4).
KNOB_DEFAULTS: dict[str, Any] = {
    "alpha_mult": 1.0,  # multiplier on the target accuracy alpha (gamma)
    "budget_mult": 1.0,  # multiplier on the privacy budget the rules assume (eps_eff)
    "horizon_mult": 1.0,  # multiplier on the horizon T
    "c_escape": 1.0,  # constant of the escape threshold
    "c_zeta": 1.0,  # constant of the escape noise
    "c_Gamma": 1.0,  # constant of the frozen window
    "omega": 0.1,  # failure probability inside the logs of Lemma 3.3 / Proposition 3.4
    "escape_rule": "noise_scaled",
    "reset_drift_on_escape": True,
    "saddle_noise": True,  # False switches the escape perturbation g_t off (a test control)
    "tree_scope": "global",
    "max_iterate_floats": 4_000_000,  # memory cap of the stored iterates (see Trajectory)
}

#: Parameters any run can override directly (then no rule computes them).
OVERRIDABLE = ("alpha", "b", "B", "kappa", "D", "eta", "T", "Gamma", "zeta",
               "escape_threshold", "sigma", "noise_multiplier", "target_alpha")
#: The noise override each mechanism takes: the tree's node std `sigma`, the Gaussian
#: releases' `noise_multiplier` (std per unit of sensitivity). Either must be at least what
#: (eps, delta) needs; the other mechanism's key is refused, never silently ignored.
NOISE_OVERRIDE = {"tree": "sigma", "gaussian": "noise_multiplier"}

_CHOICES = {
    "escape_rule": ("noise_scaled", "literal"),
    "tree_scope": ("global", "epoch"),
}


def validate_overrides(name: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Check override keys and values before any work; ValueError names key, value, allowed."""
    out = {}
    for key, value in overrides.items():
        if key not in KNOB_DEFAULTS and key not in OVERRIDABLE:
            allowed = ", ".join([*KNOB_DEFAULTS, *OVERRIDABLE])
            raise ValueError(f"parameter {key}={value!r} is invalid for {name}: allowed: {allowed}")
        if key in _CHOICES:
            if value not in _CHOICES[key]:
                raise ValueError(f"parameter {key}={value!r} is invalid: must be one of {_CHOICES[key]}")
        elif key in ("reset_drift_on_escape", "saddle_noise"):
            if not isinstance(value, bool):
                raise ValueError(f"parameter {key}={value!r} is invalid: must be true or false")
        else:
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"parameter {key}={value!r} is invalid: must be a number") from None
            if not v > 0 or (math.isinf(v) and key not in ("T",)):
                raise ValueError(f"parameter {key}={value!r} is invalid: must be a finite number > 0")
            if key == "omega" and v >= 1:
                raise ValueError(f"parameter omega={value!r} is invalid: must be in (0, 1)")
        out[key] = value
    return out


class Spider:
    """Base class of the private Spider configurations (see module docstring).

    Subclasses set `noise` ("gaussian" | "tree"), `batch_rule` ("fixed" | "adaptive"),
    `drift_rule` ("squared_steps" | "estimate_norms"), `bounded_step` and implement
    `theory_params`. `claimed_exponent` is the p of alpha ~ (sqrt(d)/(n eps))^p (None: no claim).
    """

    name = "spider"
    description = ""
    paper = ""
    noise = "tree"
    batch_rule = "adaptive"
    drift_rule = "estimate_norms"
    bounded_step = False
    claimed_exponent: float | None = None
    claimed_rate = ""
    #: The rates the papers claim for this algorithm (`algorithms.claims`); () for none.
    claims: ClassVar[tuple[Claim, ...]] = ()
    family = "sosp_spider"
    #: Data modes the engine runs on (counts: exact batch statistics, `problems.counts.stream`).
    data_modes: ClassVar[tuple[str, ...]] = ("records", "counts")
    #: Both calibrations of `algorithms.privacy.accounting.gdp` (the papers' formulas and tight GDP).
    calibrations: ClassVar[tuple[str, ...]] = ("tight", "theory")
    #: Problem constants the rules divide by (`algorithms.rule_constants`): eta = 1/M, the
    #: batch rules' G gamma / M^2, the escape window's log(d M B0 / (rho gamma omega)).
    rule_constants: ClassVar[dict[str, str]] = {"M": "eta = 1 / M", "G": "kappa ~ G gamma / M^2"}
    #: Knob defaults of this configuration that differ from KNOB_DEFAULTS.
    knob_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, *, planted_faults: tuple[str, ...] = (), **overrides: Any) -> None:
        self.overrides = validate_overrides(self.name, overrides)
        for mech, key in NOISE_OVERRIDE.items():
            if mech != self.noise and key in self.overrides:
                raise ValueError(f"parameter {key}={self.overrides[key]!r} is invalid for "
                                 f"{self.name}: its noise is {self.noise!r}, whose override is "
                                 f"{NOISE_OVERRIDE[self.noise]}")
        # Negative controls of the privacy verification only (algorithms.privacy.faults).
        self.planted_faults = check_faults(planted_faults)

    @classmethod
    def predicted_exponent(cls, view: str, x: str) -> float | None:
        """The exponent the claimed rate predicts for a log-log fit (None: no claim).

        The claim alpha ~ n^{-1/3} + (sqrt(d)/(n eps))^p, in its privacy-dominated regime, i.e.
        sample complexity n*(alpha) ~ sqrt(d) / (eps alpha^{1/p}) (seed 000, Theorem 3.11;
        Ganesh et al. 2023 for p = 3/7). view "error": log alpha against log x, x = privacy
        (sqrt(d)/(n eps)) -> p, n -> -p, eps -> -p, d -> p/2. view "sample_complexity":
        log n* against log x, x = alpha -> -1/p, eps -> -1, d -> +1/2.
        """
        return cls.claims[0].predicted_slope(view, x) if cls.claims else None

    # -- parameters ---------------------------------------------------------------------------
    def knobs(self) -> dict[str, Any]:
        defaults = {**KNOB_DEFAULTS, **self.knob_defaults}
        return {k: self.overrides.get(k, v) for k, v in defaults.items()}

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        """Every parameter of a run from the paper's formulas (see subclasses)."""
        raise NotImplementedError

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """The accuracy the Spider's own rules configure at a budget n (seed 000 Theorem 3.11 /
        Proposition 3.4 for the adaptive tree Spider; the fixed-batch rules of `spiders` for the
        others): alpha = theory_params(...)["alpha"] at knobs KNOB_DEFAULTS, split as
        private = max(alpha(n, eps) - alpha(n, inf), 0) and statistical = alpha(n, inf)."""
        def alpha(eps: float) -> float:
            pr = Privacy(eps, privacy.delta, privacy.calibration)
            return float(cls.theory_params(problem.constants, n, d, pr, **KNOB_DEFAULTS)["alpha"])

        stat = alpha(math.inf)
        return RulesBound(max(alpha(privacy.eps) - stat, 0.0), stat,
                          f"the Spider's rules: the alpha {cls.name}'s theory_params configure at "
                          "n, knobs at 1")

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        """theory_params with knobs and direct overrides applied, plus derived quantities."""
        require_rule_constants(self.name, problem, self.rule_constants)
        knobs = self.knobs()
        direct = {k: v for k, v in self.overrides.items() if k in OVERRIDABLE}
        p = self.theory_params(problem.constants, n, problem.d, privacy, **knobs, **direct)
        for key, value in direct.items():
            if key in ("target_alpha",):
                continue
            p[key] = value
        for key in ("b", "B", "T", "Gamma"):
            if key in p and p[key] is not None and math.isfinite(p[key]):
                p[key] = max(1, math.ceil(p[key]))
        p.update({k: v for k, v in knobs.items()})
        return p

    # -- the run ------------------------------------------------------------------------------
    def run(self, problem: Problem, data: Any, privacy: Privacy,
            rng: np.random.Generator, *, time_limit: float | None = None,
            probe: Any = None, monitor: Any = None) -> Trajectory:
        """Run on `data` (an array from problem.sample or a stream); randomness only from rng.

        `time_limit` (seconds of wall time, optional) ends the run after the step that crosses
        it, with stop_reason "timeout"; the trajectory so far is returned (a sweep's cell limit).
        `probe` (optional, for the privacy verification): an object whose `release(**info)` is
        called at every step with the state, the batch, the clip bound, the pre-noise leaf,
        the sensitivity told to the accountant and the released estimate (see `engine.run_engine`).
        `monitor` (optional, a measurement device of the benchmark, not part of the algorithm):
        called with each stored iterate; True ends the run with stop_reason "target_reached".
        Everything up to that iterate is what the full run would have produced.
        """
        if not isinstance(privacy, Privacy):
            raise ValueError(f"privacy={privacy!r} is invalid: must be an algorithms.Privacy")
        if time_limit is not None and not time_limit > 0:
            raise ValueError(f"time_limit={time_limit!r} is invalid: must be None or a number > 0")
        stream = problem.as_stream(data)
        if isinstance(stream, CountsStream) and (probe is not None or self.planted_faults):
            raise ValueError("the privacy verification (probe, planted_faults) runs on record "
                             "mode: pass records (data='records'), not a counts stream")
        n = None if math.isinf(stream.remaining) else int(stream.remaining)
        p = self.resolve_params(problem, n, privacy)
        deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
        return run_engine(self, problem, stream, privacy, rng, p, deadline, probe, monitor)


__all__ = ["KNOB_DEFAULTS", "OVERRIDABLE", "Spider", "gdp_mu", "validate_overrides"]
