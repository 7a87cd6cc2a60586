"""Samples to the algorithm's own output against the oracle's n* (issue 70, item 5;
`analysis.comparisons.output_gap`): medians and their ratio by hand, the seeds paired by rep,
a censored majority turning the ratio not finite, and the CLI refusing swapped stores."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.comparisons.output_gap import output_gap, output_gap_lines


def _cells(n_stars: list[float], alg: str = "dp_sgd", target: float = 0.1) -> pd.DataFrame:
    return pd.DataFrame([{"algorithm": alg, "problem": "hard_valley", "problem_params": {"start": 1.0},
                          "d": 10, "eps": 1.0, "target_alpha": target, "rep": r, "status": "ok",
                          "samples_to_target": v} for r, v in enumerate(n_stars)])


def test_the_ratio_is_the_ratio_of_the_paired_medians():
    best = _cells([1000, 2000, 4000, 8000, 16000])
    out = _cells([3000, 4000, 9000, 30000, 40000])
    t = output_gap(best, out, np.random.default_rng(0))
    r = t.iloc[0]
    assert r["n_best_median"] == 4000 and r["n_output_median"] == 9000
    assert r["ratio"] == pytest.approx(9000 / 4000)
    assert r["ratio_low"] <= r["ratio"] <= r["ratio_high"]
    assert r["seeds"] == 5 and r["problem"] == "hard_valley start=1.0"
    assert "2.25-2.25x the oracle's n* at 1 of 1 settings" in output_gap_lines(t)[0]


def test_a_censored_majority_leaves_the_ratio_not_finite_and_says_so():
    best = _cells([1000, 2000, 4000])
    out = _cells([math.nan, math.nan, 5000])  # two searches found no n up to the cap
    r = output_gap(best, out, np.random.default_rng(0)).iloc[0]
    assert math.isinf(r["n_output_median"]) and math.isnan(r["ratio"])
    assert r["censored_output"] == 2 and r["censored_best"] == 0


def test_only_settings_and_seeds_in_both_stores_are_paired():
    best = pd.concat([_cells([1000, 2000, 4000]), _cells([10, 20, 40], target=0.5)])
    out = _cells([2000, 4000, 8000, 16000])  # rep 3 has no partner; target 0.5 is absent
    t = output_gap(best, out, np.random.default_rng(0))
    assert len(t) == 1 and t.iloc[0]["seeds"] == 3 and t.iloc[0]["ratio"] == pytest.approx(2.0)


def test_the_cli_refuses_stores_that_are_not_best_and_output(tmp_path, capsys):
    """A store of reach = "best" cells given as both stores: one line, no traceback."""
    from bench.cli import main
    from bench.config import parse_spec
    from bench.runner import run_sweep
    from tests.test_n_search import OUTPUT_SPEC

    spec = parse_spec(OUTPUT_SPEC.replace('reach = "output"', 'reach = "best"').replace(
        "repetitions = 2", "repetitions = 1"))
    path = tmp_path / "best.sqlite"
    run_sweep(spec, path, jobs=1, progress=False)
    code = main(["output-gap", str(path), str(path), "-o", str(tmp_path / "g.csv")])
    err = capsys.readouterr().err
    assert code != 0 and "reach = 'output' cells (found ['best'] and ['best'])" in err
    assert "Traceback" not in err and not (tmp_path / "g.csv").exists()
