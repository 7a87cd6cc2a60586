"""The separable saddles' compiled empirical gradient sum (problems/compiled_separable.py,
`SeparableSaddle.sum_grads`) against numpy's `per_sample_grads(x, batch).sum(axis=0)`, byte for
byte, on the three shipped problems and records of every size; a subclass with its own rows
keeps numpy's sum."""

from __future__ import annotations

import numpy as np
import pytest

from problems import get_problem
from problems.base import Problem
from problems.separable import HardValley


@pytest.mark.parametrize("name", ["hard_valley", "hard_ramp", "strict_saddle"])
@pytest.mark.parametrize("d", [2, 10, 100])
def test_sum_grads_is_numpys_sum_byte_for_byte(name, d):
    pr = get_problem(name, d=d)
    gen = np.random.default_rng(d)
    rows = pr.stream(np.random.SeedSequence([3, d]), budget=70_000, data="records").take(70_000)
    for k in (0, 1, 2, 7, 513, 70_000):
        for scale in (0.01, 1.0, 30.0):
            x = gen.standard_normal(d) * scale
            batch = rows[:k]
            want = Problem.sum_grads(pr, x, batch)
            got = pr.sum_grads(x, batch)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (k, scale)


def test_own_rows_keep_numpys_sum():
    calls = []

    class OwnRows(HardValley):
        def per_sample_grads(self, x, batch):
            calls.append(len(batch))
            return super().per_sample_grads(x, batch)

    pr = OwnRows(d=5)
    rows = pr.stream(np.random.SeedSequence([1, 5]), budget=100, data="records").take(100)
    pr.sum_grads(np.ones(5), rows)
    assert calls == [100]
