"""The replay of an outside algorithm's own code across its whole run (step 2 of
`algorithms.privacy.audit.plugin_checks`): the check that does not trust what a plugin reports
about how it computes a release.

For every release (up to `MAX_RELEASES`; past it the first, second, middle and last ones and
random others), one record of that release's batch is replaced in the data set by each of the
strongest adversarial records (at full scale, at entries of 1e300 for the first release, and
at 1e-4 of it for later releases) and by
records scaled so that their gradient has norm 1.5 C, 3 C and 10 C (and their opposites), and
the plugin runs again from the start on that data set, with the same seed, up to that release.
A replay that crashes is FAILED (a crash on a record is an output that depends on it), as is
one whose release comes out NaN or inf (issue 71: such moves were dropped), and so is
one whose release comes at another step or oracle although every release before it was the
recorded one (a schedule that reads the data; where earlier releases moved, a noised stopping
rule may flip honestly, and the replay is not compared); one whose release starts from the
recorded state must add the recorded noise (a noise scale read off the data moves it).
Two cases:

* the record enters no earlier release (every record of a one-pass run; a record that a
  Poisson-subsampled run reads for the first time there): the run before the release is the
  recorded one, draw for draw, so the release starts from the same state and adds the same
  noise; it may move by at most the sensitivity the run told its accountant;
* the record entered earlier releases too (a full-batch run reads every record at every step):
  the state at the release differs, so the move is corrected by what an honest release would
  move between the two states, recomputed here with the clip and divisor the run reported
  (`per_sample_grads`, `clip_rows`): ||(released' - released) - (H(x', B') - H(x, B))||, with
  B' the replayed batch with the original record put back. For an honest plugin that is the
  move of one clipped record from one state, at most the told sensitivity; a clip the plugin
  reports but skips after its first release moves it by the unclipped record. The noise is
  corrected too: the same draws at the std each run reported (`_noise_rescaled`), since a clip
  that is a public function of the state (a Spider's M ||x - x_prev||) scales the noise with it.

What this assumes (a test, not a proof): the plugin's random draws do not depend on the data
except through what it released (the same seed gives the same noise: true of Poisson sampling,
of shuffles and of Gaussian noise drawn in a fixed order), and it reports the iterate a release
is computed at. A replay whose release changed kind (another oracle or step) is not compared.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms import Privacy, get_algorithm
from algorithms.privacy.audit.layers import RecordedRun, Recorder
from algorithms.privacy.mechanisms import clip_rows

#: Releases replayed: every one of a run of at most this many; past it the first, the second,
#: the middle, the last and random ones up to this many.
MAX_RELEASES = 100
#: Gradient norms (in units of the release's clip C) of the scaled adversarial records replayed
#: beside the strongest ones: a clip a little above C, or a raise only past 10 C, shows there.
CLIP_MULTIPLES = (1.5, 3.0, 10.0)
#: Adversarial records replayed at the first release and at each later one: those with the
#: largest per-record gradient (difference) at the release's iterate, which a clip the plugin
#: skips lets through most.
FIRST_REPLAYS, LATER_REPLAYS = 6, 2
#: A later release is also replayed with those records scaled by this: a record at 1e6 that a
#: full-batch plugin fails to clip moves the iterate so far that, by the later release, the
#: loss may be saturated there and the record's gradient vanish; at 1e2 the leak still shows
#: (50x a told sensitivity of 2C / n for C ~ 1) while the state stays near the recorded one.
LATER_SCALE = 1e-4
#: The first release is also replayed with the strongest record scaled to entries of this size
#: (issue 71): a clip computed in float32 or float16 turns its norm into inf and its row into
#: NaN, which an honest float64 clip (`clip_rows`) zeroes.
HUGE = 1e300
#: Tolerance of a move over the told sensitivity (rounding of two ways of summing one batch).
RATIO_TOLERANCE = 1e-6
#: Seconds the replays of later releases may take together (the first release's are always
#: run); past them the remaining releases are not replayed and the outcome counts them skipped.
REPLAY_SECONDS = 60.0


class _Reached(Exception):
    """Raised by `_UntilRelease` to end a replay at the release it compares."""


class _UntilRelease(Recorder):
    """A probe that keeps the releases up to release `index` (0-based) and ends the run there."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def release(self, **info: Any) -> None:
        super().release(**info)
        if len(self.events) > self.index:
            raise _Reached


def run_until(algorithm: str, prob: Any, data: np.ndarray, privacy: Privacy, params: dict,
              rng: np.random.Generator, index: int | None = None) -> list[dict]:
    """The releases of one run of the plugin's own code (up to release `index` if given)."""
    rec = _UntilRelease(index) if index is not None else Recorder()
    try:
        get_algorithm(algorithm)(**params).run(prob, data, privacy, rng, probe=rec)
    except _Reached:
        pass
    return rec.events


def sampled_releases(made: int, seed: int) -> list[int]:
    """The release indices (0-based) the replay compares: all of them up to `MAX_RELEASES`;
    past it the first, second, middle and last ones and random others, `MAX_RELEASES` in all."""
    if made <= MAX_RELEASES:
        return list(range(max(made, 0)))
    fixed = {0, 1, made // 2, made - 1}
    rng = np.random.default_rng([seed, 5])
    rest = np.setdiff1d(np.arange(made), sorted(fixed))
    rand = rng.choice(rest, size=MAX_RELEASES - len(fixed), replace=False)
    return sorted(fixed | {int(i) for i in rand})


def scaled_records(prob: Any, e: dict, advs: np.ndarray, clip: float,
                   multiples: tuple[float, ...] = CLIP_MULTIPLES) -> np.ndarray:
    """For each multiple k: an adversarial record (of the list's first 64) scaled by the
    factor on a log grid whose per-record gradient (difference) at the release's iterate has
    norm nearest k C. Empty if the problem's oracle does not take them."""
    scales = np.logspace(-8, 0, 161)
    base = np.asarray(advs[:64], dtype=float)
    if not (math.isfinite(clip) and clip > 0):  # (a Spider's O2 at x = x_prev: nothing to scale)
        return base[:0]
    try:
        rows = (scales[:, None, None] * base[None]).reshape(-1, *base.shape[1:])
        per = (prob.per_sample_grads(e["x"], rows) if e.get("oracle", 1) == 1
               else prob.per_sample_grad_diffs(e["x"], e["x_prev"], rows))
        norms = np.linalg.norm(np.asarray(per, dtype=float).reshape(len(rows), -1), axis=1)
    except Exception:  # an outside oracle that does not take these records
        return base[:0]
    norms = norms.reshape(len(scales), len(base))
    logn = np.log(np.where(np.isfinite(norms) & (norms > 0), norms, 1e-300))
    out = []
    for k in multiples:
        gap = np.abs(logn - math.log(k * clip))
        i, j = np.unravel_index(int(np.argmin(gap)), gap.shape)
        out.append(scales[i] * base[j])
    return np.array(out)


@dataclass(frozen=True)
class ReplayOutcome:
    """ratio: the largest (corrected) move over the told sensitivity; index: its release
    (0-based); made: releases of the recorded run; compared: replays compared; skipped:
    releases not replayed for the time budget; broken: the first replay that could not be
    compared (the run crashed, or made another release there), said as a FAILED reason;
    noise_moved: the first replay whose noise changed with the data (same state, same seed)."""

    ratio: float
    index: int
    made: int
    compared: int
    skipped: int
    broken: str = ""
    noise_moved: str = ""
    #: replays not compared, said in the audit label: another state without a divisor to
    #: correct the move by (a tree release of the Spider engine reports none), a release whose
    #: record is no row of the data, or a schedule moved by earlier (noised) releases
    uncomparable: int = 0

    @property
    def ok(self) -> bool:
        return self.ratio <= 1 + RATIO_TOLERANCE and not self.broken and not self.noise_moved

    def reason(self) -> str:
        """The FAILED line: the release (1-based, of how many) and what went wrong."""
        if self.broken:
            return self.broken
        if self.noise_moved:
            return self.noise_moved
        where = ("its first release" if self.index == 0
                 else f"its release {self.index + 1} of {self.made}")
        return (f"replayed with one record replaced, {where} moved {self.ratio:.3g} x the told "
                "sensitivity")


def _row_keys(rows: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """One float per record (its projection on a random direction): equal records share it,
    different ones differ almost surely."""
    flat = np.asarray(rows, dtype=float).reshape(len(rows), -1)
    return flat @ direction


def _record_index(run: RecordedRun, index: int, keys: np.ndarray, order: np.ndarray,
                  direction: np.ndarray) -> int | None:
    """The data row to replace for release `index`: a record of its batch that no earlier
    release read, if there is one (the state before it is then the recorded run's), else the
    batch's first record. None if the batch's records are not rows of the data set."""
    events = run.events
    batch = np.asarray(events[index]["batch"])
    data = run.data
    if data is None or not len(batch):
        return None
    sorted_keys = keys[order]

    def rows_of(b: np.ndarray) -> np.ndarray:
        k = _row_keys(b, direction)
        pos = np.clip(np.searchsorted(sorted_keys, k), 0, len(order) - 1)
        hit = sorted_keys[pos] == k
        return np.where(hit, order[pos], -1)

    mine = rows_of(batch)
    if np.all(mine < 0):
        return None
    if len(batch) == len(data):  # a full batch: every record entered every earlier release
        return int(mine[mine >= 0][0])
    seen = np.zeros(len(data), dtype=bool)
    for e in events[:index]:
        b = np.asarray(e["batch"])
        if len(b):
            r = rows_of(b)
            seen[r[r >= 0]] = True
    # equal records share one key (finite supports): a key met before counts as read before
    fresh = [int(j) for j in mine if j >= 0 and not seen[j]]
    return fresh[0] if fresh else int(mine[mine >= 0][0])


def _honest_leaf(prob: Any, e: dict, batch: np.ndarray) -> np.ndarray:
    """The release's pre-noise value recomputed here: the clipped per-record gradients (or
    gradient differences) at the reported iterate, summed over the reported divisor."""
    per = (prob.per_sample_grads(e["x"], batch) if e["oracle"] == 1
           else prob.per_sample_grad_diffs(e["x"], e["x_prev"], batch))
    return clip_rows(np.array(per, dtype=float), e["clip"]).sum(axis=0) / e["denom"]


def _noise_rescaled(e: dict, e2: dict, released: np.ndarray) -> np.ndarray:
    """What an honest release's noise moves between two states: the same standard normal draws
    (same seed) at the noise std each run reported, (s' / s - 1) x the recorded noise. A release
    whose std scales with a clip that is a public function of the state (a Spider's M ||x -
    x_prev||) moves its noise with the state, and the leaf correction alone read that as a move
    of the record (issue 75: the guide's desk Spider FAILED at one check seed in six). Zero
    where a run reports no std or no leaf."""
    if "leaf" not in e or "noise_std" not in e or "noise_std" not in e2:
        return np.zeros_like(released)
    s, s2 = float(e["noise_std"]), float(e2["noise_std"])
    if not (math.isfinite(s) and math.isfinite(s2) and s > 0):
        return np.zeros_like(released)
    return (s2 / s - 1.0) * (released - np.asarray(e["leaf"], dtype=float))


def strongest(prob: Any, e: dict, advs: np.ndarray, k: int) -> np.ndarray:
    """The `k` adversarial records with the largest per-record gradient (or gradient
    difference) at the release's iterate (the list's first ones if that cannot be computed)."""
    try:
        per = (prob.per_sample_grads(e["x"], advs) if e.get("oracle", 1) == 1
               else prob.per_sample_grad_diffs(e["x"], e["x_prev"], advs))
        norms = np.linalg.norm(np.asarray(per, dtype=float).reshape(len(advs), -1), axis=1)
        norms = np.where(np.isfinite(norms), norms, np.inf)
        return advs[np.argsort(-norms, kind="stable")[:k]]
    except Exception:  # an outside problem's oracle may not take these records
        return advs[:k]


def _same_state(a: dict, b: dict) -> bool:
    return all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in ("x", "x_prev")
               if k in a and k in b)


def replay_releases(algorithm: str, prob: Any, run: RecordedRun, advs: np.ndarray,
                    privacy: Privacy, params: dict, seed: int) -> ReplayOutcome:
    """Step 2 of the plugin check (module docstring) on the recorded `run`."""
    events, data = run.events, run.data
    made = len(events)
    worst, worst_at, compared, skipped, uncomparable = 0.0, 0, 0, 0, 0
    if data is None or not made:
        return ReplayOutcome(0.0, 0, made, 0, 0, "its run left no data set or release to replay")
    direction = np.random.default_rng([seed, 6]).standard_normal(
        int(np.prod(np.shape(data)[1:])) or 1)
    keys = _row_keys(data, direction)
    order = np.argsort(keys, kind="stable")
    t0 = time.perf_counter()
    for i in sampled_releases(made, seed):
        if i > 0 and time.perf_counter() - t0 > REPLAY_SECONDS:
            skipped += 1
            continue
        e = events[i]
        j = _record_index(run, i, keys, order, direction)
        where = f"release {i + 1} of {made}"
        if j is None:  # its batch holds no row of the data (a preprocessed copy)
            if i > 0:  # the record to replace is unknown: not comparable
                uncomparable += 1
                continue
            j = 0  # from the start, any row: an honest per-record preprocessing moves one
        told = float(e["told"])
        released = np.asarray(e["released"], dtype=float)
        other = data.copy()
        chosen = strongest(prob, e, advs, FIRST_REPLAYS if i == 0 else LATER_REPLAYS)
        if i > 0:  # also at 1e-4 of their size: a record whose leak does not blow the state away
            chosen = np.concatenate([chosen, chosen * LATER_SCALE])
        elif len(chosen):  # and near the float range: a low-precision clip overflows there
            top = float(np.max(np.abs(chosen[0])))
            if top > 0:
                chosen = np.concatenate([chosen, chosen[:1] * (HUGE / top)])
        scaled = scaled_records(prob, e, advs, float(e.get("clip", told)))
        if len(scaled):  # and at 1.5 C to 10 C: a clip set a little high, a raise past 10 C
            chosen = np.concatenate([chosen, scaled, -scaled])
        for adv in chosen:
            other[j] = adv
            try:
                with np.errstate(all="ignore"):  # a record at 1e300 overflows, quietly
                    evs = run_until(algorithm, prob, other, privacy, params,
                                    np.random.default_rng([seed, 1]), index=i)
            except Exception as exc:  # a crash on a record is a data-dependent output too
                return ReplayOutcome(worst, worst_at, made, compared, skipped,
                                     f"replayed with one record replaced, its run crashed "
                                     f"before {where} ({type(exc).__name__}: {exc})")
            if len(evs) <= i or evs[i]["t"] != e["t"] or evs[i].get("oracle") != e.get("oracle"):
                same_before = len(evs) >= i and all(
                    np.array_equal(np.asarray(a["released"]), np.asarray(b["released"]))
                    for a, b in zip(events[:i], evs[:i], strict=False))
                if not same_before:  # earlier releases moved: a noised stop may flip, honestly
                    uncomparable += 1
                    continue
                return ReplayOutcome(worst, worst_at, made, compared, skipped,
                                     f"replayed with one record replaced, every release before "
                                     f"its {where} identical, that release did not come at the "
                                     "same step and oracle (a schedule that reads the data)")
            e2 = evs[i]
            move = np.asarray(e2["released"], dtype=float) - released
            if not np.all(np.isfinite(move)):  # NaN or inf out of one record: it shows it
                bad = "NaN" if np.isnan(move).any() else "inf"
                return ReplayOutcome(worst, worst_at, made, compared, skipped,
                                     f"replayed with one record replaced, its {where} came out "
                                     f"{bad} (a record's gradient the clip did not bound: a "
                                     "clip in low precision, or none?)")
            if _same_state(e, e2) and "leaf" in e and "leaf" in e2:
                noise = released - np.asarray(e["leaf"], dtype=float)
                noise2 = np.asarray(e2["released"], dtype=float) - np.asarray(e2["leaf"],
                                                                              dtype=float)
                scale = max(float(np.linalg.norm(noise)), 1e-300)
                # rounding: released - leaf loses ~1e-16 |leaf| of the noise it recovers, in
                # either run (a replayed leaf at 1e300 absorbs its noise whole)
                slack = 1e-6 * scale + 1e-9 * max(float(np.linalg.norm(e["leaf"])),
                                                  float(np.linalg.norm(e2["leaf"]))) + 1e-12
                if float(np.linalg.norm(noise2 - noise)) > slack:
                    return ReplayOutcome(
                        worst, worst_at, made, compared, skipped, "", f"replayed with one "
                        f"record replaced (same seed, same state), its {where} added other "
                        f"noise (norm {np.linalg.norm(noise2):.3g} vs {scale:.3g}): a noise "
                        "that depends on the data")
            if not _same_state(e, e2):
                if "denom" not in e:  # no recomputation for this protocol (a Spider's tree)
                    uncomparable += 1
                    continue
                back = np.array(e2["batch"], dtype=float, copy=True)
                back[np.all(back.reshape(len(back), -1) == np.ravel(adv), axis=1)] = data[j]
                move = move - (_honest_leaf(prob, e2, back)
                               - _honest_leaf(prob, e, np.asarray(e["batch"], dtype=float)))
                move = move - _noise_rescaled(e, e2, released)
            moved = float(np.linalg.norm(move))
            ratio = moved / told if told > 0 else (math.inf if moved > 0 else 0.0)
            compared += 1
            if ratio > worst:
                worst, worst_at = ratio, i
        other[j] = data[j]
    return ReplayOutcome(worst, worst_at, made, compared, skipped, uncomparable=uncomparable)
