"""`dprates compare` (analysis.comparisons.compare, bench.cli.compare): every algorithm on one axis, samples
to a target. Synthetic cells with planted values whose medians, bootstrap supports, crossings
and ratios are computed by hand here: a planted winner (paired: every draw gives the same
ratio), a planted tie (the interval covers 1), an unpaired pair (independent draws widen the
interval to the hand-enumerated support), the records view's log-log crossing, its flags and
passes, and the command on two stores with its one-line refusals."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from analysis.comparisons.compare import compare_table
from tests.synthetic_cells import budgets, targeted, write_store

SPIDER, OTHER, SGD = "gaussian_spider", "adaptive_tree_spider", "dp_sgd"


def one_pass(alg: str, n_star: list[float], target: float = 0.05, seed: int = 1,
             data: str = "counts") -> list[dict]:
    """Targeted cells of a one-pass algorithm: repetition r read n_star[r] samples (inf:
    censored)."""
    return targeted(alg, n_star, target, base_seed=seed, data=data)


def records(alg: str, ns: list[float], err, reps: int = 3, seed: int = 1, data: str = "records",
            params_used: dict | None = None, steps: int = 2000) -> list[dict]:
    """Cells of a method on n records: alpha_best = err(n, rep)."""
    return budgets(alg, ns, err, reps, base_seed=seed, data=data, target_metric="emp_grad_norm",
                   params_used=params_used or {"sampling": "poisson", "b": 500}, n_steps=steps)


def table(rows: list[dict], target: float = 0.05, **kw) -> pd.DataFrame:
    out, _notes = compare_table(pd.DataFrame(rows), target, n_boot=2000, **kw)
    return out.set_index("algorithm")


def test_a_planted_winner_paired_has_the_exact_ratio_and_the_medians_bootstrap_support():
    """n* = (100, 200, 300) against four times that on the same seeds: medians 200 and 800; the
    baseline is the one needing fewer; every paired draw is 4 exactly (n*_B = 4 n*_A seed by
    seed). The median of 3 resampled values is 100 with probability 7/27 (two or three draws
    of the smallest), so its 95% interval is [100, 300]."""
    t = table(one_pass(SPIDER, [100, 200, 300]) + one_pass(OTHER, [400, 800, 1200]))
    assert t.loc[SPIDER, "samples"] == 200 and t.loc[OTHER, "samples"] == 800
    assert (t.loc[SPIDER, "ci_low"], t.loc[SPIDER, "ci_high"]) == (100, 300)
    assert t.loc[SPIDER, "pairing"] == "baseline" and t.loc[OTHER, "baseline"] == SPIDER
    assert t.loc[OTHER, "ratio"] == 4.0
    assert (t.loc[OTHER, "ratio_low"], t.loc[OTHER, "ratio_high"]) == (4.0, 4.0)
    assert t.loc[OTHER, "pairing"] == "paired (3 seeds)"
    assert t.loc[OTHER, "passes"] == 1.0 and t.loc[OTHER, "view"] == "one pass"


def test_a_planted_tie_covers_one():
    """(100, 200, 300) against (300, 200, 100) on the same seeds: ratio 1; a draw holding rep 0
    at least twice (probability 7/27 > 2.5%) gives 100 / 300, rep 2 at least twice 300 / 100,
    so the interval is [1/3, 3] and the reading a tie."""
    from analysis.comparisons.compare_export import reading

    rows = one_pass(SPIDER, [100, 200, 300]) + one_pass(OTHER, [300, 200, 100])
    t = table(rows, baseline=SPIDER)
    assert t.loc[OTHER, "ratio"] == 1.0
    assert t.loc[OTHER, "ratio_low"] == pytest.approx(1 / 3)
    assert t.loc[OTHER, "ratio_high"] == pytest.approx(3.0)
    assert reading(t.loc[OTHER]) == "tie (interval covers 1)"


def test_unpaired_rows_get_independent_draws():
    """The winner's values on another base seed (other records): no pairing. The ratio's
    draws are 4 m_B / m_A with m_A, m_B independent medians on {1, 2, 3} (x100), each 1 or 3
    with probability 7/27; (7/27)^2 = 6.7% > 2.5%, so the interval is [4/3, 12]."""
    t = table(one_pass(SPIDER, [100, 200, 300], seed=1) + one_pass(OTHER, [400, 800, 1200], seed=2))
    assert t.loc[OTHER, "pairing"] == "unpaired" and t.loc[OTHER, "ratio"] == 4.0
    assert t.loc[OTHER, "ratio_low"] == pytest.approx(4 / 3)
    assert t.loc[OTHER, "ratio_high"] == pytest.approx(12.0)
    # another data mode does not pair either (equally distributed, other records)
    t = table(one_pass(SPIDER, [100, 200, 300]) + one_pass(OTHER, [400, 800, 1200], data="records"))
    assert t.loc[OTHER, "pairing"] == "unpaired"


def test_records_view_crossing_passes_and_a_mixed_pair():
    """alpha_best = 10 / n on n = 1e3 .. 1e6: the target 3e-4 is crossed between 1e4 (1e-3)
    and 1e5 (1e-4); the log-log interpolation of a power law is exact, n* = 10 / 3e-4. Passes
    at the first n reaching it: 2000 steps x b 500 / 1e5 = 10. The one-pass row (2e4, 5e4,
    1e5) on the same seed and data mode pairs with it: ratio 5e4 / (1e5 / 3) = 1.5, draws
    {2e4, 5e4, 1e5} / n*: interval [0.6, 3]."""
    ns = [1e3, 1e4, 1e5, 1e6]
    rows = records(SGD, ns, lambda n, r: 10 / n) + one_pass(OTHER, [2e4, 5e4, 1e5], target=3e-4,
                                                             data="records")
    t = table(rows, target=3e-4, baseline=SGD)
    assert t.loc[SGD, "samples"] == pytest.approx(10 / 3e-4, rel=1e-12)
    assert t.loc[SGD, "view"] == "records" and t.loc[SGD, "read_from"] == "alpha_best"
    assert t.loc[SGD, "passes"] == pytest.approx(10.0)
    assert t.loc[SGD, "flags"] == ""
    assert t.loc[OTHER, "ratio"] == pytest.approx(1.5)
    assert t.loc[OTHER, "ratio_low"] == pytest.approx(0.6)
    assert t.loc[OTHER, "ratio_high"] == pytest.approx(3.0)
    assert t.loc[OTHER, "pairing"] == "paired (3 seeds)"


def test_records_flags_ceiling_few_n_and_full_batch_passes():
    """Crossed only at the grid's largest n, with two design sizes: both flags; a full-batch
    method's passes are its steps (7); never crossed: n* inf and the ceiling flag. (Alone, a
    records row reads the metric given, here alpha_best; by default its claim metric's.)"""
    full = {"sampling": "full"}
    t = table(records(SGD, [1e3, 1e4], lambda n, r: 10 / n, params_used=full, steps=7), target=3e-3,
              column="alpha_best")
    flags = t.loc[SGD, "flags"]
    assert "few n (2 design sizes)" in flags and "ceiling: n* taken at the grid's largest n" in flags
    assert t.loc[SGD, "passes"] == 7.0
    # log-log between (1e3, 1e-2) and (1e4, 1e-3): n* = 10 / 3e-3
    assert t.loc[SGD, "samples"] == pytest.approx(10 / 3e-3)
    t = table(records(SGD, [1e3, 1e4, 1e5], lambda n, r: 1.0), target=0.1, column="alpha_best")
    assert math.isinf(t.loc[SGD, "samples"]) and "not reached by the largest n" in t.loc[SGD, "flags"]


def test_censored_one_pass_runs_count_as_more_than_any_budget():
    """Two of three runs censored: the median is inf (not the one finite value) and flagged."""
    t = table(one_pass(SPIDER, [100, math.inf, math.inf]))
    assert math.isinf(t.loc[SPIDER, "samples"]) and t.loc[SPIDER, "flags"] == "censored 2 of 3"


def test_the_command_on_two_stores_and_its_one_line_refusals(tmp_path, capsys):
    from bench.cli import main

    a = write_store(tmp_path / "a.sqlite", one_pass(OTHER, [2e4, 5e4, 1e5], target=3e-4, data="records"))
    b = write_store(tmp_path / "b.sqlite", records(SGD, [1e3, 1e4, 1e5, 1e6], lambda n, r: 10 / n))
    assert main(["compare", a, b, "--target", "3e-4", "--boot", "200"]) == 0
    out = capsys.readouterr().out
    line = next(r for r in out.splitlines() if r.startswith(f"| hard_valley | {SGD} "))
    assert "3.33e+04 [3.33e+04, 3.33e+04]" in line and "baseline" in line
    line = next(r for r in out.splitlines() if r.startswith(f"| hard_valley | {OTHER} "))
    assert "1.5 [" in line and "paired (3 seeds)" in line and "one pass" in line
    # issue 73, item 5: the table first, its notes after; the iterate each view reads said once
    assert out.startswith("| problem | algorithm | view |")
    assert out.count("first time the best iterate so far") == 1
    assert "Samples to target 0.0003." in out.split("\n\n", 1)[1]
    assert main(["compare", a, b, "--target", "3e-4", "--format", "latex", "--boot", "200"]) == 0
    tex = capsys.readouterr().out
    assert "\\toprule" in tex and "\\bottomrule" in tex and "samples [95\\% CI]" in tex
    assert tex.index("\\toprule") < tex.index("Intervals: 95")
    assert main(["compare", a, b, "--target", "3e-4", "--format", "csv", "--boot", "200"]) == 0
    csv = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert set(csv["algorithm"]) == {SGD, OTHER}
    for argv, msg in (
            ([a, "--target", "0.1", "--problem", "nope"],
             "--problem='nope' is invalid: the stores hold problem hard_valley"),
            ([a, "--target", "0.1", "--metric", "nope"], "--metric='nope' is invalid"),
            ([str(tmp_path / "missing.sqlite"), "--target", "0.1"], "no such file"),
            ([a, "--target", "0.1", "--baseline", "nope"], "--baseline='nope' is invalid")):
        assert main(["compare", *argv]) == 2
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit):
        main(["compare", a, "--target", "-1"])
    err = capsys.readouterr().err
    assert "--target" in err and "must be a number > 0" in err


@pytest.mark.parametrize("view", ["one pass", "records"])
def test_batched_bootstrap_estimates_are_the_per_draw_ones(view):
    """Row.estimates (all draws' medians in one call) against Row.estimate per draw, on data
    with NaN (missing) and inf (censored) entries, the interval's and the ratio's hot path."""
    from analysis.comparisons.compare import Row, _draws
    rng = np.random.default_rng(3)
    for _ in range(40):
        k = int(rng.integers(2, 11))
        rows = 1 if view == "one pass" else int(rng.integers(2, 6))
        values = rng.lognormal(8, 2, (rows, k))
        values = np.sort(values, axis=0)[::-1] if view == "records" else values
        u = rng.random((rows, k))
        values[u < 0.15] = np.nan
        values[(u > 0.15) & (u < 0.25)] = np.inf
        row = Row("r", "alg", view, "alpha_sosp", "c", 0, np.arange(k), values,
                  ns=np.geomspace(1e3, 1e5, rows), target=float(np.exp(8)))
        cols = _draws(rng, k, 300)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.array([row.estimate(c) for c in cols])
        assert np.array_equal(row.estimates(cols), want, equal_nan=True)
