"""The accountant's fairness and the ledger's honesty (issue: privacy, third pass).

Fairness: every PLD calibration spends at least 99% of eps. The reference is a second
computation of the same composition, dp-accounting's *optimistic* PLD (privacy buckets rounding
losses down, at a 100x finer interval than the calibration), a lower bound on the true eps;
the calibration's own pessimistic PLD is an upper bound. The true eps of the calibrated noise
sits between them, so "upper <= eps" is privacy and "lower >= 0.99 eps" is tightness.

Honesty: a run stores mu only where it is mu-GDP; a PLD-calibrated run stores its composed
releases, from which its eps is re-derived at any delta."""

from __future__ import annotations

import math

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.privacy.accounting.gdp import gdp_eps, gdp_mu
from algorithms.privacy.accounting.ledger import ledger_eps
from algorithms.privacy.accounting.pld import (
    CALIBRATION_SLACK,
    pld_epsilons,
    poisson_gaussian_calibration,
    two_family_calibration,
)
from problems import get_problem


def _optimistic_eps(families, delta: float, discretization: float) -> float:
    """A lower bound on the true eps of the composition (dp-accounting's optimistic PLD)."""
    import dp_accounting
    from dp_accounting.pld import privacy_loss_distribution as pld

    out = None
    for z, q, count in families:
        one = pld.from_gaussian_mechanism(
            standard_deviation=z, sensitivity=1.0, pessimistic_estimate=False,
            value_discretization_interval=discretization, sampling_prob=q,
            use_connect_dots=False,
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
        one = one.self_compose(count)
        out = one if out is None else out.compose(one)
    return float(out.get_epsilon_for_delta(delta))


#: (eps, q, T): the review's case (eps 0.1, T 828: it spent 0.0898), a long composition (at
#: the old fixed interval 5,000 steps at eps 0.1 spent 0.046), seed 002's experiment (n 5,000,
#: b 70, T 5,103 at eps 1 and 4) and DP-SGD's theory batch at n 2e4.
CONFIGS = [(0.1, 0.01, 828), (0.1, 0.003, 5000), (1.0, 0.014, 5103), (4.0, 0.014, 5103),
           (1.0, 0.0749, 441)]


@pytest.mark.slow
@pytest.mark.parametrize("eps,q,T", CONFIGS)
def test_poisson_calibration_is_private_and_within_one_percent_of_tight(eps, q, T):
    delta = 1e-6
    cal = poisson_gaussian_calibration(eps, delta, q, T)
    upper = pld_epsilons(cal.families, (delta,), cal.discretization)[0]
    assert upper == pytest.approx(cal.eps, rel=1e-12) and upper <= eps
    lower = _optimistic_eps(cal.families, delta, cal.discretization / 100)
    assert lower <= upper * (1 + 1e-9)
    assert lower >= (1 - CALIBRATION_SLACK) * eps, f"spends only {lower / eps:.4f} of eps"


@pytest.mark.slow
def test_two_family_calibration_is_private_and_within_one_percent_of_tight():
    """Private SpiderBoost's shared budget (20 anchors with multiplier 5 s, 800 Poisson
    difference steps at rate 0.01 with 2 s): it spent 76-88% of eps before."""
    eps, delta = 0.1, 1e-6
    cal = two_family_calibration(eps, delta, 20, 5.0, 800, 0.01, 2.0)
    assert [f[2] for f in cal.families] == [20, 800]
    assert cal.families[0][0] == pytest.approx(5 * cal.scale)
    assert pld_epsilons(cal.families, (delta,), cal.discretization)[0] <= eps
    assert _optimistic_eps(cal.families, delta, cal.discretization / 100) >= 0.99 * eps


def test_full_batch_calibrations_are_the_gdp_closed_form():
    """q = 1: every release is 2/z-GDP (hand computation), no discretization involved."""
    mu = gdp_mu(0.5, 1e-6)
    cal = poisson_gaussian_calibration(0.5, 1e-6, 1.0, 400)
    assert cal.scale == pytest.approx(40 / mu, rel=1e-12) and cal.discretization == 0
    two = two_family_calibration(0.5, 1e-6, 10, 2.0, 90, 1.0, 3.0)
    assert two.scale == pytest.approx(2 * math.sqrt(10 / 4 + 90 / 9) / mu, rel=1e-12)
    # the PLD of the same full-batch composition agrees (it is exact up to its interval)
    assert pld_epsilons(two.families, (1e-6,), 1e-5)[0] == pytest.approx(0.5, rel=1e-3)


def _glm_run(name: str, n: int = 4000, eps: float = 1.0, **params):
    prob = get_problem("glm", d=5)
    data = prob.sample(n, np.random.default_rng(0))
    return get_algorithm(name)(**params).run(prob, data, Privacy(eps, 1e-6),
                                            np.random.default_rng(1))


def test_pld_runs_store_no_mu_and_their_eps_is_rederived():
    traj = _glm_run("dp_sgd", c_T=0.05)
    spent = traj.privacy_spent
    assert spent["accountant"] == "pld" and spent["mu"] is None
    assert math.isnan(traj.params["privacy_mu"])
    assert ledger_eps(spent) == pytest.approx(spent["eps"], rel=1e-12)
    assert 0.99 <= spent["eps"] <= 1.0
    # The review's point: the budget's mu read at another delta understates eps; the ledger's
    # composed PLD does not.
    gdp_reading = gdp_eps(gdp_mu(1.0, 1e-6), 1e-12)
    assert ledger_eps(spent, 1e-12) > gdp_reading * 1.02
    assert set(spent["eps_at"]) == {"1e-07", "1e-06", "1e-05"}
    assert spent["eps_at"]["1e-05"] < spent["eps"] < spent["eps_at"]["1e-07"]


def test_gdp_runs_keep_their_mu():
    traj = _glm_run("dp_gd", c_T=0.05)
    spent = traj.privacy_spent
    assert spent["accountant"] == "gdp"
    assert spent["mu"] == pytest.approx(gdp_mu(1.0, 1e-6), rel=1e-12)
    assert ledger_eps(spent) == pytest.approx(1.0, rel=1e-9)
    assert _glm_run("dp_gd", eps=math.inf, c_T=0.05).privacy_spent["accountant"] == "none"


@pytest.mark.parametrize("name", ["dp_sgd", "dp_gd"])
def test_more_noise_than_needed_is_stored_as_less_eps(name):
    base = _glm_run(name, c_T=0.05)
    z = base.params["noise_multiplier"]
    loud = _glm_run(name, c_T=0.05, noise_multiplier=2 * z)
    if name == "dp_gd":  # exact GDP: twice the noise is half the mu (hand computation)
        expected = gdp_eps(gdp_mu(1.0, 1e-6) / 2, 1e-6)
    else:  # an independent PLD evaluation of the same composition at a finer interval
        q, T = loud.params["b"] / 4000, int(loud.params["T"])
        expected = pld_epsilons(((2 * z, q, T),), (1e-6,), 1e-5)[0]
    assert loud.privacy_spent["eps"] == pytest.approx(expected, rel=2e-3)
    assert ledger_eps(loud.privacy_spent) == pytest.approx(loud.privacy_spent["eps"], rel=1e-9)


def test_the_store_keeps_the_ledger_and_eps_rederives_from_it(tmp_path):
    from bench.config import parse_spec
    from bench.runner import run_sweep
    from bench.store import load

    spec = parse_spec("""
name = "ledger"
seed = 0
[grid]
n = [3000]
d = [4]
eps = [0.5, inf]
[[problem]]
name = "glm"
[[algorithm]]
name = "dp_sgd"
params = { c_T = 0.05 }
[[algorithm]]
name = "dp_gd"
params = { c_T = 0.05 }
""")
    store = tmp_path / "l.sqlite"
    run_sweep(spec, store, jobs=1, progress=False)
    df = load(store)
    assert (df.status == "ok").all()
    sgd = df[(df.algorithm == "dp_sgd") & (df.eps == 0.5)].iloc[0]
    assert sgd.accountant == "pld" and (sgd.mu_spent is None or math.isnan(sgd.mu_spent))
    spent = {**sgd.privacy_ledger, "accountant": sgd.accountant, "delta": sgd.delta_spent}
    assert ledger_eps(spent) == pytest.approx(sgd.eps_spent, rel=1e-12)
    gd = df[(df.algorithm == "dp_gd") & (df.eps == 0.5)].iloc[0]
    assert gd.accountant == "gdp" and gd.mu_spent == pytest.approx(gdp_mu(0.5, 1e-6))
    assert set(df[df.eps == math.inf].accountant) == {"none"}
    from algorithms.privacy.audit.ledger import spent_table

    table = spent_table(df).set_index("algorithm")
    assert table.loc["dp_sgd", "accountant"] == "pld" and table.loc["dp_gd", "accountant"] == "gdp"
    assert 0.99 <= table.loc["dp_sgd", "spent_min"] <= table.loc["dp_sgd", "spent_max"] <= 1.0
    assert table.loc["dp_gd", "spent_median"] == pytest.approx(1.0, rel=1e-9)
    assert set(table["privacy_check"]) == {"built-in"} and set(table["cells"]) == {1}


# ------------------------------------------------------------ the calibration field
@pytest.mark.parametrize("name", ["dp_sgd", "dp_gd", "private_spiderboost", "pagan",
                                  "recursive_regularization"])
def test_theory_calibration_is_refused_where_not_implemented(name):
    prob = get_problem("glm", d=3)
    with pytest.raises(ValueError, match=rf"calibration='theory' is invalid for {name}: it "
                                         "implements tight only"):
        get_algorithm(name)().run(prob, prob.sample(100, np.random.default_rng(0)),
                                  Privacy(1.0, 1e-6, "theory"), np.random.default_rng(0))


def test_theory_calibration_is_refused_at_spec_check_and_on_the_command_line(capsys):
    from bench.cli import main
    from bench.config import SpecError, parse_spec

    with pytest.raises(SpecError, match="calibration='theory' is invalid for dp_sgd"):
        parse_spec("""
name = "x"
seed = 0
calibration = "theory"
[grid]
n = [100]
d = [3]
eps = [1.0]
[[problem]]
name = "glm"
[[algorithm]]
name = "dp_sgd"
""")
    assert main(["run", "dp_sgd", "--problem", "glm", "--n", "1000", "--d", "3", "--eps", "1",
                 "--calibration", "theory"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "calibration='theory' is invalid for dp_sgd" in err[0]


def test_tree_private_spider_honours_theory_calibration():
    prob = get_problem("mean_estimation", d=3)
    data = prob.sample(20_000, np.random.default_rng(0))
    sig = {}
    for cal in ("tight", "theory"):
        traj = get_algorithm("tree_private_spider")().run(prob, data, Privacy(0.5, 1e-6, cal),
                                                         np.random.default_rng(1))
        sig[cal] = traj.records["noise_std"][0]
    # the noise it adds: the classic sqrt(2 log(1.25/delta)) / eps per unit of sensitivity
    # (Dwork and Roth, Thm A.1) against tight GDP's 1 / mu, in closed form
    classic = math.sqrt(2 * math.log(1.25 / 1e-6)) / 0.5
    assert sig["theory"] / sig["tight"] == pytest.approx(classic * gdp_mu(0.5, 1e-6), rel=1e-9)


def test_the_jl_method_ledgers_its_base_and_its_failure_probability():
    prob = get_problem("glm", d=20, rank=3)
    data = prob.sample(3000, np.random.default_rng(0))
    traj = get_algorithm("jl_dp_gd")(c_T=0.05).run(prob, data, Privacy(1.0, 1e-6),
                                                  np.random.default_rng(1))
    spent = traj.privacy_spent
    assert spent["accountant"] == "jl" and spent["mu"] is None and spent["delta"] == 1e-6
    # the base ran at delta / 2 (exact GDP there), the JL event holds the other half
    assert ledger_eps(spent) == pytest.approx(gdp_eps(gdp_mu(1.0, 5e-7), 5e-7), rel=1e-9)
    assert ledger_eps(spent) == pytest.approx(1.0, rel=1e-9)
    assert ledger_eps(spent, 4e-7) == math.inf  # below the JL failure probability


def test_pagan_with_private_scales_ledgers_both_parallel_parts():
    """Its moment release (held-out records, exactly mu(eps, delta)-GDP) and its optimization
    (the other records, PLD) compose in parallel: the worst part's eps at every delta."""
    prob = get_problem("scaled_linear", d=4)
    data = prob.sample(3000, np.random.default_rng(0))
    traj = get_algorithm("pagan_private_scales")(T=50).run(prob, data, Privacy(1.0, 1e-6),
                                                          np.random.default_rng(1))
    spent = traj.privacy_spent
    assert spent["accountant"] == "parallel" and [p["accountant"] for p in spent["parts"]] == \
        ["pld", "gdp"]
    moments = gdp_eps(gdp_mu(1.0, 1e-6), 1e-7)  # the moment release read at delta 1e-7
    assert ledger_eps(spent, 1e-7) >= moments * (1 - 1e-9)
    assert ledger_eps(spent) == pytest.approx(1.0, rel=1e-6)
