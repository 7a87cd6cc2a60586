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
from dataclasses import dataclass

import numpy as np
from scipy import stats

from algorithms import BUILTIN, Privacy, Spider, get_algorithm
from algorithms.privacy.accounting.gdp import gdp_eps
from algorithms.privacy.accounting.ledger import ledger_eps
from analysis.privacy_checks.layers import RecordedRun, Recorder, check_releases, record_run
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


def is_verified(label: object, algorithm: str) -> bool:
    """Whether a stored `privacy_check` label counts as verified. A cell without one (a store
    written before plugins were checked) is verified only for a built-in algorithm."""
    if label is None or (isinstance(label, float) and math.isnan(label)):
        return algorithm in BUILTIN
    return label in ("built-in", "passed", "non-private")


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
    try:
        run = record_run(algorithm, problem=problem, d=d, n=n, eps=eps, delta=delta, seed=seed,
                         params=params, problem_params=problem_params, calibration=calibration,
                         time_limit=CHECK_SECONDS)
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
    replay = _replay_ratio(algorithm, prob, run, advs[:REPLAYS], privacy, params, seed)
    worst = max(report.max_ratio, replay)
    if replay > 1 + 1e-9:
        return PluginCheck("FAILED", f"replayed with one record replaced, its first release "
                                     f"moved {replay:.3g} x the told sensitivity",
                           len(run.events), worst)
    if not report.ok:
        return PluginCheck("FAILED", "; ".join(report.violations), len(run.events), worst)
    status, reason = _noise_verdict(algorithm, prob, run, privacy, params, seed)
    return PluginCheck(status, reason, len(run.events), worst)


def _first_release(algorithm: str, prob, data: np.ndarray, privacy: Privacy, params: dict,
                   rng: np.random.Generator) -> dict | None:
    """The first release of a run (the run is ended there), or None if it made none."""
    rec = _FirstRelease()
    try:
        get_algorithm(algorithm)(**params).run(prob, data, privacy, rng, probe=rec)
    except _FirstReleaseSeen:
        pass
    return rec.events[0] if rec.events else None


def _replay_ratio(algorithm: str, prob, run: RecordedRun, advs: np.ndarray, privacy: Privacy,
                  params: dict, seed: int) -> float:
    """Largest move of the first release (its released value: the noise is the same draw) over
    the told sensitivity, when the plugin's own code reruns with `record_run`'s seed on the
    data with the first release's first record replaced. (On data with repeated records the
    replaced row is the first equal one, which may lie outside the batch: a weaker replay.)"""
    first = run.events[0]
    batch = np.asarray(first["batch"])
    if run.data is None or not len(batch):
        return 0.0
    hits = np.flatnonzero(np.all(run.data == batch[0], axis=1))
    if not len(hits):
        return 0.0
    told = float(first["told"])
    other = run.data.copy()
    worst = 0.0
    for adv in advs:
        other[hits[0]] = adv
        try:
            e = _first_release(algorithm, prob, other, privacy, params,
                               np.random.default_rng([seed, 1]))
        except Exception:  # a run that breaks on an adversarial record tells nothing here
            continue
        if e is None or e["t"] != first["t"]:
            continue
        moved = float(np.linalg.norm(np.asarray(e["released"]) - np.asarray(first["released"])))
        worst = max(worst, moved / told if told > 0 else (math.inf if moved > 0 else 0.0))
    other[hits[0]] = run.data[hits[0]]
    return worst


def _noise_verdict(algorithm: str, prob, run: RecordedRun, privacy: Privacy, params: dict,
                   seed: int) -> tuple[str, str]:
    """(status, reason) of step 3 of the module docstring."""
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
    spent = run.traj.privacy_spent
    n_rec = len(run.data)
    if spent.get("accountant") == "pld" and spent.get("families"):
        z_min = min(float(z) for z, _, _ in spent["families"])
        needed = z_min * told / 2  # multiplier z on the clip C, sensitivity 2C (replace-one)
        if sigma_hi < 0.95 * needed:
            return "FAILED", (f"its first release adds noise std {sigma:.3g}, below the "
                              f"{needed:.3g} its PLD ledger's multiplier {z_min:.3g} means")
        if ledger_eps(spent) > privacy.eps * (1 + 1e-6):
            return "FAILED", f"its ledger re-derives eps {ledger_eps(spent):.4g} > {privacy.eps:g}"
        return "passed", ""
    if run.tree:
        records = int(run.traj.params.get("tree_nodes", 0) or 0)
        if records < 1:
            return "unverified", "a tree release without tree_nodes in its params"
    elif getattr(run.traj, "sample", None) is None and "chunk" not in first:
        records = 1  # single pass: each record enters one release
    elif all(len(e["batch"]) == n_rec for e in run.events):
        records = len(run.events)  # full-batch multi-pass: each record enters every release
    else:
        return "unverified", ("its subsampled releases come without a PLD ledger "
                              "(ledger_pld) to relate their noise to the budget")
    if sigma_hi <= 0:
        return "FAILED", "its first release adds no noise"
    mu_low = math.sqrt(records) * told / sigma_hi
    eps_low = gdp_eps(mu_low, privacy.delta)
    if eps_low > privacy.eps * (1 + 1e-3):
        return "FAILED", (f"its noise (std {sigma:.3g} per release, sensitivity {told:.3g}, "
                          f"{records} release(s) per record) implies eps >= {eps_low:.3g} > "
                          f"{privacy.eps:g}")
    return "passed", ""
