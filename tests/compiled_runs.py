"""Shared by tests/test_compiled_o2.py and tests/test_compiled_plugin_profiles.py: a whole run
with the compiled O2 steps on or off, and the bit-for-bit comparison of two such runs."""

from __future__ import annotations

import numpy as np

from algorithms import Privacy, get_algorithm
from algorithms.sosp import compiled_o2
from problems import get_problem
from problems.evaluation.metrics import target_monitor

#: Fixed-batch Spider knobs with no drift restart (kappa) and a step bound D.
FIXED = {"kappa": 1e300, "D": 0.01}


def run(problem, alg, kw, *, d=10, eps=0.1, seed=5, compiled=True, data="counts",
        monitor_target=None, budget=10**16, version=None):
    """A whole run of `alg` on `problem`: (trajectory, the generator's state after, the
    stream). `version`: the counts stream's version (None: the default)."""
    compiled_o2.ENABLED = compiled
    try:
        pr = get_problem(problem, d=d)
        extra = {} if version is None else {"counts_version": version}
        stream = pr.stream(np.random.SeedSequence([seed, d]), budget=budget, data=data, **extra)
        rng = np.random.default_rng(seed)
        monitor = target_monitor(pr, monitor_target) if monitor_target else None
        tr = get_algorithm(alg)(**kw).run(pr, stream, Privacy(eps), rng, monitor=monitor)
    finally:
        compiled_o2.ENABLED = True
    return tr, rng.bit_generator.state, stream


def same(a, b):
    """Two `run` results are the same run: stop, counts, every array and record to the bit,
    and the same draws from the run's generator."""
    (ta, sa, _), (tb, sb, _) = a, b
    assert (ta.stop_reason, ta.n_steps, ta.samples_used, ta.grad_evals) == \
        (tb.stop_reason, tb.n_steps, tb.samples_used, tb.grad_evals)
    for u, v in [(ta.iterates, tb.iterates), (ta.steps, tb.steps), (ta.samples_at, tb.samples_at),
                 (ta.est_norm_at, tb.est_norm_at)]:
        assert u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes()
    assert ta.records.keys() == tb.records.keys()
    for key in ta.records:
        assert ta.records[key].tobytes() == tb.records[key].tobytes(), key
    assert sa == sb  # the same draws, in the same order, from the run's generator


def kernel_step_counter(monkeypatch, kernel_cls) -> list[int]:
    """Patch `kernel_cls.run` (a compiled kernel's call, whose result starts with the steps it
    ran) to record those steps per call; returns the list (to show whether the path ran)."""
    done: list[int] = []
    real = kernel_cls.run

    def counting(self, *args):
        out = real(self, *args)
        done.append(out[0])
        return out

    monkeypatch.setattr(kernel_cls, "run", counting)
    return done
