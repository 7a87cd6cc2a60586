"""Issue 74, items 3-6: the language-model experiment's methods, grid, store and outputs.

The ellipsoid release through the one engine (`WhitenedProblem`) against the ellipsoid
methods' own projection and noise; the moments accountant against closed forms; the adaptive
steps against their formulas; a tiny grid end to end on a fixture corpus (resumable, a failed
run recorded, its noise checked by dp-accounting's PLD composed here); the claim rule on
planted outcomes it must call holds, fails and undecided."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from algorithms.adaptive_noise.projections import project_ellipsoid
from algorithms.adaptive_noise.steps import AdaGradNormStep, DiagonalAdaGradStep
from algorithms.base import Privacy
from algorithms.privacy.accounting.rdp import poisson_gaussian_rdp_eps
from algorithms.privacy.engine import ReleaseDesk, ReleasePlan
from algorithms.privacy.whitening import WhitenedProblem
from analysis import lm_results as lr
from problems.counts.dataset import poisson_subsample
from problems.streams import ArrayStream


class _Rows:
    """Records that are their own gradients (d = 4)."""

    name, d = "rows", 4

    def per_sample_grads(self, x, rows):
        return np.asarray(rows, dtype=float).copy()


def test_the_whitened_engine_release_is_the_ellipsoid_release():
    data = np.random.default_rng(0).normal(size=(300, 4)) * [3.0, 1.0, 0.2, 0.05]
    a = np.array([0.1, 1.0, 20.0, 400.0])  # A = C / B^2, public
    target = WhitenedProblem(_Rows(), np.sqrt(a))
    plan = ReleasePlan("poisson", 5, 1.0, 40)
    desk = ReleaseDesk(target, ArrayStream(data), 300, Privacy(1.0, 1e-5), np.random.default_rng(7),
                       plan)
    got = [target.unwhiten(desk.mean_gradient(np.zeros(4))) for _ in range(5)]
    # the ellipsoid methods' release, written out: Poisson batch, radial projection onto E_A,
    # N(0, z^2 A^-1) on the sum, divided by b
    rng, z = np.random.default_rng(7), desk.multiplier
    for g in got:
        batch = poisson_subsample(data, 40 / 300, rng)
        want = (project_ellipsoid(batch, a).sum(axis=0) + z / np.sqrt(a) * rng.standard_normal(4)) / 40
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="whitening w of shape"):
        WhitenedProblem(_Rows(), np.array([1.0, 0.0, 1.0, 1.0]))


def _exact_gaussian_eps(z: float, delta: float) -> float:
    """The analytic Gaussian mechanism (sensitivity 1, noise z): eps with
    Phi(1/(2z) - eps z) - e^eps Phi(-1/(2z) - eps z) = delta."""
    def gap(e):
        return stats.norm.cdf(0.5 / z - e * z) - math.exp(e) * stats.norm.cdf(-0.5 / z - e * z) - delta
    return optimize.brentq(gap, 0.0, 100.0)


@pytest.mark.parametrize("z", [0.7, 1.0, 2.5])
def test_the_moments_accountant_sits_between_the_exact_eps_and_the_classic_conversion(z):
    delta = 1e-5
    got = poisson_gaussian_rdp_eps(z, 1.0, 1, delta)
    classic = min(a / (2 * z * z) + math.log(1 / delta) / (a - 1) for a in np.linspace(1.01, 400, 40000))
    assert _exact_gaussian_eps(z, delta) <= got <= classic + 1e-9
    assert poisson_gaussian_rdp_eps(0.0, 0.1, 10, delta) == math.inf
    # composition and subsampling: more steps cost more, a smaller rate less
    assert poisson_gaussian_rdp_eps(z, 0.01, 100, delta) < poisson_gaussian_rdp_eps(z, 0.01, 400, delta)
    assert poisson_gaussian_rdp_eps(z, 0.01, 100, delta) < poisson_gaussian_rdp_eps(z, 0.1, 100, delta)


def test_the_adaptive_steps_follow_their_formulas():
    gs = [np.array([3.0, -4.0]), np.array([1.0, 0.0]), np.array([0.0, 2.0])]
    x, norm = np.array([1.0, 1.0]), AdaGradNormStep(0.5)
    y, diag = x.copy(), DiagonalAdaGradStep(0.5, 2, delta0=0.0)
    for g in gs:
        x = norm.step(x, g)
        y = diag.step(y, g)
    # by hand: norms^2 25, 26, 30; coordinate sums of squares (9, 16), (10, 16), (10, 20)
    want_x = np.array([1.0, 1.0]) - 0.5 * (gs[0] / 5 + gs[1] / math.sqrt(26) + gs[2] / math.sqrt(30))
    want_y = np.array([1.0 - 0.5 * (3 / 3 + 1 / math.sqrt(10)),
                       1.0 - 0.5 * (-4 / 4 + 0 + 2 / math.sqrt(20))])
    np.testing.assert_allclose(x, want_x, rtol=1e-14)
    np.testing.assert_allclose(y, want_y, rtol=1e-14)


def _planted(pagan: float, others: float, spread: float) -> object:
    import pandas as pd

    rows = []
    for m, mean in (("pagan", pagan), ("dp_sgd", others), ("pasan", others)):
        for e in (-1.0, 0.0, 1.0):
            rows.append({"method": m, "eps": 1.0, "status": "ok", "test": mean + spread * e})
    return pd.DataFrame(rows)


def test_the_claim_rule_calls_planted_outcomes_right():
    assert lr.claim_rows(_planted(100.0, 120.0, 1.0), (1.0,))["verdict"].iloc[0] == "holds"
    assert lr.claim_rows(_planted(130.0, 120.0, 1.0), (1.0,))["verdict"].iloc[0] == "fails"
    assert lr.claim_rows(_planted(119.0, 120.0, 5.0), (1.0,))["verdict"].iloc[0] == "undecided"
    # the interval is Welch's: scipy's own, for the same samples
    a, b = np.array([100.0, 103.0, 98.0]), np.array([120.0, 110.0, 131.0])
    d, lo, hi = lr.welch_difference(a, b)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (d, lo, hi) == pytest.approx((a.mean() - b.mean(), ci.low, ci.high), rel=1e-10)


pytest.importorskip("jax")


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    from tests.test_lm_corpus import FILES, _archive

    where = tmp_path_factory.mktemp("corpus")
    _archive(where, FILES)
    return str(where)


def test_a_tiny_grid_runs_into_a_store_resumes_and_reports(corpus_dir, tmp_path, monkeypatch):
    import dp_accounting
    from dp_accounting import dp_event, pld

    from analysis.lm_report import write_outputs
    from bench.lm import grid as g
    from bench.lm.setup import LMSetup

    setup = LMSetup(vocab=30, hidden=4, window=6, b=20, steps=4, eval_every=2, curve_windows=40)
    grid = g.LMGrid(eps=(1.0,), tune_eps=1.0, lr_mults=(1.0,), lr_mults_private=(1.0,), B=(1.0,),
                    seeds=(0, 1))
    store = tmp_path / "lm.sqlite"
    tuned = g.run_grid(store, setup, corpus_dir, jobs=1, grid=grid)
    assert set(tuned) == {"sgd", "adagrad", "dp_sgd", "pasan", "pagan"}
    from bench.lm.results import read_runs, read_spec

    df = read_runs(store)
    assert len(df) == 10 and set(df["status"]) == {"ok"}
    assert all(len(c) == 3 and all(np.isfinite(c)) for c in df["curve"])  # steps 0, 2, 4
    # the private runs' noise: T Poisson-subsampled Gaussians at q = b / n, composed here
    from bench.store import load

    n = int(load(store)["n"].iloc[0])  # the suite's loader reads the experiment's store
    for z in df[df["method"].isin(["dp_sgd", "pasan", "pagan"])]["z"]:
        acc = pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                                value_discretization_interval=1e-4)
        acc.compose(dp_event.PoissonSampledDpEvent(20 / n, dp_event.GaussianDpEvent(z)), 4)
        assert acc.get_epsilon(1e-5) == pytest.approx(1.0, rel=3e-3)
    assert (df[df["method"].isin(["sgd", "adagrad"])]["z"] == 0).all()
    # resumable: a rerun runs nothing
    calls = []
    monkeypatch.setattr(g, "_guarded", lambda *a: calls.append(a))
    g.run_grid(store, setup, corpus_dir, jobs=1, grid=grid)
    assert calls == []
    paths = write_outputs(df, read_spec(store), tmp_path / "reports")
    assert all(p.is_file() for p in paths.values())
    table = lr.perplexity_table(lr.tuned_runs(df, tuned))
    assert len(table) == 5 and (table["seeds"] == 2).all()
    text = paths["md"].read_text()
    assert "Pagan's test perplexity below DP-SGD's and Pasan's at eps 1" in text
    import pandas as pd

    from analysis.lm_report import readme_block

    block = readme_block(pd.read_csv(paths["csv"]), pd.read_csv(paths["claims"]))
    assert "\n" not in block and block.startswith("Test perplexity (mean of the seeds; eps 1): ")
    table = lr.perplexity_table(lr.tuned_runs(df, tuned))
    for label, m in (("DP-SGD", "dp_sgd"), ("Pagan", "pagan"), ("AdaGrad", "adagrad")):
        value = float(table[table["method"] == m]["test"].iloc[0])
        assert f"{label} {value:.1f} (" in block  # each method's mean, as the table has it
    verdict = lr.claim_rows(lr.tuned_runs(df, tuned), (1.0,))["verdict"].iloc[0]
    assert block.endswith(f"Pagan below DP-SGD and Pasan: {verdict} at eps 1.")


def test_a_failed_run_is_recorded_and_loses_no_other(corpus_dir, tmp_path, monkeypatch):
    from bench.lm import grid as g
    from bench.lm.setup import LMSetup

    real = g.run_cell

    def flaky(cell, setup, corpus):
        if cell.method == "pasan":
            raise FloatingPointError("planted")
        return real(cell, setup, corpus)
    monkeypatch.setattr(g, "run_cell", flaky)
    setup = LMSetup(vocab=30, hidden=4, window=6, b=20, steps=2, eval_every=2, curve_windows=40)
    grid = g.LMGrid(eps=(1.0,), tune_eps=1.0, lr_mults=(1.0,), lr_mults_private=(1.0,), B=(1.0,),
                    seeds=(0,))
    g.run_grid(tmp_path / "lm.sqlite", setup, corpus_dir, jobs=1, grid=grid)
    rows = {r["key"]: r["status"] for r in g.stored_rows(tmp_path / "lm.sqlite")}
    assert rows.pop("pasan|eps=1|lr=1|B=1|seed=0") == "error"
    assert len(rows) == 4 and set(rows.values()) == {"ok"}


@pytest.mark.slow
def test_the_canary_audit_passes_the_engine_and_flags_skipped_noise():
    """A tiny language model, one release at q = 1: the engine's release at eps 1 stays below
    its claim; the same release without noise (planted) is flagged, its bound far above 1."""
    from algorithms.privacy.audit.canary_audit import canary_audit
    from algorithms.privacy.whitening import WhitenedProblem
    from problems.language_model.model import windows_of
    from problems.language_model.problem import LanguageModelProblem

    prob = LanguageModelProblem(vocab=12, hidden=3)
    data = windows_of(np.random.default_rng(3).integers(1, 12, 6 * 30 + 1), 6)
    canary = np.zeros(7, dtype=np.int32)  # a window of <unk>: far from every other
    claim = Privacy(1.0, 1e-5)
    ok = canary_audit(prob, data, canary, prob.x0, 0.05, claim, runs=1500)
    assert not ok.flagged and ok.eps_lb < 1.0
    bad = canary_audit(prob, data, canary, prob.x0, 0.05, claim, runs=1500,
                       mechanism=Privacy(math.inf, 1e-5))
    assert bad.flagged and bad.eps_lb > 4.0
    # the ellipsoid methods' release (whitened) is audited the same way
    w = np.linspace(0.5, 2.0, prob.d)
    white = canary_audit(WhitenedProblem(prob, w), data, canary, prob.x0, 1.0, claim, runs=1500)
    assert not white.flagged


def test_the_readme_block_is_the_committed_csvs():
    """README's lm-experiment block is generated from reports/lm_experiment*.csv (`make
    reference-lm`); the two agree (skipped until the block and the CSVs are committed)."""
    from pathlib import Path

    import pandas as pd

    from analysis.lm_report import README_BEGIN, README_END, readme_block

    root = Path(__file__).resolve().parent.parent
    text = (root / "README.md").read_text(encoding="utf-8")
    csv, claims = root / "reports" / "lm_experiment.csv", root / "reports" / "lm_experiment_claims.csv"
    if README_BEGIN not in text or not csv.is_file():
        pytest.skip("no language-model results committed yet")
    block = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip()
    assert block == readme_block(pd.read_csv(csv), pd.read_csv(claims)).strip()
