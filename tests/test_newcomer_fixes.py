"""Issue 46 ("a newcomer's first hour"), the smaller fixes, each with a test that fails without
it: `dprates run` refuses a target at the start with the spec check's line; a spec key typo
gets "did you mean"; a two-term p inside its own interval; the dry run's forecast says which
check decides; an empirical algorithm that keeps no sample warns; `dprates fit` says "no
claim" for an algorithm without one and marks the row page 1 reads each claim from."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bench.cli import main
from bench.config import parse_spec
from bench.config_values import SpecError

SPEC = """
name = "t"
seed = 1
repetitions = 2
[grid]
target_alpha = [TARGET]
budget = 100000
d = [4]
eps = [1]
[[problem]]
name = "hard_valley"
[[algorithm]]
name = "adaptive_tree_spider"
"""


def test_run_refuses_a_target_at_the_start_with_the_spec_checks_line(capsys):
    """hard_valley's start: lambda_min = -(1 - beta) / w^2 = -4 (1 - 5e-5), rho = 17.485955196,
    so alpha_SOSP(x0) = lambda^2 / rho = 0.915; a target of 2 is met at step 0."""
    start = (4 * (1 - 5e-5)) ** 2 / 17.485955196
    with pytest.raises(SpecError) as spec:
        parse_spec(SPEC.replace("TARGET", "2"))
    spec_line = str(spec.value)
    assert spec_line.startswith("grid.target_alpha contains 2: at or above the start's alpha_SOSP(x0)")
    assert f"= {start:.3g} on hard_valley" in spec_line
    code = main(["run", "adaptive_tree_spider", "--problem", "hard_valley", "--n", "1e4", "--d", "4",
                 "--eps", "1", "--target-alpha", "2"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err == "dprates: error: --target-alpha=2 is invalid: " + spec_line.split(": ", 1)[1]
    from bench.single_run import run_cell

    with pytest.raises(ValueError, match=r"^target_alpha=2 is invalid: at or above the start's"):
        run_cell("adaptive_tree_spider", "hard_valley", 10_000, 4, 1.0, params={"target_alpha": 2.0})
    parse_spec(SPEC.replace("TARGET", "0.5"))  # below the start: accepted by both


@pytest.mark.parametrize("edit,msg", [
    (("repetitions = 2", "repetitons = 2"), "repetitons is an unknown key (did you mean 'repetitions'?)"),
    (("d = [4]", "d = [4]\nbudgett = 1"), "grid.budgett is an unknown key (did you mean 'budget'?)"),
    (('name = "hard_valley"', 'name = "hard_valley"\nparams = { nosie = 0.1 }'),
     "hard_valley has no parameter 'nosie' (did you mean 'noise'?)"),
    (('name = "adaptive_tree_spider"', 'name = "dp_gd"\nparams = { c_t = 2 }'),
     "(did you mean 'c_T'?)"),
    (("colour", "colour"), None),
])
def test_a_spec_key_typo_gets_did_you_mean(edit, msg):
    text = SPEC.replace("TARGET", "0.5").replace(*edit)
    if msg is None:  # nothing close: no suggestion
        with pytest.raises(SpecError) as exc:
            parse_spec(text.replace("seed = 1", 'seed = 1\ncolour = "red"'))
        assert "did you mean" not in str(exc.value)
        return
    if "dp_gd" in text:  # a records method: an n grid
        text = text.replace("target_alpha = [0.5]\nbudget = 100000", "n = [1000]")
    with pytest.raises(ValueError) as exc:
        parse_spec(text)
    assert msg in str(exc.value)


def _weak_privacy_term() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y = a x^p + 1.5 n^-1/3 with lognormal noise where the privacy term is weakly identified
    (a = 1.01, two seeds per design point, noise 0.44): the design on which the full-data fit
    (p 0.58) lands outside the replicates' percentile interval."""
    rng = np.random.default_rng(140)
    a, p, noise, reps = 10 ** rng.uniform(-2, 1), rng.uniform(0.2, 1.5), rng.uniform(0.05, 0.6), \
        int(rng.integers(2, 6))
    nn = np.geomspace(1e3, 1e6, int(rng.integers(1, 4)))
    xg = np.geomspace(10 ** rng.uniform(-6, -3), 1e-2, int(rng.integers(3, 7)))
    xs, ns, ys = [], [], []
    for n in nn:
        for x in xg:
            for _ in range(reps):
                xs.append(x)
                ns.append(n)
                ys.append((a * x**p + 1.5 * n ** (-1 / 3)) * math.exp(noise * rng.standard_normal()))
    for n in (1e4, 1e5):
        for _ in range(reps):
            xs.append(xg.min() * 1e-6)
            ns.append(n)
            ys.append(1.5 * n ** (-1 / 3) * math.exp(noise * rng.standard_normal()))
    assert a == pytest.approx(1.01, abs=0.01) and reps == 2
    return np.array(xs), np.array(ns), np.array(ys)


def test_a_two_term_p_lies_inside_its_own_interval():
    """The reported p is the replicates' median, inside their percentile interval by
    construction; the full-data fit (kept as p_full) is the one that fell outside."""
    from scipy.optimize import least_squares

    from analysis.verdict_engine.two_term import two_term_fit

    x, n, y = _weak_privacy_term()
    f = two_term_fit(x, n, y, n_boot=200, rng=np.random.default_rng(140))
    assert f.estimate == "bootstrap median"
    assert f.ci_low <= f.p <= f.ci_high
    assert not f.ci_low <= f.p_full <= f.ci_high  # the case the fix is about
    # p_full is a least-squares optimum of the model (an independent scipy solve from it
    # does not move it)
    lx, ln, ly = np.log(x), np.log(n), np.log(y)
    theta0 = np.array([math.log(f.a), f.p_full, math.log(f.b)])
    sol = least_squares(lambda t: ly - np.logaddexp(t[0] + t[1] * lx, t[2] - ln / 3), theta0,
                        loss="soft_l1", f_scale=0.3, bounds=([-50, 0.01, -50], [50, 3.0, 50]))
    assert sol.x[1] == pytest.approx(f.p_full, abs=0.02)
    # a well-identified design: the median agrees with the full-data fit
    rng = np.random.default_rng(0)
    xs = np.repeat(np.geomspace(1e-4, 1e-1, 4), 12)
    ns = np.tile(np.repeat([1e4, 1e5, 1e6], 4), 4)
    ys = (0.5 * xs + 0.8 * ns ** -0.5) * np.exp(0.05 * rng.standard_normal(xs.size))
    g = two_term_fit(xs, ns, ys, n_boot=100, floor_exponent=0.5)
    assert g.p == pytest.approx(g.p_full, abs=0.02) and g.ci_low <= 1.0 <= g.ci_high


def test_the_dry_run_forecast_says_which_check_decides(tmp_path, capsys):
    """seed 002's d-scaling spec: the forecast reads "floor" for pagan (the claim's terms,
    constants at 1) and now says it is advisory and what decides; a Spider's floor from its
    own rules gates the verdict; the claims tables' column keeps the bare forecast."""
    from algorithms import regime_forecast as rf

    assert main(["sweep", "bench/configs/seed002_scaling3_d.toml", "--dry-run", "--out",
                 str(tmp_path / "s.sqlite")]) == 0
    out = capsys.readouterr().out
    line = next(r for r in out.splitlines() if r.strip().startswith("pagan / ") and "floor" in r)
    assert rf.ADVISORY in line
    rules = rf.ForecastSource.RULES_BUDGET
    floor = rf.RegimeFlag(rf.FlagKind.FLOOR, "the rules' non-private sample budget outweighs "
                          "their privacy part at 2 of 5")
    ceiling = rf.RegimeFlag(rf.FlagKind.CEILING, "the claim's bound is above a tenth of the start")
    assert rf.who_decides([floor], rules) == rf.RULES_GATE
    assert rf.who_decides([ceiling, floor], rules) == rf.RULES_GATE + "; its ceiling is " + rf.ADVISORY
    assert rf.who_decides([], rules) == ""
    assert rf.who_decides([floor], rf.ForecastSource.CLAIM_TERMS) == rf.ADVISORY
    assert rf.who_decides([ceiling], rules) == rf.ADVISORY


def test_an_empirical_algorithm_that_keeps_no_sample_warns():
    """DP-GD that forgets its sample (as the README's one-pass example's `sample=None` copied
    into an empirical algorithm would): the run warns and the warning is in its trajectory (so
    `dprates run` prints it and a store keeps it); the metrics' emp_grad_best is then NaN."""
    import dataclasses

    import problems
    from algorithms import Privacy
    from algorithms.first_order.noisy_gd import DPGD
    from problems.evaluation.metrics import evaluate

    class Forgetful(DPGD):
        def _run(self, *a, **kw):
            return dataclasses.replace(super()._run(*a, **kw), sample=None)

    prob = problems.get_problem("hard_valley", d=3)
    data = prob.stream(np.random.SeedSequence(1), budget=500, data="records")
    with pytest.warns(UserWarning, match="returned no sample"):
        traj = Forgetful(T=5).run(prob, data, Privacy(1.0), np.random.default_rng(0))
    assert any("sample=..." in w for w in traj.warnings)
    assert math.isnan(evaluate(prob, traj)["metrics"]["emp_grad_best"])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the built-in DP-GD keeps its sample: no warning
        traj = DPGD(T=5).run(prob, prob.stream(np.random.SeedSequence(1), budget=500, data="records"),
                             Privacy(1.0), np.random.default_rng(0))
    assert np.isfinite(evaluate(prob, traj)["metrics"]["emp_grad_best"])


def _fit_rows() -> pd.DataFrame:
    """A fit table as `claims_table` gives it: the adaptive Spider tuned (declared) and theory;
    the Gaussian Spider's tuned row not in regime (so its theory row decides); tree_spider,
    which claims nothing."""
    base = {"fit": "f", "where": "", "problem": "hard_valley", "view": "sample_complexity",
            "x": "alpha", "window": (0.03, 0.09), "flags": "", "metric": "alpha_sosp",
            "character": "hard", "spec": "s"}
    logs = "consistent up to the rules' log factors"
    rows = [("adaptive_tree_spider", "tuned", True, -2.0, -2.2, logs, "in regime"),
            ("adaptive_tree_spider", "theory", False, -2.0, -2.17, "slower than claimed", "in regime"),
            ("gaussian_spider", "tuned", True, -2.33, -2.9, "not in regime", "ceiling"),
            ("gaussian_spider", "theory", False, -2.33, -2.4, "consistent", "in regime"),
            ("tree_spider", "tuned", True, math.nan, -2.6, "inconclusive", "in regime"),
            ("tree_spider", "theory", False, math.nan, -2.4, "inconclusive", "in regime")]
    return pd.DataFrame([{**base, "algorithm": a, "mode": m, "declared": dcl, "predicted": p,
                          "rules_predicted": math.nan, "exponent": e, "ci_low": e - 0.05,
                          "ci_high": e + 0.05, "verdict": v, "regime": r}
                         for a, m, dcl, p, e, v, r in rows])


def test_fit_says_no_claim_and_which_row_decides_page_one(capsys):
    from bench.cli.fit import NO_CLAIM, deciding_rows, mark_no_claim, print_claims

    table = mark_no_claim(_fit_rows())
    assert list(table["verdict"][4:]) == [NO_CLAIM, NO_CLAIM]
    assert list(table["verdict"][:4]) == list(_fit_rows()["verdict"][:4])
    # page 1's ranking: measured, then in regime, then the declared mode
    assert deciding_rows(table) == [True, False, False, True, False, False]
    print_claims(_fit_rows())
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "page 1" in lines[0] and "inconclusive" not in out
    adaptive = [r for r in lines if r.split()[1:2] == ["adaptive_tree_spider"]]
    assert "tuned" in adaptive[0] and "decides" in adaptive[0] and "decides" not in adaptive[1]
    assert "mode: theory = the parameter rules as written" in out
