"""Patterns across one recorded run's releases that no private mechanism shows (a step of the
plugin check, `algorithms.privacy.audit.plugin_checks`): a release without noise, two releases
with the same noise draw, two sampled releases reading the same batch, a step-log norm that is
no release's, and iterates that other noise draws leave where they were.

Each is read off the releases the run reported to its probe (noise = released - leaf). The
pooled noise test (`plugin_ledger.measure_noise`) measures a noise scale over many releases and
seeds; a single silent release among fifty, or one draw reused at every step, hardly moves that
pooled scale, so they are looked for one by one here. For a continuous Gaussian noise each
pattern has probability zero, so the tests have no false alarm beyond floating-point ties,
which the tolerances below exclude. The sampler's test (`sampler_mismatch`) is a statistic
with thresholds at -6 and +12 standard deviations.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from algorithms.privacy.audit.layers import RecordedRun

#: A release whose noise norm is within this fraction of its leaf's norm (the rounding of
#: released - leaf; exactly 0 for a noise std of 0) added none. Relative to the leaf, not to the
#: told sensitivity: a plugin telling a huge sensitivity is the ledger check's to catch.
SILENT = 1e-13
#: Two noise vectors equal within this relative tolerance (plus the rounding of released - leaf)
#: are one draw: for independent Gaussian draws the chance is ~(1e-9)^d per pair.
SAME_DRAW = 1e-9
#: Sampled batches are compared only on data sets of at least this many records (two Poisson
#: batches of a tiny data set may coincide by chance).
MIN_RECORDS = 100
#: Batches compared only with at least this many records, of this many distinct values (two
#: Poisson batches of 4 records over 8 record types coincide often).
MIN_BATCH, MIN_DISTINCT = 30, 10
#: Releases compared pairwise at most (the first ones; O(T^2 d) work).
MAX_PAIRS_OF = 2000


def _noise(events: list[dict]) -> np.ndarray | None:
    if not events or any("leaf" not in e or "released" not in e for e in events):
        return None
    try:
        return np.array([np.ravel(np.asarray(e["released"], dtype=float)
                                  - np.asarray(e["leaf"], dtype=float)) for e in events])
    except ValueError:  # releases of varying shapes: not compared
        return None


def silent_release_at(events: list[dict]) -> str | None:
    """The first release that adds no noise, said as a FAILED reason."""
    noise = _noise(events)
    if noise is None:
        return None
    for i, (e, z) in enumerate(zip(events, noise, strict=True)):
        leaf = float(np.linalg.norm(np.asarray(e["leaf"], dtype=float)))
        if float(np.linalg.norm(z)) <= SILENT * leaf:
            return f"its release {i + 1} of {len(events)} adds no noise"
    return None


def reused_draw(events: list[dict]) -> str | None:
    """Two releases that add the same noise vector (one draw reused, or a generator reseeded),
    as a FAILED reason. Equality, not collinearity: two independent draws at d = 2 are nearly
    collinear often enough over thousands of pairs, and a Spider's running estimates are."""
    noise = _noise(events)
    if noise is None or len(noise) < 2:
        return None
    noise = noise[:MAX_PAIRS_OF]
    leafs = np.array([float(np.linalg.norm(np.asarray(e["leaf"], dtype=float)))
                      for e in events[:MAX_PAIRS_OF]])
    norms = np.linalg.norm(noise, axis=1)
    idx = np.flatnonzero(norms > 0)
    if len(idx) < 2:
        return None
    # sort by the first coordinate: equal vectors are then neighbours
    order = idx[np.argsort(noise[idx, 0], kind="stable")]
    hits = []
    for a, b in itertools.pairwise(order):
        slack = SAME_DRAW * max(norms[a], norms[b]) + 1e-13 * max(leafs[a], leafs[b])
        if float(np.linalg.norm(noise[a] - noise[b])) <= slack:
            hits.append(tuple(sorted((int(a), int(b)))))
    if not hits:
        return None
    # within a group of equal draws, name its first release and the next one of the group
    first = min(a for a, _ in hits)
    group = {first} | {i for pair in hits if first in pair for i in pair}
    while True:  # close the group over chains of neighbours
        grown = group | {i for pair in hits if set(pair) & group for i in pair}
        if grown == group:
            break
        group = grown
    a, b = sorted(group)[:2]
    return (f"its releases {a + 1} and {b + 1} of {len(events)} add the same noise draw (a "
            "generator reseeded, or one draw reused)")


def same_batch(run: RecordedRun) -> str | None:
    """Two sampled releases (of one oracle, at different steps) that read the same records,
    as a FAILED reason: a sampler reseeded at every step makes the privacy amplification of
    subsampling void."""
    data, events = run.data, run.events
    if data is None or len(data) < MIN_RECORDS:
        return None
    direction = np.random.default_rng(11).standard_normal(int(np.prod(np.shape(data)[1:])) or 1)
    seen: dict[tuple, int] = {}
    for i, e in enumerate(events[:MAX_PAIRS_OF]):
        batch = np.asarray(e.get("batch", []), dtype=float)
        if len(batch) < MIN_BATCH or len(batch) >= len(data):
            continue
        keys = np.sort(batch.reshape(len(batch), -1) @ direction)
        if len(np.unique(keys)) < MIN_DISTINCT:  # few record types: batches coincide by chance
            continue
        sig = (int(e.get("oracle", 1)), len(keys), hash(keys.tobytes()))
        if sig in seen and events[seen[sig]].get("t") != e.get("t"):
            return (f"its releases {seen[sig] + 1} and {i + 1} of {len(events)} read the same "
                    f"batch of {len(keys)} records (a sampler reseeded at every step?)")
        seen.setdefault(sig, i)
    return None


#: The inclusion counts' dispersion z past which a sampler is not the ledger's Poisson: below
#: -LOW (each record about equally often) or above HIGH (D is a sum of right-skewed terms, its
#: left tail lighter than a normal's, its right tail heavier).
SAMPLER_Z_LOW, SAMPLER_Z_HIGH = 6.0, 12.0


def sampler_mismatch(run: RecordedRun) -> str | None:
    """A run whose ledger accounts Poisson subsampling (PLD, a family of rate 0 < q < 1) but
    whose batches do not include each record independently with probability q, as a FAILED
    reason (issue 71: shuffled epochs accounted as Poisson spend delta 1.35e-2 at eps 1).

    Records are told apart by value: the m_v records of value v are included, over T sampled
    releases, c_v ~ Binomial(m_v T, q) times, independently across values. The dispersion
    D = sum_v (c_v - m_v T q)^2 / (m_v T q (1 - q)) then has mean V (the distinct values) and
    variance sum_v (E Z_v^4 - 1), E Z_v^4 = 3 + (1 - 6 q (1 - q)) / (m_v T q (1 - q)) (a
    standardized binomial's fourth moment). Exactly once per epoch gives D near 0; a sampler
    that favours some records gives D far above V."""
    spent = run.traj.privacy_spent or {}
    if spent.get("accountant") != "pld":
        return None
    rates = [(int(c), float(q)) for _, q, c in spent.get("families", []) if 0 < float(q) < 1]
    data = run.data
    if not rates or data is None or len(data) < MIN_RECORDS:
        return None
    q = max(rates)[1]
    n = len(data)
    direction = np.random.default_rng(12).standard_normal(int(np.prod(np.shape(data)[1:])) or 1)
    values, of_record = np.unique(np.asarray(data, dtype=float).reshape(n, -1) @ direction,
                                  return_inverse=True)
    mult = np.bincount(of_record, minlength=len(values)).astype(float)
    counts, T = np.zeros(len(values)), 0
    for e in run.events:
        batch = np.asarray(e.get("batch", []), dtype=float)
        if int(e.get("oracle", 1)) != 1 or batch.ndim < 1 or len(batch) >= n:
            continue
        bk = batch.reshape(len(batch), -1) @ direction if len(batch) else np.zeros(0)
        at = np.clip(np.searchsorted(values, bk), 0, len(values) - 1)
        if not np.array_equal(values[at], bk):
            return None  # a batch of rows that are not the data's records: not counted
        np.add.at(counts, at, 1)
        T += 1
    if T < 2:
        return None
    # the batch sizes first: sum over T releases of |B_t| ~ Binomial(n T, q)
    sizes = float(counts.sum())
    z_size = (sizes - n * T * q) / np.sqrt(n * T * q * (1 - q))
    if abs(z_size) > SAMPLER_Z_LOW:
        return (f"its {T} sampled releases read {sizes / T:.4g} records on average where its "
                f"ledger's Poisson rate q = {q:.3g} gives {n * q:.4g} of {n} (z = {z_size:.1f}: "
                "a capped or fixed batch accounted at another rate?)")
    var = mult * T * q * (1 - q)
    dispersion = float(np.sum((counts - mult * T * q) ** 2 / var))
    spread = float(np.sum(2 + (1 - 6 * q * (1 - q)) / var))
    z = (dispersion - len(values)) / np.sqrt(spread)
    if -SAMPLER_Z_LOW <= z <= SAMPLER_Z_HIGH:
        return None
    how = ("each record about equally often: shuffled epochs?" if z < 0 else
           "some records far more often than others")
    return (f"its {T} sampled releases include its {n} records ({len(values)} distinct) with a "
            f"dispersion {dispersion / len(values):.3g}x that of independent Poisson sampling "
            f"at q = {q:.3g} (z = {z:.1f}; {how}), while its ledger accounts Poisson "
            "subsampling")


def log_not_released(run: RecordedRun) -> str | None:
    """A step-log norm that is the norm of no release made at that step, as a FAILED reason.
    The log's `est_norm` is by contract the released ||nabla~_t|| (`algorithms.base.Trajectory`;
    a Spider reports its running estimate as `nabla`; a step reported with escape=True adds
    public saddle-escape noise and is not compared): a clean norm logged there is a release of
    the data that the accountant never saw. A post-processed norm (a momentum buffer's) trips it too, so
    it is an "unverified" reason, never FAILED; the release API writes the log itself."""
    logged = (run.traj.records or {}).get("est_norm") if run.traj is not None else None
    if logged is None or not run.events:
        return None
    logged = np.asarray(logged, dtype=float)
    norms: dict[int, list[float]] = {}
    escaped = {int(e.get("t", 0)) for e in run.events if e.get("escape")}
    for e in run.events:
        t = int(e.get("t", 0))
        for key in ("released", "nabla"):
            if key in e:
                norms.setdefault(t, []).append(float(np.linalg.norm(np.asarray(e[key], float))))
    if not norms or min(norms) < 1 or max(norms) > len(logged):
        return None  # a log not indexed by the releases' steps: not compared
    for t in sorted(set(norms) - escaped):  # an escape step logs its public noise added
        v = logged[t - 1]
        if not np.isfinite(v):
            continue
        if not any(abs(v - r) <= 1e-9 * max(abs(r), 1e-300) + 1e-15 for r in norms[t]):
            return (f"its step log's est_norm at step {t} ({v:.6g}) is the norm of no release "
                    f"made at that step ({', '.join(f'{r:.6g}' for r in norms[t])}): a clean "
                    "norm logged there is a leak (log the released norm)")
    return None


def ignores_releases(algorithm: str, prob: Any, run: RecordedRun, privacy: Any, params: dict,
                     seed: int, reruns: int = 3) -> str | None:
    """An iterate unmoved by other noise draws, as a FAILED reason. Take the first release made
    at a later step and another iterate than the first (a plugin may ask for several releases
    at one iterate); rerun the plugin up to it under `reruns` other seeds. Where releases before
    it added other noise every time but it is computed at the recorded iterate every time, the
    steps did not use the released values (a clean gradient: its direction and size reach
    whoever sees the iterates). A step that is a coarse function of its release (the sign of a
    gradient far above its noise) can read the same way: said in the reason."""
    from algorithms.privacy.audit.plugin_replay import run_until

    events = run.events
    if run.data is None or len(events) < 2:
        return None
    x0, t0 = np.asarray(events[0]["x"]), events[0].get("t")
    k = next((i for i, e in enumerate(events) if e.get("t") != t0
              and not np.array_equal(np.asarray(e["x"]), x0)), None)
    if k is None:
        return None
    for r in range(reruns):
        other = run_until(algorithm, prob, run.data, privacy, params,
                          np.random.default_rng([seed, 9, r]), index=k)
        if len(other) <= k or other[k].get("t") != events[k].get("t"):
            return None  # another schedule under other draws: not this pattern
        moved = any(not np.array_equal(np.asarray(a["released"]), np.asarray(b["released"]))
                    for a, b in zip(events[:k], other[:k], strict=True))
        if not moved or not np.array_equal(np.asarray(events[k]["x"]), np.asarray(other[k]["x"])):
            return None
    return (f"its release {k + 1} of {len(events)} is computed at the same iterate under "
            f"{reruns} other seeds' noise: its steps do not use the released values (or only "
            "their sign, far above the noise)")


def pattern_violation(run: RecordedRun) -> str | None:
    """The first FAILED pattern of the module docstring the run shows (`log_not_released`, which
    a post-processed norm can trip too, is an "unverified" reason of its own)."""
    return (silent_release_at(run.events) or reused_draw(run.events) or same_batch(run)
            or sampler_mismatch(run))
