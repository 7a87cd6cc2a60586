"""Empirical methods' sample complexity from the error against n (analysis.empirical_n_star)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.empirical_n_star import empirical_n_star

NS = np.array([1e3, 3e3, 1e4, 3e4, 1e5])


def _design(c: float, p: float, reps: int = 5, noise: float = 0.0, rng=None):
    n = np.repeat(NS, reps)
    y = c * n ** (-p)
    if noise:
        y = y * np.exp(noise * rng.standard_normal(len(n)))  # median of a lognormal: c n^-p
    return n, np.tile(np.arange(reps), len(NS)), y


def test_exact_power_law_inverts_in_closed_form():
    # y = 2 n^-1/2: n* = (2 / t)^2, exactly, where t lies between two design points
    n, rep, y = _design(2.0, 0.5)
    for t in (0.05, 0.0123, 2 * 3e4 ** -0.5):
        got = empirical_n_star(n, rep, y, t, n_boot=200)
        assert got.status == "crossed"
        assert got.n_star == pytest.approx((2 / t) ** 2, rel=1e-12)
        assert got.ci_low == pytest.approx(got.n_star, rel=1e-12)  # no noise: no spread
        assert got.ci_high == pytest.approx(got.n_star, rel=1e-12)


def test_censoring_both_ways():
    n, rep, y = _design(2.0, 0.5)
    above = empirical_n_star(n, rep, y, 1e-4, n_boot=200)  # needs n = 4e8 > the largest 1e5
    assert above.status == "censored" and math.isinf(above.n_star) and math.isinf(above.ci_low)
    below = empirical_n_star(n, rep, y, 1.0, n_boot=200)  # reached at the smallest n already
    assert below.status == "left-censored" and below.n_star == 1e3
    with pytest.raises(ValueError, match="target"):
        empirical_n_star(n, rep, y, 0.0)
    with pytest.raises(ValueError, match="design size"):
        empirical_n_star(np.full(5, 1e3), np.arange(5), np.ones(5), 0.5)


@pytest.mark.slow
def test_bootstrap_interval_covers_the_true_n_star():
    """Lognormal noise around 2 n^-1/2 (median exactly the power law): the true n* at t is
    (2 / t)^2; its 95% interval from 15 repetitions per n covers it in most of 120 data sets."""
    rng = np.random.default_rng(20261202)
    t, truth = 0.02, (2 / 0.02) ** 2
    cover, widths = 0, []
    for _ in range(120):
        n, rep, y = _design(2.0, 0.5, reps=15, noise=0.3, rng=rng)
        got = empirical_n_star(n, rep, y, t, n_boot=300, rng=rng)
        cover += got.ci_low <= truth <= got.ci_high
        widths.append(got.ci_high / got.ci_low)
    assert cover / 120 >= 0.85
    assert np.median(widths) < 2.0  # informative: within a factor 2 at this noise


@pytest.mark.slow
def test_cli_n_star_on_a_dp_gd_sweep(tmp_path, capsys):
    """`dprates fit STORE --n-star`: on a small DP-GD sweep, n* at a target between two design
    medians is the log-log interpolation between them (recomputed here from the store)."""
    from bench.cli import main
    from bench.store import load

    spec = tmp_path / "ns.toml"
    spec.write_text('name = "ns"\ndescription = "n* of DP-GD"\nseed = 1\nrepetitions = 3\n'
                    'data = "counts"\n[grid]\nn = [1000, 4000, 16000]\nd = [10]\neps = [1.0]\n'
                    'delta = [1e-6]\n[[problem]]\nname = "hard_valley"\nparams = { start = 1.0 }\n'
                    '[[algorithm]]\nname = "dp_gd"\n')
    store = tmp_path / "ns.sqlite"
    assert main(["sweep", str(spec), "--out", str(store), "--quiet"]) == 0
    df = load(store)
    med = df.groupby("n")["emp_grad_best"].median().sort_index()
    assert med.is_monotonic_decreasing
    target = math.sqrt(med.iloc[0] * med.iloc[1])  # halfway (in log) between the first two
    want = math.exp(math.log(1000) + (math.log(med.iloc[0]) - math.log(target))
                    / (math.log(med.iloc[0]) - math.log(med.iloc[1])) * math.log(4))
    capsys.readouterr()
    assert main(["fit", str(store), "--n-star", f"{target!r}", "--metric", "emp_grad_best",
                 "--boot", "200", "--csv", str(tmp_path / "ns.csv")]) == 0
    import pandas as pd

    row = pd.read_csv(tmp_path / "ns.csv").iloc[0]
    assert row["status"] == "crossed" and row["n_star"] == pytest.approx(want, rel=1e-9)
    assert row["ci_low"] <= row["n_star"] <= row["ci_high"]
    assert main(["fit", str(store), "--n-star", "0.05"]) == 2  # no --metric: one clear line
    assert "--n-star needs --metric" in capsys.readouterr().err
