"""Problems: every oracle against an independent reference (finite differences, averages over
the finite support or large samples with CLT tolerances), constants, saddles, errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import problems
from problems.evaluation.metrics import sosp_alpha
from tests.conftest import SMALL, make
from tests.finite_differences import central_grad

NAMES = list(SMALL)



def random_point(prob, rng, scale=None):
    c = prob.constants
    r = min(c.domain_radius, 1.5) if scale is None else scale
    v = rng.standard_normal(prob.d)
    return v / np.linalg.norm(v) * r * rng.uniform(0.1, 0.95)


@pytest.mark.parametrize("name", NAMES)
def test_per_sample_grads_match_finite_differences(name, rng):
    prob = make(name)
    batch = prob.sample(4, rng)
    x = random_point(prob, rng)
    grads = prob.per_sample_grads(x, batch)
    assert grads.shape == (4, prob.d)
    for i in range(4):
        fd = central_grad(lambda z, i=i: prob.per_sample_losses(z, batch[i : i + 1])[0], x)
        np.testing.assert_allclose(grads[i], fd, rtol=1e-5, atol=1e-6)
    y = random_point(prob, rng)
    np.testing.assert_allclose(prob.per_sample_grad_diffs(x, y, batch),
                               grads - prob.per_sample_grads(y, batch), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_population_grad_and_hessian_match_finite_differences(name, rng):
    prob = make(name)
    x = random_point(prob, rng)
    np.testing.assert_allclose(prob.population_grad(x), central_grad(prob.population_loss, x),
                               rtol=1e-5, atol=1e-7)
    H = prob.population_hessian(x)
    fd_H = np.array([central_grad(lambda z, j=j: prob.population_grad(z)[j], x) for j in range(prob.d)])
    np.testing.assert_allclose(H, fd_H, rtol=1e-5, atol=1e-6)
    v = rng.standard_normal(prob.d)
    np.testing.assert_allclose(prob.population_hvp(x, v), H @ v, rtol=1e-10, atol=1e-12)
    assert prob.population_lambda_min(x) == pytest.approx(np.linalg.eigvalsh(H)[0], abs=1e-10)


def test_finite_support_population_is_the_exact_average_over_atoms(rng):
    prob = make("logistic")
    x = random_point(prob, rng)
    atoms = prob.atoms
    np.testing.assert_allclose(prob.population_grad(x), prob.per_sample_grads(x, atoms).mean(0),
                               rtol=1e-12, atol=1e-14)
    assert prob.population_loss(x) == pytest.approx(prob.per_sample_losses(x, atoms).mean(), rel=1e-12)
    # Hessian: average of per-atom finite-difference Hessians of the per-sample gradients.
    fd = np.array([central_grad(lambda z, j=j: prob.per_sample_grads(z, atoms).mean(0)[j], x)
                   for j in range(prob.d)])
    np.testing.assert_allclose(prob.population_hessian(x), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["strict_saddle", "hard_valley", "hard_ramp", "phase_retrieval",
                                  "mean_estimation"])
def test_closed_form_population_matches_large_sample_average(name, rng):
    prob = make(name)
    x = random_point(prob, rng)
    n = 200_000
    batch = prob.sample(n, rng)
    grads = prob.per_sample_grads(x, batch)
    se = grads.std(0) / math.sqrt(n)
    assert np.all(np.abs(grads.mean(0) - prob.population_grad(x)) <= 5 * se + 1e-12)
    losses = prob.per_sample_losses(x, batch)
    assert abs(losses.mean() - prob.population_loss(x)) <= 5 * losses.std() / math.sqrt(n) + 1e-12


def per_sample_hessian(prob, x, record, h=1e-5):
    return np.array([
        (prob.per_sample_grads(x + h * e, record)[0] - prob.per_sample_grads(x - h * e, record)[0]) / (2 * h)
        for e in np.eye(prob.d)
    ])


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.floats(0.05, 3.0))
def test_stated_constants_hold_on_random_pairs(name, seed, spread):
    rng = np.random.default_rng(seed)
    prob = make(name)
    c = prob.constants
    record = prob.sample(1, rng)
    x = random_point(prob, rng, scale=min(c.domain_radius, spread) * 0.999)
    y = random_point(prob, rng, scale=min(c.domain_radius, spread) * 0.999)
    gx, gy = prob.per_sample_grads(x, record)[0], prob.per_sample_grads(y, record)[0]
    dist = np.linalg.norm(x - y)
    assert np.linalg.norm(gx) <= c.G * (1 + 1e-9)
    assert np.linalg.norm(gx - gy) <= c.M * dist * (1 + 1e-9) + 1e-12
    Hx, Hy = per_sample_hessian(prob, x, record), per_sample_hessian(prob, y, record)
    assert np.linalg.norm(Hx, 2) <= c.M * (1 + 1e-6) + 1e-6
    assert np.linalg.norm(Hx - Hy, 2) <= c.rho * dist * (1 + 1e-6) + 1e-5


def test_constants_are_tight_enough_to_matter():
    """A wrong (too small) constant would be caught: the grid maximum of |phi'''| reaches
    rho_phi within 1% for the valley (the mutation rho_phi = 1.3 fails the property test)."""
    from problems.profiles import ValleyProfile
    prof = ValleyProfile(w=1.0, beta=1e-4)
    u = np.linspace(-5, 5, 200001)
    h = 1e-4
    third = (prof.d2(u + h) - prof.d2(u - h)) / (2 * h)
    assert np.abs(third).max() == pytest.approx(prof.rho, rel=0.01)


@pytest.mark.parametrize("name", ["strict_saddle", "hard_valley", "hard_ramp", "phase_retrieval"])
def test_x0_is_a_strict_saddle(name):
    prob = make(name)
    assert np.linalg.norm(prob.population_grad(prob.x0)) < 1e-12
    assert prob.population_lambda_min(prob.x0) < -0.1


def test_strict_saddle_alpha_far_above_measured_accuracies_and_known_minima():
    prob = problems.get_problem("strict_saddle", d=10)
    assert sosp_alpha(prob, prob.x0)["alpha"] >= 0.5
    for xm in prob.minima():
        a = sosp_alpha(prob, xm)
        assert a["alpha"] < 1e-12 and a["lambda_min"] > 0
    valley = problems.get_problem("hard_valley", d=10)
    assert sosp_alpha(valley, valley.x0)["alpha"] >= 0.5
    for xm in valley.minima():
        assert np.linalg.norm(valley.population_grad(xm)) < 1e-9


def test_phase_retrieval_minimum_is_the_signal():
    prob = make("phase_retrieval")
    assert prob.population_loss(prob.x_star) == pytest.approx(0.0, abs=1e-12)
    assert np.linalg.norm(prob.population_grad(prob.x_star)) < 1e-12


def test_hard_valley_needs_alpha_minus_two_steps_of_gradient_descent():
    prob = problems.get_problem("hard_valley", d=3, tau=0.0)
    eta = 1 / prob.constants.M
    alphas = np.logspace(-2, -1, 6)
    steps = []
    for a in alphas:
        x = prob.x0.copy()
        x[0] = 0.5  # off the saddle, into the valley
        t = 0
        while np.linalg.norm(prob.population_grad(x)) > a:
            x = x - eta * prob.population_grad(x)
            t += 1
        steps.append(t)
    slope = np.polyfit(np.log(alphas), np.log(steps), 1)[0]
    assert slope == pytest.approx(-2.0, abs=0.1)


@pytest.mark.parametrize("alpha", [0.009, 0.09])
def test_ramp_profile_derivatives_and_constants_on_the_whole_path(alpha):
    """Finite differences of value / d1 / d2 over [-1.5 L, 1.5 L]; the stated G, M, rho bound
    the grid maxima and are tight (within 15%, 10%, 3%: the sums of sup norms peak apart)."""
    prof = problems.get_problem("hard_ramp", d=2, alpha=alpha).profile
    u = np.linspace(-1.5 * prof.L, 1.5 * prof.L, 600_001)
    h = 1e-5
    np.testing.assert_allclose((prof.value(u + h) - prof.value(u - h)) / (2 * h), prof.d1(u),
                               atol=1e-7)
    np.testing.assert_allclose((prof.d1(u + h) - prof.d1(u - h)) / (2 * h), prof.d2(u), atol=1e-6)
    third = np.abs((prof.d2(u + h) - prof.d2(u - h)) / (2 * h)).max()
    g, m = np.abs(prof.d1(u)).max(), np.abs(prof.d2(u)).max()
    assert g <= prof.G and m <= prof.M and third <= prof.rho * (1 + 1e-6)
    assert g >= prof.G * 0.85 and m >= prof.M * 0.9
    assert third >= prof.rho * 0.97
    # B0: the drop equals phi(0) minus the grid minimum, which sits at u_min = L.
    assert prof.drop == pytest.approx(-prof.value(u).min(), rel=1e-9)
    assert prof.u_min == pytest.approx(prof.L, rel=1e-9)


@pytest.mark.parametrize("alpha", [0.009, 0.03, 0.09])
def test_hard_ramp_gradient_is_k_alpha_along_the_whole_path(alpha):
    """From past the saddle bump (u = 6w) to the end of the ramp the population gradient stays
    within [k alpha (1 - 1e-3), k alpha + 1e-3]: no point on the path is alpha-stationary, and
    the start saddle is >= 10x above alpha."""
    prob = problems.get_problem("hard_ramp", d=4, alpha=alpha)
    prof = prob.profile
    u = np.linspace(6 * prob.w, prof.L - 5 * prob.end_width, 20_001)
    grad = np.abs(prof.d1(u))
    assert grad.min() >= prob.k * alpha * (1 - 1e-3)
    assert grad.max() <= prob.k * alpha + 1e-3
    assert sosp_alpha(prob, prob.x0)["alpha"] >= 10 * alpha
    for xm in prob.minima():
        a = sosp_alpha(prob, xm)
        assert a["alpha"] < 1e-9 and a["lambda_min"] > 0
    assert prob.constants.B0 == pytest.approx(prob.drop + prob.a, rel=0.05)


def test_hard_ramp_needs_alpha_minus_two_steps_of_gradient_descent():
    """One instance per alpha: gradient descent (step 1/M) from u = 0.5 needs ~drop M/(k alpha)^2
    steps, slope -2 in alpha (the valley's -2 came from its 1/u tail; here from the ramp's length)."""
    alphas = np.logspace(-2, -1, 5)
    steps = []
    for a in alphas:
        prob = problems.get_problem("hard_ramp", d=3, tau=0.0, alpha=a)
        eta = 1 / prob.constants.M
        x = prob.x0.copy()
        x[0] = 0.5
        t = 0
        while np.linalg.norm(prob.population_grad(x)) > a:
            x = x - eta * prob.population_grad(x)
            t += 1
        steps.append(t)
        predicted = prob.drop * prob.constants.M / (prob.k * a) ** 2
        assert 0.5 * predicted <= t <= 1.5 * predicted
    slope = np.polyfit(np.log(alphas), np.log(steps), 1)[0]
    assert slope == pytest.approx(-2.0, abs=0.1)


def test_per_target_problem_params_follow_the_target():
    assert problems.instance_params("hard_ramp", {}, 0.02) == {"alpha": 0.02}
    assert problems.instance_params("hard_ramp", {"alpha": 0.05}, 0.02) == {"alpha": 0.05}
    assert problems.instance_params("hard_valley", {"w": 1.0}, 0.02) == {"w": 1.0}
    assert problems.instance_params("hard_ramp", {}, None) == {}


def test_breast_cancer_population():
    pytest.importorskip("sklearn")
    prob = problems.get_problem("logistic_breast_cancer", d=30)
    assert prob.atoms.shape == (569, 31)
    assert np.linalg.norm(prob.atoms[:, 1:], axis=1).max() <= 1 + 1e-12
    x = np.full(30, 0.1)
    np.testing.assert_allclose(prob.population_grad(x), central_grad(prob.population_loss, x),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"name": "strict_saddle", "d": 0}, "d=0"),
    ({"name": "strict_saddle", "d": 2.5}, "d=2.5"),
    ({"name": "nope", "d": 3}, "problem='nope'"),
    ({"name": "strict_saddle", "d": 3, "mu": -1.0}, "mu=-1.0"),
    ({"name": "hard_valley", "d": 3, "beta": 2.0}, "beta=2.0"),
    ({"name": "hard_ramp", "d": 3, "k": 1.0}, "k=1.0"),
    ({"name": "hard_ramp", "d": 3, "alpha": 0.5}, "alpha=0.5"),
    ({"name": "hard_ramp", "d": 3, "ramp_width": 2.0}, "ramp_width=2.0"),
    ({"name": "logistic", "d": 3, "flip": 0.7}, "flip=0.7"),
    ({"name": "phase_retrieval", "d": 3, "signal": 5.0}, "signal=5.0"),
])
def test_bad_parameters_raise_clear_errors(kwargs, needle):
    name = kwargs.pop("name")
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(".", r"\.")):
        problems.get_problem(name, **kwargs)


def test_sample_and_constants_errors(rng):
    prob = make("strict_saddle")
    with pytest.raises(ValueError, match="n=0"):
        prob.sample(0, rng)
    with pytest.raises(ValueError, match=r"constants\.G"):
        problems.Constants(G=-1.0, M=1.0, rho=1.0, B0=1.0)
