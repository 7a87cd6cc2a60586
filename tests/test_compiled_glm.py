"""Issue 72, item 1: a user's GLM-form loss on the user's own finite data set
(`problems.compiled_glm.DeclaredGLMLoss`), the guide's Welsch robust regression as the plugin.

Population oracles against finite differences; the suite's compiled clipped sum against the
generic per-record clip (a second implementation); records mode's draws against the atoms'
frequencies; the declared bounds against their maxima on a grid; bad declarations refused in
one line; a subclass that overrides an oracle loses the fast sum; a counts-mode sweep end to
end."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from algorithms.privacy.mechanisms import clip_rows
from problems.compiled_glm import DeclaredGLMLoss, suite_clipped_sum, welsch_bounds
from problems.counts.layouts import CountsBatch
from tests.guide_variants import loaded_guide_problem


@pytest.fixture(scope="module")
def welsch(tmp_path_factory):
    """The guide's Welsch plugin, loaded as plugins are; unregistered after."""
    yield from loaded_guide_problem(tmp_path_factory.mktemp("welsch"), "# my_welsch_regression.py",
                                    "my_welsch_regression.py", "welsch_regression")


def test_population_oracles_match_finite_differences(welsch):
    x = np.random.default_rng(0).normal(size=welsch.d) * 0.4
    h = 1e-6
    eye = np.eye(welsch.d)
    fd_grad = [(welsch.population_loss(x + h * e) - welsch.population_loss(x - h * e)) / (2 * h)
               for e in eye]
    fd_hess = [(welsch.population_grad(x + h * e) - welsch.population_grad(x - h * e)) / (2 * h)
               for e in eye]
    np.testing.assert_allclose(welsch.population_grad(x), fd_grad, atol=1e-8)
    np.testing.assert_allclose(welsch.population_hessian(x), fd_hess, atol=1e-8)
    # per record: the Welsch gradient written out in numpy
    rows = welsch.atoms[:50]
    r = rows[:, :-1] @ x - rows[:, -1]
    np.testing.assert_allclose(welsch.per_sample_grads(x, rows),
                               (r * np.exp(-r * r))[:, None] * rows[:, :-1], rtol=1e-12)


@pytest.mark.parametrize("k", [7, 300, 100_000])
def test_the_compiled_clipped_sum_is_the_generic_clip(welsch, k):
    rng = np.random.default_rng(k)
    x, y = rng.normal(size=welsch.d), rng.normal(size=welsch.d)
    batch = CountsBatch(k, rng.multinomial(k, welsch.layout.p))
    fast = suite_clipped_sum(welsch)
    assert fast is not None
    present = np.flatnonzero(batch.counts)
    c = batch.counts[present].astype(float)
    for clip in (1e-3, 0.2, 50.0):
        want = c @ clip_rows(welsch.per_sample_grads(x, welsch.atoms[present]), clip)
        np.testing.assert_allclose(fast(x, None, batch, clip), want, rtol=1e-11, atol=1e-13)
        want = c @ clip_rows(welsch.per_sample_grad_diffs(x, y, welsch.atoms[present]), clip)
        np.testing.assert_allclose(fast(x, y, batch, clip), want, rtol=1e-11, atol=1e-13)


def test_records_are_drawn_with_the_atoms_frequencies():
    class Dup(DeclaredGLMLoss):
        name = "dup_glm_test"
        loss_fn = dloss_fn = d2loss_fn = None
        dloss_bound = d2loss_bound = d3loss_bound = 1.0
        feature_bound = 2.0

        def records(self):  # atom (1, 0) three times, (0, 1) once
            return np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    p = Dup()
    assert len(p.atoms) == 2 and p.n_records == 4
    draws = p._draw(40_000, np.random.default_rng(1))
    ones = int(np.sum(draws[:, 0] == 1.0))
    assert stats.binomtest(ones, 40_000, 0.75).pvalue > 1e-3
    np.testing.assert_allclose(p.layout.p, [0.25, 0.75] if p.atoms[0, 0] == 0 else [0.75, 0.25])


def test_bad_declarations_are_refused_in_one_line():
    class Wide(DeclaredGLMLoss):
        name = "wide_glm_test"
        loss_fn = dloss_fn = d2loss_fn = None
        dloss_bound = d2loss_bound = d3loss_bound = 1.0
        feature_bound = 1.0

        def records(self):
            return np.array([[0.5, 0.5, 1.0], [3.0, 4.0, 0.0]])
    with pytest.raises(ValueError, match=r"feature_bound=1.0 of wide_glm_test is invalid: "
                                         r"record 1 has \|\|x\|\| = 5"):
        Wide()

    class Flat(Wide):
        name = "flat_glm_test"

        def records(self):
            return np.array([1.0, 2.0])
    with pytest.raises(ValueError, match=r"records\(\) of shape \(2,\) is invalid"):
        Flat()


def test_an_overriding_subclass_gets_the_generic_sum(welsch):
    class Sneaky(type(welsch)):
        name = "sneaky_welsch_test"

        def per_sample_grads(self, x, batch):  # a plugin's own gradients: not the suite's sum
            return super().per_sample_grads(x, batch) * 0.5
    assert suite_clipped_sum(Sneaky()) is None


def test_welsch_bounds_are_the_maxima():
    c = 1.7
    r = np.linspace(-20, 20, 400_001)
    u = r * r / c**2
    g1, g2 = r * np.exp(-u), (1 - 2 * u) * np.exp(-u)
    g3 = -(2 * r / c**2) * (3 - 2 * u) * np.exp(-u)
    b = welsch_bounds(c)
    assert b["dloss_bound"] == pytest.approx(np.abs(g1).max(), rel=1e-8)
    assert b["d2loss_bound"] == pytest.approx(np.abs(g2).max(), rel=1e-8)
    assert b["d3loss_bound"] == pytest.approx(np.abs(g3).max(), rel=1e-8)
    # and g3 is the derivative of g2 (the formula differentiated, numerically)
    np.testing.assert_allclose(np.gradient(g2, r)[1000:-1000], g3[1000:-1000], atol=1e-6)
    assert math.isfinite(b["d3loss_bound"])


@pytest.mark.slow
def test_a_counts_mode_sweep_runs_the_welsch_plugin(welsch, tmp_path):
    from bench.cli import main
    from bench.store import load

    spec = tmp_path / "w.toml"
    spec.write_text('name = "w"\nseed = 1\ndata = "counts"\n[grid]\nn = [2000]\nd = [20]\n'
                    'eps = [1.0]\n[[problem]]\nname = "welsch_regression"\n'
                    '[[algorithm]]\nname = "dp_gd"\n[[algorithm]]\nname = "dp_sgd"\n'
                    '[[algorithm]]\nname = "gaussian_spider"\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "w.sqlite"), "--quiet",
                 "--jobs", "1"]) == 0
    df = load(tmp_path / "w.sqlite")
    assert set(df["status"]) == {"ok"} and len(df) == 3
    assert (df["grad_norm_best"] < df["grad_x0"]).all()  # every method moved toward a stationary point
