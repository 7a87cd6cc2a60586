"""Per-step cost of the three Spiders in counts mode, whole engine (issue 27; `make bench`).

Each Spider runs on hard_valley (eps = 0.1) with its batches fixed at B, twice: T1 and T2 > T1
steps; the cost per step is (wall(T2) - wall(T1)) / (T2 - T1), so the set-up (calibration,
rules) cancels. Two kinds of step, since they cost differently:

* `O2` (the Spiders' usual step: 71-100% of the steps of a run at the rules' own parameters
  from n = 1e6, 92-100% from n = 1e8: `test_rules_run_step_mix`): the fixed-batch Spiders
  with kappa = 1e300 and D = 0.01, so that after the first O1 every step is an O2 of B
  records; the adaptive Spider with b = B and its own kappa, its O2 batches following its rule
  (the median batch is reported).
* `O1`: the fixed-batch Spiders with their own kappa, which at these fixed batches calls O1 at
  almost every step (b = B records, every coordinate read).

The same runs on the previous implementation (`CountsStream`, counts stream version 2: every
coordinate walked at every take, each step in the Python loop, since the compiled O2 steps of
`algorithms.sosp.compiled_o2` serve the per-coordinate streams only) give the "old" figure
beside it, in the same test; `make bench` prints both in its "old against new" table. The
"new" figure runs the default stream (version 4: one block of 2^50 records per coordinate);
version 3 (blocks of 2^29 whose superblock roots a take of ~1e10 or more draws in Python) is
measured in the same test too (`v3_per_step_us`, printed with -s).
Also here: whole runs at the rules' own parameters (`test_rules_run_step_mix`: their O1 share
and mean cost a step) and the memory a step of a run's records (`test_run_memory_per_step`).
Goals: <= 20 us at d = 10, <= 50 us at d = 100 (issue 27);
an unmet goal marks the test xfail with the figures. The end-to-end goal: an adaptive tree
Spider run on hard_valley to alpha = 1e-3 (eps 0.1, d 10, ~3e6 steps) in <= 2 min on one core.
"""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from problems import get_problem
from problems.counts.stream import CountsStream
from problems.evaluation.metrics import target_monitor

ALGS = ["gaussian_spider", "tree_spider", "adaptive_tree_spider"]
BATCHES = [10**k for k in (2, 4, 6, 8, 10, 12)]
GOAL = {10: 20e-6, 100: 50e-6}


def _run(name: str, d: int, B: int, T: int, impl: str, oracle: str):
    problem = get_problem("hard_valley", d=d)
    if name == "adaptive_tree_spider":
        kw = {"b": B, "T": T}
    else:
        # O2 steps only: a drift bound never reached, with the steps (and the tree's O2
        # sensitivity 2 M D / B) bounded by a D of the size the rules give at these batches.
        kw = {"b": B, "B": B, "T": T, **({"kappa": 1e300, "D": 0.01} if oracle == "O2" else {})}
    alg = get_algorithm(name)(**kw)
    seed = np.random.SeedSequence([5, d])
    if impl == "new":
        stream = problem.stream(seed, budget=10**16, data="counts")
    elif impl == "v3":
        stream = problem.stream(seed, budget=10**16, data="counts", counts_version=3)
    else:
        stream = CountsStream(problem.counts_layout(), seed, 10**16)
    t0 = time.perf_counter()
    traj = alg.run(problem, stream, Privacy(0.1), np.random.default_rng(0))
    return time.perf_counter() - t0, traj


def _per_step(name: str, d: int, B: int, T1: int, T2: int, impl: str,
              oracle: str) -> tuple[float, float, float]:
    w1, t1 = _run(name, d, B, T1, impl, oracle)
    w2, t2 = _run(name, d, B, T2, impl, oracle)
    assert t2.n_steps == T2 and t1.n_steps == T1
    rec = t2.records
    o2 = rec["oracle"] == 2
    batch = float(np.median(rec["batch"][o2])) if o2.any() else float(B)
    return (w2 - w1) / (T2 - T1), batch, float(np.mean(rec["oracle"] == 1))


CASES = [(name, "O2") for name in ALGS] + [(name, "O1") for name in ALGS[:2]]


@pytest.mark.parametrize("name,oracle", CASES, ids=[f"{n}-{o}" for n, o in CASES])
@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("B", BATCHES, ids=[f"B1e{k:02d}" for k in (2, 4, 6, 8, 10, 12)])
def test_spider_step_in_counts_mode(benchmark, name, oracle, d, B):
    if (name, oracle, B) == ("gaussian_spider", "O2", 10**2):
        # Its O2 noise is scaled to the step taken (2 M |dx| / B per unit of multiplier), which
        # at B = 1e2 exceeds the step itself: without O1 restarts the steps grow geometrically
        # until the drift bound calls O1 (measured at step 3). Its O1 case covers B = 1e2.
        pytest.skip("no O2-only run of the Gaussian Spider at B = 1e2 (its steps diverge)")
    full = not benchmark.disabled
    T1, T2 = (200, 1200) if full else (5, 10)
    _run(name, d, B, 2, "new", oracle)  # compiled kernels loaded
    out = {}

    def run():
        out["new"] = _per_step(name, d, B, T1, T2, "new", oracle)

    benchmark.pedantic(run, rounds=1, iterations=1)
    new, batch, o1_share = out["new"]
    if oracle == "O2" and name != "adaptive_tree_spider":
        assert o1_share <= 1 / T2 + 1e-12  # only the first step calls O1
    if full:
        old, _, _ = _per_step(name, d, B, T1, T2, "old", oracle)
        v3, _, _ = _per_step(name, d, B, T1, T2, "v3", oracle)
        benchmark.extra_info.update(per_step_us=new * 1e6, old_per_step_us=old * 1e6,
                                    v3_per_step_us=v3 * 1e6, speedup=old / new,
                                    median_o2_batch=batch, o1_share=o1_share, goal_us=GOAL[d] * 1e6)
        print(f"\n{name} {oracle} d={d} B={B:.0e}: {new * 1e6:.1f} us/step (version 3 stream "
              f"{v3 * 1e6:.1f}, version 2 in the Python loop {old * 1e6:.1f})")
        if oracle == "O2" and 10**4 <= B <= 10**10:
            assert new <= old, f"{name} d={d} B={B:.0e}: new {new * 1e6:.0f} us > old {old * 1e6:.0f} us"
        if new > GOAL[d]:
            pytest.xfail(f"issue 27 goal not met: {name} {oracle}, d={d}, B={B:.0e}: "
                         f"{new * 1e6:.0f} us/step > {GOAL[d] * 1e6:.0f} us (old {old * 1e6:.0f} us, "
                         f"{old / new:.1f}x)")


def _profile_o2_per_step(problem_name: str, d: int, B: int, compiled: bool, T1: int, T2: int) -> float:
    """O2 steps of the fixed-batch tree Spider on another separable profile (its d1 in Python,
    `algorithms.sosp.compiled_profiles.profile_d1`), with the compiled steps on or off."""
    from algorithms.sosp import compiled_o2

    problem = get_problem(problem_name, d=d)
    walls = []
    compiled_o2.ENABLED = compiled
    try:
        for T in (T1, T2):
            alg = get_algorithm("tree_spider")(b=B, B=B, T=T, kappa=1e300, D=0.01)
            stream = problem.stream(np.random.SeedSequence([5, d]), budget=10**16, data="counts")
            t0 = time.perf_counter()
            traj = alg.run(problem, stream, Privacy(0.1), np.random.default_rng(0))
            walls.append(time.perf_counter() - t0)
            assert traj.n_steps == T
    finally:
        compiled_o2.ENABLED = True
    return (walls[1] - walls[0]) / (T2 - T1)


@pytest.mark.parametrize("problem_name", ["hard_ramp", "strict_saddle"])
@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("B", [10**4, 10**8, 10**12], ids=["B1e04", "B1e08", "B1e12"])
def test_other_profiles_o2_step(benchmark, problem_name, d, B):
    """hard_ramp and strict_saddle: the compiled O2 step with the profile's d1 computed by
    numpy in an object mode block, against the Python loop alone in the same test."""
    full = not benchmark.disabled
    T1, T2 = (200, 1200) if full else (5, 10)
    _profile_o2_per_step(problem_name, d, B, True, 2, 3)  # compiled kernels loaded
    out = {}

    def run():
        out["new"] = _profile_o2_per_step(problem_name, d, B, True, T1, T2)

    benchmark.pedantic(run, rounds=1, iterations=1)
    if full:
        new, loop = out["new"], _profile_o2_per_step(problem_name, d, B, False, T1, T2)
        benchmark.extra_info.update(per_step_us=new * 1e6, python_loop_us=loop * 1e6,
                                    speedup=loop / new, goal_us=GOAL[d] * 1e6)
        print(f"\n{problem_name} O2 d={d} B={B:.0e}: {new * 1e6:.1f} us/step (Python loop "
              f"{loop * 1e6:.1f}, {loop / new:.1f}x)")
        assert new < loop
        if new > GOAL[d]:
            pytest.xfail(f"issue 27 goal not met: {problem_name} O2, d={d}, B={B:.0e}: "
                         f"{new * 1e6:.0f} us/step > {GOAL[d] * 1e6:.0f} us")


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
                                    us_per_step=seconds / traj.n_steps * 1e6,
                                    o1_share=float(np.mean(traj.records["oracle"] == 1)))
        if seconds > 120:
            pytest.xfail(f"issue 27 goal not met: {seconds:.0f} s > 120 s for {traj.n_steps} steps "
                         f"({seconds / traj.n_steps * 1e6:.0f} us/step)")


#: Peak traced memory a step of a run's records and kept iterates (d = 10, every iterate kept:
#: 42 bytes of records, 96 of iterate at the end): the typed columns of `algorithms.step_log`.
#: They grow by doubling, so the traced peak (allocated bytes, not resident ones: the unused
#: half of a new buffer is never touched) is highest just after a doubling: T = 2^17 + 1 steps
#: is that worst point, T = 200,000 a middle one. The Python lists before them peaked at 663
#: (Spider) and 502 (DP-GD) bytes a step at T = 200,000 in the same benchmark.
MEMORY_GOAL_BYTES = 320
MEMORY_STEPS = (2**17 + 1, 200_000)


def _traced_run(alg, problem, budget: int, privacy: Privacy) -> tuple[float, float, object]:
    stream = problem.stream(np.random.SeedSequence([9, 1]), budget=budget, data="counts")
    tracemalloc.start()
    try:
        traj = alg.run(problem, stream, privacy, np.random.default_rng(9))
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / traj.n_steps, current / traj.n_steps, traj


@pytest.mark.parametrize("T", MEMORY_STEPS, ids=["T2e17p1", "T2e5"])
@pytest.mark.parametrize("name", ["adaptive_tree_spider", "dp_gd"])
def test_run_memory_per_step(benchmark, name, T):
    """tracemalloc's peak over a whole run of T steps (the trajectory it returns included),
    per step: an adaptive tree Spider on hard_valley (counts, b = 1e6) and DP-GD on glm
    (counts, 1,000 atoms), d = 10 (T = 2,000 with --benchmark-disable)."""
    full = not benchmark.disabled
    T = T if full else 2_000
    if name == "dp_gd":
        problem = get_problem("glm", d=10, rank=5, n_atoms=1000)
        make = lambda steps: get_algorithm("dp_gd")(T=steps, noise_multiplier=1.0)  # noqa: E731
        budget, privacy = 10**6, Privacy(math.inf)  # the noise set, no calibration
    else:
        problem = get_problem("hard_valley", d=10)
        make = lambda steps: get_algorithm(name)(b=10**6, T=steps)  # noqa: E731
        budget, privacy = 10**16, Privacy(0.1)
    _traced_run(make(5), problem, budget, privacy)  # compiled kernels loaded outside the trace
    out = {}

    def run():
        out["r"] = _traced_run(make(T), problem, budget, privacy)

    benchmark.pedantic(run, rounds=1, iterations=1)
    peak, kept, traj = out["r"]
    assert traj.n_steps == T and traj.params["keep_every"] == 1
    benchmark.extra_info.update(peak_bytes_per_step=peak, kept_bytes_per_step=kept, steps=T,
                                goal_bytes=MEMORY_GOAL_BYTES)
    print(f"\n{name}: peak {peak:.0f} bytes/step, kept {kept:.0f} bytes/step over {T} steps")
    if full:
        assert peak <= MEMORY_GOAL_BYTES, f"{name}: {peak:.0f} bytes a step > {MEMORY_GOAL_BYTES}"


RULES_SIZES = [10**6, 10**8, 10**10]


@pytest.mark.parametrize("name", ALGS)
@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("n", RULES_SIZES, ids=["n1e06", "n1e08", "n1e10"])
def test_rules_run_step_mix(benchmark, name, d, n):
    """A whole run at the rules' own parameters (hard_valley, eps 0.1, theory calibration, T
    and batches from n): its share of O1 steps, asserted below one half, so that the run's
    median step is an O2 step (the O2 rows above: within the goal at every batch), and its
    mean CPU time a step (set-up included; O1 steps included, so an upper figure). With
    --benchmark-disable every case runs at n = 1e6."""
    n = n if not benchmark.disabled else 10**6  # each at the quick size, as the others
    problem = get_problem("hard_valley", d=d)
    _run(name, d, 10**6, 5, "new", "O2")  # compiled kernels loaded outside the timing
    out = {}

    def run():
        alg = get_algorithm(name)()
        stream = problem.stream(np.random.SeedSequence([11, d]), budget=n, data="counts")
        t0 = time.process_time()
        out["traj"] = alg.run(problem, stream, Privacy(0.1, calibration="theory"),
                              np.random.default_rng(11))
        out["cpu"] = time.process_time() - t0

    benchmark.pedantic(run, rounds=1, iterations=1)
    traj, cpu = out["traj"], out["cpu"]
    oracle, batch = traj.records["oracle"], traj.records["batch"]
    o1_share = float(np.mean(oracle == 1))
    o2 = oracle == 2
    info = dict(steps=traj.n_steps, o1_share=o1_share, mean_cpu_us_per_step=cpu / traj.n_steps * 1e6,
                o1_batch=float(np.median(batch[~o2])),
                o2_median_batch=float(np.median(batch[o2])) if o2.any() else 0.0)
    benchmark.extra_info.update(info)
    print(f"\n{name} d={d} n={n:.0e}: {traj.n_steps} steps, O1 {o1_share:.1%} (batch "
          f"{info['o1_batch']:.3g}), O2 median batch {info['o2_median_batch']:.3g}, "
          f"{info['mean_cpu_us_per_step']:.1f} us a step on average")
    assert traj.n_steps >= 20 and o1_share < 0.5, info
