"""DP-SGD's and DP-GD's compiled steps on records (algorithms/first_order/compiled_sgd.py)
against the Python loop alone: whole runs bit for bit equal (iterates, steps, samples, every
record, the realized batch sizes, the generator's state after), with the compiled path shown
to have run; the steps it must hand to Python (the clip active) and the runs it must refuse
(planted faults, the privacy probe, counts, a problem with its own per-record gradients)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.first_order import compiled_sgd
from problems import get_problem
from problems.evaluation.metrics import target_monitor
from problems.separable import HardValley
from tests.compiled_runs import kernel_step_counter
from tests.compiled_runs import same as _same


@pytest.fixture
def kernel_steps(monkeypatch) -> list[int]:
    """The steps the compiled path ran, per kernel call."""
    return kernel_step_counter(monkeypatch, compiled_sgd.SgdKernel)


def _run(alg, kw, *, problem="hard_valley", pparams=None, d=10, eps=1.0, seed=5, n=4000,
         compiled=True, target=None, metric="alpha_sosp", faults=(), data="records"):
    compiled_sgd.ENABLED = compiled
    try:
        pr = get_problem(problem, d=d, **(pparams or {})) if isinstance(problem, str) else problem
        stream = pr.stream(np.random.SeedSequence([seed, d]), budget=n, data=data)
        rng = np.random.default_rng(seed)
        monitor = target_monitor(pr, target, metric) if target else None
        tr = get_algorithm(alg)(planted_faults=faults, **kw).run(pr, stream, Privacy(eps), rng,
                                                                 monitor=monitor)
    finally:
        compiled_sgd.ENABLED = True
    return tr, rng.bit_generator.state, stream


CASES = [
    # the practitioners' cells: the rules' horizon, the alpha_SOSP monitor from the saddle
    ("dp_sgd", {}, {"target": 0.1}),
    ("dp_sgd", {}, {"target": 0.1, "d": 100, "n": 20000}),
    ("dp_sgd", {}, {"problem": "strict_saddle", "target": 0.1}),  # d1 through Python
    # no monitor; a fixed horizon past one CHUNK with thinned iterates
    ("dp_sgd", {"T": 5000, "b": 50, "max_iterate_floats": 2e3}, {}),
    # the first-order monitor (||grad F||) from the valley's start, eps 0.1 and inf
    ("dp_sgd", {"T": 3000}, {"pparams": {"start": 1.0}, "target": 0.05, "metric": "grad_norm",
                             "eps": 0.1}),
    ("dp_sgd", {"T": 300}, {"eps": math.inf, "problem": "hard_ramp"}),
    # batches that are often empty (q n = 1)
    ("dp_sgd", {"T": 400, "b": 1}, {"n": 500}),
    # the gap sampler (algorithms.privacy.poisson_gaps): the practitioners' small q (d 100,
    # eps 0.1), a monitor; and near-empty batches
    ("dp_sgd", {"sampler": "gaps"}, {"target": 0.1, "d": 100, "n": 20000, "eps": 0.1}),
    ("dp_sgd", {"T": 400, "b": 1, "sampler": "gaps"}, {"n": 500}),
    # DP-GD: the full batch, no draw but the noise
    ("dp_gd", {"T": 600}, {"target": 0.1}),
    ("dp_gd", {"T": 200}, {"eps": math.inf, "d": 3}),
    # DP-GD in counts mode (the full batch's counts): seed001_empirical3's cells (the rules at
    # n 3e5, eps 0.1, from the valley's start), the practitioners' (the saddle, a monitor),
    # strict_saddle's d1 through Python, thinned iterates past CHUNK
    ("dp_gd", {}, {"data": "counts", "n": 300000, "eps": 0.1, "pparams": {"start": 1.0}}),
    ("dp_gd", {}, {"data": "counts", "n": 50000, "target": 0.1, "d": 100}),
    ("dp_gd", {"T": 3000}, {"data": "counts", "problem": "strict_saddle", "target": 0.05}),
    ("dp_gd", {"T": 9000, "max_iterate_floats": 2e3}, {"data": "counts", "eps": math.inf}),
]


@pytest.mark.parametrize("alg,kw,opts", CASES, ids=[str(i) for i in range(len(CASES))])
def test_compiled_steps_are_the_python_loops_bit_for_bit(kernel_steps, alg, kw, opts):
    fast = _run(alg, kw, **opts)
    ran = sum(kernel_steps)
    slow = _run(alg, kw, compiled=False, **opts)
    assert sum(kernel_steps) == ran  # the reference run took no compiled step
    _same(fast, slow)
    assert fast[0].evaluation_only == slow[0].evaluation_only  # the realized batch sizes
    assert fast[0].privacy_spent == slow[0].privacy_spent
    assert ran >= 0.9 * fast[0].n_steps > 0, (ran, fast[0].n_steps)


def test_an_active_clip_is_the_python_loops(kernel_steps):
    """With C below the records' gradient norms every step is Python's (the loop clips): the
    same run, no compiled step."""
    kw = {"T": 300, "C": 0.3}
    fast, slow = _run("dp_sgd", kw), _run("dp_sgd", kw, compiled=False)
    _same(fast, slow)
    assert sum(kernel_steps) == 0 and fast[0].n_steps == 300


def test_diverging_run_stops_where_the_loop_does(kernel_steps):
    """A step size that diverges: the same stop, step count and records, compiled."""
    kw = {"T": 2000, "eta_mult": 1e306}
    fast = _run("dp_sgd", kw, eps=1e-4)
    slow = _run("dp_sgd", kw, eps=1e-4, compiled=False)
    _same(fast, slow)
    assert fast[0].stop_reason == "diverged" and len(kernel_steps) >= 1  # the kernel saw it


def test_counts_guard_raises_as_the_python_loop():
    """A clip below the whole support's bound: the kernel hands the step to Python, whose
    guard raises the same error as with the kernel off."""
    errors = []
    for compiled in (True, False):
        with pytest.raises(Exception) as exc:
            _run("dp_gd", {"T": 50, "C": 0.3}, data="counts", compiled=compiled)
        errors.append((type(exc.value), str(exc.value)))
    assert errors[0] == errors[1] and "clip" in errors[0][1]


class _OwnGrads(HardValley):
    def per_sample_grads(self, x, batch):
        return super().per_sample_grads(x, batch)


class _OwnCountsMean(HardValley):
    def guarded_counts_grad(self, x, batch):
        return super().guarded_counts_grad(x, batch)


@pytest.mark.parametrize("why", ["fault", "probe", "own_gradients", "own_counts_mean",
                                 "one_pass"])
def test_refused_where_the_floats_are_not_established(why):
    """The kernel is not built for planted faults, the privacy probe, a problem with its own
    per-record gradients (records) or its own counts mean (counts), or a one-pass plan:
    those runs are the Python loop's."""
    built: list[object] = []
    real = compiled_sgd.sgd_kernel_for

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        built.append(out)
        return out

    pr = {"own_gradients": _OwnGrads, "own_counts_mean": _OwnCountsMean}.get(
        why, lambda d: get_problem("hard_valley", d=d))(d=5)
    data = "counts" if why in ("own_counts_mean", "one_pass") else "records"
    alg = {"own_counts_mean": "dp_gd", "one_pass": "noisy_sgd"}.get(why, "dp_sgd")
    compiled_sgd.sgd_kernel_for = spy
    try:
        stream = pr.stream(np.random.SeedSequence([1, 5]), budget=2000, data=data)
        faults = ("noise_third",) if why == "fault" else ()
        probe = _Probe() if why == "probe" else None
        kw = {} if alg == "noisy_sgd" else {"T": 20}
        get_algorithm(alg)(planted_faults=faults, **kw).run(
            pr, stream, Privacy(1.0), np.random.default_rng(1), probe=probe)
    finally:
        compiled_sgd.sgd_kernel_for = real
    assert built == [None]


class _Probe:
    """A privacy probe that records nothing."""

    def release(self, **kw):
        pass


def test_numpys_axis0_sum_is_sequential():
    """The kernel sums rows in record order because numpy's axis-0 sum of a C-ordered array
    does (the floats of `clip_rows(rows).sum(axis=0)`): checked on rows of mixed scales."""
    rng = np.random.default_rng(3)
    for k, d in [(1, 3), (9, 11), (1000, 101), (20000, 12)]:
        a = rng.standard_normal((k, d)) * np.exp(rng.uniform(-20, 20, (k, d)))
        seq = a[0].copy()
        for i in range(1, k):
            seq = seq + a[i]
        assert a.sum(axis=0).tobytes() == seq.tobytes()


def test_uniforms_are_numpys():
    assert compiled_sgd.uniforms_match_numpy(np.random.PCG64)
    assert compiled_sgd.uniforms_match_numpy(np.random.Philox)


def test_coordinate_peaks():
    """The guard's peaks are max |entry| per column (numpy's), None with a NaN or inf."""
    rows = np.random.default_rng(4).standard_normal((500, 7))
    assert np.array_equal(compiled_sgd.coordinate_peaks(rows), np.abs(rows).max(axis=0))
    for bad in (math.nan, math.inf, -math.inf):
        broken = rows.copy()
        broken[321, 4] = bad
        assert compiled_sgd.coordinate_peaks(broken) is None
