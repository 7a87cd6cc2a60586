"""`dprates` command line and the SOSP metric."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import problems
from bench.cli import main
from problems.evaluation.metrics import lambda_min, running_min_alpha, sosp_alpha


def test_list_prints_problems_and_algorithms_with_claims(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in [*problems.available(), "gaussian_spider", "adaptive_tree_spider", "3/7", "1/2"]:
        assert name in out


def test_run_json_reports_parameters_and_metrics(capsys):
    code = main(["run", "adaptive_tree_spider", "--problem", "strict_saddle", "--n", "50000",
                 "--d", "4", "--eps", "0.5", "--json", "--param", "alpha_mult=2"])
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    assert res["params"]["alpha_mult"] == 2
    assert res["metrics"]["samples_used"] <= 50000
    assert float(res["metrics"]["eps_spent"]) <= 0.5 + 1e-9
    assert res["metrics"]["stop_reason"] in ("T_reached", "data_exhausted")


def test_run_takes_scientific_budgets_a_target_and_prints_null_for_missing(capsys):
    """--n 2e5 is 200000; --target-alpha configures the run; a target it never reaches leaves
    samples_to_target missing, printed as JSON null (not the string "nan")."""
    code = main(["run", "adaptive_tree_spider", "--problem", "hard_valley", "--n", "2e4",
                 "--d", "4", "--eps", "0.5", "--target-alpha", "1e-3", "--json"])
    assert code == 0
    out = capsys.readouterr().out
    res = json.loads(out)
    assert res["n"] == 20000 and res["params"]["alpha"] == pytest.approx(1e-3)
    assert res["metrics"]["samples_to_target"] is None and '"nan"' not in out


@pytest.mark.parametrize("argv", [
    ["run", "gaussian_spider", "--problem", "strict_saddle", "--n", "2.5", "--d", "2", "--eps", "1"],
    ["run", "gaussian_spider", "--problem", "strict_saddle", "--n", "10", "--d", "2", "--eps", "1",
     "--target-alpha", "0.1", "--param", "target_alpha=0.2"],
    ["run", "nope", "--problem", "strict_saddle", "--n", "10", "--d", "2", "--eps", "1"],
    ["run", "gaussian_spider", "--problem", "nope", "--n", "10", "--d", "2", "--eps", "1"],
    ["run", "gaussian_spider", "--problem", "strict_saddle", "--n", "0", "--d", "2", "--eps", "1"],
    ["run", "gaussian_spider", "--problem", "strict_saddle", "--n", "10", "--d", "0", "--eps", "1"],
    ["run", "gaussian_spider", "--problem", "strict_saddle", "--n", "10", "--d", "2", "--eps", "1",
     "--delta", "2"],
    ["run", "gaussian_spider", "--problem", "strict_saddle", "--n", "10", "--d", "2", "--eps", "1",
     "--param", "kappa"],
])
def test_bad_command_lines_exit_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid" in err[0]


def test_eps_must_be_positive_on_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "bench.cli", "run", "gaussian_spider", "--problem",
                           "strict_saddle", "--n", "10", "--d", "2", "--eps", "-1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "must be a number > 0" in proc.stderr


def test_sosp_alpha_closed_forms():
    prob = problems.get_problem("strict_saddle", d=6)
    a = sosp_alpha(prob, prob.x0)
    assert a["alpha"] == pytest.approx(1.0**2 / prob.constants.rho)
    assert a["grad_norm"] == 0 and a["lambda_min"] == pytest.approx(-1.0)
    x = prob.minima()[0] + 0.01
    a = sosp_alpha(prob, x)
    assert a["alpha"] == pytest.approx(np.linalg.norm(prob.population_grad(x)))
    assert sosp_alpha(problems.get_problem("mean_estimation", d=3),
                      np.zeros(3))["curvature_part"] == 0


def test_lanczos_lambda_min_in_high_dimension():
    prob = problems.get_problem("phase_retrieval", d=300)
    x = np.random.default_rng(0).standard_normal(300) * 0.05
    dense = np.linalg.eigvalsh(prob.population_hessian(x))[0]
    assert lambda_min(prob, x) == pytest.approx(dense, rel=1e-8)


def test_screen_finds_the_true_running_minimum():
    prob = problems.get_problem("hard_valley", d=5)
    rng = np.random.default_rng(2)
    its = np.cumsum(rng.standard_normal((300, 5)) * 0.3, axis=0)
    brute = np.minimum.accumulate([sosp_alpha(prob, x)["alpha"] for x in its])
    np.testing.assert_allclose(running_min_alpha(prob, its), brute, rtol=0, atol=0)
    assert math.isfinite(brute[-1])


def test_censored_runs_count_as_infinite_in_medians():
    """One representation of censoring: samples_to_target NaN, censored True, n_star +inf, so a
    median over n_star counts a censored run as larger than any finite n*."""
    import pandas as pd

    from problems.evaluation.metrics import median_n_star

    cells = pd.DataFrame({
        "algorithm": ["a"] * 4 + ["b"] * 2, "target_alpha": [0.1] * 6,
        "status": ["ok", "ok", "ok", "error", "ok", "ok"],
        "samples_to_target": [10.0, 30.0, math.nan, math.nan, math.nan, math.nan]})
    ok_target = (cells["status"] == "ok") & cells["target_alpha"].notna()
    cells["censored"] = ok_target & cells["samples_to_target"].isna()
    cells["n_star"] = np.where(cells["censored"], np.inf, cells["samples_to_target"])
    med = median_n_star(cells, ["algorithm"])
    # a: runs 10, 30, censored -> median 30 (dropping the censored run would give 20).
    assert med.loc["a", "median_n_star"] == 30.0 and med.loc["a", "runs"] == 3
    assert med.loc["a", "censored"] == 1
    assert med.loc["b", "median_n_star"] == math.inf and med.loc["b", "censored"] == 2
