"""The shared frame of the first-order private optimizers: parameters, the run contract,
the trajectory they return.

Every algorithm here honours the suite's contract
`cls(**overrides).run(problem, data, privacy, rng, *, time_limit, probe, monitor) -> Trajectory`
(the Spider engine's, `algorithms.sosp.spider`), so the runner, the store, the fits and the reports
take them like the SOSP Spiders. Privacy is enforced the same way: per-sample gradients are
clipped to C before they are averaged (`algorithms.privacy.mechanisms.clip_rows`), whatever the
problem's stated constants, and the noise comes from `algorithms.privacy.accounting.gdp`.

Counts mode (`problems.counts.stream`, `problems.counts.dataset`): an algorithm that lists "counts"
in `data_modes` takes its records as value counts over a finite support; its sample is a
`CountsBatch`, its subsamples come from exact reads of the counts (binomial thinning,
hypergeometric splits) and every per-record map (clip, gradient-difference clip, ellipsoid
projection) is applied per atom (`algorithms.counts_maps`). On a product layout a map is
allowed only where the whole-support guard proves it the identity (CountsClipError
otherwise), and an algorithm that re-reads its sample (`counts_rereads`) is refused there
before any work.

Settings: an *empirical* algorithm optimizes F_S on a finite sample S of n records that it may
visit many times (it materializes the first n records of the stream, so n must be finite); a
*population* algorithm reads each record once, in order.
"""

from __future__ import annotations

import difflib
import math
import time
import warnings
from typing import Any, ClassVar

import numpy as np

from algorithms.base import Privacy, Trajectory
from algorithms.claims import Claim, RulesBound
from algorithms.privacy.accounting.gdp import require_calibration
from algorithms.privacy.engine import RealizedCounts  # noqa: F401 (re-export: its old home)
from algorithms.privacy.faults import check_faults
from algorithms.rule_constants import require_rule_constants
from algorithms.step_log import FIRST_ORDER_COLUMNS, Columns, iterate_columns
from problems.base import Constants, Problem
from problems.counts.dataset import require_resampling_exact
from problems.counts.layouts import CountsBatch
from problems.counts.stream import CountsStream

_INT_PARAMS = ("T", "b")


class FirstOrderAlgorithm:
    """Base class: subclasses set `name`, `setting`, `claims`, the keys of `params_used`
    and implement `theory_params` and `_run`."""

    name = "first_order"
    description = ""
    paper = ""
    setting = "empirical"
    #: The overrides this algorithm accepts (besides target_alpha and max_iterate_floats): direct
    #: values (T steps, eta step size, b batch, C clip) and the knobs c_* / *_mult (README).
    params_used: ClassVar[tuple[str, ...]] = ()
    claims: ClassVar[tuple[Claim, ...]] = ()
    claimed_exponent: float | None = None  # the Spider-era API (p of the first claim's privacy term)
    claimed_rate = ""
    #: The constants the O~ hides, at their theory values (a grid over them is the tuned envelope).
    knob_defaults: ClassVar[dict[str, Any]] = {"c_T": 1.0, "c_b": 1.0, "eta_mult": 1.0}
    noise = "gaussian"
    family = "first_order"
    data_modes: ClassVar[tuple[str, ...]] = ("records",)
    #: The calibrations this family implements (`algorithms.privacy.accounting.gdp`): tight only, unless a
    #: subclass writes its paper's formula (a run with another one is refused before any work).
    calibrations: ClassVar[tuple[str, ...]] = ("tight",)
    #: Counts mode: how the algorithm re-reads its one sample (e.g. "Poisson subsamples"), or
    #: "" when it reads each record once or the full batch only; a re-reading algorithm is
    #: refused on a product layout before any work (`problems.counts.dataset`).
    counts_rereads: ClassVar[str] = ""
    #: Why an algorithm without "counts" in data_modes runs on records only (its error says so).
    records_only_reason: ClassVar[str] = ""
    #: Problem constants the parameter rules divide by (constant -> the rule): a problem stating
    #: one of them as 0 is refused with one line before any work (`algorithms.rule_constants`).
    rule_constants: ClassVar[dict[str, str]] = {}
    #: True where some step's batch is Poisson-sampled: its realized size |B_t| is hidden by the
    #: accountant, so the step log and grad_evals carry `public_batch` (the expected q n) and
    #: the realized sizes are evaluation-only (`RealizedCounts`, `bench.disclosure`).
    hidden_batch_sizes: ClassVar[bool] = False

    @classmethod
    def public_batch(cls, p: dict[str, Any], n: int, oracle: int = 1) -> int:
        """The batch an `oracle` step logs, from public values only (the parameters used and
        the n records the steps read). Families with hidden batch sizes override it; the
        others log what they read, which is then public (fixed or set by released values)."""
        raise NotImplementedError(f"{cls.name} logs the batches it reads (they are public)")

    @classmethod
    def public_grad_evals(cls, p: dict[str, Any], n: int, n_steps: int) -> int:
        """The per-sample gradient evaluations a run of `n_steps` steps is said to make, from
        public values (families with hidden batch sizes override it)."""
        raise NotImplementedError(f"{cls.name} counts the evaluations it makes (they are public)")

    @classmethod
    def step_oracle(cls, p: dict[str, Any], t: int) -> int:
        """The oracle of step t (1-based): 1 here; a schedule of anchors overrides it."""
        return 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """The Spider-era exponent and rate text follow the first declared claim unless set."""
        super().__init_subclass__(**kwargs)
        if cls.claims and cls.__dict__.get("claimed_exponent") is None:
            cls.claimed_exponent = cls.claims[0].privacy_exponent
        if cls.claims and not cls.__dict__.get("claimed_rate"):
            cls.claimed_rate = cls.claims[0].rate

    #: String options (name -> allowed values); every other override is a number.
    _CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init__(self, *, planted_faults: tuple[str, ...] = (), **overrides: Any) -> None:
        allowed = (*self.params_used, "target_alpha", "max_iterate_floats")
        out = {}
        for key in [k for k in overrides if k in self._CHOICES]:
            value = overrides.pop(key)
            if value not in self._CHOICES[key]:
                raise ValueError(f"parameter {key}={value!r} is invalid: must be one of "
                                 f"{self._CHOICES[key]}")
            out[key] = value
        for key, value in overrides.items():
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=2, cutoff=0.6)
                hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
                raise ValueError(f"parameter {key}={value!r} is invalid for {self.name}{hint}: "
                                 f"allowed: {', '.join(allowed)}")
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"parameter {key}={value!r} is invalid: must be a number") from None
            if not (v > 0 and math.isfinite(v)):
                raise ValueError(f"parameter {key}={value!r} is invalid: must be a finite number > 0")
            if key in _INT_PARAMS and v != int(v):
                raise ValueError(f"parameter {key}={value!r} is invalid: must be an integer >= 1")
            out[key] = value
        self.overrides = out
        self.planted_faults = check_faults(planted_faults)

    @classmethod
    def predicted_exponent(cls, view: str, x: str) -> float | None:
        return cls.claims[0].predicted_slope(view, x) if cls.claims else None

    def knobs(self) -> dict[str, Any]:
        """The knobs at their overridden or default values."""
        return {k: self.overrides.get(k, v) for k, v in self.knob_defaults.items()}

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def rules_bound(cls, problem: Problem, n: int, d: int, privacy: Privacy) -> RulesBound:
        """The bound the algorithm's own rules configure at (n, d, eps, delta), knobs at their
        defaults (`algorithms.claims.RulesBound`; the formulas in `algorithms.rules_bounds`).
        NotImplementedError here: the algorithm declares none."""
        raise NotImplementedError(f"{cls.name} has no rules bound (no rules_bound classmethod)")

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        require_rule_constants(self.name, problem, self.rule_constants)
        knobs = {"c_T": 1.0, "c_b": 1.0, "eta_mult": 1.0, **self.knobs()}
        p = self.theory_params(problem.constants, n, problem.d, privacy, **knobs)
        for key in ("T", "eta", "b", "C"):
            if key in self.overrides:
                p[key] = float(self.overrides[key])
        for key in _INT_PARAMS:
            if key in p:
                p[key] = max(1, math.ceil(p[key]))
        p.update(knobs)
        p["max_iterate_floats"] = float(self.overrides.get("max_iterate_floats", 4_000_000))
        return p

    def run(self, problem: Problem, data: Any, privacy: Privacy, rng: np.random.Generator, *,
            time_limit: float | None = None, probe: Any = None, monitor: Any = None) -> Trajectory:
        """Run on `data` (records or a record stream); randomness only from `rng`."""
        require_calibration(self.name, privacy.calibration, self.calibrations)
        stream = problem.as_stream(data)
        if isinstance(stream, CountsStream):
            if "counts" not in self.data_modes:
                why = f" ({self.records_only_reason})" if self.records_only_reason else ""
                raise ValueError(f"{self.name} runs on records, not a counts stream{why}: pass "
                                 "data='records'")
            if self.counts_rereads:
                require_resampling_exact(self.name, problem, self.counts_rereads)
            if probe is not None or self.planted_faults:
                raise ValueError("the privacy verification (probe, planted_faults) runs on record "
                                 "mode: pass records (data='records'), not a counts stream")
        n = None if math.isinf(stream.remaining) else int(stream.remaining)
        if self.setting == "empirical" and n is None:
            raise ValueError(f"n=None is invalid for {self.name}: an empirical-risk algorithm "
                             "needs a finite sample (give n)")
        p = self.resolve_params(problem, n, privacy)
        deadline = time.perf_counter() + time_limit if time_limit else math.inf
        traj = self._run(problem, stream, n, privacy, rng, p, deadline, probe, monitor)
        if self.setting == "empirical" and getattr(traj, "sample", None) is None:
            msg = missing_sample_warning(self.name)
            traj.warnings.append(msg)
            warnings.warn(msg, UserWarning, stacklevel=2)
        return traj

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        raise NotImplementedError


def missing_sample_warning(name: str) -> str:
    """The warning of an empirical algorithm whose trajectory keeps no sample: its empirical
    metrics (emp_grad_*, emp_alpha_*) need the records it optimized and are left empty."""
    return (f"{name} optimizes the empirical risk of its n records (setting 'empirical') but "
            "returned no sample: pass them to TrajectoryBuilder.build(..., sample=...), else "
            "emp_grad_best / _last / _selected and emp_alpha_* are empty (NaN) for this run")


def batch_size(batch: Any) -> int:
    return int(batch.k) if isinstance(batch, CountsBatch) else len(batch)


class TrajectoryBuilder:
    """Collects iterates (thinned to a memory cap) and per-step records into a Trajectory."""

    def __init__(self, x0: np.ndarray, steps_max: int, max_floats: float) -> None:
        d = len(x0)
        self.keep_every = max(1, math.ceil(min(steps_max, 10**9) * d / max_floats))
        self.kept = Columns(iterate_columns(d))  # typed columns (step_log): 8 d + 16 bytes a row
        self.kept.append(x0, 0, 0)
        self.log = Columns(FIRST_ORDER_COLUMNS)
        self.best_est = math.inf

    def keep(self, x: np.ndarray, t: int, samples: int) -> None:
        """Store iterate x (made at step t, after `samples` records) whatever the thinning."""
        self.kept.append(x, t, samples)

    def step(self, x: np.ndarray, t: int, samples: int, batch: int, noise_std: float,
             est_norm: float) -> bool:
        """Record step t (its released estimate norm and the iterate it made); True when the
        iterate was stored (the monitor may then look at it)."""
        self.log.append(batch, noise_std, est_norm, samples)
        if est_norm < self.best_est or t % self.keep_every == 0:
            self.best_est = min(self.best_est, est_norm)
            self.kept.append(x, t, samples)
            return True
        return False

    def build(self, x: np.ndarray, t: int, samples: int, grad_evals: int, stop: str,
              spent: dict, p: dict, sample: np.ndarray | None, warnings: list[str],
              evaluation_only: dict | None = None) -> Trajectory:
        if self.kept.last("t") != t:
            self.kept.append(x, t, samples)
        rec, kept = self.log.arrays(), self.kept.arrays()
        # A step that diverged stores its iterate but no record: the norm out of it is inf.
        norms = np.append(rec["est_norm"], math.inf)
        steps = len(rec["batch"])
        records = {"oracle": np.ones(steps, dtype=np.int8), "batch": rec["batch"],
                   "noise_std": rec["noise_std"], "est_norm": rec["est_norm"],
                   "drift": np.zeros(steps), "escape": np.zeros(steps, dtype=bool),
                   "samples": rec["samples"]}
        p["keep_every"] = self.keep_every
        return Trajectory(iterates=kept["x"], steps=kept["t"], samples_at=kept["used"],
                          est_norm_at=norms[np.minimum(kept["t"], steps)], records=records,
                          samples_used=samples, grad_evals=grad_evals, stop_reason=stop,
                          privacy_spent=spent, params=p, n_steps=t, warnings=warnings,
                          sample=sample, evaluation_only=dict(evaluation_only or {}))
