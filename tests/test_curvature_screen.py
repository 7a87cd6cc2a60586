"""The Lipschitz screen on lambda_min (problems.evaluation.curvature_screen): the running minimum of
alpha_SOSP is the point-by-point one bit for bit, the GLM's declared bound holds against its
exact Hessians, and a wrong bound is caught by the audit (and would be caught by these tests
without it)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from problems import get_problem
from problems.evaluation import batched_oracles, curvature_screen
from problems.evaluation.metrics import running_min_alpha, sosp_alpha
from problems.glm import GLM
from tests.test_batched_oracles import _running_min_by_point as _by_point

GLMS = [dict(d=10, rank=10, link="sigmoid"), dict(d=10, rank=3, link="logistic"),
        dict(d=30, rank=7, link="sigmoid"), dict(d=8, rank=8, link="sigmoid", seed=3)]


@pytest.fixture(autouse=True)
def _fresh_checks():
    batched_oracles.reset_checks()
    curvature_screen.reset()
    yield
    batched_oracles.reset_checks()
    curvature_screen.reset()


def _descent(prob, start_scale, n=900, step=2.0, noise=1e-3, seed=11):
    """Gradient descent with a little noise: the gradient mostly falls, so nearly every iterate
    is a candidate, and from a random start the sigmoid link's curvature changes sign."""
    rng = np.random.default_rng(seed)
    x, its = start_scale * rng.standard_normal(prob.d), []
    for _ in range(n):
        x = x - step * prob.population_grad(x) + noise * rng.standard_normal(prob.d)
        its.append(x.copy())
    return np.array(its)


class _CountingGLM(GLM):
    """Counts lambda_min evaluations (the batched oracle's rows)."""

    rows = 0

    def population_lambda_mins(self, xs):
        type(self).rows += len(xs)
        return super().population_lambda_mins(xs)


class _SharpGLM(_CountingGLM):
    """rho = 1e-6: the curvature part exceeds the gradient norm wherever lambda_min < ~-3e-4,
    so alpha depends on lambda_min along the path and the screen's room is tight."""

    @property
    def constants(self):
        return dataclasses.replace(super().constants, rho=1e-6)


class _WrongBoundGLM(_SharpGLM):
    """A planted fault: a Hessian-Lipschitz bound 1e8 times too small."""

    def hessian_lipschitz(self):
        return super().hessian_lipschitz() * 1e-8


@pytest.mark.parametrize("kw", GLMS)
@pytest.mark.parametrize("start", [0.0, 2.0])
def test_screened_running_minimum_is_the_point_by_point_one(kw, start):
    prob = _CountingGLM(**kw)
    its = _descent(prob, start)
    _CountingGLM.rows = 0
    got = running_min_alpha(prob, its)
    assert np.array_equal(got, _by_point(prob, its))
    assert got[-1] < got[0]
    # the screen did its job: far fewer Hessians than candidates (900 iterates, most of them
    # candidates on a descent path)
    assert _CountingGLM.rows < 0.25 * len(its)


@pytest.mark.parametrize("kw", [GLMS[0], GLMS[3]])
def test_screen_is_exact_where_the_curvature_part_decides_alpha(kw):
    prob = _SharpGLM(**kw)
    its = _descent(prob, 2.0, step=0.3)
    parts = [sosp_alpha(prob, x) for x in its]
    # the planted regime: alpha is the curvature part at some iterates, the gradient at others
    assert sum(p["alpha"] > p["grad_norm"] for p in parts) >= 20
    assert sum(p["alpha"] == p["grad_norm"] for p in parts) >= 20
    assert np.array_equal(running_min_alpha(prob, its), _by_point(prob, its))


def _origin_then_descent(prob):
    """The origin first (lambda_min 0 there: tanh(0) = 0; ||grad F|| 0.107, above the descent's
    start), then a descent through negative curvature: a wrong bound certifies from the origin
    points whose alpha is their curvature part."""
    return np.vstack([np.zeros(prob.d), _descent(prob, 2.0, step=0.3)])


def test_a_wrong_bound_changes_numbers_without_the_audit(monkeypatch):
    """The equality tests above can fail: with the audit off, a bound 1e8 too small certifies
    points whose alpha is the curvature part, and the running minimum reads too low."""
    prob = _WrongBoundGLM(**GLMS[0])
    its = _origin_then_descent(prob)
    monkeypatch.setattr(curvature_screen, "AUDIT_EVERY", 10**12)
    got = running_min_alpha(prob, its)
    want = _by_point(prob, its)
    assert not np.array_equal(got, want)
    assert (got <= want).all()


def test_the_audit_catches_a_wrong_bound_and_falls_back():
    prob = _WrongBoundGLM(**GLMS[0])
    its = _origin_then_descent(prob)
    with pytest.warns(RuntimeWarning, match="hessian_lipschitz"):
        got = running_min_alpha(prob, its)
    assert np.array_equal(got, _by_point(prob, its))
    assert curvature_screen.lipschitz_of(prob) is None  # off for the class from now on
    assert curvature_screen.lipschitz_of(GLM(**GLMS[0])) is not None  # not for the others


def _worst_lipschitz_ratio(prob, seed, scales, pairs, spread):
    """max ||H(x) - H(y)||_2 / ||x - y|| over random pairs from the exact population Hessians
    (x of norm up to `spread` sqrt(d), y at each distance scale from it), asserting each ratio
    within the declared bound."""
    L = prob.hessian_lipschitz()
    rng = np.random.default_rng(seed)
    worst = 0.0
    for scale in scales:
        for _ in range(pairs):
            x = rng.standard_normal(prob.d) * rng.uniform(0, spread)
            y = x + scale * rng.standard_normal(prob.d)
            gap = np.linalg.norm(prob.population_hessian(x) - prob.population_hessian(y), 2)
            ratio = gap / np.linalg.norm(x - y)
            assert ratio <= L * (1 + 1e-9)
            worst = max(worst, ratio)
    return worst


@pytest.mark.parametrize("kw", [*GLMS, dict(d=10, rank=10, link="logistic")])
def test_glm_hessian_lipschitz_bounds_its_exact_hessians(kw):
    """Against the exact population Hessians: ||H(x) - H(y)||_2 <= L ||x - y|| over random
    pairs near and far, and the bound is not vacuous (the ratio reaches a tenth of it)."""
    prob = GLM(**kw)
    L = prob.hessian_lipschitz()
    worst = _worst_lipschitz_ratio(prob, 5, (0.01, 0.3, 3.0), 40, 4)
    assert worst >= 0.1 * L if prob.rank == prob.d else worst > 0


def test_projected_glm_uses_its_own_feature_norms():
    base = GLM(d=20, rank=5, link="sigmoid")
    phi = np.random.default_rng(2).standard_normal((8, 20)) / math.sqrt(8)
    proj = base.project(phi)
    assert proj.hessian_lipschitz() == pytest.approx(0.125 * proj.feature_norm_max ** 3)
    its = _descent(proj, 1.0, n=400)
    assert np.array_equal(running_min_alpha(proj, its), _by_point(proj, its))


def test_certificate_arithmetic():
    """By hand: reference lambda 0.01 at the origin, L = 1, rho = 1: a point at distance r is
    certified iff 0.01 - r - slack >= -0.99 sqrt(g) (or > 0)."""
    screen = curvature_screen.CurvatureScreen(1.0, 1.0, smoothness=1.0)
    xs = np.array([[0.005, 0.0], [0.02, 0.0], [0.03, 0.0], [0.05, 0.0]])
    assert not screen.certifies(xs, np.full(4, 1e-2)).any()  # no reference yet
    screen.set_reference(np.zeros(2), 0.01)
    g = np.array([1e-6, 1e-4, 1e-4, 1e-4])
    # lower bounds ~0.005, -0.01, -0.02, -0.04; room 0.99 sqrt(g) = 9.9e-4, 9.9e-3 (x3)
    assert screen.certifies(xs, g).tolist() == [True, False, False, False]
    g = np.array([1e-6, 1.1e-4, 4.2e-4, 0.0])
    assert screen.certifies(xs, g).tolist() == [True, True, True, False]
    assert not screen.certifies(xs, np.full(4, np.nan)).any()
    screen.set_reference(np.zeros(2), math.nan)  # a non-finite reference certifies nothing
    assert not screen.certifies(xs, np.full(4, 1.0)).any()


SEPARABLE = [("hard_valley", {}), ("hard_valley", dict(start=1.0)), ("strict_saddle", {}),
             ("hard_ramp", {})]


def _separable(name, params, d=10):
    return get_problem(name, d=d, **params)


@pytest.mark.parametrize("name,params", SEPARABLE)
def test_separable_screen_is_the_point_by_point_minimum(name, params):
    """A noisy descent from x0 (the gradient falls, the curvature changes sign on the valley
    and the saddle): the screened running minimum is sosp_alpha's point by point."""
    prob = _separable(name, params)
    rng = np.random.default_rng(4)
    x, its = np.array(prob.x0, dtype=float) + 0.05 * rng.standard_normal(prob.d), []
    eta = 0.5 / prob.constants.M
    for _ in range(1500):
        x = x - eta * prob.population_grad(x) + 2e-3 * rng.standard_normal(prob.d)
        its.append(x.copy())
    its = np.array(its)
    assert curvature_screen.lipschitz_of(prob) is not None
    got = running_min_alpha(prob, its)
    assert np.array_equal(got, _by_point(prob, its))
    assert got[-1] < got[0]


@pytest.mark.parametrize("name,params", SEPARABLE)
def test_separable_hessian_lipschitz_bounds_its_exact_hessians(name, params):
    prob = _separable(name, params, d=6)
    L = prob.hessian_lipschitz()
    assert L <= prob.constants.rho  # the stated rho includes the records' (1 + noise)
    assert _worst_lipschitz_ratio(prob, 8, (1e-3, 0.1, 1.0), 60, 3) >= 0.1 * L


def test_scalar_certificate_agrees_with_the_vector_one():
    rng = np.random.default_rng(12)
    for rho in (0.0, 0.5, 3.0):
        screen = curvature_screen.CurvatureScreen(2.0, rho, smoothness=1.0)
        xs = rng.standard_normal((400, 3)) * 0.01
        g = np.abs(rng.standard_normal(400)) * 1e-3
        g[::37] = 0.0
        g[::41] = np.nan
        assert not any(screen.certifies_one(x, gi) for x, gi in zip(xs, g, strict=True))
        screen.set_reference(np.zeros(3), float(rng.uniform(-0.01, 0.02)))
        vector = screen.certifies(xs, g)
        scalar = [screen.certifies_one(x, float(gi)) for x, gi in zip(xs, g, strict=True)]
        assert vector.tolist() == scalar
        assert 0 < vector.sum() < len(xs)
