"""The compiled O2 steps (algorithms/sosp/compiled_o2.py) against the Python loop alone: whole
runs bit for bit equal (iterates, steps, samples, every record, the generator's state after),
with the compiled path shown to have run, over the cases its hand-backs exist for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.sosp import compiled_o2
from problems import get_problem
from problems.counts.stream import STREAM_VERSION
from problems.evaluation.metrics import target_monitor
from tests.compiled_runs import FIXED, run
from tests.compiled_runs import same as _same


def _run(name, kw, *, problem="hard_valley", version=STREAM_VERSION, **opts):
    return run(problem, name, kw, version=version, **opts)


CASES = [
    # fixed batches inside one block, every iterate stored (keep_every = 1)
    ("tree_spider", {"b": 10**4, "B": 10**4, "T": 1500, **FIXED}, {}),
    ("gaussian_spider", {"b": 10**4, "B": 10**4, "T": 1500, **FIXED}, {}),
    # a block crossed every ~5 steps (roots from the cached superblock), d = 100
    ("tree_spider", {"b": 10**8, "B": 10**8, "T": 1200, **FIXED}, {"d": 100}),
    # superblocks crossed (Python draws their roots)
    ("gaussian_spider", {"b": 10**10, "B": 10**10, "T": 400, **FIXED}, {}),
    # a drift bound reached every ~10 steps: O1 restarts among the O2 steps
    ("tree_spider", {"b": 10**5, "B": 10**5, "T": 2000, "kappa": 1e-3, "D": 0.01}, {}),
    # adaptive batches (its drift on norms), O1 restarts, block crossings
    ("adaptive_tree_spider", {"b": 10**4, "T": 3000}, {}),
    # the rules to a target, with the monitor (every store handed back)
    ("adaptive_tree_spider", {"target_alpha": 0.03}, {"monitor_target": 0.03}),
    ("gaussian_spider", {"target_alpha": 0.05}, {"monitor_target": 0.05}),
    # non-private: no noise drawn (sigma 0)
    ("tree_spider", {"b": 10**4, "B": 10**4, "T": 800, **FIXED}, {"eps": math.inf}),
    ("gaussian_spider", {"b": 10**4, "B": 10**4, "T": 800, **FIXED}, {"eps": math.inf}),
    # iterates thinned (keep_every = 50): the kernel stores new lowest norms and every 50th
    ("tree_spider", {"b": 10**4, "B": 10**4, "T": 10**6, **FIXED, "max_iterate_floats": 2e5},
     {"budget": 2 * 10**7 + 5}),
    # stretches of CHUNK steps (the DONE hand-back, no post-step block)
    ("tree_spider", {"b": 10**4, "B": 10**4, "T": 9000, **FIXED}, {}),
    ("gaussian_spider", {"b": 10**4, "B": 10**4, "T": 9000, **FIXED}, {}),
    # a monitor with thinned iterates: stores handed back only at new lows and every k-th step
    ("gaussian_spider", {"target_alpha": 0.05, "max_iterate_floats": 2e3}, {"monitor_target": 0.05}),
    # b and B past int64: Python's step stops the run, as without the compiled path
    ("tree_spider", {"b": 10**4, "B": 1e20, "T": 50, **FIXED}, {}),
    # the data budget ends the run inside a compiled stretch
    ("tree_spider", {"b": 10**4, "B": 10**4, "T": 10**6, **FIXED}, {"budget": 3 * 10**6 + 17}),
    # batches of 1e12: version 4's splits of nodes above 2^29 records inside the compiled walk
    ("tree_spider", {"b": 10**12, "B": 10**12, "T": 300, **FIXED}, {"d": 100}),
    ("adaptive_tree_spider", {"b": 10**11, "T": 500}, {}),
    # the other profiles: their d1 (numpy's exp / tanh / cos) through Python, the rest compiled
    ("tree_spider", {"b": 10**6, "B": 10**6, "T": 1500, **FIXED}, {"problem": "hard_ramp"}),
    ("adaptive_tree_spider", {"b": 10**4, "T": 2000}, {"problem": "hard_ramp"}),
    ("adaptive_tree_spider", {"target_alpha": 0.05}, {"problem": "hard_ramp", "monitor_target": 0.05}),
    ("gaussian_spider", {"b": 10**4, "B": 10**4, "T": 1500, **FIXED}, {"problem": "strict_saddle"}),
    ("tree_spider", {"b": 10**8, "B": 10**8, "T": 800, **FIXED}, {"problem": "strict_saddle", "d": 100}),
]


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("name,kw,opts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_compiled_o2_steps_are_the_python_loops_bit_for_bit(compiled_steps, name, kw, opts, version):
    """Every case on counts streams 3 (blocks of 2^29: block and superblock roots crossed) and
    4 (one block of 2^50: splits above 2^29 records by the large-population sampler)."""
    opts = {**opts, "version": version}
    fast = _run(name, kw, **opts)
    ran = sum(compiled_steps)
    slow = _run(name, kw, compiled=False, **opts)
    assert sum(compiled_steps) == ran  # the reference run took no compiled step
    _same(fast, slow)
    # most O2 steps ran compiled (on version 3 a take of 1e12 passes superblocks, whose roots
    # Python draws: none there)
    o2 = int((fast[0].records["oracle"] == 2).sum())
    if version == 3 and kw.get("B") == 10**12:
        assert ran == 0
    else:
        assert ran >= 0.5 * o2
        assert ran > 0 or kw.get("B") == 1e20
    if kw.get("T") == 9000 and name == "gaussian_spider":  # (the tree one escapes sooner)
        assert max(compiled_steps) == compiled_o2.CHUNK


def test_escapes_and_saddle_noise_are_handed_back_and_equal(compiled_steps):
    """strict_saddle is not hard_valley's profile (no compiled map), so hard_valley with an
    escape threshold that fires: the escape steps are Python's, the rest compiled."""
    kw = {"b": 10**4, "B": 10**4, "T": 1500, **FIXED, "escape_threshold": 10.0}
    fast = _run("tree_spider", kw)
    assert sum(compiled_steps) > 0
    slow = _run("tree_spider", kw, compiled=False)
    assert fast[0].records["escape"].sum() > 0
    _same(fast, slow)


def test_record_mode_never_takes_the_compiled_path(compiled_steps):
    pr = get_problem("hard_valley", d=10)
    stream = pr.stream(np.random.SeedSequence([1, 10]), budget=10**9, data="records")
    get_algorithm("tree_spider")(b=10**3, B=10**3, T=50, **FIXED).run(
        pr, stream, Privacy(0.1), np.random.default_rng(1))
    assert compiled_steps == []


def test_the_stream_and_tree_states_move_on_as_in_python():
    kw = {"b": 10**6, "B": 10**6, "T": 700, **FIXED}
    _, _, fast = _run("tree_spider", kw)
    _, _, slow = _run("tree_spider", kw, compiled=False)
    assert fast.used == slow.used and fast.nodes_drawn == slow.nodes_drawn
    assert fast._roots_of == slow._roots_of and fast._roots.tobytes() == slow._roots.tobytes()
    assert fast._meta.tobytes() == slow._meta.tobytes()
    # the same records read next, from either stream
    assert fast.take(10**6).counts.tobytes() == slow.take(10**6).counts.tobytes()


@pytest.mark.parametrize("method", ["guarded_counts_grad_diff", "_mean_grad_diff_and_support_bound",
                                    "record_grad_diff_bound", "counts_grad_diff", "_profile_and_unit"])
def test_a_problem_overriding_the_map_or_its_bound_runs_the_python_loop(compiled_steps, method):
    from problems.separable import HardValley

    base = getattr(HardValley, method)
    Sub = type("Sub", (HardValley,), {method: lambda self, *a: base(self, *a)})
    pr = Sub(d=10)
    stream = pr.stream(np.random.SeedSequence([1, 10]), budget=10**16, data="counts")
    get_algorithm("tree_spider")(b=10**4, B=10**4, T=50, **FIXED).run(
        pr, stream, Privacy(0.1), np.random.default_rng(1))
    assert compiled_steps == []


def test_numba_disagreeing_with_numpy_falls_back_to_the_python_loop(compiled_steps, monkeypatch):
    assert compiled_o2.numba_matches_numpy(10, np.random.PCG64)  # on this machine: they agree
    monkeypatch.setitem(compiled_o2._AGREES, (10, np.random.PCG64), False)
    _run("tree_spider", {"b": 10**4, "B": 10**4, "T": 50, **FIXED})
    assert compiled_steps == []


def test_an_interrupt_after_a_compiled_call_leaves_the_stream_consistent(monkeypatch):
    real, calls = compiled_o2.o2_steps, []

    def interrupted(*args):
        out = real(*args)
        calls.append(out[0])
        if len(calls) == 3:
            raise KeyboardInterrupt  # as a Ctrl-C delivered when the call returns
        return out

    monkeypatch.setattr(compiled_o2, "o2_steps", interrupted)
    pr = get_problem("hard_valley", d=10)
    seed = np.random.SeedSequence([5, 10])
    # version 3: its blocks of 2^29 make the steps cross block roots, the state at stake
    stream = pr.stream(seed, budget=10**16, data="counts", counts_version=3)
    with pytest.raises(KeyboardInterrupt):
        get_algorithm("tree_spider")(b=10**8, B=10**8, T=400, **FIXED).run(
            pr, stream, Privacy(0.1), np.random.default_rng(5))
    assert sum(calls) > 0
    twin = pr.stream(seed, budget=10**16, data="counts", counts_version=3)
    last = (stream.used >> stream.levels) + 1
    for block in (0, last - 2, last - 1, last):
        for offset in (1, 12345, 2**28):
            m = (block << stream.levels) + offset
            assert stream.prefix_counts(m).tobytes() == twin.prefix_counts(m).tobytes(), m
    # the records the interrupted steps took are spent: used is where the walk stopped
    assert stream.used % 10**8 == 0 and stream.used >= sum(calls) * 10**8


def test_two_threads_with_two_profiles_keep_their_own_d1():
    """A Dask worker runs cells in threads and the compiled steps release the GIL: each
    thread's object mode d1 must read its own run's profile (a shared holder would mix them)."""
    import threading

    kw = {"b": 10**6, "B": 10**6, "T": 1500, **FIXED}
    want = {p: _run("tree_spider", kw, problem=p, compiled=False)[0] for p in ("hard_ramp", "strict_saddle")}
    got = {}

    def one(problem):
        pr = get_problem(problem, d=10)
        stream = pr.stream(np.random.SeedSequence([5, 10]), budget=10**16, data="counts")
        got[problem] = get_algorithm("tree_spider")(**kw).run(pr, stream, Privacy(0.1),
                                                              np.random.default_rng(5))

    for _ in range(3):
        threads = [threading.Thread(target=one, args=(p,)) for p in want]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for p, tr in want.items():
            assert got[p].iterates.tobytes() == tr.iterates.tobytes(), p


def test_a_profile_subclass_runs_the_python_loop(compiled_steps):
    """Only the shipped profile classes, whose floats the equality tests establish: a subclass
    (whose d1 might return float32, subtracted before Python converts it) runs the loop alone."""
    from problems.profiles import RampProfile

    pr = get_problem("hard_ramp", d=10)
    pr.profile.__class__ = type("OwnRamp", (RampProfile,), {})
    stream = pr.stream(np.random.SeedSequence([1, 10]), budget=10**16, data="counts")
    get_algorithm("tree_spider")(b=10**4, B=10**4, T=50, **FIXED).run(
        pr, stream, Privacy(0.1), np.random.default_rng(1))
    assert compiled_steps == []


def test_target_monitor_screen_keeps_compiled_calls_long_and_results_equal(compiled_steps):
    """A target monitor states its grad screen (problems.evaluation.metrics.target_monitor): the kernel
    skips it where ||grad F(x)|| is clearly above the target, so a monitored run to a target
    covers many O2 steps a call (2 a call before, with keep_every 2), with the same run as the
    Python loop alone."""
    kw = {"target_alpha": 0.01}
    on = _run("adaptive_tree_spider", kw, monitor_target=0.01, budget=10**12)
    calls = [n for n in compiled_steps if n > 0]
    assert calls and sum(calls) / len(calls) > 10
    assert target_monitor(get_problem("hard_valley", d=10), 0.01).grad_screen == 0.01
    _same(on, _run("adaptive_tree_spider", kw, monitor_target=0.01, budget=10**12, compiled=False))
