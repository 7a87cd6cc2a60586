"""The typed step log (algorithms.sosp.step_log) against Python lists turned into arrays, the
way the engine built `Trajectory.records` before it; and a run's records and iterates against a
second run of the same seed through the Python loop (compiled steps off)."""

from __future__ import annotations

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.sosp import compiled_o2
from algorithms.step_log import STEP_COLUMNS, Columns, iterate_columns
from problems import get_problem


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
    for (name, dt), lst in zip(STEP_COLUMNS, lists, strict=True):
        ref = np.array(lst, dtype=dt)
        assert out[name].dtype == ref.dtype and out[name].shape == (n,)
        np.testing.assert_array_equal(out[name], ref)
        assert out[name].flags.owndata and out[name].flags.c_contiguous
    assert log.n == 0 and all(len(a) == 0 for a in log.arrays().values())


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
    assert all(a.shape == (0,) and a.dtype == dt for a, (_, dt) in zip(out.values(), STEP_COLUMNS,
                                                                        strict=True))
    assert Columns(iterate_columns(4)).arrays()["x"].shape == (0, 4)


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
