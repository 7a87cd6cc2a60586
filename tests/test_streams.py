"""Data streams: prefix consistency, single use, budgets, bounded memory."""

import tracemalloc

import numpy as np
import pytest

import problems
from problems.streams import CHUNK, ArrayStream, DataStream, StreamExhausted


def take_pattern(stream, sizes):
    return np.concatenate([stream.take(k) for k in sizes])


@pytest.mark.parametrize("name", ["strict_saddle", "logistic", "phase_retrieval"])
def test_prefix_is_identical_whatever_the_budget_and_take_pattern(name):
    prob = problems.get_problem(name, d=4)
    n = 3 * CHUNK + 17
    ref = prob.stream(123, budget=n).take(n)
    sizes = [1, 5, CHUNK - 6, 2 * CHUNK, 17]
    np.testing.assert_array_equal(take_pattern(prob.stream(123, budget=10**7), sizes), ref)
    np.testing.assert_array_equal(take_pattern(prob.stream(123), [n]), ref)
    ss = np.random.SeedSequence(123)
    np.testing.assert_array_equal(prob.stream(ss, budget=n + 1).take(n), ref)
    assert not np.array_equal(prob.stream(124, budget=n).take(n), ref)


def test_records_are_handed_out_once_and_the_stream_ends_at_its_budget():
    prob = problems.get_problem("strict_saddle", d=3)
    s = prob.stream(0, budget=10)
    a, b = s.take(4), s.take(6)
    assert s.used == 10 and s.remaining == 0
    # Records repeat legitimately (two-point coordinates): check positions, not contents.
    full = DataStream(prob._draw, 0, budget=10).take(10)
    np.testing.assert_array_equal(a, full[:4])
    np.testing.assert_array_equal(b, full[4:])
    with pytest.raises(StreamExhausted):
        s.take(1)
    arr = ArrayStream(prob.sample(5, np.random.default_rng(0)))
    arr.take(5)
    with pytest.raises(StreamExhausted):
        arr.take(1)
    with pytest.raises(ValueError, match="k=-1"):
        prob.stream(0).take(-1)
    with pytest.raises(ValueError, match="budget=0"):
        prob.stream(0, budget=0)
    with pytest.raises(ValueError, match="seed=-3"):
        prob.stream(-3)


def test_memory_stays_bounded_over_a_long_stream():
    prob = problems.get_problem("strict_saddle", d=20)
    s = prob.stream(1)
    tracemalloc.start()
    for _ in range(300):
        s.take(1000)
    peak_short = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    for _ in range(3000):
        s.take(1000)
    peak_long = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert s.used == 3_300_000
    # One chunk is CHUNK x 22 floats = 0.72 MB; a stream holding its history would need 580 MB.
    assert peak_long < 4 * CHUNK * 22 * 8
    assert peak_long < 1.5 * peak_short + 1e5
