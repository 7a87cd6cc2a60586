"""Privacy verification of outside algorithms (plugins): the check a sweep runs on each private
configuration of a plugin (`bench.privacy_gate`), and what every stored cell says about its
algorithm's privacy.

The built-in algorithms pass the three privacy layers in the test suite (sensitivity, noise,
black-box audit, each with planted bugs that must be caught). An outside algorithm has passed
none of them, and it can store any `eps_spent` it likes, so its cells carry a `privacy_check`
label (stored with every cell, marked in the report):

* "built-in": covered by the test suite's three layers;
* "private by construction": a plugin on the release API (`algorithms.release_api`: the suite
  clips, noises and accounts) whose forced-transcript replay
  (`algorithms.privacy.audit.transcript_replay`: nothing but the releases reaches its outputs)
  and black-box checks passed;
* "audited: no leak found (<what was tried>)": a self-noising plugin whose checks passed. A
  black-box check finds leaks; it cannot certify their absence, so this label is never
  "private", and a sweep of such a plugin stops unless --allow-unverified;
* "unverified: <why>": a plugin that could not be checked (no release reported to the probe,
  a release kind the check does not cover, a problem without adversarial records, a run or a
  check that failed, a noise the check cannot relate to the budget);
* "FAILED: <why>": a leak found, naming the release or field;
* "non-private": a sweep of a plugin with no finite eps (nothing to verify).

The check, in record mode on one configuration's problem, dimension, eps and parameters (at
most `CHECK_RECORDS` records and `CHECK_SECONDS` of run), at the sweep's check seed:
0. on the release API, the forced-transcript replay (10 data sets, and the probe switched off);
1. patterns no private mechanism shows (`release_patterns`): a release without noise, two
   releases with one noise draw, two sampled releases with one batch, a step-log norm that is
   no release's, iterates that other noise draws leave in place;
2. layer 1 of `algorithms.privacy.audit.layers` on the releases the run reported to its probe
   (each recomputed with one record replaced by an adversarial one, from the same state);
3. a replay of the plugin's *own* code (`plugin_replay`) at every release (up to 100): the run
   again, same seed, with one record of that release's batch replaced by adversarial records
   (full scale, 1e-4 of it, and scaled to gradient norms 1.5 C, 3 C and 10 C, with their
   opposites). A release may move by at most the told sensitivity; a replay that crashes or
   makes another release there is FAILED; from the recorded state it must add the recorded
   noise. (2) trusts the plugin's report of how it computes a release; (3) does not;
4. the noise: releases rerun over `NOISE_RUNS` seeds give the noise each adds (released -
   leaf), hence with the told sensitivity a lower confidence bound on the mu they compose (one
   for a single pass, every release for a full-batch multi-pass method, the tree's node count
   for a tree); it may not imply an eps above the budget, and the plugin's ledger may not say
   less than what its releases compose.
Reruns that need only the first releases are ended there by the probe itself.

The probe contract (README "Plugins"): `_run(..., probe, ...)` calls, for every release,
`probe.release(t=, oracle=1, x=, batch=, clip=, leaf=, told=, denom=, released=)` when probe is
not None: t the step, x the iterate the release is computed at, batch the records it read,
clip the per-record clip C, leaf the pre-noise value (a clipped sum / denom), told the L2
sensitivity of leaf given to the accountant, denom the divisor, released the noised value
(oracle=2 and x_prev= for a gradient-difference release; a Spider subclass reports what the
Spider engine reports).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats

from algorithms import BUILTIN, Privacy, Spider, get_algorithm
from algorithms.privacy.accounting.gdp import gdp_eps
from algorithms.privacy.audit.layers import RecordedRun, Recorder, check_releases, record_run
from algorithms.privacy.audit.plugin_ledger import (
    TOLERANCE,
    NoiseGroups,
    Rebuilt,
    correlated_release,
    ledger_mismatch,
    measure_noise,
    rebuild_ledger,
    silent_release,
)
from algorithms.privacy.audit.plugin_lower_bound import lower_bound, no_bound_reason
from algorithms.privacy.audit.plugin_replay import REPLAY_SECONDS, replay_releases, sampled_releases
from algorithms.privacy.audit.release_patterns import (
    ignores_releases,
    log_not_released,
    pattern_violation,
)
from algorithms.privacy.audit.transcript_replay import replay_transcript
from problems import get_problem

#: Records the check's run uses at most (record mode; a cell of 1e12 records is checked on a
#: prefix of this size: a release's sensitivity does not depend on n beyond 1/b), and the
#: seconds its recorded run may take (a longer run is checked on the releases it made).
CHECK_RECORDS = 20_000
CHECK_SECONDS = 20.0
#: Adversarial records replayed through the plugin's own code (the first ones of the problem's
#: list: each of the first coordinates at +-1e6, then all at +-1e6).
REPLAYS = 6
#: First-release reruns that measure the noise (x d values: at d = 3 the std's 99.9% upper
#: confidence bound is within ~10% of the estimate).
NOISE_RUNS = 200
#: What a release must report to the probe for the check to recompute it.
PROBE_KEYS = ("t", "oracle", "x", "batch", "clip", "leaf", "told", "released")


class _FirstReleaseSeen(Exception):
    """Raised by `_FirstRelease` to end a run after its first release."""


class _FirstRelease(Recorder):
    """A probe that keeps the first release and ends the run there."""

    def release(self, **info) -> None:
        super().release(**info)
        raise _FirstReleaseSeen


#: A plugin on the release API (algorithms.release_api) whose forced-transcript replay and
#: black-box checks passed.
BY_CONSTRUCTION = "private by construction"
#: A self-noising plugin whose checks found no leak: audited, never certified.
AUDITED = "audited: no leak found"


@dataclass(frozen=True)
class PluginCheck:
    """status: passed (the black-box checks), private by construction, FAILED, unverified or
    non-private; reason: why (one line); tried: what the checks tried (for the label of a
    self-noising plugin that passed them: audited, not certified)."""

    status: str
    reason: str = ""
    releases: int = 0
    max_ratio: float = 0.0
    tried: str = ""

    @property
    def label(self) -> str:
        """The stored `privacy_check` value: "passed" is stored as "audited: no leak found
        (<what was tried>)"."""
        if self.status == "passed":
            return f"{AUDITED} ({self.tried})" if self.tried else AUDITED
        return self.status if not self.reason else f"{self.status}: {self.reason}"


def builtin_label(algorithm: str) -> str | None:
    """"built-in" for an algorithm the test suite's layers cover, None for a plugin."""
    return "built-in" if algorithm in BUILTIN else None


def on_release_api(algorithm: str) -> bool:
    """Whether `algorithm` runs on the suite's release API (`PrivateByConstruction`)."""
    try:
        return bool(getattr(get_algorithm(algorithm), "by_construction", False))
    except ValueError:
        return False


def is_verified(label: object, algorithm: str) -> bool:
    """Whether a stored `privacy_check` label counts as verified: built-in, private by
    construction, or non-private. An audited plugin ("audited: ...", or "passed" in a store
    written before audits were told apart) is not: a black-box check finds leaks, it cannot
    certify their absence. A cell without a label (a store written before plugins were
    checked) is verified only for a built-in algorithm."""
    if label is None or (isinstance(label, float) and math.isnan(label)):
        return algorithm in BUILTIN
    return label in ("built-in", BY_CONSTRUCTION) or str(label).startswith("non-private")


def needs_permission(label: str) -> bool:
    """Whether a sweep of a plugin with this label stops unless --allow-unverified: anything
    not built-in, private by construction or non-private (FAILED, unverified, audited)."""
    return not is_verified(label, "")


def _not_covered(algorithm: str) -> str | None:
    """Built-in families whose releases the generic recomputation does not model: an outside
    subclass of one is unverified here (the built-ins have their own checks: whitened
    sensitivity in tests/test_ellipsoid.py, the projected GLM in tests/test_glm.py)."""
    from algorithms.adaptive_noise.ellipsoid import EllipsoidMethod
    from algorithms.glm.jl_method import JLMethod

    cls = get_algorithm(algorithm)
    if issubclass(cls, EllipsoidMethod):
        return "ellipsoid-projected (whitened) releases"
    if issubclass(cls, JLMethod):
        return "releases in a JL projection"
    return None


def check_plugin(algorithm: str, *, problem: str, d: int, eps: float, delta: float = 1e-6,
                 params: dict | None = None, problem_params: dict | None = None,
                 calibration: str = "tight", n: int = CHECK_RECORDS, seed: int = 0,
                 lower_bound_runs: int = 0) -> PluginCheck:
    """The privacy check of one configuration of an outside algorithm (module docstring). Never
    raises for the algorithm's failure nor for the check's: those are "unverified" outcomes.
    `lower_bound_runs` > 0: a self-noising plugin that passes also gets the empirical eps lower
    bound of `plugin_lower_bound` over that many runs per data set (FAILED above eps)."""
    try:
        return _check(algorithm, problem, d, eps, delta, dict(params or {}),
                      dict(problem_params or {}), calibration, n, seed, lower_bound_runs)
    except Exception as exc:  # whatever breaks, a sweep goes on and its cells say so
        return PluginCheck("unverified", f"the check failed: {type(exc).__name__}: {exc}")


def _check(algorithm: str, problem: str, d: int, eps: float, delta: float, params: dict,
           problem_params: dict, calibration: str, n: int, seed: int,
           lower_bound_runs: int = 0) -> PluginCheck:
    if not math.isfinite(eps):
        return PluginCheck("non-private", "no finite eps to verify")
    why = _not_covered(algorithm)
    if why:
        return PluginCheck("unverified", f"the check does not cover {why}")
    prob = get_problem(problem, d=d, **problem_params)
    try:
        advs = np.asarray(prob.adversarial_records())
    except Exception as exc:  # an outside problem may lack a record layout the check knows
        return PluginCheck("unverified", f"problem {problem!r} gives no adversarial records "
                                         f"({type(exc).__name__}: {exc})")
    t0 = time.perf_counter()
    try:
        run = record_run(algorithm, problem=problem, d=d, n=n, eps=eps, delta=delta, seed=seed,
                         params=params, problem_params=problem_params, calibration=calibration,
                         time_limit=CHECK_SECONDS)
        run_seconds = time.perf_counter() - t0
    except TypeError as exc:
        if "probe" in str(exc):
            return PluginCheck("unverified", "its run() takes no probe (README 'Plugins': the "
                                             "probe contract)")
        return PluginCheck("unverified", f"the check's run failed: TypeError: {exc}")
    except Exception as exc:
        return PluginCheck("unverified", f"the check's run failed: {type(exc).__name__}: {exc}")
    if not run.events:
        return PluginCheck("unverified", "its run reported no release to the probe (README "
                                         "'Plugins': the probe contract)")
    missing = [k for k in PROBE_KEYS if k not in run.events[0]]
    if "denom" not in run.events[0] and not issubclass(get_algorithm(algorithm), Spider):
        missing.append("denom")
    if missing:
        return PluginCheck("unverified", f"its releases lack probe keys {', '.join(missing)}",
                           len(run.events))
    privacy = Privacy(eps, delta, calibration)
    made = len(run.events)
    forced = None
    if on_release_api(algorithm):  # nothing but the desk's releases may reach the outputs
        forced = replay_transcript(algorithm, run, privacy, params, seed)
        if not forced.ok:
            return PluginCheck("FAILED", forced.reason, made)
    pattern = pattern_violation(run) or ignores_releases(algorithm, prob, run, privacy, params,
                                                         seed)
    if pattern:
        return PluginCheck("FAILED", pattern, made)
    logged = log_not_released(run) if forced is None else None  # the desk writes its own log
    if logged:
        return PluginCheck("unverified", logged, made)
    report = check_releases(run, list(advs), max_releases=100, seed=seed)
    replay = replay_releases(algorithm, prob, run, advs, privacy, params, seed)
    worst = max(report.max_ratio, replay.ratio)
    if not replay.ok:
        return PluginCheck("FAILED", replay.reason(), made, worst)
    if not report.ok:
        return PluginCheck("FAILED", "; ".join(report.violations), made, worst)
    tried = (f"check seed {seed}, eps {eps:g}, n {n}, d {d}: {replay.compared} neighbouring "
             f"replays over {len(sampled_releases(made, seed)) - replay.skipped} of {made} "
             "releases")
    if replay.skipped:
        tried += f" ({replay.skipped} not replayed within {REPLAY_SECONDS:g} s)"
    if replay.uncomparable:
        tried += (f" ({replay.uncomparable} replays not compared: another state with no "
                  "divisor to correct by, a batch of no data row, or a schedule moved by earlier "
                  "noised releases)")
    tried += f", noise over {NOISE_RUNS} reruns"

    def outcome(status: str, reason: str = "") -> PluginCheck:
        if status == "passed" and forced is not None:
            return PluginCheck(BY_CONSTRUCTION, "", made, worst, f"{tried}; {forced.reason}")
        return PluginCheck(status, reason, made, worst, tried)

    if run.tree:
        return outcome(*_tree_noise_verdict(algorithm, prob, run, privacy, params, seed))
    noise = measure_noise(algorithm, prob, run, privacy, params, seed, run_seconds)
    silent = silent_release(noise, run) or correlated_release(noise)
    if silent:
        return outcome("FAILED", silent)
    rebuilt = rebuild_ledger(run, noise, delta)
    mismatch = ledger_mismatch(run, noise, rebuilt, privacy)
    if mismatch:
        return outcome("FAILED", mismatch)
    if rebuilt.structure == "subsampled" and (run.traj.privacy_spent or {}).get("accountant") != "pld":
        return outcome("unverified", "its subsampled releases come without a PLD ledger "
                                     "(ledger_pld) to relate their noise to the budget")
    if rebuilt.eps > eps * (1 + TOLERANCE):
        return outcome("FAILED", _rebuilt_reason(rebuilt, noise, run, eps))
    if lower_bound_runs > 0 and forced is None:
        try:
            bound = lower_bound(algorithm, prob, run.data, run.events[0], privacy, params, seed,
                                lower_bound_runs)
        except Exception as exc:  # the audit above stands; the label says the bound is missing
            tried += f"; {no_bound_reason(exc)}"
        else:
            if bound.flagged:
                return outcome("FAILED", bound.text().replace(" beside the declared",
                                                              " > the declared"))
            tried += f"; {bound.text()}"
    return outcome("passed")


def _rebuilt_reason(rebuilt: Rebuilt, noise: NoiseGroups, run: RecordedRun, eps: float) -> str:
    """The FAILED line of a rebuilt ledger above the budget: its eps, how it composed, and the
    release whose noise is smallest against its sensitivity."""
    told = np.array([float(e["told"]) for e in run.events])
    sig = np.array([noise.sigma[noise.of_release(r)] for r in range(len(told))])
    r = int(np.argmax(told / np.maximum(sig, 1e-300)))
    return (f"its {len(told)} releases ({rebuilt.structure}) spend eps >= {rebuilt.eps:.3g} > "
            f"{eps:g}: release {r + 1} adds noise std {sig[r]:.3g} at sensitivity {told[r]:.3g}")


def _first_release(algorithm: str, prob, data: np.ndarray, privacy: Privacy, params: dict,
                   rng: np.random.Generator) -> dict | None:
    """The first release of a run (the run is ended there), or None if it made none."""
    rec = _FirstRelease()
    try:
        get_algorithm(algorithm)(**params).run(prob, data, privacy, rng, probe=rec)
    except _FirstReleaseSeen:
        pass
    return rec.events[0] if rec.events else None


def _tree_noise_verdict(algorithm: str, prob, run: RecordedRun, privacy: Privacy, params: dict,
                        seed: int) -> tuple[str, str]:
    """(status, reason) of the noise step for a tree release (a Spider engine subclass): the
    first release's noise, rerun over `NOISE_RUNS` seeds, composed over the tree nodes a record
    enters (its variance varies with the step's popcount, so releases are not pooled)."""
    first = run.events[0]
    told = float(first["told"])
    noise = []
    for r in range(NOISE_RUNS):
        e = _first_release(algorithm, prob, run.data, privacy, params,
                           np.random.default_rng([seed, 3, r]))
        if e is None or e["t"] != first["t"]:
            return "unverified", "its first release is not reproducible across seeds"
        noise.append(np.asarray(e["released"], dtype=float) - np.asarray(e["leaf"], dtype=float))
    values = np.concatenate(noise).ravel()
    m = len(values)
    sigma = math.sqrt(float(values @ values) / m)
    sigma_hi = sigma * math.sqrt(m / stats.chi2.ppf(0.001, m))  # 99.9% upper bound
    records = int(run.traj.params.get("tree_nodes", 0) or 0)
    if records < 1:
        return "unverified", "a tree release without tree_nodes in its params"
    if sigma_hi <= 0:
        return "FAILED", "its first release adds no noise"
    mu_low = math.sqrt(records) * told / sigma_hi
    eps_low = gdp_eps(mu_low, privacy.delta)
    if eps_low > privacy.eps * (1 + 1e-3):
        return "FAILED", (f"its noise (std {sigma:.3g} per release, sensitivity {told:.3g}, "
                          f"{records} tree nodes per record) implies eps >= {eps_low:.3g} > "
                          f"{privacy.eps:g}")
    return "passed", ""
