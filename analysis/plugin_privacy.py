"""Privacy verification of outside algorithms (plugins): the sensitivity check a sweep runs on a
plugin's first private cell, and what every stored cell says about its algorithm's privacy.

The built-in algorithms pass the three privacy layers in the test suite (sensitivity, noise,
black-box audit, each with planted bugs that must be caught). An outside algorithm has passed
none of them, and it can store any `eps_spent` it likes, so its cells carry a `privacy_check`
label (stored with every cell, shown in every table):

* "built-in": covered by the test suite's three layers;
* "passed": a plugin whose sensitivity check passed on its first private cell (below);
* "unverified: <why>": a plugin that could not be checked (no release reported to the probe,
  a problem without adversarial records, a run that failed);
* "FAILED: <why>": a plugin whose check found a release moving more than it told the
  accountant;
* "non-private": a sweep of a plugin with no finite eps (nothing to verify).

The check, in record mode on the cell's problem, dimension and parameters (at most
`CHECK_RECORDS` records): (1) layer 1 of `analysis.privacy_checks` on the releases the run
reported to its probe (each release recomputed with one record replaced by an adversarial one,
from the same state); (2) a replay of the plugin's *own* code: the run again, with the same
random seed, on the data with the first release's first record replaced by each adversarial
record. The seed is the same, so the first release differs only by what the record changed,
and that difference may not exceed the sensitivity the run told its accountant. (1) trusts the
plugin's report of how it computes a release; (2) does not, so a plugin that reports a clip it
never applies is caught by (2).

The probe contract (README "Plugins"): `_run(..., probe, ...)` calls, for every release,
`probe.release(t=, oracle=1, x=, batch=, clip=, leaf=, told=, denom=, released=)` when probe is
not None: t the step, x the iterate the release is computed at, batch the records it read,
clip the per-record clip C, leaf the pre-noise value (a clipped sum / denom), told the L2
sensitivity of leaf given to the accountant, denom the divisor, released the noised value.
(oracle=2 with x_prev= for a gradient-difference release.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from algorithms import BUILTIN, Privacy, get_algorithm
from analysis.privacy_checks import Recorder, check_releases, record_run
from problems import get_problem

#: Records the check's run uses at most (record mode; a cell of 1e12 records is checked on a
#: prefix of this size: the releases' sensitivity does not depend on n beyond 1/b).
CHECK_RECORDS = 20_000
#: Adversarial records replayed through the plugin's own code (the first ones of the problem's
#: list: each of the first coordinates at +-1e6, then all at +-1e6).
REPLAYS = 6
#: What a release must report to the probe for layer 1 to recompute it.
PROBE_KEYS = ("t", "oracle", "x", "batch", "clip", "leaf", "told", "denom")


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


def is_verified(label: str | None) -> bool:
    """Whether a stored `privacy_check` label counts as verified (older stores: no label,
    written before plugins were marked, are built-in or unmarked: treated as verified)."""
    return label is None or (isinstance(label, float) and math.isnan(label)) \
        or label in ("built-in", "passed", "non-private")


def check_plugin(algorithm: str, *, problem: str, d: int, eps: float, delta: float = 1e-6,
                 params: dict | None = None, problem_params: dict | None = None,
                 n: int = CHECK_RECORDS, seed: int = 0) -> PluginCheck:
    """The sensitivity check of one configuration of an outside algorithm (module docstring).
    Never raises for the algorithm's own failure: that is an "unverified" outcome."""
    if not math.isfinite(eps):
        return PluginCheck("non-private", "no finite eps to verify")
    params = dict(params or {})
    prob = get_problem(problem, d=d, **(problem_params or {}))
    try:
        advs = np.asarray(prob.adversarial_records())
    except Exception as exc:  # an outside problem may lack a record layout the check knows
        return PluginCheck("unverified", f"problem {problem!r} gives no adversarial records "
                                         f"({type(exc).__name__}: {exc})")
    try:
        run = record_run(algorithm, problem=problem, d=d, n=n, eps=eps, delta=delta, seed=seed,
                         params=params, problem_params=problem_params)
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
    if missing:
        return PluginCheck("unverified", f"its releases lack probe keys {', '.join(missing)}",
                           len(run.events))
    report = check_releases(run, list(advs), max_releases=100, seed=seed)
    replay_ratio = _replay_ratio(algorithm, prob, run, advs[:REPLAYS], eps, delta, params, seed)
    worst = max(report.max_ratio, replay_ratio)
    if replay_ratio > 1 + 1e-9:
        return PluginCheck("FAILED", f"replayed with one record replaced, its first release moved "
                                     f"{replay_ratio:.3g} x the told sensitivity",
                           len(run.events), worst)
    if not report.ok:
        return PluginCheck("FAILED", "; ".join(report.violations), len(run.events), worst)
    return PluginCheck("passed", "", len(run.events), worst)


def _replay_ratio(algorithm: str, prob, run, advs: np.ndarray, eps: float, delta: float,
                  params: dict, seed: int) -> float:
    """Largest move of the first release (its released value where reported, else its leaf)
    over the told sensitivity, when the plugin's own code reruns with the same seed on the data
    with the first release's first record replaced (`record_run`'s seeds)."""
    first = run.events[0]
    batch = np.asarray(first["batch"])
    if run.data is None or not len(batch):
        return 0.0
    hits = np.flatnonzero(np.all(run.data == batch[0], axis=1))
    if not len(hits):
        return 0.0
    told = float(first["told"])
    key = "released" if "released" in first else "leaf"
    worst = 0.0
    for adv in advs:
        other = run.data.copy()
        other[hits[0]] = adv
        rec = Recorder()
        try:
            get_algorithm(algorithm)(**params).run(prob, other, Privacy(eps, delta),
                                                   np.random.default_rng([seed, 1]), probe=rec)
        except Exception:  # a run that breaks on an adversarial record tells nothing here
            continue
        if not rec.events or rec.events[0]["t"] != first["t"]:
            continue
        moved = float(np.linalg.norm(np.asarray(rec.events[0][key]) - np.asarray(first[key])))
        worst = max(worst, moved / told if told > 0 else (math.inf if moved > 0 else 0.0))
    return worst
