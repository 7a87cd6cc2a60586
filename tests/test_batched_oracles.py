"""Batched population oracles (problems.evaluation.batched_oracles): the same floats as one call per
iterate, a subclass that rewrites the single-point oracle keeps the loop, and a batched form
that differs is caught by the once-per-class check and never reaches a metric."""

from __future__ import annotations

import math

import numpy as np
import pytest

from problems import get_problem
from problems.evaluation import batched_oracles
from problems.evaluation.metrics import grad_norms, running_min_alpha, sosp_alpha
from problems.glm import GLM
from problems.rotated import RotatedValley


@pytest.fixture(autouse=True)
def _fresh_checks():
    batched_oracles.reset_checks()
    yield
    batched_oracles.reset_checks()


def _loop(problem, name, xs):
    one = getattr(problem, {"population_grads": "population_grad",
                            "population_lambda_mins": "population_lambda_min"}[name])
    return np.array([one(x) for x in xs])


def _walk(d: int, m: int, seed: int, scale: float = 0.4) -> np.ndarray:
    """A random walk from 0 (iterates as a run stores them), with a few large jumps."""
    rng = np.random.default_rng(seed)
    steps = rng.standard_normal((m, d)) * scale
    steps[rng.integers(0, m, 5)] *= 30
    return np.cumsum(steps, axis=0)


GLMS = [dict(d=10, rank=10, link="sigmoid"), dict(d=10, rank=3, link="logistic"),
        dict(d=30, rank=7, link="sigmoid")]


@pytest.mark.parametrize("kw", GLMS)
def test_glm_batched_oracles_are_the_single_point_floats(kw):
    prob = GLM(**kw)
    xs = _walk(prob.d, 700, 1)  # > 2 chunks of 256
    for name in ("population_grads", "population_lambda_mins"):
        got = getattr(prob, name)(xs)
        assert np.array_equal(got, _loop(prob, name, xs)), name
    proj = prob.project(np.random.default_rng(3).standard_normal((4, prob.d)) / 2)
    ys = _walk(4, 100, 2)
    assert np.array_equal(proj.population_grads(ys), _loop(proj, "population_grads", ys))
    assert np.array_equal(proj.population_lambda_mins(ys), _loop(proj, "population_lambda_mins", ys))


def test_valley_batched_gradient_is_the_single_point_floats():
    # the valley's profile uses + - * / and sqrt only (correctly rounded): exact on any CPU
    for d in (1, 10, 100):
        prob = get_problem("hard_valley", d=d)
        xs = _walk(d, 600, d)
        assert np.array_equal(prob.population_grads(xs), _loop(prob, "population_grads", xs))
        assert batched_oracles.declares(prob, "population_grads")


@pytest.mark.parametrize("name", ["hard_ramp", "strict_saddle", "hard_valley"])
def test_grad_norms_equal_the_loop_of_np_linalg_norm(name):
    prob = get_problem(name, d=10)
    xs = _walk(10, 900, 5, scale=2.0)
    want = np.array([np.linalg.norm(prob.population_grad(x)) for x in xs])
    assert np.array_equal(grad_norms(prob, xs), want)


def test_row_norms_are_np_linalg_norm():
    g = np.random.default_rng(0).standard_normal((500, 13)) * np.logspace(-200, 150, 500)[:, None]
    assert np.array_equal(batched_oracles.row_norms(g), np.array([np.linalg.norm(r) for r in g]))


def test_a_subclass_rewriting_the_single_point_oracle_keeps_the_loop():
    prob = RotatedValley(d=6)
    assert not batched_oracles.declares(prob, "population_grads")
    xs = _walk(6, 50, 7)
    assert np.array_equal(grad_norms(prob, xs),
                          np.array([np.linalg.norm(prob.population_grad(x)) for x in xs]))


class _OffByAnUlp(GLM):
    """A batched form that differs from the single-point oracle in the last bit."""

    def population_grads(self, xs):
        return np.nextafter(super().population_grads(xs), np.inf)


def test_a_batched_form_that_differs_is_turned_off_with_a_warning():
    prob = _OffByAnUlp(d=10, rank=10, link="sigmoid")
    xs = _walk(10, 300, 8)
    want = np.array([np.linalg.norm(prob.population_grad(x)) for x in xs])
    with pytest.warns(RuntimeWarning, match="differs from population_grad"):
        got = grad_norms(prob, xs)
    assert np.array_equal(got, want)
    assert np.array_equal(grad_norms(prob, xs), want)  # later calls loop without a word


def _running_min_by_point(prob, its):
    """The screen one iterate at a time (the pre-batching code, an independent reference)."""
    best, out = math.inf, []
    for x in its:
        if np.linalg.norm(prob.population_grad(x)) < best:
            best = min(best, sosp_alpha(prob, x)["alpha"])
        out.append(best)
    return np.array(out)


@pytest.mark.parametrize("kw", GLMS[:2])
def test_running_min_alpha_batched_equals_the_point_by_point_screen(kw):
    prob = GLM(**kw)
    # a descent-like path: gradients mostly fall, so the screen lets many iterates through
    rng = np.random.default_rng(11)
    x, its = np.zeros(prob.d), []
    for _ in range(800):
        x = x - 0.5 * prob.population_grad(x) + 0.02 * rng.standard_normal(prob.d)
        its.append(x.copy())
    its = np.array(its)
    assert batched_oracles.declares(prob, "population_lambda_mins")
    got = running_min_alpha(prob, its)
    assert np.array_equal(got, _running_min_by_point(prob, its))
    assert got[-1] < got[0]
