"""The GLM problem (problems/glm.py): every oracle against an independent reference (finite
differences, naive averages over explicitly materialized features x = B z with the link's
derivatives written out by hand), its constants, the logistic minimizer, the JL projection of
arXiv 2206.00846 Algorithm 4, counts mode at d = 10^4 and the constructor's errors."""

import math

import numpy as np
import pytest

import problems
from problems.counts.layouts import CountsBatch
from problems.glm import GLM
from tests.finite_differences import central_grad

LINKS = ["logistic", "sigmoid"]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261207)


def small(link="logistic", **kw) -> GLM:
    return problems.get_problem("glm", **{"d": 7, "rank": 3, "link": link, "n_atoms": 200, **kw})


# Reference links written with plain exponentials of -|m| (no overflow at any margin).
def ref_phi(link, m):
    e = np.exp(-np.abs(m))
    if link == "logistic":
        return np.where(m >= 0, np.log1p(e), -m + np.log1p(e))
    return np.where(m >= 0, e / (1 + e), 1 / (1 + e))


def ref_dphi(link, m):
    e = np.exp(-np.abs(m))
    if link == "logistic":
        return np.where(m >= 0, -e / (1 + e), -1 / (1 + e))
    return -e / (1 + e) ** 2



def naive_features(prob):
    """x_a = B z_a for every atom, materialized (N, dim)."""
    return np.array([prob.basis @ z for z in prob.atoms[:, 1:]])


def naive_grads(prob, w, records, basis=None):
    basis = prob.basis if basis is None else basis
    y, z = records[:, 0], records[:, 1:]
    x = np.array([basis @ zi for zi in z])
    m = y * (x @ w)
    return (y * ref_dphi(prob.link, m))[:, None] * x


def random_w(rng, dim, scale=1.0):
    v = rng.standard_normal(dim)
    return v / np.linalg.norm(v) * scale * rng.uniform(0.1, 1.0)


# ---------------------------------------------------------------- per-sample and population
@pytest.mark.parametrize("link", LINKS)
def test_per_sample_grads_match_finite_differences_and_naive_form(link, rng):
    prob = small(link)
    batch = prob.sample(6, rng)
    for scale in (0.5, 3.0):
        w = random_w(rng, prob.d, scale)
        grads = prob.per_sample_grads(w, batch)
        assert grads.shape == (6, 7)
        for i in range(6):
            fd = central_grad(lambda u, i=i: prob.per_sample_losses(u, batch[i : i + 1])[0], w)
            np.testing.assert_allclose(grads[i], fd, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(grads, naive_grads(prob, w, batch), rtol=1e-12, atol=1e-14)
        m = batch[:, 0] * (np.array([prob.basis @ z for z in batch[:, 1:]]) @ w)
        np.testing.assert_allclose(prob.per_sample_losses(w, batch), ref_phi(link, m), rtol=1e-12)
        w2 = random_w(rng, prob.d, scale)
        np.testing.assert_allclose(prob.per_sample_grad_diffs(w, w2, batch),
                                   grads - naive_grads(prob, w2, batch), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("link", LINKS)
def test_population_oracles_are_exact_averages_and_match_finite_differences(link, rng):
    prob = small(link)
    x = naive_features(prob)
    y = prob.atoms[:, 0]
    for scale in (0.3, 4.0):
        w = random_w(rng, prob.d, scale)
        m = y * (x @ w)
        assert prob.population_loss(w) == pytest.approx(ref_phi(link, m).mean(), rel=1e-12)
        np.testing.assert_allclose(prob.population_grad(w),
                                   ((y * ref_dphi(link, m))[:, None] * x).mean(0), rtol=1e-11, atol=1e-15)
        np.testing.assert_allclose(prob.population_grad(w), central_grad(prob.population_loss, w),
                                   rtol=1e-6, atol=1e-9)
        H = prob.population_hessian(w)
        fd_H = np.array([central_grad(lambda u, j=j: prob.population_grad(u)[j], w) for j in range(prob.d)])
        np.testing.assert_allclose(H, fd_H, rtol=1e-6, atol=1e-9)
        v = rng.standard_normal(prob.d)
        np.testing.assert_allclose(prob.population_hvp(w, v), H @ v, rtol=1e-10, atol=1e-13)
        assert prob.population_lambda_min(w) == pytest.approx(np.linalg.eigvalsh(fd_H)[0], abs=1e-8)
        assert prob.population_lambda_min(w) == pytest.approx(np.linalg.eigvalsh(H)[0], abs=1e-12)


def test_lambda_min_zero_for_rank_below_dim_and_negative_for_sigmoid(rng):
    prob = small("logistic")
    w = random_w(rng, prob.d, 1.0)
    # Logistic: H_r is positive definite, so on R^7 with rank 3 the smallest eigenvalue is 0.
    assert prob.population_lambda_min(w) == 0.0
    assert np.linalg.eigvalsh(prob.population_hessian(w))[0] == pytest.approx(0.0, abs=1e-12)
    # Sigmoid against the label direction: margins mostly < 0, where phi'' < 0 (negative curvature).
    sig = small("sigmoid")
    w = -4 * sig.basis[:, 0]
    lam = sig.population_lambda_min(w)
    assert lam < -1e-3
    assert lam == pytest.approx(np.linalg.eigvalsh(sig.population_hessian(w))[0], abs=1e-12)
    # Full rank (rank = d): no added zero.
    full = problems.get_problem("glm", d=3, rank=3, n_atoms=200)
    w = random_w(rng, 3)
    assert full.population_lambda_min(w) > 0
    assert full.population_lambda_min(w) == pytest.approx(
        np.linalg.eigvalsh(full.population_hessian(w))[0], abs=1e-12)


# ---------------------------------------------------------------- counts mode
@pytest.mark.parametrize("link", LINKS)
def test_counts_oracles_match_materialized_batches(link, rng):
    prob = small(link)
    n = len(prob.atoms)
    counts = np.zeros(n, dtype=np.int64)
    counts[rng.choice(n, 15, replace=False)] = rng.integers(1, 5, 15)
    batch = CountsBatch(int(counts.sum()), counts)
    records = prob.materialize(batch)
    w, w2 = random_w(rng, prob.d, 2.0), random_w(rng, prob.d, 2.0)
    g = naive_grads(prob, w, records)
    mean, bound = prob.counts_grad(w, batch)
    np.testing.assert_allclose(mean, g.mean(0), rtol=1e-11, atol=1e-15)
    assert bound == pytest.approx(np.linalg.norm(g, axis=1).max(), rel=1e-12)
    diff = g - naive_grads(prob, w2, records)
    mean, bound = prob.counts_grad_diff(w, w2, batch)
    np.testing.assert_allclose(mean, diff.mean(0), rtol=1e-10, atol=1e-15)
    assert bound == pytest.approx(np.linalg.norm(diff, axis=1).max(), rel=1e-10)
    np.testing.assert_allclose(prob.batch_mean_grad(w, batch), g.mean(0), rtol=1e-11, atol=1e-15)
    all_g = naive_grads(prob, w, prob.atoms)
    assert prob.record_grad_bound(w) == pytest.approx(np.linalg.norm(all_g, axis=1).max(), rel=1e-12)
    all_d = all_g - naive_grads(prob, w2, prob.atoms)
    assert prob.record_grad_diff_bound(w, w2) == pytest.approx(np.linalg.norm(all_d, axis=1).max(),
                                                               rel=1e-10)


def test_counts_stream_and_registry():
    assert "glm" in problems.available()
    assert problems.data_modes("glm") == ("counts", "records")
    assert problems.character("glm") == "benign"
    assert small("logistic").convex and not small("sigmoid").convex
    assert small("logistic").project(np.eye(7)).convex
    prob = problems.get_problem("glm", d=6, rank=2)
    batch = prob.stream(0, budget=1000, data="counts").take(300)
    assert batch.counts.sum() == 300 and batch.counts.shape == (1000,)
    mean, bound = prob.counts_grad(np.ones(6), batch)
    assert mean.shape == (6,) and bound <= prob.constants.G * (1 + 1e-12)


def test_counts_grad_at_d_1e4_is_structured():
    prob = problems.get_problem("glm", d=10_000, rank=5)

    def forbidden(*args, **kwargs):
        raise AssertionError("a structured counts oracle must not build (atoms, d) gradients")

    prob.per_sample_grads = forbidden  # type: ignore[method-assign]
    prob.per_sample_grad_diffs = forbidden  # type: ignore[method-assign]
    batch = CountsBatch(1000, np.ones(1000, dtype=np.int64))
    w = np.full(10_000, 0.01)
    mean, bound = prob.counts_grad(w, batch)
    assert mean.shape == (10_000,) and 0 < bound <= prob.constants.G * (1 + 1e-12)
    np.testing.assert_allclose(mean, prob.population_grad(w), rtol=1e-12, atol=1e-16)
    mean, bound = prob.counts_grad_diff(w, np.zeros(10_000), batch)
    assert mean.shape == (10_000,) and bound > 0
    assert prob.record_grad_bound(w) > 0 and prob.record_grad_diff_bound(w, -w) > 0


# ---------------------------------------------------------------- constants and data
def test_atoms_basis_and_determinism():
    prob = problems.get_problem("glm", d=9, rank=4, n_atoms=2000, flip=0.1, seed=3)
    np.testing.assert_allclose(prob.basis.T @ prob.basis, np.eye(4), atol=1e-12)
    z, y = prob.atoms[:, 1:], prob.atoms[:, 0]
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(naive_features(prob), axis=1), 1.0, rtol=1e-12)
    assert set(np.unique(y)) == {-1.0, 1.0}
    flipped = np.mean(y != np.where(z[:, 0] >= 0, 1.0, -1.0))
    assert abs(flipped - 0.1) < 4 * math.sqrt(0.1 * 0.9 / 2000)
    again = problems.get_problem("glm", d=9, rank=4, n_atoms=2000, flip=0.1, seed=3)
    np.testing.assert_array_equal(prob.atoms, again.atoms)
    np.testing.assert_array_equal(prob.basis, again.basis)
    assert not np.array_equal(prob.atoms, problems.get_problem("glm", d=9, rank=4, n_atoms=2000,
                                                               seed=4).atoms)
    np.testing.assert_array_equal(prob.x0, np.zeros(9))
    assert prob.params() == {"d": 9, "rank": 4, "link": "logistic", "n_atoms": 2000, "flip": 0.1,
                             "seed": 3}
    assert problems.get_problem("glm", d=3).rank == 3 and problems.get_problem("glm", d=20).rank == 5


def per_sample_hessian(prob, x, record, h=1e-5):
    """Central differences of the (naive) per-sample gradient, (dim, dim)."""
    return np.array([(naive_grads(prob, x + h * e, record)[0] - naive_grads(prob, x - h * e, record)[0])
                     / (2 * h) for e in np.eye(prob.d)])


@pytest.mark.parametrize("link", LINKS)
def test_stated_constants_hold_on_random_pairs(link, rng):
    prob = small(link)
    c = prob.constants
    l0, l1, l2 = (1.0, 0.25, 1 / (6 * math.sqrt(3))) if link == "logistic" else (0.25, 1 / (6 * math.sqrt(3)),
                                                                                   0.125)
    assert (c.G, c.M, c.rho) == pytest.approx((l0, l1, l2), rel=1e-12)
    assert c.B0 == pytest.approx(math.log(2) if link == "logistic" else 0.5, rel=1e-15)
    assert prob.population_loss(prob.x0) == pytest.approx(c.B0, rel=1e-12)
    worst_g = worst_m = worst_rho = 0.0
    for trial in range(300):
        scale = [0.1, 1.0, 5.0, 30.0, 1e3][trial % 5]
        record = prob.sample(1, rng)
        x = random_w(rng, prob.d, scale)
        y = x + random_w(rng, prob.d, [1e-3, 0.1, 1.0, 10.0][trial % 4])
        gx, gy = naive_grads(prob, x, record)[0], naive_grads(prob, y, record)[0]
        assert np.all(np.isfinite(gx)) and np.all(np.isfinite(gy))
        worst_g = max(worst_g, np.linalg.norm(prob.per_sample_grads(x, record)[0]) / c.G)
        worst_m = max(worst_m, np.linalg.norm(gx - gy) / np.linalg.norm(x - y) / c.M)
        if trial < 60:
            hx, hy = per_sample_hessian(prob, x, record), per_sample_hessian(prob, y, record)
            assert np.linalg.norm(hx, 2) <= c.M * (1 + 1e-6) + 1e-7
            worst_rho = max(worst_rho, (np.linalg.norm(hx - hy, 2) - 1e-7) / np.linalg.norm(x - y) / c.rho)
    assert worst_g <= 1 + 1e-9 and worst_m <= 1 + 1e-9 and worst_rho <= 1 + 1e-6
    assert worst_g > 0.5 and worst_m > 0.3 and worst_rho > 0.1  # the pairs reach the bounds' scale
    # Tight: a record whose margin is most negative (logistic) or zero (sigmoid) attains G.
    atom = prob.atoms[:1]
    w = -20 * atom[0, 0] * prob.basis @ atom[0, 1:] if link == "logistic" else np.zeros(prob.d)
    assert np.linalg.norm(prob.per_sample_grads(w, atom)[0]) == pytest.approx(c.G, rel=1e-8)


def test_adversarial_records_extend_the_base_and_give_finite_grads():
    for link in LINKS:
        prob = small(link)
        adv = prob.adversarial_records()
        assert adv.shape[1] == prob.rank + 1 and len(adv) > 14
        assert np.any(np.linalg.norm(adv[:, 1:], axis=1) >= 1e6 * (1 - 1e-12))
        assert {1.0, -1.0} <= set(adv[:, 0])
        for w in (np.zeros(prob.d), np.full(prob.d, 3.0), np.full(prob.d, -1e3)):
            g = prob.per_sample_grads(w, adv)
            assert np.all(np.isfinite(g)) and np.all(np.isfinite(prob.per_sample_losses(w, adv)))
        # Huge z: far beyond G, so an algorithm that does not clip would leak.
        assert np.linalg.norm(prob.per_sample_grads(np.zeros(prob.d), adv), axis=1).max() > 1e5


# ---------------------------------------------------------------- minimizer
def test_population_minimizer_is_stationary_and_minimum_norm():
    prob = problems.get_problem("glm", d=12, rank=4, n_atoms=500, flip=0.1, seed=1)
    w = prob.population_minimizer()
    assert np.linalg.norm(prob.population_grad(w)) < 1e-9
    np.testing.assert_allclose(prob.basis @ (prob.basis.T @ w), w, atol=1e-12)
    # Convex: no random point nearby does better.
    rng = np.random.default_rng(5)
    assert all(prob.population_loss(w + 0.1 * rng.standard_normal(12)) >= prob.population_loss(w)
               for _ in range(20))
    np.testing.assert_array_equal(prob.population_minimizer(), w)  # cached


def test_population_minimizer_errors():
    with pytest.raises(ValueError, match="non-convex"):
        small("sigmoid").population_minimizer()
    with pytest.raises(ValueError, match="flip=0"):
        small(flip=0.0).population_minimizer()
    with pytest.raises(ValueError, match="separable"):  # 6 atoms, none flipped
        problems.get_problem("glm", d=3, rank=2, n_atoms=6, flip=0.01).population_minimizer()


# ---------------------------------------------------------------- JL projection
def test_identity_projection_keeps_the_gradients(rng):
    prob = small()
    proj = prob.project(np.eye(prob.d))
    batch = prob.sample(5, rng)
    w = random_w(rng, prob.d, 2.0)
    np.testing.assert_allclose(proj.per_sample_grads(w, batch), prob.per_sample_grads(w, batch),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(proj.population_grad(w), prob.population_grad(w), rtol=1e-12, atol=1e-15)
    c, cp = prob.constants, proj.constants
    assert (cp.G, cp.M, cp.rho, cp.B0) == pytest.approx((2 * c.G, 2 * c.M, 4 * c.rho, c.B0), rel=1e-12)
    assert proj.projected and not prob.projected and proj.name == "glm"
    assert proj.params() == {**prob.params(), "k": prob.d}
    assert list(problems.available()).count("glm") == 1


def test_gaussian_projection_preserves_geometry_and_gradients(rng):
    prob = problems.get_problem("glm", d=300, rank=4, n_atoms=100)
    k = 200
    phi = rng.standard_normal((k, 300)) / math.sqrt(k)
    proj = prob.project(phi)
    assert proj.d == k and prob.d == 300 and proj.basis.shape == (k, 4)
    np.testing.assert_array_equal(proj.x0, np.zeros(k))
    np.testing.assert_array_equal(proj.atoms, prob.atoms)  # the same records in both spaces
    np.testing.assert_array_equal(proj.sample(10, np.random.default_rng(1)),
                                  prob.sample(10, np.random.default_rng(1)))
    x = naive_features(prob)[:20]
    xt = x @ phi.T
    assert np.abs(xt @ xt.T - x @ x.T).max() <= 6 / math.sqrt(k)
    batch = prob.sample(8, rng)
    wt = random_w(rng, k, 2.0)
    grads = proj.per_sample_grads(wt, batch)
    np.testing.assert_allclose(grads, naive_grads(prob, wt, batch, basis=phi @ prob.basis),
                               rtol=1e-10, atol=1e-14)
    # The chain rule: phi times the original GLM's gradient at phi^T w~.
    orig = naive_grads(prob, phi.T @ wt, batch)
    np.testing.assert_allclose(grads, orig @ phi.T, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(proj.population_grad(wt), naive_grads(prob, phi.T @ wt, prob.atoms).mean(0)
                               @ phi.T, rtol=1e-10, atol=1e-14)
    assert proj.feature_norm_max == pytest.approx(np.linalg.norm(naive_features(prob) @ phi.T, axis=1).max())


@pytest.mark.parametrize("k", [2, 6, 40])
def test_projected_oracles_hessian_counts_and_minimizer(k, rng):
    """k < rank, rank < k < d and k > d: Hessian, lambda_min, counts and minimizer."""
    prob = problems.get_problem("glm", d=20, rank=4, n_atoms=300)
    phi = rng.standard_normal((k, 20)) / math.sqrt(k)
    proj = prob.project(phi)
    wt = random_w(rng, k, 1.5)
    H = np.array([central_grad(lambda u, j=j: proj.population_grad(u)[j], wt) for j in range(k)])
    np.testing.assert_allclose(proj.population_hessian(wt), H, rtol=1e-5, atol=1e-8)
    assert proj.population_lambda_min(wt) == pytest.approx(np.linalg.eigvalsh(H)[0], abs=1e-8)
    v = rng.standard_normal(k)
    np.testing.assert_allclose(proj.population_hvp(wt, v), proj.population_hessian(wt) @ v, rtol=1e-10,
                               atol=1e-13)
    counts = rng.multinomial(50, np.full(300, 1 / 300))
    batch = CountsBatch(50, counts)
    g = naive_grads(prob, wt, proj.materialize(batch), basis=phi @ prob.basis)
    mean, bound = proj.counts_grad(wt, batch)
    np.testing.assert_allclose(mean, g.mean(0), rtol=1e-10, atol=1e-14)
    assert bound == pytest.approx(np.linalg.norm(g, axis=1).max(), rel=1e-10)
    w = proj.population_minimizer()
    assert np.linalg.norm(proj.population_grad(w)) < 1e-9
    b = proj.basis
    np.testing.assert_allclose(b @ np.linalg.lstsq(b, w, rcond=None)[0], w, atol=1e-10)  # in range(B)


def test_project_rejects_bad_matrices():
    prob = small()
    for bad in (np.ones(7), np.ones((3, 6)), np.ones((2, 3, 7))):
        with pytest.raises(ValueError, match=r"shape \(k, d=7\)"):
            prob.project(bad)
    with pytest.raises(ValueError, match="projected"):
        prob.project(np.eye(7)).project(np.eye(7))


# ---------------------------------------------------------------- constructor errors
@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"d": 3, "rank": 4}, "rank=4"),
    ({"d": 3, "rank": 0}, "rank=0"),
    ({"d": 3, "rank": 2.0}, "rank=2.0"),
    ({"d": 3, "link": "foo"}, "link='foo'"),
    ({"d": 3, "flip": 0.5}, "flip=0.5"),
    ({"d": 3, "flip": -0.1}, "flip=-0.1"),
    ({"d": 3, "n_atoms": 0}, "n_atoms=0"),
    ({"d": 0}, "d=0"),
])
def test_bad_parameters_raise_clear_errors(kwargs, needle):
    with pytest.raises(ValueError, match=needle.replace(".", r"\.")):
        problems.get_problem("glm", **kwargs)


def test_sum_grads_is_the_sum_of_the_naive_per_sample_gradients():
    from problems import get_problem

    prob = get_problem("glm", d=40, rank=3, n_atoms=100, link="sigmoid")
    batch = prob.sample(500, np.random.default_rng(0))
    w = np.random.default_rng(1).standard_normal(40)
    x = batch[:, 1:] @ prob.basis.T
    y = batch[:, 0]
    s = 1 / (1 + np.exp(-y * (x @ w)))
    naive = ((-s * (1 - s) * y)[:, None] * x).sum(axis=0)  # d/dm sigma(-m) = -s(1-s)
    np.testing.assert_allclose(prob.sum_grads(w, batch), naive, rtol=1e-10, atol=1e-12)
