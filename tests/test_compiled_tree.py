"""The tree-based private Spider's compiled right-child leaves
(algorithms/first_order/compiled_tree.py) against the Python loop alone: whole runs bit for bit
equal (iterates, steps, samples, every record, the generator's state after), with the
compiled path shown to have run, over the cases its hand-backs exist for; and the paths it
must refuse (records mode, planted faults) left to the Python loop."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.first_order import compiled_tree
from problems import get_problem
from problems.evaluation.metrics import target_monitor
from tests.compiled_runs import kernel_step_counter
from tests.compiled_runs import same as _same
from tests.test_compiled_loss import plugins  # noqa: F401 (the guide's loss, a plugin)


@pytest.fixture
def kernel_steps(monkeypatch) -> list[int]:
    """The leaves the compiled path ran, per kernel call."""
    return kernel_step_counter(monkeypatch, compiled_tree.TreeKernel)


def _run(kw, *, problem="hard_valley", pparams=None, d=10, eps=0.01, seed=5, compiled=True,
         target=None, budget=10**16, version=3, data="counts"):
    compiled_tree.ENABLED = compiled
    try:
        pr = get_problem(problem, d=d, **(pparams or {}))
        stream = pr.stream(np.random.SeedSequence([seed, d]), budget=budget, data=data,
                           **({"counts_version": version} if data == "counts" else {}))
        rng = np.random.default_rng(seed)
        monitor = target_monitor(pr, target, "grad_norm") if target else None
        tr = get_algorithm("tree_private_spider")(**kw).run(pr, stream, Privacy(eps), rng,
                                                            monitor=monitor)
    finally:
        compiled_tree.ENABLED = True
    return tr, rng.bit_generator.state, stream


START = {"start": 1.0}
CASES = [
    # the reference's cells (seed001_population3): the rules to a target, the monitor on
    # ||grad F|| (stores handed back unless the screen clears them), eps 0.01 and inf
    ({"target_alpha": 0.1}, {"pparams": START, "target": 0.1}),
    ({"target_alpha": 0.1}, {"pparams": START, "target": 0.1, "eps": math.inf}),
    # fixed rounds, every iterate stored (keep_every = 1), no monitor
    ({"T": 40, "D": 4, "b": 4 * 2**5 * 50}, {"pparams": START}),
    # thinned iterates (new lowest norms and every k-th step) and CHUNK-long stretches
    ({"T": 6, "D": 13, "b": 13 * 2**14, "max_iterate_floats": 2e3}, {"pparams": START}),
    # right children of 1e8 records: blocks of 2^29 crossed (roots from the cached
    # superblock, or Python's)
    ({"T": 3, "D": 6, "b": 2**6 * 10**7}, {"pparams": START}),
    # early returns (lines 19-20) as soon as the estimate's norm falls to 2 alpha~, at a
    # right child (leaf 5 of its round; leaf 11)
    ({"T": 3000, "D": 3, "b": 3 * 2**4 * 50, "stop_rule": "scaled", "c_stop": 17.0},
     {"pparams": START, "budget": 10**7, "eps": math.inf}),
    ({"T": 3000, "D": 4, "b": 4 * 2**5 * 50, "stop_rule": "scaled", "c_stop": 21.5},
     {"pparams": START, "budget": 10**7, "eps": math.inf}),
    # ... and at leaf 1, the first of a compiled call (the leaf took its records: its
    # gradient evaluations count, as in the loop)
    ({"T": 3000, "D": 3, "b": 3 * 2**4 * 50, "stop_rule": "scaled", "c_stop": 24.5},
     {"pparams": START, "budget": 10**7, "eps": math.inf}),
    # d = 100, the saddle start (the estimate is noise at first)
    ({"T": 20, "D": 5, "b": 5 * 2**6 * 100}, {"d": 100}),
    # the data budget ends the run between rounds
    ({"T": 10**6, "D": 4, "b": 4 * 2**5 * 10}, {"pparams": START, "budget": 3 * 10**5 + 7}),
    # the other profiles (d1 through Python) and the benign instance
    ({"T": 30, "D": 4, "b": 4 * 2**5 * 1000}, {"problem": "hard_ramp"}),
    ({"T": 30, "D": 4, "b": 4 * 2**5 * 1000}, {"problem": "strict_saddle"}),
]


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("kw,opts", CASES, ids=[str(i) for i in range(len(CASES))])
def test_compiled_leaves_are_the_python_loops_bit_for_bit(kernel_steps, kw, opts, version):
    fast = _run(kw, version=version, **opts)
    ran = sum(kernel_steps)
    slow = _run(kw, version=version, compiled=False, **opts)
    assert sum(kernel_steps) == ran  # the reference run took no compiled leaf
    _same(fast, slow)
    assert (fast[2].used, fast[2].nodes_drawn) == (slow[2].used, slow[2].nodes_drawn)
    tr = fast[0]
    if opts.get("target"):
        assert tr.stop_reason == "target_reached"
    # every leaf but a round's first is a right child's: most of them ran compiled
    rounds = int((tr.records["batch"] == tr.params["b"]).sum())
    right = tr.n_steps - rounds
    assert right > 0 and ran >= 0.5 * right, (right, ran)


def test_early_return_is_the_python_loops(kernel_steps):
    """The early-return case stops the same way at the same leaf (not only the same arrays)."""
    for (kw, opts), leaf in zip(CASES[5:8], (5, 11, 1), strict=True):
        tr = _run(kw, **opts)[0]
        assert tr.stop_reason == "early_return" and tr.n_steps % 2 ** kw["D"] == leaf
    assert sum(kernel_steps) > 0


def _valley_run_inputs():
    """hard_valley from start 1 at d 10, its counts stream (version 3) and the run's generator."""
    pr = get_problem("hard_valley", d=10, start=1.0)
    stream = pr.stream(np.random.SeedSequence([5, 10]), budget=10**16, data="counts",
                       counts_version=3)
    return pr, stream, np.random.default_rng(5)


@pytest.mark.parametrize("monitor", ["unscreened", "alpha_sosp"])
def test_every_monitor_sees_the_iterates_it_sees_in_the_python_loop(kernel_steps, monitor):
    """A monitor stating no screen is called at every stored iterate (each one handed back);
    the alpha_SOSP monitor (screened by ||grad F||) ends the run where the loop's does."""
    calls = {True: [], False: []}

    def run(compiled):
        compiled_tree.ENABLED = compiled
        try:
            pr, stream, rng = _valley_run_inputs()
            inner = target_monitor(pr, 0.1, "grad_norm" if monitor == "unscreened" else "alpha_sosp")

            def plain(x):  # no grad_screen attribute
                calls[compiled].append(x.copy())
                return inner(x)

            mon = plain if monitor == "unscreened" else inner
            tr = get_algorithm("tree_private_spider")(target_alpha=0.1).run(
                pr, stream, Privacy(0.01), rng, monitor=mon)
        finally:
            compiled_tree.ENABLED = True
        return tr, rng.bit_generator.state, stream

    fast = run(True)
    slow = run(False)
    _same(fast, slow)
    assert fast[0].stop_reason == "target_reached" and sum(kernel_steps) > 0
    if monitor == "unscreened":
        assert len(calls[True]) == len(calls[False]) > 100
        assert all(np.array_equal(a, b) for a, b in zip(calls[True], calls[False], strict=True))


def test_a_refused_clip_raises_as_in_the_python_loop(monkeypatch):
    """A problem whose stated M is too small: the right child's clip M ||step|| falls below the
    whole-support bound and the guard refuses before any draw; the compiled path hands the leaf
    to Python, which raises the loop's error after the same records."""
    from problems.counts.stream import CountsClipError
    from problems.separable import SeparableSaddle

    real = SeparableSaddle.constants.fget
    monkeypatch.setattr(SeparableSaddle, "constants", property(
        lambda self: dataclasses.replace(real(self), M=real(self).M * 1e-3)))
    seen = []
    for compiled in (True, False):
        compiled_tree.ENABLED = compiled
        try:
            pr, stream, rng = _valley_run_inputs()
            with pytest.raises(CountsClipError) as err:
                get_algorithm("tree_private_spider")(T=5, D=3, b=3 * 2**4 * 100).run(
                    pr, stream, Privacy(0.01), rng)
        finally:
            compiled_tree.ENABLED = True
        seen.append((str(err.value), stream.used, rng.bit_generator.state))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("data,faults", [("records", ()), ("records", ("noise_third",))])
def test_records_mode_and_planted_faults_run_the_python_loop(kernel_steps, data, faults):
    """No kernel where equality is not established: records mode (a records stream) and a
    planted fault (the privacy audit's mutants), whose runs stay the Python loop's."""
    kw = {"T": 3, "D": 3, "b": 3 * 2**4 * 10}
    if faults:
        kw["planted_faults"] = faults
    _run(kw, data=data, pparams=START)
    assert kernel_steps == []



@pytest.mark.usefixtures("plugins")
@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("eps", [0.01, math.inf])
def test_the_guides_declared_loss_runs_compiled(kernel_steps, d, eps):
    """A loss not of the separable form (the guide's quadratic_valley, declared by numba
    functions: problems.compiled_loss) on the compiled leaves, bit for bit the Python loop."""
    kw = {"T": 12, "D": 5, "b": 5 * 2**6 * 1000}
    fast = _run(kw, problem="quadratic_valley", d=d, eps=eps)
    ran = sum(kernel_steps)
    slow = _run(kw, problem="quadratic_valley", d=d, eps=eps, compiled=False)
    assert sum(kernel_steps) == ran
    _same(fast, slow)
    assert fast[0].n_steps == 12 * 2**5 and ran >= 0.5 * 12 * (2**5 - 1), ran
