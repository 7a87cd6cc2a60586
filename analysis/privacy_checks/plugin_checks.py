"""Privacy verification of outside algorithms (plugins): the check a sweep runs on a plugin's
first private cell, and what every stored cell says about its algorithm's privacy.

The built-in algorithms pass the three privacy layers in the test suite (sensitivity, noise,
black-box audit, each with planted bugs that must be caught). An outside algorithm has passed
none of them, and it can store any `eps_spent` it likes, so its cells carry a `privacy_check`
label (stored with every cell, marked in the report):

* "built-in": covered by the test suite's three layers;
* "passed": a plugin whose sensitivity and noise checks passed on its first private cell;
* "unverified: <why>": a plugin that could not be checked (no release reported to the probe,
  a release kind the check does not cover, a problem without adversarial records, a run or a
  check that failed, a noise the check cannot relate to the budget);
* "FAILED: <why>": a release moving more than the run told its accountant, or less noise than
  its budget needs;
* "non-private": a sweep of a plugin with no finite eps (nothing to verify).

The check, in record mode on the cell's problem, dimension and parameters (at most
`CHECK_RECORDS` records and `CHECK_SECONDS` of run):
1. layer 1 of `analysis.privacy_checks.layers` on the releases the run reported to its probe (each
   release recomputed with one record replaced by an adversarial one, from the same state);
2. a replay of the plugin's *own* code: the run again, with the same random seed, on the data
   with the first release's first record replaced by each adversarial record. The seed is the
   same, so the first release differs only by what the record changed, and that difference may
   not exceed the sensitivity the run told its accountant. (1) trusts the plugin's report of
   how it computes a release; (2) does not, so a plugin that reports a clip it never applies is
   caught by (2);
3. the noise: the first release, rerun over `NOISE_RUNS` seeds, gives the noise it adds
   (released - leaf), hence with the told sensitivity a lower confidence bound on one
   release's Gaussian-DP mu. Composed over the releases a record enters (one for a single
   pass, every release for a full-batch multi-pass method, the tree's node count for a tree),
   it may not imply an eps above the budget. A subsampled release is compared with the
   smallest noise multiplier of the run's PLD ledger instead (the ledger's own eps is then
   re-derived against the budget).
Reruns that need only the first release are ended there by the probe itself.

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
from analysis.privacy_checks.layers import RecordedRun, Recorder, check_releases, record_run
from analysis.privacy_checks.plugin_ledger import (
    TOLERANCE,
    NoiseGroups,
    Rebuilt,
    ledger_mismatch,
    measure_noise,
    rebuild_ledger,
    silent_release,
)
from analysis.privacy_checks.plugin_replay import replay_releases
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


@dataclass(frozen=True)
class PluginCheck:
    """status: passed, FAILED, unverified or non-private; reason: why (one line)."""

    status: str
    reason: str = ""
    releases: int = 0
    max_ratio: float = 0.0

    @property
    def label(self) -> str:
        """The stored `privacy_check` value."""
        return self.status if not self.reason else f"{self.status}: {self.reason}"


def builtin_label(algorithm: str) -> str | None:
    """"built-in" for an algorithm the test suite's layers cover, None for a plugin."""
    return "built-in" if algorithm in BUILTIN else None


#: A plugin on the release API (algorithms.release_api) whose black-box checks also passed.
BY_CONSTRUCTION = "private by construction"


def construction_label(algorithm: str, label: str) -> str:
    """The label of a checked plugin: "private by construction" where it runs on the suite's
    release API (the suite clips, noises and accounts) and its checks passed; else `label`."""
    import algorithms

    try:
        cls = algorithms.get_algorithm(algorithm)
    except ValueError:
        return label
    return BY_CONSTRUCTION if label == "passed" and getattr(cls, "by_construction", False) \
        else label


def is_verified(label: object, algorithm: str) -> bool:
    """Whether a stored `privacy_check` label counts as verified. A cell without one (a store
    written before plugins were checked) is verified only for a built-in algorithm."""
    if label is None or (isinstance(label, float) and math.isnan(label)):
        return algorithm in BUILTIN
    return label in ("built-in", "passed", "non-private", BY_CONSTRUCTION)


def _not_covered(algorithm: str) -> str | None:
    """Built-in families whose releases the generic recomputation does not model: an outside
    subclass of one is unverified here (the built-ins have their own checks: whitened
    sensitivity in tests/test_ellipsoid.py, the projected GLM in tests/test_glm.py)."""
    from algorithms.adaptive_noise.ellipsoid import _EllipsoidMethod
    from algorithms.glm.jl_method import JLMethod

    cls = get_algorithm(algorithm)
    if issubclass(cls, _EllipsoidMethod):
        return "ellipsoid-projected (whitened) releases"
    if issubclass(cls, JLMethod):
        return "releases in a JL projection"
    return None


def check_plugin(algorithm: str, *, problem: str, d: int, eps: float, delta: float = 1e-6,
                 params: dict | None = None, problem_params: dict | None = None,
                 calibration: str = "tight", n: int = CHECK_RECORDS, seed: int = 0) -> PluginCheck:
    """The privacy check of one configuration of an outside algorithm (module docstring). Never
    raises for the algorithm's failure nor for the check's: those are "unverified" outcomes."""
    try:
        return _check(algorithm, problem, d, eps, delta, dict(params or {}),
                      dict(problem_params or {}), calibration, n, seed)
    except Exception as exc:  # whatever breaks, a sweep goes on and its cells say so
        return PluginCheck("unverified", f"the check failed: {type(exc).__name__}: {exc}")


def _check(algorithm: str, problem: str, d: int, eps: float, delta: float, params: dict,
           problem_params: dict, calibration: str, n: int, seed: int) -> PluginCheck:
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
    report = check_releases(run, list(advs), max_releases=100, seed=seed)
    privacy = Privacy(eps, delta, calibration)
    replay = replay_releases(algorithm, prob, run, advs, privacy, params, seed)
    worst = max(report.max_ratio, replay.ratio)
    made = len(run.events)
    if not replay.ok:
        return PluginCheck("FAILED", replay.reason(), made, worst)
    if not report.ok:
        return PluginCheck("FAILED", "; ".join(report.violations), made, worst)
    if run.tree:
        status, reason = _tree_noise_verdict(algorithm, prob, run, privacy, params, seed)
        return PluginCheck(status, reason, made, worst)
    noise = measure_noise(algorithm, prob, run, privacy, params, seed, run_seconds)
    silent = silent_release(noise, run)
    if silent:
        return PluginCheck("FAILED", silent, made, worst)
    rebuilt = rebuild_ledger(run, noise, delta)
    mismatch = ledger_mismatch(run, noise, rebuilt, privacy)
    if mismatch:
        return PluginCheck("FAILED", mismatch, made, worst)
    if rebuilt.structure == "subsampled" and (run.traj.privacy_spent or {}).get("accountant") != "pld":
        return PluginCheck("unverified", "its subsampled releases come without a PLD ledger "
                                         "(ledger_pld) to relate their noise to the budget", made, worst)
    if rebuilt.eps > eps * (1 + TOLERANCE):
        return PluginCheck("FAILED", _rebuilt_reason(rebuilt, noise, run, eps), made, worst)
    return PluginCheck("passed", "", made, worst)


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
