"""The typed step log (algorithms.step_log) against Python lists turned into arrays, the way
the loops built `Trajectory.records` before it (with the dtypes they had, written out here);
TrajectoryBuilder against that list-based builder; and a Spider run's records and iterates
against a second run of the same seed through the Python loop (compiled steps off)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.first_order.base import TrajectoryBuilder
from algorithms.sosp import compiled_o2
from algorithms.step_log import STEP_COLUMNS, Columns, iterate_columns
from problems import get_problem

#: The dtypes `Trajectory.records` had when the loops built them from lists (np.array of
#: Python ints / floats / bools, with these dtype arguments).
LIST_DTYPES = {"oracle": np.int8, "batch": np.int64, "noise_std": np.float64,
               "est_norm": np.float64, "drift": np.float64, "escape": np.bool_,
               "samples": np.int64}


def _random_rows(rng: np.random.Generator, k: int) -> list[tuple]:
    return [(int(rng.integers(1, 3)), int(rng.integers(1, 10**12)), float(rng.normal()),
             float(rng.exponential()), float(rng.normal()), bool(rng.integers(0, 2)),
             int(rng.integers(0, 2**62))) for _ in range(k)]


@pytest.mark.parametrize("capacity", [1, 3, 1024])
def test_rows_and_stretches_equal_lists_across_growth(capacity):
    """Single rows and stretches (scalar oracle / escape broadcast, arrays copied) interleaved
    over several doublings give the arrays np.array makes of the same values in lists."""
    rng = np.random.default_rng(7)
    log = Columns(STEP_COLUMNS, capacity=capacity)
    lists: list[list] = [[] for _ in STEP_COLUMNS]
    for _ in range(40):
        for row in _random_rows(rng, int(rng.integers(0, 4))):
            log.append(*row)
            for lst, v in zip(lists, row, strict=True):
                lst.append(v)
        k = int(rng.integers(0, 300))
        rows = _random_rows(rng, k)
        cols = [np.array([r[i] for r in rows], dtype=dt) for i, (_, dt) in enumerate(STEP_COLUMNS)]
        log.extend(k, 2, cols[1], cols[2], cols[3], cols[4], False, cols[6])
        for lst, c, fill in zip(lists, cols, (2, None, None, None, None, False, None), strict=True):
            lst.extend([fill] * k if fill is not None else c.tolist())
        for c in cols:  # the compiled steps reuse their buffers: the log must hold copies
            c[:] = 0
    n = len(lists[0])
    assert log.n == n and n > 2000
    out = log.arrays()
    assert list(out) == [name for name, _ in STEP_COLUMNS]
    for (name, _), lst in zip(STEP_COLUMNS, lists, strict=True):
        ref = np.array(lst, dtype=LIST_DTYPES[name])
        assert out[name].dtype == ref.dtype and out[name].shape == (n,)
        np.testing.assert_array_equal(out[name], ref)
        assert out[name].flags.owndata and out[name].flags.c_contiguous
    again = log.arrays()  # no new rows: the same arrays
    assert all(again[k] is out[k] for k in out)
    log.append(1, 5, 0.5, 0.25, 0.125, True, 9)  # a new row leaves the handed-out arrays alone
    after = log.arrays()
    for (name, _), lst in zip(STEP_COLUMNS, lists, strict=True):
        np.testing.assert_array_equal(out[name], np.array(lst, dtype=LIST_DTYPES[name]))
        assert len(after[name]) == n + 1 and after[name][-1] == (1, 5, 0.5, 0.25, 0.125, True, 9)[
            [c for c, _ in STEP_COLUMNS].index(name)]


def test_iterate_rows():
    rng = np.random.default_rng(3)
    d = 7
    kept = Columns(iterate_columns(d), capacity=2)
    xs, ts, us = [], [], []
    for step in range(50):
        x = rng.normal(size=d)
        kept.append(x, step, 3 * step)
        xs.append(x.copy())
        ts.append(step)
        us.append(3 * step)
        x[:] = np.nan  # the engine's x moves on: a kept row is a copy
        block = rng.normal(size=(step % 4, d))
        kept.extend(len(block), block, np.arange(len(block)), 5)
        xs.extend(block.copy())
        ts.extend(range(len(block)))
        us.extend([5] * len(block))
    assert kept.last("t") == ts[-1]
    out = kept.arrays()
    np.testing.assert_array_equal(out["x"], np.array(xs))
    np.testing.assert_array_equal(out["t"], np.array(ts))
    np.testing.assert_array_equal(out["used"], np.array(us, dtype=np.int64))
    assert out["x"].shape == (len(xs), d) and out["t"].dtype == np.int64


def test_empty_log_gives_empty_columns():
    out = Columns(STEP_COLUMNS).arrays()
    assert all(a.shape == (0,) and a.dtype == LIST_DTYPES[k] for k, a in out.items())
    assert Columns(iterate_columns(4)).arrays()["x"].shape == (0, 4)


class _ListBuilder:
    """TrajectoryBuilder as it was: Python lists, turned into arrays by np.array at the end."""

    def __init__(self, x0, steps_max, max_floats):
        self.keep_every = max(1, math.ceil(min(steps_max, 10**9) * len(x0) / max_floats))
        self.x, self.t, self.s, self.est = [x0.copy()], [0], [0], []
        self.rec = {k: [] for k in ("batch", "noise_std", "est_norm", "samples")}
        self.best = math.inf

    def step(self, x, t, samples, batch, noise_std, est_norm):
        for k, v in zip(self.rec, (batch, noise_std, est_norm, samples), strict=True):
            self.rec[k].append(v)
        self.est.append(est_norm)
        if est_norm < self.best or t % self.keep_every == 0:
            self.best = min(self.best, est_norm)
            self.x.append(x.copy())
            self.t.append(t)
            self.s.append(samples)
            return True
        return False

    def build(self, x, t, samples):
        if self.t[-1] != t:
            self.x.append(x.copy())
            self.t.append(t)
            self.s.append(samples)
        norms = np.array([*self.est, math.inf])
        return {"iterates": np.array(self.x), "steps": np.array(self.t),
                "samples_at": np.array(self.s, dtype=np.int64), "est_norm_at": norms[np.array(self.t)],
                "batch": np.array(self.rec["batch"], dtype=np.int64),
                "noise_std": np.array(self.rec["noise_std"]), "est_norm": np.array(self.rec["est_norm"]),
                "samples": np.array(self.rec["samples"], dtype=np.int64)}


@pytest.mark.parametrize("max_floats", [1e9, 300.0])  # every iterate kept; thinned by 8
def test_trajectory_builder_equals_list_builder(max_floats):
    rng = np.random.default_rng(5)
    d, T = 4, 700
    x = rng.normal(size=d)
    new, old = TrajectoryBuilder(x, T, max_floats), _ListBuilder(x, T, max_floats)
    assert new.keep_every == old.keep_every == (1 if max_floats > 1e6 else 10)
    for t in range(1, T + 1):
        x = x - 0.01 * rng.normal(size=d)
        args = (x, t, 37 * t, int(rng.integers(1, 10**6)), float(rng.exponential()),
                float(rng.exponential()))
        assert new.step(*args) == old.step(*args)
        x[0] = np.nan  # the loop's x moves on: the builders keep copies
        x[0] = 0.0
    p: dict = {}
    traj = new.build(x, T, 37 * T, 1, "T_reached", {}, p, None, [])
    ref = old.build(x, T, 37 * T)
    for k in ("iterates", "steps", "samples_at", "est_norm_at"):
        assert getattr(traj, k).dtype == ref[k].dtype
        np.testing.assert_array_equal(getattr(traj, k), ref[k])
    for k in ("batch", "noise_std", "est_norm", "samples"):
        assert traj.records[k].dtype == ref[k].dtype == LIST_DTYPES[k]
        np.testing.assert_array_equal(traj.records[k], ref[k])
    assert (traj.records["oracle"] == 1).all() and traj.records["oracle"].dtype == np.int8
    twice = new.build(x, T, 37 * T, 1, "T_reached", {}, p, None, [])
    np.testing.assert_array_equal(twice.iterates, traj.iterates)
    np.testing.assert_array_equal(twice.records["est_norm"], traj.records["est_norm"])


def test_dp_gd_diverging_at_its_first_step_is_recorded_as_diverged():
    """The diverged step stores its iterate without a record; the norm out of it is inf (the
    list-based builder raised IndexError here, so a sweep recorded a failure)."""
    prob = get_problem("glm", d=5, rank=3, n_atoms=50)
    alg = get_algorithm("dp_gd")(T=50, eta=1e300, noise_multiplier=1e300)
    with np.errstate(over="ignore", invalid="ignore"):
        traj = alg.run(prob, prob.stream(np.random.SeedSequence(3), budget=2000),
                       Privacy(math.inf), np.random.default_rng(3))
    assert traj.stop_reason == "diverged" and traj.n_steps == 1
    assert len(traj.records["batch"]) == 0 and list(traj.steps) == [0, 1]
    assert traj.est_norm_at[-1] == math.inf and not np.isfinite(traj.iterates[-1]).all()


def test_compiled_run_records_equal_python_loop(monkeypatch):
    """A run of ~5,000 steps with O1 and O2 mixed, records and kept iterates: compiled steps
    (stretches copied in from the kernel's reused buffers) against the Python loop."""
    prob = get_problem("hard_valley", d=10)
    runs = []
    for enabled in (True, False):
        monkeypatch.setattr(compiled_o2, "ENABLED", enabled)
        alg = get_algorithm("adaptive_tree_spider")(b=10**4, T=5000)
        stream = prob.stream(np.random.SeedSequence([8, 1]), budget=10**14, data="counts")
        runs.append(alg.run(prob, stream, Privacy(0.1), np.random.default_rng(8)))
    a, b = runs
    assert a.n_steps == b.n_steps == 5000
    assert 0 < np.mean(a.records["oracle"] == 1) < 0.9  # both kinds of step
    for name, _ in STEP_COLUMNS:
        assert a.records[name].dtype == b.records[name].dtype
        np.testing.assert_array_equal(a.records[name], b.records[name])
    for field in ("iterates", "steps", "samples_at", "est_norm_at"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_long_stretch_of_single_rows():
    """More single rows in a row than wait before a conversion (PENDING), then a stretch and
    more rows: order, values and dtypes as lists give them."""
    from algorithms.step_log import PENDING

    rng = np.random.default_rng(11)
    log = Columns(STEP_COLUMNS, capacity=5)
    rows = _random_rows(rng, 2 * PENDING + 17)
    for r in rows[:PENDING + 3]:
        log.append(*r)
    assert log.n == PENDING + 3
    log.extend(2, 2, np.array([7, 8]), 0.5, 0.25, 0.125, False, np.array([9, 10]))
    for r in rows[PENDING + 3:]:
        log.append(*r)
    assert log.last("samples") == rows[-1][6]
    every = [*rows[:PENDING + 3], (2, 7, 0.5, 0.25, 0.125, False, 9),
             (2, 8, 0.5, 0.25, 0.125, False, 10), *rows[PENDING + 3:]]
    out = log.arrays()
    for i, (name, _) in enumerate(STEP_COLUMNS):
        ref = np.array([r[i] for r in every], dtype=LIST_DTYPES[name])
        assert out[name].dtype == ref.dtype
        np.testing.assert_array_equal(out[name], ref)
