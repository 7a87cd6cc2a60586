"""Per-step cost of the three Spiders in counts mode, whole engine (issue 27; `make bench`).

Each Spider runs on hard_valley (eps = 0.1) with its batches fixed at B (O1's b = B, and for
the fixed-batch Spiders O2's B too; the adaptive Spider's O2 batches follow its rule), twice:
T1 and T2 > T1 steps; the cost per step is (wall(T2) - wall(T1)) / (T2 - T1), so the set-up
(calibration, rules) cancels. The same runs on the previous stream implementation
(`ReferenceCountsStream`, numpy walk, stream version 1) give the "old" figure beside it, in
the same test (the engine's own speed-ups since then are in both). Goals: <= 20 us at d = 10,
<= 50 us at d = 100 (issue 27); an unmet goal marks the test xfail with the figures. The
end-to-end goal: an adaptive tree Spider run on hard_valley to alpha = 1e-3 (eps 0.1, d 10,
~3e6 steps) in <= 2 min on one core.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from analysis.metrics import target_monitor
from problems import get_problem
from problems.counts.stream import CountsStream, ReferenceCountsStream

ALGS = ["gaussian_spider", "tree_spider", "adaptive_tree_spider"]
BATCHES = [10**k for k in (2, 4, 6, 8, 10, 12)]
GOAL = {10: 20e-6, 100: 50e-6}


def _run(name: str, d: int, B: int, T: int, impl: str):
    problem = get_problem("hard_valley", d=d)
    kw = {"b": B, "T": T} if name == "adaptive_tree_spider" else {"b": B, "B": B, "T": T}
    alg = get_algorithm(name)(**kw)
    cls = CountsStream if impl == "new" else ReferenceCountsStream
    extra = {} if impl == "new" else {"leaf_levels": 8}
    stream = cls(problem.counts_layout(), np.random.SeedSequence([5, d]), 10**16, **extra)
    t0 = time.perf_counter()
    traj = alg.run(problem, stream, Privacy(0.1), np.random.default_rng(0))
    return time.perf_counter() - t0, traj


def _per_step(name: str, d: int, B: int, T1: int, T2: int, impl: str) -> tuple[float, float]:
    w1, t1 = _run(name, d, B, T1, impl)
    w2, t2 = _run(name, d, B, T2, impl)
    assert t2.n_steps == T2 and t1.n_steps == T1
    return (w2 - w1) / (T2 - T1), float(np.median(t2.records["batch"]))


@pytest.mark.parametrize("name", ALGS)
@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("B", BATCHES, ids=[f"B1e{k:02d}" for k in (2, 4, 6, 8, 10, 12)])
def test_spider_step_in_counts_mode(benchmark, name, d, B):
    full = not benchmark.disabled
    T1, T2 = (200, 1200) if full else (5, 10)
    _run(name, d, B, 2, "new")  # compiled kernels loaded
    out = {}

    def run():
        out["new"] = _per_step(name, d, B, T1, T2, "new")

    benchmark.pedantic(run, rounds=1, iterations=1)
    new, batch = out["new"]
    if full:
        old, _ = _per_step(name, d, B, T1 // 4, T2 // 4, "old")
        benchmark.extra_info.update(per_step_us=new * 1e6, old_per_step_us=old * 1e6,
                                    speedup=old / new, median_batch=batch)
        if 10**4 <= B <= 10**10:  # above: the same root draws; at 1e2, d 100, small leaves cost more
            assert new <= old, f"{name} d={d} B={B:.0e}: new {new * 1e6:.0f} us > old {old * 1e6:.0f} us"
        if new > GOAL[d]:
            pytest.xfail(f"issue 27 goal not met: {name}, d={d}, B={B:.0e}: {new * 1e6:.0f} us/step "
                         f"> {GOAL[d] * 1e6:.0f} us (old {old * 1e6:.0f} us, {old / new:.1f}x)")


def test_adaptive_run_to_alpha_1e3(benchmark):
    """hard_valley, d = 10, eps = 0.1, target 1e-3 (~3e6 steps): goal <= 120 s on one core."""
    full = not benchmark.disabled
    problem = get_problem("hard_valley", d=10)
    target = 1e-3 if full else 0.05
    out = {}

    def run():
        alg = get_algorithm("adaptive_tree_spider")(target_alpha=target)
        stream = problem.stream(np.random.SeedSequence([3, 0]), budget=10**12, data="counts")
        out["traj"] = alg.run(problem, stream, Privacy(0.1), np.random.default_rng(3),
                              monitor=target_monitor(problem, target))

    benchmark.pedantic(run, rounds=1, iterations=1)
    traj = out["traj"]
    assert traj.stop_reason == "target_reached"
    if full:
        seconds = benchmark.stats.stats.max
        benchmark.extra_info.update(steps=traj.n_steps, samples=traj.samples_used, seconds=seconds,
                                    us_per_step=seconds / traj.n_steps * 1e6)
        if seconds > 120:
            pytest.xfail(f"issue 27 goal not met: {seconds:.0f} s > 120 s for {traj.n_steps} steps "
                         f"({seconds / traj.n_steps * 1e6:.0f} us/step)")
