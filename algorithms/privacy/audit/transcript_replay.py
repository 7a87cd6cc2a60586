"""The forced-transcript replay of a plugin on the release API (issue 56, item 2): nothing but
the desk's releases reaches what the run outputs.

A `PrivateByConstruction` plugin is private if everything its run outputs is a function of the
desk's noised releases and its public inputs. That is a statement about every data set, so it
can be tested on any: run the plugin once on a data set D with seed s and record the releases
(the transcript); run it again on another data set D' with the desk forced to hand back the
recorded releases. The replay re-seeds the run's generator (the desk draws its batches and
noise from another stream) and keeps the recording's public generator (`public_from`: the
plugin's data-independent draws are the recorded ones). If the outputs are a function of the
releases and the public draws, the two trajectories are identical, field for field: iterates,
step log, n_steps, stop reason, params, the ledger, warnings. Any difference names the field
and the step where the plugin read the data some other way (the sample dug out of the desk, a
data file, a clean gradient computed on the side), or predicted the desk's noise from its live
generator and subtracted it (issue 71: a replay on the recording's seed predicted the recorded
noise again and could not see it). The replays run in a fresh process (forked from a fork
server that only imported the suite, or spawned where there is none: the plugins loaded anew,
no module state of the recording's process, a fresh problem instance for each data set), so
a plugin that carries state from one run to the next (a warm start from an
earlier run on the same data, at a looser eps) replays cold and differs.

The data sets D' tried: one record of D replaced by an adversarial record (the problem's own
list) scaled so that its per-record gradient at the start has norm 1.5 C, 3 C and 10 C, C the
first release's clip, each with its opposite (-r); that record at the list's full scale (1e6)
and its opposite, and scaled to entries of 1e300; two records replaced by an opposite pair
(r, -r: the mean moves little, the spread a lot); and a fresh sample of the problem (every
record changed). Then the run on D with the probe switched off must give the recorded
trajectory too (a plugin that behaves differently when watched).

What it cannot see: a leak that shows only on data sets it did not try (a branch on one
record value), and a plugin that detects the replay itself (a deliberate evasion, not a
research bug). Every field of the returned trajectory is compared but `sample` (the data an
empirical-risk run optimized, for evaluation).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms import Privacy, get_algorithm
from algorithms.base import Trajectory
from algorithms.privacy.audit.layers import RecordedRun, Recorder
from algorithms.privacy.audit.plugin_replay import CLIP_MULTIPLES, scaled_records
from algorithms.release_api import TranscriptExhausted

#: Trajectory fields that are not outputs of the run's releases: the data an empirical-risk run
#: optimized (kept for evaluation) and the realized Poisson batch sizes, which the accountant
#: keeps hidden (the re-seeded replay draws other batches).
NOT_RELEASED = Trajectory.NOT_RELEASED

#: The largest record entry the replay tries.
_HUGE = 1e300

#: The replay's run generator: another stream than the recording's [seed, 1].
REPLAY_STREAM = 0x5EED


def replay_generator(seed: int) -> np.random.Generator:
    """The re-seeded run generator of a forced replay of a run recorded on [seed, 1]."""
    return np.random.default_rng([seed, 1, REPLAY_STREAM])


class ForcedProbe(Recorder):
    """A probe that records the releases and makes the desk return `forced` instead; the run's
    public generator is derived from `public_from` (the recording's run generator), not from
    the re-seeded one the replay runs on."""

    def __init__(self, forced: list[np.ndarray],
                 public_from: np.random.Generator | None = None) -> None:
        super().__init__()
        self.forced = forced
        self.public_from = public_from


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
    # a record near the float range (issue 71): whatever it does to the desk's arithmetic
    # (overflowed gradients are zeroed by the clip), the forced outputs must not move
    put(f"record {j} replaced by an adversarial record at 1e300", {j: advs[0] * _HUGE / np.max(
        np.abs(advs[0]))})
    if n > 1:
        r = scaled[-1] if len(scaled) else advs[0]
        put(f"records {j}, {j2} replaced by an opposite pair", {j: r, j2: -r})
    sets.append(("a fresh sample", np.asarray(prob.sample(n, rng), dtype=float)))
    return sets


def replay_transcript(algorithm: str, run: RecordedRun, privacy: Privacy, params: dict,
                      seed: int) -> TranscriptOutcome:
    """The forced-transcript replay (module docstring) of the recorded `run` (recorded with
    `algorithms.privacy.audit.layers.record_run` at `seed`, rng [seed, 1])."""
    events, prob, data = run.events, run.problem, run.data
    if not events:
        return TranscriptOutcome(False, "its run made no release to replay", 0, 0)
    transcript = [np.asarray(e["released"], dtype=float) for e in events]
    timed_out = run.traj.stop_reason == "timeout"
    cls = get_algorithm(algorithm)
    sets = neighbour_sets(prob, data, events[0], seed)
    replays = fresh_replays(algorithm, prob, sets, transcript, privacy, params, seed)
    tried = 0
    for (what, _), (traj, error, asked) in zip(sets, replays, strict=True):
        tried += 1
        if isinstance(error, TranscriptExhausted):
            if not timed_out:
                return TranscriptOutcome(False, f"with {what} and the recorded releases forced, "
                                         f"it asked for release {error.release} of "
                                         f"{len(events)}", tried, len(events))
            traj = None
        elif error is not None:
            return TranscriptOutcome(False, f"with {what} and the recorded releases forced, "
                                     f"its run crashed ({type(error).__name__}: {error})", tried,
                                     len(events))
        moved = _moved_release(events, asked)
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


#: The keys of a replayed release `_moved_release` compares (what a fresh process sends back).
ASKED_KEYS = ("oracle", "x", "x_prev", "clip", "denom")


def _import_sources(sources: list[tuple[str, str | None]]) -> None:
    """Import each (module, file) the replay's classes come from: by name where it can be (a
    built-in or an importable module), else from its file under the same name (a plugin file,
    which registers its algorithms and problems as it did in the recording's process)."""
    import importlib
    import importlib.util

    for name, path in sources:
        if name in sys.modules:
            continue
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            found = None
        if path is None or (found is not None and found.origin == path):
            importlib.import_module(name)  # the same file under its own name
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


def _sources(*classes: type) -> list[tuple[str, str | None]]:
    """(module name, file) of each class's module, problem's before algorithm's."""
    out = []
    for cls in classes:
        module = sys.modules.get(cls.__module__)
        out.append((cls.__module__, getattr(module, "__file__", None)))
    return out


def _replay_all(sources: list[tuple[str, str | None]], algorithm: str, blob: bytes | None,
                problem: tuple[str, dict], sets: list[np.ndarray], transcript: list[np.ndarray],
                privacy: Privacy, params: dict, seed: int
                ) -> list[tuple[Any, BaseException | None, list[dict]]]:
    """In a fresh process: import the classes' modules, build a fresh problem for each data
    set, run every forced replay. The algorithm's class: the registry's, else `blob` (a class
    registered by hand in the recording's process, pickled by reference)."""
    import pickle

    from problems import get_problem

    _import_sources(sources)
    name, kwargs = problem
    try:
        cls = get_algorithm(algorithm)
    except ValueError:
        if blob is None:
            raise
        cls = pickle.loads(blob)
    out: list[tuple[Any, BaseException | None, list[dict]]] = []
    for other in sets:
        prob = get_problem(name, **kwargs)  # a fresh instance for each data set
        probe = ForcedProbe(transcript, public_from=np.random.default_rng([seed, 1]))
        traj, error = None, None
        try:
            with np.errstate(all="ignore"):  # a record at 1e300 overflows, quietly
                traj = cls(**params).run(prob, other, privacy, replay_generator(seed),
                                         probe=probe)
        except Exception as exc:  # sent back: the caller words it
            error = exc if _picklable(exc) else RuntimeError(f"{type(exc).__name__}: {exc}")
        if traj is not None:
            traj.sample = None  # not compared; not worth the pickling
        asked = [{k: e[k] for k in ASKED_KEYS if k in e} for e in probe.events]
        out.append((traj, error, asked))
    return out


def _picklable(exc: BaseException) -> bool:
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return True
    except Exception:
        return False


def fresh_replays(algorithm: str, prob: Any, sets: list[tuple[str, np.ndarray]],
                  transcript: list[np.ndarray], privacy: Privacy, params: dict, seed: int
                  ) -> list[tuple[Any, BaseException | None, list[dict]]]:
    """Every forced replay of `sets`, run in one fresh process (`fresh_context`: no module state of
    the recording's process, the classes' modules imported anew, a fresh problem instance per
    data set), so a plugin that carries state from one run to the next (a warm start from an
    earlier run on the same data) replays cold and shows it. Per data set: (trajectory or
    None, the exception raised or None, the releases asked for: `ASKED_KEYS`)."""
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    cls = get_algorithm(algorithm)
    try:
        blob: bytes | None = pickle.dumps(cls)
    except Exception:  # not picklable by reference: the registry's name must do
        blob = None
    problem = (prob.name, dict(prob.params()))
    args = (_sources(type(prob), cls), algorithm, blob, problem, [o for _, o in sets],
            transcript, privacy, params, seed)
    with ProcessPoolExecutor(max_workers=1, mp_context=fresh_context()) as pool:
        return pool.submit(_replay_all, *args).result()


#: What the fork server imports once (never running any of it): a fresh process forked from it
#: skips ~1.4 s of imports and still holds no module state of the recording's process. The main
#: module first, as spawn imports it (a class defined in a user's script unpickles there).
FORKSERVER_PRELOAD = ["__main__", "numpy", "scipy.stats", "algorithms", "problems", __name__]


def fresh_context() -> Any:
    """The start method of the fresh process: "forkserver" where the platform has it (a server
    started once per process as a new interpreter that only imports `FORKSERVER_PRELOAD`; each
    replay process is forked from it, so no plugin ever ran in its memory, and the plugin's
    modules are imported anew there), else "spawn" (a new interpreter per replay). Both are
    fresh: a warm start carried in module state replays cold
    (tests/test_plugin_leaks.py::test_a_warm_start_from_a_looser_run_is_failed_by_the_fresh_process_replay)."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(FORKSERVER_PRELOAD)  # read only when the server first starts
    return ctx


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
