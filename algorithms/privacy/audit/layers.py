"""Privacy verification, layers 1 and 2 (layer 3, the black-box audit, is algorithms.privacy.audit.audit).

Layer 1, sensitivity: run an algorithm with a probe that records every release (state, batch,
clip, pre-noise leaf, sensitivity told to the accountant). For each release, replace one
record of its batch by an adversarial one and recompute the leaf from the *same* state (the
sensitivity that matters under adaptive composition: conditioned on the previous outputs) with
the engine's own oracle functions; the leaf may move by at most what the accountant was told.
For the tree, the record's leaf changes are propagated through the running estimate exactly as
the engine does (nabla restarts at O1 calls) and summed into the dyadic nodes of the tree: at
most `tree_nodes` nodes may change, with squared changes summing to <= tree_nodes x s^2. Each
record may feed one release only (single pass): the releases' batches, concatenated, must be
the data set's records in order. (Position, not content: records repeat legitimately on
finite supports, so "the same bytes twice" is no evidence of reuse.)

All layers run in record mode (they plant canaries and adversarial records no finite support
holds, and probe per-record contributions only records expose). That covers the counts data
mode (problems.counts.stream, problems.counts.dataset): a counts run computes every release from the
batch's value counts, which equals the record-mode release on any records with those counts
(on an atoms layout every per-record map is applied per atom, algorithms.counts_maps; on a
product layout a clip is allowed only where a guard on public values proves it the identity),
and the counts and every read of them (thinning, hypergeometric splits) are distributed as
those of i.i.d. records; so each counts-mode release is a record-mode release on some data set,
and a guarantee that holds for every data set holds for it.

Layer 2, noise: with zero gradients (mean estimation at its mean, no spread, a step size of
1e-12 so the iterate stays there), the released estimate is the privacy noise alone. Its
distribution is tested against N(0, sigma^2) with sigma computed here from the declared
sensitivity and the GDP calibration (nodes from the tree's depth, not from the run), by a
Kolmogorov-Smirnov test that must pass at sigma and reject at 2/3 sigma and 3/2 sigma.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from algorithms import Privacy, get_algorithm
from algorithms.privacy.accounting.gdp import gdp_mu
from algorithms.privacy.mechanisms import TreeMechanism, clip_rows
from algorithms.sosp.engine import o1_leaf, o2_leaf
from problems import get_problem


class Recorder:
    """A probe that keeps every release the engine reports."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def release(self, **info: Any) -> None:
        self.events.append(info)


@dataclass
class SensitivityReport:
    """Layer 1 outcome. `max_ratio`: the largest leaf move / told sensitivity (<= 1 is private);
    `tree_nodes_touched` / `tree_sq_ratio`: worst node count and sum of squared node changes /
    (told nodes x s^2); `reused`: batch rows that are not the data's next record (a record
fed to a second release, or any other departure from one pass in order)."""

    releases: int
    max_ratio: float
    tree_nodes_touched: int = 0
    tree_nodes_told: int = 0
    tree_sq_ratio: float = 0.0
    reused: int = 0
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def _replay_nabla(events: list[dict], changed_step: int, new_leaf: np.ndarray) -> list[np.ndarray]:
    """The running estimate (pre-noise) under D', with every leaf as recorded except one."""
    out, nabla = [], None
    for e in events:
        leaf = new_leaf if e["t"] == changed_step else e["leaf"]
        nabla = leaf.copy() if e["oracle"] == 1 else nabla + leaf
        out.append(nabla)
    return out


def _dyadic_node_changes(leaf_changes: dict[int, np.ndarray], depth: int) -> list[float]:
    """Norms of the changed dyadic nodes (level l, index k covers leaves (k-1)2^l+1 .. k 2^l)."""
    nodes: dict[tuple[int, int], np.ndarray] = {}
    for t, delta in leaf_changes.items():
        for level in range(depth):
            key = (level, (t - 1) >> level)
            nodes[key] = nodes.get(key, 0) + delta
    return [float(np.linalg.norm(v)) for v in nodes.values() if np.linalg.norm(v) > 1e-12]


@dataclass
class RecordedRun:
    """One run with every release recorded (the input of the layer-1 checks)."""

    problem: Any
    traj: Any
    events: list[dict[str, Any]]
    tree: bool
    scope: str | None
    d: int
    data: np.ndarray | None = None  # the data set the run was given (single-pass check)


def record_run(algorithm: str, *, problem: str = "strict_saddle", d: int = 4, n: int = 60_000,
               eps: float = 1.0, delta: float = 1e-6, seed: int = 0,
               faults: tuple[str, ...] = (), params: dict | None = None,
               problem_params: dict | None = None, calibration: str = "tight",
               time_limit: float | None = None) -> RecordedRun:
    prob = get_problem(problem, d=d, **(problem_params or {}))
    data = prob.sample(n, np.random.default_rng(seed))
    alg = get_algorithm(algorithm)(planted_faults=faults, **(params or {}))
    rec = Recorder()
    traj = alg.run(prob, data, Privacy(eps, delta, calibration), np.random.default_rng([seed, 1]),
                   probe=rec, time_limit=time_limit)
    return RecordedRun(prob, traj, rec.events, alg.noise == "tree", traj.params.get("tree_scope"), d,
                       data)


def sensitivity_check(algorithm: str, *, records: list[np.ndarray] | None = None,
                      positions: int = 2, max_releases: int = 400, seed: int = 0,
                      run: RecordedRun | None = None, **run_kw: Any) -> SensitivityReport:
    """Layer 1 for one run (see the module docstring); `run` reuses a recorded run."""
    run = run or record_run(algorithm, seed=seed, **run_kw)
    return check_releases(run, records if records is not None else run.problem.adversarial_records(),
                          positions=positions, max_releases=max_releases, seed=seed)


def check_releases(run: RecordedRun, advs: list[np.ndarray], positions: int = 2,
                   max_releases: int = 400, seed: int = 0) -> SensitivityReport:
    """Replace one record of each (sampled) release's batch by each adversarial record."""
    events, traj = run.events, run.traj
    report = SensitivityReport(releases=len(events), max_ratio=0.0)
    _check_one_pass(run, report)
    pick = np.random.default_rng([seed, 2])
    chosen = events if len(events) <= max_releases else [
        events[i] for i in np.sort(pick.choice(len(events), max_releases, replace=False))]
    told_nodes = traj.params.get("tree_nodes", 0)
    for e in chosen:
        batch = e["batch"]
        if not len(batch):  # an empty Poisson batch: nothing to replace
            continue
        for pos in {0, int(pick.integers(len(batch)))} if positions > 1 else {0}:
            for adv in advs:
                other = batch.copy()
                other[pos] = adv
                new = _leaf_on(run.problem, e, other)
                change = new - e["leaf"]
                moved = float(np.linalg.norm(change))
                told = e["told"]
                ratio = moved / told if told > 0 else (math.inf if moved > 0 else 0.0)
                report.max_ratio = max(report.max_ratio, ratio)
                if not run.tree or moved == 0:
                    continue
                norms = _tree_node_changes(run, e["t"], new, moved)
                s = traj.params["leaf_sensitivity"]
                report.tree_nodes_touched = max(report.tree_nodes_touched, len(norms))
                report.tree_nodes_told = told_nodes
                sq = sum(v * v for v in norms) / (told_nodes * s * s)
                report.tree_sq_ratio = max(report.tree_sq_ratio, sq)
    if report.max_ratio > 1 + 1e-9:
        report.violations.append(f"a leaf moved {report.max_ratio:.3g} x the told sensitivity")
    if run.tree and report.tree_nodes_touched > told_nodes:
        report.violations.append(f"{report.tree_nodes_touched} tree nodes changed, accountant "
                                 f"told {told_nodes}")
    if run.tree and report.tree_sq_ratio > 1 + 1e-9:
        report.violations.append(f"sum of squared node changes {report.tree_sq_ratio:.3g} x "
                                 "nodes x s^2")
    return report


def _check_one_pass(run: RecordedRun, report: SensitivityReport) -> None:
    """Single pass: the batches, in release order, are the data's records in order (rows that
    are not go to `report.reused`). A multi-pass algorithm (it keeps its sample) reads records
    again by design; what it may not do is release more often than its accountant composed."""
    events, traj = run.events, run.traj
    multi_pass = getattr(traj, "sample", None) is not None
    chunked = bool(events) and "chunk" in events[0]
    if chunked:
        # Stages on disjoint chunks (recursive regularization): a stage may read its own chunk
        # many times, composed by its accountant, and no other record; the chunks, in order,
        # are the data's records in order (parallel composition).
        composed = [int(k) - 1 for k in traj.params.get("K_t", [])]
        firsts: dict[int, np.ndarray] = {}
        for e in events:
            c = int(e["chunk"])
            first = firsts.setdefault(c, e["batch"])
            if len(e["batch"]) != len(first) or np.any(e["batch"] != first):
                report.reused += len(e["batch"])
        counts = {c: sum(1 for e in events if int(e["chunk"]) == c) for c in firsts}
        for c, k in counts.items():
            if c > len(composed) or k > composed[c - 1]:
                report.violations.append(f"chunk {c}: {k} releases, accountant composed "
                                         f"{composed[c - 1] if c <= len(composed) else 0}")
        if run.data is not None:
            fed = np.concatenate([firsts[c] for c in sorted(firsts)])
            if len(fed) > len(run.data) or np.any(fed != run.data[: len(fed)]):
                report.reused += len(fed)
    elif multi_pass:
        composed = int(traj.params.get("T", 0))
        if len(events) > composed:
            report.violations.append(f"{len(events)} releases, accountant composed {composed}")
    elif run.data is not None and events:
        fed = np.concatenate([e["batch"] for e in events])
        expected = run.data[: len(fed)]
        report.reused = int(np.any(fed != expected, axis=1).sum()) if len(fed) <= len(run.data) \
            else len(fed)
    if report.reused:
        report.violations.append(f"{report.reused} batch rows are not the data's next record "
                                 "(a record fed more than one release)")


def _leaf_on(prob: Any, e: dict[str, Any], other: np.ndarray) -> np.ndarray:
    """Release `e`'s pre-noise leaf recomputed on the batch `other` from the same state, with
    the engine's own oracle functions."""
    if "denom" in e:  # first-order family: a clipped sum over its own divisor
        per = (prob.per_sample_grads(e["x"], other) if e["oracle"] == 1
               else prob.per_sample_grad_diffs(e["x"], e["x_prev"], other))
        return clip_rows(per, e["clip"]).sum(axis=0) / e["denom"]
    if e["oracle"] == 1:
        return o1_leaf(prob, e["x"], other, e["clip"])
    return o2_leaf(prob, e["x"], e["x_prev"], other, e["clip"])


def _tree_node_changes(run: RecordedRun, step: int, new: np.ndarray, moved: float) -> list[float]:
    """Norms of the tree nodes that change when step `step`'s leaf becomes `new` (it moved by
    `moved`): the leaf changes of the prefix-sum mechanism are Delta at this step and, through
    the running estimate, minus Delta at the next restart (global scope)."""
    events, d = run.events, run.d
    depth = run.traj.params.get("tree_depth", 0)
    nab_new = _replay_nabla(events, step, new)
    # per tree (one tree, or one per epoch): local leaf index -> leaf change
    trees: dict[int, dict[int, np.ndarray]] = {}
    prev_old = prev_new = np.zeros(d)
    base = 0  # steps before the current tree (epoch scope restarts it at O1)
    for ev, nn in zip(events, nab_new, strict=True):
        if run.scope == "epoch" and ev["oracle"] == 1:
            base = ev["t"] - 1
            prev_old = prev_new = np.zeros(d)
        dl = (nn - prev_new) - (ev["nabla"] - prev_old)
        if np.linalg.norm(dl) > 1e-12 * max(1.0, moved):
            trees.setdefault(base, {})[ev["t"] - base] = dl
        prev_old, prev_new = ev["nabla"], nn
    return [v for leaves in trees.values() for v in _dyadic_node_changes(leaves, depth)]


@dataclass
class NoiseReport:
    """Layer 2 outcome: KS p-values of the standardized noise at the calibrated sigma and at
    2/3 and 3/2 of it, the sample size, and the ratio of measured to expected variance."""

    n_values: int
    p_calibrated: float
    p_two_thirds: float
    p_three_halves: float
    variance_ratio: float
    sigma_expected: float
    popcount_variance: dict[int, float] = field(default_factory=dict)
    alpha: float = 1e-3

    @property
    def ok(self) -> bool:
        return self.p_calibrated > self.alpha

    @property
    def has_power(self) -> bool:
        return self.p_two_thirds < self.alpha and self.p_three_halves < self.alpha


NOISE_T = 16  # steps per run of the noise check (tree depth 5)


def noise_samples(algorithm: str, *, eps: float = 1.0, delta: float = 1e-6, runs: int = 600,
                  d: int = 4, b: int = 8, seed: int = 0, faults: tuple[str, ...] = ()
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Released noise with zero gradients, the standard deviation each value should have
    (computed here, from the declared sensitivity and the GDP calibration), and the popcount
    of each value's step (the number of tree nodes in its prefix; 1 for the Gaussian)."""
    # start 1e-9 from the mean (B0 > 0 for the rules); gradients ~1e-9 against noise ~1
    prob = get_problem("mean_estimation", d=d, spread=0.0, start_dist=1e-9)
    cls = get_algorithm(algorithm)
    # kappa far below any drift (sum of squared steps ~1e-24, or of estimate norms ~1): O1 at
    # every step, each a fresh release of the first batch size b.
    params = {"T": NOISE_T, "kappa": 1e-300, "eta": 1e-12, "saddle_noise": False, "b": b}
    if cls.noise == "tree":
        params["tree_scope"] = "global"
    mu = gdp_mu(eps, delta)
    values, scales, pops = [], [], []
    for r in range(runs):
        rec = Recorder()
        alg = cls(planted_faults=faults, **params)
        data = prob.stream(np.random.SeedSequence([seed, r]), budget=NOISE_T * b + 1)
        traj = alg.run(prob, data, Privacy(eps, delta), np.random.default_rng([seed, r, 1]), probe=rec)
        if cls.noise == "tree":
            depth = TreeMechanism.depth(NOISE_T)
            sigma = traj.params["leaf_sensitivity"] * math.sqrt(2 * depth) / mu  # global scope
            e = rec.events[r % len(rec.events)]  # one prefix per run: independent values
            values.append(e["released"] - e["nabla"])
            pop = bin(e["t"]).count("1")
            scales.append(np.full(d, sigma * math.sqrt(pop)))
            pops.append(np.full(d, pop))
        else:
            assert all(e["oracle"] == 1 for e in rec.events) and len(rec.events) == NOISE_T
            for e in rec.events:
                sens = 2 * prob.constants.G / b  # O1's declared replace-one sensitivity
                values.append(e["released"] - e["leaf"])
                scales.append(np.full(d, sens / mu))
                pops.append(np.ones(d, dtype=int))
    return np.concatenate(values), np.concatenate(scales), np.concatenate(pops)


def noise_check(algorithm: str, **kw: Any) -> NoiseReport:
    """Layer 2 (see the module docstring)."""
    vals, scales, popcounts = noise_samples(algorithm, **kw)
    z = vals / scales
    return NoiseReport(
        n_values=len(z),
        p_calibrated=float(stats.kstest(z, "norm").pvalue),
        p_two_thirds=float(stats.kstest(vals / (scales * 2 / 3), "norm").pvalue),
        p_three_halves=float(stats.kstest(vals / (scales * 3 / 2), "norm").pvalue),
        variance_ratio=float(np.var(z)),
        sigma_expected=float(np.median(scales)),
        # Tree: measured variance of TREE(t) / (popcount(t) sigma^2), per popcount.
        popcount_variance={int(k): float(np.var(z[popcounts == k])) for k in np.unique(popcounts)},
    )
