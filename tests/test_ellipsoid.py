"""Seed 002 (issue 15, in progress): the ellipsoid projection, the stylized optimal diagonals,
and the privacy of Pasan / Pagan (whitened sensitivity, noise covariance, planted bugs)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from algorithms import get_algorithm
from algorithms.base import Privacy
from algorithms.first_order.ellipsoid import optimal_diagonal, project_ellipsoid
from problems import get_problem


class _Recorder:
    def __init__(self):
        self.events = []

    def release(self, **info):
        self.events.append(info)


def test_projection_lands_in_the_ellipsoid_and_keeps_what_is_inside():
    rng = np.random.default_rng(0)
    a = rng.uniform(0.1, 10, 7)
    g = rng.standard_normal((500, 7)) * rng.uniform(0.01, 3, (500, 1))
    out = project_ellipsoid(g.copy(), a)
    norms_in = np.sqrt((g * g * a).sum(axis=1))
    norms_out = np.sqrt((out * out * a).sum(axis=1))
    assert np.all(norms_out <= 1 + 1e-12)
    inside = norms_in <= 1
    np.testing.assert_array_equal(out[inside], g[inside])
    np.testing.assert_allclose(norms_out[~inside], 1.0, rtol=1e-12)
    # radial: same direction
    cos = (out * g).sum(axis=1) / (np.linalg.norm(out, axis=1) * np.linalg.norm(g, axis=1))
    np.testing.assert_allclose(cos, 1.0, rtol=1e-12)
    bad = project_ellipsoid(np.array([[np.inf, 1.0], [np.nan, 0.0]]), np.ones(2))
    assert np.all(bad == 0)


def test_optimal_diagonals_solve_the_stylized_problems():
    """Pasan minimizes sum_j 1/c_j, Pagan sum_j c_j^-1/2, both subject to sum_j c_j sigma_j^2
    = 1 (E||g||_C^2 <= 1): no random feasible diagonal does better, and the values are the
    closed forms (sum sigma)^2 and (sum sigma^(2/3))^(3/2) (d = 100, sigma_j = j^-3/2: Pagan
    11.81, Pasan sum sigma 2.41, i.e. 24.1 with diam_2 = sqrt(d))."""
    sigma = np.arange(1, 101, dtype=float) ** -1.5
    objective = {"pasan": lambda c: (1 / c).sum(), "pagan": lambda c: (c ** -0.5).sum()}
    rng = np.random.default_rng(1)
    for method, f in objective.items():
        c = optimal_diagonal(sigma, method)
        assert (c * sigma**2).sum() == pytest.approx(1.0)
        for _ in range(200):
            r = c * np.exp(0.3 * rng.standard_normal(100))
            r /= (r * sigma**2).sum()
            assert f(r) >= f(c) * (1 - 1e-12)
    assert (optimal_diagonal(sigma, "pagan") ** -0.5).sum() == pytest.approx(
        (sigma ** (2 / 3)).sum() ** 1.5)
    assert (sigma ** (2 / 3)).sum() ** 1.5 == pytest.approx(11.81, abs=0.01)
    assert math.sqrt((1 / optimal_diagonal(sigma, "pasan")).sum()) * 10 == pytest.approx(24.1, abs=0.1)


def _run(alg, faults=(), eps=1.0, n=3000, d=20, T=40, data=None):
    prob = get_problem("scaled_linear", d=d)
    data = prob.sample(n, np.random.default_rng(0)) if data is None else data
    rec = _Recorder()
    a = get_algorithm(alg)(planted_faults=faults, T=T, b=100)
    traj = a.run(prob, data, Privacy(eps, 1e-6), np.random.default_rng(1), probe=rec)
    return prob, data, traj, rec.events


@pytest.mark.parametrize("alg", ["pasan", "pagan"])
def test_layer1_whitened_sensitivity_and_a_missing_projection(alg):
    """Each release recomputed with one record replaced by an adversarial one moves by at most
    2/b in the whitened norm ||A^{1/2} .|| (the accountant's clip-1 Poisson Gaussian); with the
    projection skipped (planted no_clipping) the move is far larger."""
    ratios = {}
    for faults in ((), ("no_clipping",)):
        prob, _data, traj, events = _run(alg, faults)
        a = np.array(traj.params["A_diag"])
        worst = 0.0
        for e in events[:20]:
            np.testing.assert_allclose(e["whiten"] ** 2, a)  # the run's A, as the accountant saw
            if not len(e["batch"]):
                continue
            for adv in prob.adversarial_records():
                other = e["batch"].copy()
                other[0] = adv
                # recomputed as the run computed it (its projection), measured in the
                # whitening the accountant was told about
                per = project_ellipsoid(prob.per_sample_grads(e["x"], other), e["projection"])
                new = per.sum(axis=0) / e["denom"]
                moved = float(np.linalg.norm(e["whiten"] * (new - e["leaf"])))
                worst = max(worst, moved / e["told"])
        ratios[faults] = worst
    assert 0.3 < ratios[()] <= 1 + 1e-9
    assert ratios[("no_clipping",)] > 10  # an adversarial record of scale 1e6, unprojected


@pytest.mark.parametrize("alg", ["pasan", "pagan"])
def test_layer2_noise_has_covariance_z2_a_inverse_and_a_planted_isotropic_noise_is_caught(alg):
    """released - leaf = xi / b with xi ~ N(0, z^2 A^-1): whitened by sqrt(a_j) b / z it is
    standard normal (KS); the planted isotropic covariance and a third of the noise fail it."""
    pvals = {}
    for faults in ((), ("noise_isotropic",), ("noise_third",)):
        _prob, _data, traj, events = _run(alg, faults, T=60)
        a = np.array(traj.params["A_diag"])
        z = traj.params["noise_multiplier"]
        b = float(traj.params["b"])
        w = np.concatenate([(e["released"] - e["leaf"]) * np.sqrt(a) * b / z for e in events])
        pvals[faults] = stats.kstest(w, "norm").pvalue
    assert pvals[()] > 1e-3
    assert pvals[("noise_isotropic",)] < 1e-6 and pvals[("noise_third",)] < 1e-6


def test_excess_risk_metric_and_the_d_claims():
    """The stored excess risk is <x, mu> + ||mu||_1 at the output (closed form over the box);
    the declared claims predict exponent 0 (Pagan, polylog) and 1/2 (Pasan) in d."""
    from analysis.metrics import evaluate

    prob = get_problem("scaled_linear", d=30)
    data = prob.sample(2000, np.random.default_rng(0))
    traj = get_algorithm("pagan")(T=30, b=100).run(prob, data, Privacy(1.0, 1e-6),
                                                  np.random.default_rng(1))
    m = evaluate(prob, traj, metric="excess_risk")["metrics"]
    x = traj.iterates[-1]
    assert np.all(np.abs(x) <= 1)
    assert m["excess_last"] == pytest.approx(float(x @ prob.mu + np.abs(prob.mu).sum()))
    assert m["excess_best"] <= m["excess_last"] + 1e-15 and m["excess_best"] >= 0
    assert get_algorithm("pagan").claims[0].predicted_slope("error", "d") == 0.0
    assert get_algorithm("pasan").claims[0].predicted_slope("error", "d") == 0.5


def test_isotropic_baselines_use_the_identity_geometry():
    """private_sgd_iso / private_adagrad_iso: A = I / B^2 (Euclidean clipping at B, noise
    z^2 B^2 I), whatever the problem's scales; the shaped methods use the stylized optimum."""
    prob = get_problem("scaled_linear", d=12)
    for alg, shaped in (("private_sgd_iso", None), ("private_adagrad_iso", None),
                        ("pasan", "pasan"), ("pagan", "pagan")):
        p = get_algorithm(alg)(B=2.0).resolve_params(prob, 1000, Privacy(1.0, 1e-6))
        expected = np.ones(12) if shaped is None else optimal_diagonal(prob.sigma, shaped)
        np.testing.assert_allclose(p["A_diag"], expected / 4.0)


def test_pdp_sgd_projects_onto_the_public_top_k_eigenspace():
    """The subspace is the top-k eigenspace of the public gradients' second moment (eigh of
    G^T G / m, an independent computation); the public records come from the run's generator
    alone (two private data sets, same seed: the same first subspace); the release before the
    projection keeps private SGD's whitened sensitivity (post-processing)."""
    from algorithms.first_order.ellipsoid import top_subspace

    rng = np.random.default_rng(0)
    G = rng.standard_normal((300, 15)) * np.linspace(3, 0.1, 15)
    V = top_subspace(G, 4)
    w, U = np.linalg.eigh(G.T @ G / 300)
    top = U[:, np.argsort(w)[::-1][:4]]
    np.testing.assert_allclose(V @ V.T, top @ top.T, atol=1e-10)

    prob = get_problem("scaled_linear", d=30)
    bases = []
    for data_seed in (0, 1):
        data = prob.sample(2000, np.random.default_rng(data_seed))
        alg = get_algorithm("pdp_sgd")(T=3, b=100, k=5, public_m=200, refresh=1000, alpha=0.1)
        traj = alg.run(prob, data, Privacy(1.0, 1e-6), np.random.default_rng(7))
        bases.append(alg._basis)
        assert traj.params["k"] == 5
    np.testing.assert_array_equal(bases[0], bases[1])
    # every step is in the public subspace (a fixed basis here: refresh > T), so from x0 = 0
    # every iterate, and their average, stays in it (the box is not reached with T = 3)
    off = traj.iterates - traj.iterates @ bases[1] @ bases[1].T
    assert np.abs(traj.iterates).max() < 1 and np.abs(off).max() < 1e-12


def test_scaled_regression_minimum_by_lp_matches_a_grid_search():
    """d = 2, 60 atoms: the LP's min over the box equals a fine grid search's (the loss is
    piecewise linear, so the grid comes within its spacing times G); subgradients match finite
    differences away from kinks."""
    prob = get_problem("scaled_regression", d=2, n_atoms=60, tau=0.05)
    g = np.linspace(-1, 1, 801)
    X, Y = np.meshgrid(g, g)
    pts = np.stack([X.ravel(), Y.ravel()], axis=1)
    A, y = prob.atoms[:, 1:], prob.atoms[:, 0]
    losses = np.abs(pts @ A.T - y).mean(axis=1)
    G = float(np.linalg.norm(prob.sigma))
    assert prob.min_loss <= losses.min() + 1e-9
    assert losses.min() - prob.min_loss <= G * (g[1] - g[0])
    x = np.array([0.3, -0.2])
    h = 1e-7
    fd = np.array([(prob.population_loss(x + h * e) - prob.population_loss(x - h * e)) / (2 * h)
                   for e in np.eye(2)])
    np.testing.assert_allclose(prob.population_grad(x), fd, atol=1e-6)
    assert prob.excess_risk(x) >= 0


def test_private_moments_sensitivity_noise_and_error():
    """Replacing one of m records moves the capped mean by at most ||tau^2|| / m (adversarial
    rows included); the noise is N(0, std^2) with std = ||tau^2|| / (m mu) (KS; a third is
    caught); the estimate's error at the scales of scaled_linear falls like 1/m."""
    from algorithms.first_order.private_moments import private_second_moments

    prob = get_problem("scaled_linear", d=10, mean_frac=0.0)
    tau = 2 * prob.sigma
    rng = np.random.default_rng(0)
    g = prob.sample(400, rng)
    worst = 0.0
    for adv in [*prob.adversarial_records(), np.full(10, np.nan)]:
        other = g.copy()
        other[3] = adv
        a, _ = private_second_moments(g, tau, math.inf, 1e-6, np.random.default_rng(1))
        b, _ = private_second_moments(other, tau, math.inf, 1e-6, np.random.default_rng(1))
        worst = max(worst, np.linalg.norm(a - b) / (np.linalg.norm(tau**2) / 400))
    assert 0.3 < worst <= 1 + 1e-12
    pvals = {}
    for factor in (1.0, 1 / 3):
        z = []
        for r in range(300):
            est, std = private_second_moments(np.zeros((50, 10)), tau, 1.0, 1e-6,
                                              np.random.default_rng(r), floor=-np.inf,
                                              noise_factor=factor)
            z.append(est / std)
        pvals[factor] = stats.kstest(np.concatenate(z), "norm").pvalue
    assert pvals[1.0] > 1e-3 and pvals[1 / 3] < 1e-6
    errs = []
    for m in (1000, 10000):
        e = [np.abs(private_second_moments(prob.sample(m, np.random.default_rng(s)), tau, 1.0, 1e-6,
                                           np.random.default_rng(s + 99))[0] - prob.sigma**2).max()
             for s in range(20)]
        errs.append(np.median(e))
    assert errs[1] < errs[0] / 3  # noise ~ 1/m dominates at these m (sampling is exact here)
