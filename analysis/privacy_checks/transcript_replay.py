"""The forced-transcript replay of a plugin on the release API (issue 56, item 2): nothing but
the desk's releases reaches what the run outputs.

A `PrivateByConstruction` plugin is private if everything its run outputs is a function of the
desk's noised releases and its public inputs. That is a statement about every data set, so it
can be tested on any: run the plugin once on a data set D with seed s and record the releases
(the transcript); run it again, same seed, on another data set D' with the desk forced to hand
back the recorded releases (it still draws its batches and noise, so every generator stays where
it was). If the outputs are a function of the releases, the two trajectories are identical,
field for field: iterates, step log, n_steps, stop reason, params, the ledger, warnings. Any
difference names the field and the step where the plugin read the data some other way (the
sample dug out of the desk, a data file, a clean gradient computed on the side).

The data sets D' tried: one record of D replaced by an adversarial record (the problem's own
list) scaled so that its per-record gradient at the start has norm 1.5 C, 3 C and 10 C, C the
first release's clip, each with its opposite (-r); that record at the list's full scale (1e6)
and its opposite; two records replaced by an opposite pair (r, -r: the mean moves little, the
spread a lot); and a fresh sample of the problem (every record changed). Then the run on D
with the probe switched off must give the recorded trajectory too (a plugin that behaves
differently when watched).

What it cannot see: a leak that shows only on data sets it did not try (a branch on one
record value), and a plugin that detects the replay itself (a deliberate evasion, not a
research bug). Every field of the returned trajectory is compared but `sample` (the data an
empirical-risk run optimized, for evaluation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms import Privacy, get_algorithm
from algorithms.release_api import TranscriptExhausted
from analysis.privacy_checks.layers import RecordedRun, Recorder
from analysis.privacy_checks.plugin_replay import CLIP_MULTIPLES, scaled_records

#: Trajectory fields that are not outputs of the run's releases: the data an empirical-risk run
#: optimized (kept for evaluation). The hidden realized batch sizes are compared too: the same
#: seed and n draw the same sizes on any data set.
NOT_RELEASED = ("sample",)


class ForcedProbe(Recorder):
    """A probe that records the releases and makes the desk return `forced` instead."""

    def __init__(self, forced: list[np.ndarray]) -> None:
        super().__init__()
        self.forced = forced


@dataclass(frozen=True)
class TranscriptOutcome:
    """ok: no output differed; reason: the FAILED line (the data set, the field, the step) or
    what was compared; replays: the data sets tried; releases: the transcript's length."""

    ok: bool
    reason: str
    replays: int
    releases: int


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except Exception:  # an object without a truth value for ==: compare its text
        return repr(a) == repr(b)


def _first_row(a: np.ndarray, b: np.ndarray) -> int:
    """The first row where two arrays of one shape differ."""
    a2, b2 = np.asarray(a).reshape(len(a), -1), np.asarray(b).reshape(len(b), -1)
    same = (a2 == b2) | (np.isnan(a2) & np.isnan(b2) if a2.dtype.kind == "f" else False)
    return int(np.argmin(np.all(same, axis=1)))


def first_difference(a: Any, b: Any) -> str | None:
    """Where trajectory `b` first differs from `a` ("field records['batch'] at step 7: 200 vs
    143"), or None if every released field is identical."""
    fields = [f for f in vars(a) if f not in NOT_RELEASED]
    for name in fields:
        va, vb = getattr(a, name), getattr(b, name, None)
        if _same(va, vb):
            continue
        if name == "records" and isinstance(va, dict) and isinstance(vb, dict):
            for key in sorted(set(va) | set(vb)):
                ra, rb = va.get(key), vb.get(key)
                if _same(ra, rb):
                    continue
                if ra is None or rb is None or np.shape(ra) != np.shape(rb):
                    return (f"field records[{key!r}]: {np.size(ra) if ra is not None else 0} vs "
                            f"{np.size(rb) if rb is not None else 0} entries")
                i = _first_row(ra, rb)
                return f"field records[{key!r}] at step {i + 1}: {ra[i]!r} vs {rb[i]!r}"
        if isinstance(va, np.ndarray) and isinstance(vb, np.ndarray):
            if va.shape != vb.shape:
                return f"field {name}: {len(va)} vs {len(vb)} entries"
            i = _first_row(va, vb)
            step = int(a.steps[i]) if len(getattr(a, "steps", [])) > i else i
            return f"field {name} at step {step}"
        if isinstance(va, dict) and isinstance(vb, dict):
            key = next(k for k in sorted(set(va) | set(vb), key=str)
                       if not _same(va.get(k), vb.get(k)))
            return f"field {name}[{key!r}]: {va.get(key)!r} vs {vb.get(key)!r}"
        return f"field {name}: {va!r} vs {vb!r}"
    return None


def neighbour_sets(prob: Any, data: np.ndarray, first: dict, seed: int
                   ) -> list[tuple[str, np.ndarray]]:
    """(what was changed, data set) for every data set the replay tries (module docstring);
    `first`: the recorded run's first release (its iterate and clip scale the records)."""
    rng = np.random.default_rng([seed, 7])
    n = len(data)
    j, j2 = (int(v) for v in rng.choice(n, size=2, replace=False)) if n > 1 else (0, 0)
    advs = np.asarray(prob.adversarial_records(), dtype=float)
    scaled = scaled_records(prob, {"x": first["x"], "oracle": 1}, advs, float(first["clip"]),
                            CLIP_MULTIPLES)
    sets: list[tuple[str, np.ndarray]] = []

    def put(label: str, rows: dict[int, np.ndarray]) -> None:
        other = np.array(data, dtype=float, copy=True)
        for at, r in rows.items():
            other[at] = r
        sets.append((label, other))

    for k, r in zip(CLIP_MULTIPLES, scaled, strict=False):
        put(f"record {j} replaced by one of gradient norm {k:g} C", {j: r})
        put(f"record {j} replaced by the opposite of one of gradient norm {k:g} C", {j: -r})
    put(f"record {j} replaced by an adversarial record at full scale", {j: advs[0]})
    put(f"record {j} replaced by its opposite at full scale", {j: -advs[0]})
    if n > 1:
        r = scaled[-1] if len(scaled) else advs[0]
        put(f"records {j}, {j2} replaced by an opposite pair", {j: r, j2: -r})
    sets.append(("a fresh sample", np.asarray(prob.sample(n, rng), dtype=float)))
    return sets


def replay_transcript(algorithm: str, run: RecordedRun, privacy: Privacy, params: dict,
                      seed: int) -> TranscriptOutcome:
    """The forced-transcript replay (module docstring) of the recorded `run` (recorded with
    `analysis.privacy_checks.layers.record_run` at `seed`, rng [seed, 1])."""
    events, prob, data = run.events, run.problem, run.data
    if not events:
        return TranscriptOutcome(False, "its run made no release to replay", 0, 0)
    transcript = [np.asarray(e["released"], dtype=float) for e in events]
    timed_out = run.traj.stop_reason == "timeout"
    cls = get_algorithm(algorithm)
    tried = 0
    for what, other in neighbour_sets(prob, data, events[0], seed):
        probe = ForcedProbe(transcript)
        tried += 1
        try:
            traj = cls(**params).run(prob, other, privacy, np.random.default_rng([seed, 1]),
                                     probe=probe)
        except TranscriptExhausted as exc:
            if not timed_out:
                return TranscriptOutcome(False, f"with {what} and the recorded releases forced, "
                                         f"it asked for release {exc.release} of "
                                         f"{len(events)}", tried, len(events))
            traj = None
        except Exception as exc:
            return TranscriptOutcome(False, f"with {what} and the recorded releases forced, "
                                     f"its run crashed ({type(exc).__name__}: {exc})", tried,
                                     len(events))
        moved = _moved_release(events, probe.events)
        if moved:
            return TranscriptOutcome(False, f"with {what} and the recorded releases forced, "
                                     f"{moved}", tried, len(events))
        if traj is not None:
            diff = first_difference(run.traj, traj)
            if diff:
                return TranscriptOutcome(False, f"with {what} and the recorded releases "
                                         f"forced, {diff} differs", tried, len(events))
    if not timed_out:
        # no time limit: the recorded run finished within its own, and a slower rerun must
        # not read as another stop reason
        quiet = cls(**params).run(prob, data, privacy, np.random.default_rng([seed, 1]),
                                  probe=None)
        diff = first_difference(run.traj, quiet)
        if diff:
            return TranscriptOutcome(False, f"with the probe switched off, {diff} differs",
                                     tried, len(events))
    scope = (f"the first {len(events)} releases (the recorded run hit its time limit; the "
             "probe-off run not compared)" if timed_out else f"all {len(events)} releases")
    return TranscriptOutcome(True, f"{tried} data sets replayed with {scope} forced: outputs "
                             "identical", tried, len(events))


def _moved_release(recorded: list[dict], replayed: list[dict]) -> str | None:
    """Where a forced replay asked for a release at another point (iterate, clip, kind) than
    the recorded run: its state was moved by something other than the releases."""
    for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)):
        for key in ("oracle", "x", "x_prev", "clip", "denom"):
            if key in a and not _same(np.asarray(a[key]), np.asarray(b.get(key))):
                what = {"x": "iterate x", "x_prev": "previous iterate"}.get(key, key)
                return f"release {i + 1} was asked for at another {what}"
    if len(replayed) < len(recorded):
        return f"it stopped after release {len(replayed)} of {len(recorded)}"
    return None
