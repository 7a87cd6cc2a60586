"""Calibration of the analysis itself: CI coverage on simulated data with known exponents,
the two-term model, paired differences, verdicts, and an end-to-end check on the calibration
problem (private mean estimation: error exactly proportional to sqrt(d)/(n eps))."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.verdict_engine import envelope
from analysis.verdict_engine.envelope import envelope_fit
from analysis.verdict_engine.paired import paired_difference
from analysis.verdict_engine.rates import fit_exponent, fit_points
from analysis.verdict_engine.two_term import two_term_fit

SIMS = 200  # simulated datasets per coverage check (fixed seeds)


def _plain(rng, n_design: int, reps: int, p: float = 0.5, sigma: float = 0.3):
    x = np.geomspace(1e-4, 1e-2, n_design)
    X = np.repeat(x, reps)
    return X, 3.0 * X**p * np.exp(sigma * rng.standard_normal(X.size))


def test_ols_point_estimate_matches_numpy_polyfit():
    rng = np.random.default_rng(0)
    X, Y = _plain(rng, 6, 5)
    f = fit_points(X, Y, n_boot=200)
    slope, intercept = np.polyfit(np.log(X), np.log(Y), 1)
    assert f.exponent == pytest.approx(slope, rel=1e-12)
    assert f.intercept == pytest.approx(intercept, rel=1e-12)
    # OLS standard error against scipy's linregress.
    from scipy.stats import linregress

    assert f.se_ols == pytest.approx(linregress(np.log(X), np.log(Y)).stderr, rel=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("n_design,reps", [(5, 5), (8, 10), (10, 20)])
def test_plain_fit_ci_coverage(n_design: int, reps: int):
    rng = np.random.default_rng([1, n_design, reps])
    cover = 0
    for s in range(SIMS):
        X, Y = _plain(rng, n_design, reps)
        f = fit_points(X, Y, n_boot=1000, rng=np.random.default_rng(s))
        cover += f.ci_low <= 0.5 <= f.ci_high
    assert 0.90 <= cover / SIMS <= 0.98, cover / SIMS


def _envelope_data(rng, n_design: int, reps: int, p: float = 0.5):
    """A knob grid whose optimum (knob 1) is known; paired noise shared across knobs."""
    x = np.geomspace(1e-4, 1e-2, n_design)
    knobs = np.array([0.5, 1.0, 2.0, 4.0])
    xs, cs, rs, ys = [], [], [], []
    for xi in x:
        shared = 0.3 * rng.standard_normal(reps)
        for ci, k in enumerate(knobs):
            penalty = 1 + np.log(k) ** 2
            y = 2 * xi**p * penalty * np.exp(shared + 0.1 * rng.standard_normal(reps))
            xs += [xi] * reps
            cs += [ci] * reps
            rs += list(range(reps))
            ys += list(y)
    return np.array(xs), np.array(cs), np.array(rs), np.array(ys)


@pytest.mark.slow
@pytest.mark.parametrize("n_design,reps", [(8, 10), (10, 20)])
def test_envelope_ci_coverage_and_selection(n_design: int, reps: int):
    rng = np.random.default_rng([2, n_design, reps])
    cover, right_knob = 0, 0
    for s in range(SIMS):
        X, C, R, Y = _envelope_data(rng, n_design, reps)
        f = envelope_fit(X, C, R, Y, n_boot=500, rng=np.random.default_rng(s))
        cover += f.ci_low <= 0.5 <= f.ci_high
        right_knob += sum(v == 1 for v in f.chosen.values()) / len(f.chosen)
    assert 0.90 <= cover / SIMS <= 0.98, cover / SIMS
    assert right_knob / SIMS > 0.95


@pytest.mark.slow
@pytest.mark.parametrize("n_design,reps", [(6, 8), (8, 10)])
def test_censored_sample_complexity_coverage(n_design: int, reps: int):
    """n* = C alpha^-2 with log-normal noise, censored at a budget cap that the smallest
    alphas sometimes exceed: the rule (drop a design point with any censored run) keeps the
    CI calibrated, and the censored runs are counted."""
    rng = np.random.default_rng([3, n_design, reps])
    cover, censored = 0, 0
    for s in range(SIMS):
        a = np.repeat(np.geomspace(0.02, 0.2, n_design), reps)
        n_star = 50 * a**-2.0 * np.exp(0.4 * rng.standard_normal(a.size))
        n_star[n_star > 3e5] = np.nan
        f = fit_points(a, n_star, n_boot=1000, rng=np.random.default_rng(s))
        cover += f.ci_low <= -2 <= f.ci_high
        censored += f.n_censored
        assert f.n_censored == int(np.isnan(n_star).sum())
    assert 0.90 <= cover / SIMS <= 0.98, cover / SIMS
    assert censored > 0


def test_two_term_model_recovers_p_when_both_terms_visible():
    rng = np.random.default_rng(3)
    rows = []
    d = 10
    for n in np.geomspace(1e4, 1e7, 7):
        for eps in (0.03, 0.1, 0.3, 1.0, 3.0):
            for _ in range(6):
                x = math.sqrt(d) / (n * eps)
                y = 2 * x**0.5 + 1.5 * n ** (-1 / 3)
                rows.append((x, n, y * math.exp(0.2 * rng.standard_normal())))
    X, N, Y = map(np.array, zip(*rows, strict=True))
    # Both terms are visible: each dominates part of the design.
    share = 2 * X**0.5 / (2 * X**0.5 + 1.5 * N ** (-1 / 3))
    assert share.min() < 0.3 and share.max() > 0.7
    f = two_term_fit(X, N, Y, n_boot=120, rng=rng)
    assert f.ci_low <= 0.5 <= f.ci_high
    assert f.ci_high - f.ci_low < 0.15
    assert f.b == pytest.approx(1.5, rel=0.25)
    # A plain power law on the same data is biased by the floor (why the two-term model exists).
    plain = fit_points(X, Y, n_boot=200)
    assert plain.exponent < 0.45


def test_paired_difference_recovers_exponent_gap():
    rng = np.random.default_rng(4)
    x = np.repeat(np.geomspace(0.02, 0.2, 6), 10)
    rep = np.tile(np.arange(10), 6)
    shared = 0.5 * rng.standard_normal(x.size)  # the paired seeds' common noise
    ya = 10 * x**-2.0 * np.exp(shared + 0.05 * rng.standard_normal(x.size))
    yb = 3 * x ** (-7 / 3) * np.exp(shared + 0.05 * rng.standard_normal(x.size))
    res = paired_difference(x, rep, ya, yb, n_boot=1000, rng=rng)
    assert res.slope_ci_low <= 1 / 3 <= res.slope_ci_high
    # Pairing removes the shared noise: far tighter than unpaired fits.
    fa, fb = fit_points(x, ya, n_boot=500), fit_points(x, yb, n_boot=500)
    assert res.slope_ci_high - res.slope_ci_low < 0.3 * (fa.ci_width + fb.ci_width)
    # The crossover: 10 x^-2 = 3 x^-7/3 at x = 0.3^3 = 0.027, inside the design range.
    assert res.crossover_where == "inside"
    assert res.crossover_ci_low <= 0.027 <= res.crossover_ci_high
    assert res.crossover == pytest.approx(0.027, rel=0.15)
    # With B 10x dearer the two meet at x = 27, far above the range: an extrapolation.
    far = paired_difference(x, rep, ya, 10 * yb, n_boot=1000, rng=rng)
    assert far.crossover_where == "above" and far.crossover_ci_low <= 27 <= far.crossover_ci_high
    # Parallel curves have no crossing to locate.
    flat = paired_difference(x, rep, ya, 2 * ya, n_boot=500, rng=rng)
    assert flat.crossover_where == "none" and np.isnan(flat.crossover)


def test_fit_exponent_groups_and_window():
    rng = np.random.default_rng(5)
    frames = []
    for alg, p in (("a", 0.5), ("b", 3 / 7)):
        n = np.repeat(np.geomspace(1e4, 1e6, 5), 6)
        frames.append(pd.DataFrame({"algorithm": alg, "problem": "q", "d": 10, "eps": 0.5, "n": n,
                                    "y": (np.sqrt(10) / (n * 0.5)) ** p
                                    * np.exp(0.05 * rng.standard_normal(n.size))}))
    df = pd.concat(frames)
    out = fit_exponent(df, "privacy", "y", window=(1e-6, 5e-4), n_boot=500)
    assert list(out["algorithm"]) == ["a", "b"]
    for (_, r), p in zip(out.iterrows(), (0.5, 3 / 7), strict=True):
        assert r["ci_low"] <= p <= r["ci_high"]
        assert r["n_design"] == 4  # the window drops the largest x (n = 1e4: x = 6.3e-4)
    with pytest.raises(ValueError, match="y='nope'"):
        fit_exponent(df, "privacy", "nope")


def test_predictions_come_from_algorithm_metadata():
    from algorithms import get_algorithm

    g, a, t = (get_algorithm(n) for n in ("gaussian_spider", "adaptive_tree_spider", "tree_spider"))
    assert g.predicted_exponent("sample_complexity", "alpha") == pytest.approx(-7 / 3)
    assert a.predicted_exponent("sample_complexity", "alpha") == pytest.approx(-2)
    assert a.predicted_exponent("error", "privacy") == pytest.approx(0.5)
    assert g.predicted_exponent("error", "d") == pytest.approx(3 / 14)
    assert t.predicted_exponent("error", "privacy") is None
    with pytest.raises(ValueError, match="view"):
        a.predicted_exponent("error", "alpha")


MEAN_SPEC = """
name = "mean"
seed = 1
repetitions = 48
calibration = "{calibration}"
[grid]
n = [10000]
d = [10]
eps = [0.02, 0.05, 0.1, 0.2, 0.5]
[[problem]]
name = "mean_estimation"
params = {{ spread = 0.0 }}
[[algorithm]]
name = "gaussian_spider"
params = {{ T = 1, eta = 1.0, b = 9999 }}
[[fit]]
name = "error"
view = "error"
x = "privacy"
window = [1e-5, 1]
mode = "theory"
"""


def test_end_to_end_mean_estimation_exponent_one(tmp_path: Path):
    """One O1 step with eta = 1 on 1/2|x - m|^2 with no sampling noise lands at m + noise: the
    error is the Gaussian mechanism's noise norm, proportional to sqrt(d)/(n eps) under the
    classic calibration sigma = sqrt(2 log(1.25/delta))/eps (calibration = "theory")."""
    from analysis.claims import run_fit
    from bench.config import parse_spec
    from bench.runner import run_sweep
    from bench.store import open_store_data

    res = {}
    for cal in ("theory", "tight"):
        spec = parse_spec(MEAN_SPEC.format(calibration=cal))
        store = tmp_path / f"{cal}.sqlite"
        run_sweep(spec, store, jobs=1, backend="sequential", progress=False)
        data = open_store_data(store)
        res[cal] = run_fit(data, spec.fits[0], n_boot=1000).iloc[0]
    th = res["theory"]
    assert th["ci_low"] <= 1.0 <= th["ci_high"], th[["exponent", "ci_low", "ci_high"]]
    assert th["ci_high"] - th["ci_low"] < 0.15
    # The tight (exact) calibration's noise is not proportional to 1/eps at delta = 1e-6:
    # sigma eps grows from 3.2 to 4.0 over eps 0.02 .. 0.5. The pipeline's exponent must match
    # the slope of the accountant's sigma against 1/eps, and exclude 1.
    from algorithms.privacy.accounting.gdp import gaussian_sigma

    eps = np.array([0.02, 0.05, 0.1, 0.2, 0.5])
    ref = -np.polyfit(np.log(eps), np.log([gaussian_sigma(e, 1e-6) for e in eps]), 1)[0]
    assert 0.9 < ref < 0.96
    ti = res["tight"]
    assert ti["ci_low"] <= ref <= ti["ci_high"] < 1.0, (ref, ti[["exponent", "ci_low", "ci_high"]])


def test_hd_median_matches_scipy_and_handles_censoring():
    from scipy.stats.mstats import hdquantiles

    x = np.random.default_rng(0).lognormal(size=(4, 7))
    ref = [float(hdquantiles(r, prob=[0.5])[0]) for r in x]
    assert np.allclose(envelope.hd_median(x), ref, rtol=1e-12)
    y = x.copy()
    y[0, 0] = np.inf  # one censored run of 7: the sample median, finite
    y[1, :4] = np.inf  # four of 7: inf
    out = envelope.hd_median(y)
    assert out[0] == np.median(y[0]) and np.isinf(out[1]) and out[2] == pytest.approx(ref[2])


@pytest.mark.slow
def test_censored_median_fit_coverage():
    """The sample-complexity fit of the claims (one knob setting, medians, censored = inf):
    n* = C alpha^-2 log-normal, censored at a cap some runs of the smallest alphas exceed."""
    rng = np.random.default_rng(8)
    cover, censored = 0, 0
    for s in range(SIMS):
        a = np.repeat(np.geomspace(0.02, 0.2, 6), 8)
        rep = np.tile(np.arange(8), 6)
        n_star = 50 * a**-2.0 * np.exp(0.4 * rng.standard_normal(a.size))
        n_star[n_star > 1.6e5] = np.nan
        f = envelope_fit(a, np.zeros(a.size), rep, n_star, n_boot=400, rng=np.random.default_rng(s))
        cover += f.ci_low <= -2 <= f.ci_high
        censored += f.n_censored
    assert censored > 0
    assert 0.90 <= cover / SIMS <= 0.98, cover / SIMS


def test_two_term_batch_solver_matches_scipy_replicate_by_replicate():
    """The bootstrap's vectorized solver reaches scipy least_squares' solution (same objective,
    starts and bounds) on resampled data sets, replicate by replicate."""
    from analysis.verdict_engine.two_term import _two_term_solve, _two_term_solve_batch

    rng = np.random.default_rng(11)
    rows = []
    for n in np.geomspace(1e4, 1e7, 5):
        for eps in (0.1, 1.0):
            for _ in range(4):
                x = math.sqrt(10) / (n * eps)
                y = (2 * x**0.5 + 1.5 * n ** (-1 / 3)) * math.exp(0.3 * rng.standard_normal())
                rows.append((x, n, y))
    X, N, Y = map(np.array, zip(*rows, strict=True))
    lx, ln, ly = np.log(X), np.log(N), np.log(Y)
    picks = rng.integers(0, len(X), size=(40, len(X)))
    batch = _two_term_solve_batch(lx[picks], ln[picks], ly[picks])
    ref = np.array([_two_term_solve(lx[p], ln[p], ly[p])[0] for p in picks])
    assert np.abs(batch[:, 1] - ref[:, 1]).max() < 1e-3
    assert np.median(np.abs(batch - ref)) < 1e-5
