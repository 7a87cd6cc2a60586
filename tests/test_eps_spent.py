"""The eps a run's noise really spends (`algorithms.privacy.audit.eps_spent`, issue 43 item 1): the issue's
figures reproduced, each checked against an independent closed form, the analytic Gaussian
mechanism (Balle and Wang 2018, arXiv 1805.06530, Theorem 8), written here from scipy alone
(neither dp-accounting nor the repository's accountant); real runs, the rules path, the column,
the report page, and the fair-calibration specs paired cell by cell with headline2."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_pdf import PdfPages
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

import problems
from algorithms import Privacy, get_algorithm
from algorithms.privacy.accounting import gdp_mu, pld_epsilons
from algorithms.privacy.audit.eps_spent import (
    composition_eps,
    eps_spent,
    spent_fraction_column,
    spent_fraction_table,
    spider_mechanism,
)
from algorithms.sosp.noise_rules import noise_calibration
from analysis.declarations import StoreData
from analysis.report.eps_spent_page import eps_spent_page, eps_spent_rows

DELTA = 1e-6  # the headline specs' delta (the issue's figures are at the headline's design)
EPS = (0.01, 0.1, 0.5)
POWERS_T = (10**3, 10**4, 10**5, 10**6, 10**7)


# -- the independent path: the analytic Gaussian mechanism in closed form ------------------
def closed_form_eps(shift: float, delta: float) -> float:
    """The smallest eps at which a Gaussian of std 1 shifted by `shift` (L2 sensitivity over
    std) is (eps, delta)-DP: delta(eps) = Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s)."""
    def excess(e: float) -> float:
        a, b = shift / 2 - e / shift, -shift / 2 - e / shift
        return float(ndtr(a)) - math.exp(e + float(log_ndtr(b))) - delta

    return brentq(excess, 0.0, 50.0, xtol=1e-14, rtol=1e-13)


def theory_gaussian_shift(eps: float, delta: float) -> float:
    """A release of the papers' Gaussian: std = s sqrt(2 ln(1.25/delta)) / eps (Dwork and Roth,
    Theorem A.1), so shift = eps / sqrt(2 ln(1.25/delta))."""
    return eps / math.sqrt(2 * math.log(1.25 / delta))


def theory_tree_shift(eps: float, delta: float, T: int, nodes: int) -> float:
    """The papers' tree (seed 000, Theorem 2.2): node std = 4 s sqrt(ln T ln(1/delta)) / eps; a
    record moves `nodes` nodes by s each, so the stacked shift is sqrt(nodes) s / std."""
    return math.sqrt(nodes) * eps / (4 * math.sqrt(math.log(T) * math.log(1 / delta)))


def engine_mechanism(noise: str, eps: float, T: int, scope: str, calibration: str):
    """The mechanism the engine builds (noise_rules.noise_calibration at unit sensitivity), as
    the params a run stores."""
    cal = noise_calibration(Privacy(eps, DELTA, calibration), 1.0, noise, T, scope)
    if noise == "gaussian":
        return spider_mechanism("gaussian", {"noise_multiplier": cal.multiplier})
    return spider_mechanism("tree", {"sigma": cal.sigma, "leaf_sensitivity": 1.0,
                                     "tree_nodes": cal.nodes})


def fraction(mech, eps: float) -> float:
    return composition_eps(mech.families, DELTA, eps) / eps


# -- the issue's figures -------------------------------------------------------------------
@pytest.mark.parametrize("eps,figure", [(0.01, 0.55), (0.1, 0.67), (0.5, 0.75)])
def test_gaussian_spider_release_spends_the_issues_share_under_theory(eps, figure):
    """Tolerance 0.006: the issue rounds to 1% (0.005) and the PLD is pessimistic by at most
    ~1e-4 of eps. Against the closed form to 1e-4 relative."""
    f = fraction(engine_mechanism("gaussian", eps, 10**5, "global", "theory"), eps)
    assert abs(f - figure) <= 0.006
    exact = closed_form_eps(theory_gaussian_shift(eps, DELTA), DELTA) / eps
    assert f == pytest.approx(exact, rel=1e-4) and f >= exact * (1 - 1e-9)  # upper bound


@pytest.mark.parametrize("eps,figure", [(0.01, 0.22), (0.1, 0.27), (0.5, 0.30)])
def test_tree_spider_nodes_spend_the_issues_share_under_theory(eps, figure):
    """Epoch scope (depth nodes) at T = 1e3 ... 1e7 (powers of ten): the issue gives one rounded
    figure per eps for the whole range, so it must lie in the measured range widened by its
    rounding (0.005), and the range must be narrow (spread <= 0.01: measured 0.006-0.008, the
    sawtooth of the integer depth). Each value against the closed form to 1e-4 relative."""
    shares = []
    for T in POWERS_T:
        f = fraction(engine_mechanism("tree", eps, T, "epoch", "theory"), eps)
        shares.append(f)
        exact = closed_form_eps(theory_tree_shift(eps, DELTA, T, T.bit_length()), DELTA) / eps
        assert f == pytest.approx(exact, rel=1e-4), T
    assert min(shares) - 0.005 <= figure <= max(shares) + 0.005, shares
    assert max(shares) - min(shares) <= 0.01


def test_global_tree_nodes_spend_the_issues_32_to_44_percent_under_theory():
    """The global scope's 2 x depth nodes over eps 0.01-0.5 and T = 1e3 ... 1e7 (powers of ten):
    the issue's 32-44% with its rounding (0.005) at the low end; the top is 0.449 (eps 0.5,
    T = 1e4), which rounds to 45%: the issue's 44 is one point low there."""
    shares = []
    for eps in EPS:
        for T in POWERS_T:
            g = fraction(engine_mechanism("tree", eps, T, "global", "theory"), eps)
            exact = closed_form_eps(theory_tree_shift(eps, DELTA, T, 2 * T.bit_length()),
                                    DELTA) / eps
            assert g == pytest.approx(exact, rel=1e-4), (eps, T)
            shares.append(g)
    assert 0.315 <= min(shares) <= 0.325 and 0.435 <= max(shares) <= 0.45, shares


def test_tree_share_is_a_sawtooth_in_T_between_powers_of_ten():
    """Between powers of ten the share moves up to ~5% (depth = T.bit_length() is an integer
    against the formula's continuous ln T): at eps 0.5 the global scope reaches 0.459, above the
    issue's 44% (measured at powers of ten). Closed form only (the PLD agrees above)."""
    def share(eps: float, T: int, scope: int) -> float:
        return closed_form_eps(theory_tree_shift(eps, DELTA, T, scope * T.bit_length()),
                               DELTA) / eps

    grid = [int(t) for t in np.unique(np.logspace(3, 7, 400).astype(int))]
    for eps, lo, hi in ((0.01, 0.214, 0.226), (0.1, 0.267, 0.282), (0.5, 0.301, 0.317)):
        shares = [share(eps, T, 1) for T in grid]
        assert lo <= min(shares) and max(shares) <= hi
        assert max(shares) - min(shares) > 0.01  # the sawtooth is there
    glob = [share(0.5, T, 2) for T in grid]
    assert 0.44 < max(glob) < 0.46


@pytest.mark.parametrize("eps", (*EPS, 2.0))
def test_tight_calibration_spends_all_of_eps(eps):
    for noise, scope in (("gaussian", "epoch"), ("tree", "epoch"), ("tree", "global")):
        for T in (10**3, 10**7):
            f = fraction(engine_mechanism(noise, eps, T, scope, "tight"), eps)
            assert 0.99 <= f <= 1.0005, (noise, scope, T, f)


# -- real runs, the rules path, the column, the page ---------------------------------------
def _run(alg: str, eps: float, calibration: str, **params):
    prob = problems.get_problem("strict_saddle", d=4)
    traj = get_algorithm(alg)(T=5, **params).run(
        prob, prob.stream(1, budget=10**6), Privacy(eps, DELTA, calibration),
        np.random.default_rng(0))
    return traj


def _row(alg: str, eps: float, calibration: str, traj, **extra) -> dict:
    return {"algorithm": alg, "problem": "strict_saddle", "problem_params": {}, "d": 4,
            "n": 10**6, "eps": eps, "delta": DELTA, "calibration": calibration,
            "params": {"T": 5}, "params_used": dict(traj.params), "target_alpha": math.nan,
            "status": "ok", "eps_spent": traj.privacy_spent["eps"],
            "mu_spent": traj.privacy_spent["mu"], "privacy_ledger": traj.privacy_spent, **extra}


@pytest.mark.parametrize("alg", ["gaussian_spider", "tree_spider", "adaptive_tree_spider"])
def test_real_runs_spend_what_their_ledgers_and_the_closed_form_say(alg):
    for calibration in ("theory", "tight"):
        traj = _run(alg, 0.1, calibration)
        rec = eps_spent(alg, traj.params, 0.1, DELTA, calibration)
        assert rec.mechanism.source == "params"
        assert rec.eps_exact == pytest.approx(traj.privacy_spent["eps"], rel=1e-4)
        if calibration == "tight":
            assert rec.spent_fraction >= 0.99
            continue
        if alg == "gaussian_spider":
            shift = theory_gaussian_shift(0.1, DELTA)
        else:  # T = 5: depth 3, global scope (the default): 6 nodes
            assert traj.params["tree_nodes"] == 6
            shift = theory_tree_shift(0.1, DELTA, 5, 6)
        assert rec.eps_exact == pytest.approx(closed_form_eps(shift, DELTA), rel=1e-4)


def test_rules_path_rebuilds_the_mechanism_the_run_used():
    for alg in ("gaussian_spider", "adaptive_tree_spider"):
        traj = _run(alg, 0.1, "theory")
        row = _row(alg, 0.1, "theory", traj)
        stripped = {k: v for k, v in row["params_used"].items()
                    if k not in ("noise_multiplier", "sigma", "leaf_sensitivity", "tree_nodes")}
        rec = eps_spent(alg, stripped, 0.1, DELTA, "theory", problem="strict_saddle",
                        problem_params={}, n=10**6, d=4, cell_params={"T": 5})
        assert rec.mechanism.source == "rules" and "design point" in rec.mechanism.note
        assert rec.eps_exact == pytest.approx(traj.privacy_spent["eps"], rel=1e-4)


def _cells() -> pd.DataFrame:
    rows = []
    for alg in ("gaussian_spider", "adaptive_tree_spider"):
        for calibration in ("theory", "tight"):
            rows.append(_row(alg, 0.1, calibration, _run(alg, 0.1, calibration)))
    mu = gdp_mu(0.5, DELTA)  # a tight full-batch run: its GDP ledger
    rows.append({**rows[0], "algorithm": "dp_gd", "eps": 0.5, "calibration": "tight",
                 "params_used": {}, "privacy_ledger": {"eps": 0.5, "delta": DELTA, "mu": mu,
                                                       "accountant": "gdp"}, "eps_spent": 0.5})
    fams = [[4.0, 0.01, 200]]  # a Poisson-subsampled run: its PLD ledger
    e = pld_epsilons(((4.0, 0.01, 200),), (DELTA,), 1e-4)[0]
    rows.append({**rows[0], "algorithm": "dp_sgd", "eps": 1.0, "calibration": "tight",
                 "params_used": {}, "eps_spent": e, "privacy_ledger": {
                     "eps": e, "delta": DELTA, "mu": None, "accountant": "pld",
                     "families": fams, "discretization": 1e-4}})
    rows.append({**rows[0], "eps": math.inf})  # non-private
    rows.append({**rows[0], "status": "error", "params_used": None, "problem": "no_such"})
    return pd.DataFrame(rows, index=[10 * i for i in range(len(rows))])


def test_spent_fraction_column_on_a_cells_table():
    cells = _cells()
    col = spent_fraction_column(cells)
    assert col.name == "spent_fraction" and list(col.index) == list(cells.index)
    f = col.to_numpy()
    assert abs(f[0] - 0.667) < 0.001 and f[1] >= 0.99  # Gaussian theory, tight
    assert 0.3 < f[2] < 0.45 and f[3] >= 0.99  # adaptive tree (global) theory, tight
    assert 0.99 <= f[4] <= 1.0005  # GDP ledger
    assert f[5] == pytest.approx(cells["eps_spent"].iloc[5] / 1.0, rel=1e-9)  # PLD ledger
    assert math.isnan(f[6]) and math.isnan(f[7])  # non-private; no mechanism to rebuild


def test_table_and_report_page(tmp_path):
    cells = _cells()
    table = spent_fraction_table(cells)
    row = table[(table["algorithm"] == "gaussian_spider") & (table["calibration"] == "theory")]
    assert len(row) == 1 and row["fraction_median"].iloc[0] == pytest.approx(0.6668, abs=1e-3)
    assert row["source"].iloc[0] == "params" and row["ledger_gap"].iloc[0] < 1e-4
    assert set(table["algorithm"]) == {"gaussian_spider", "adaptive_tree_spider", "dp_gd",
                                       "dp_sgd"}
    data = StoreData(spec=SimpleNamespace(name="toy"), cells=cells, path="", load_curves=None)
    rows = eps_spent_rows(data)
    assert {"spent (median)", "range", "calibration", "instance"} <= set(rows.columns)
    with PdfPages(tmp_path / "p.pdf") as pdf:
        eps_spent_page(pdf, [data])
        eps_spent_page(pdf, [StoreData(SimpleNamespace(name="e"), cells.iloc[:0], "", None)])
        assert pdf.get_pagecount() == 1


@pytest.mark.parametrize("new,old", [("headline4_tight", "headline2"),
                                     ("headline4_tight_ramp", "headline2_ramp")])
def test_fair_calibration_specs_pair_cell_by_cell_with_headline2(new, old):
    """Same problem, window, targets, seeds, knobs and counts data as headline2; only the
    calibration differs (tight for both Spiders)."""
    from pathlib import Path

    from bench.config import load_spec

    root = Path(__file__).resolve().parents[1] / "bench" / "configs"
    a, b = load_spec(root / f"{new}.toml"), load_spec(root / f"{old}.toml")
    assert a.calibration == "tight" and b.calibration == "theory"
    ca, cb = a.cells(), b.cells()
    assert {c.calibration for c in ca} == {"tight"}
    # headline2 grew (issue 55): targets down to 0.0028 and eps = inf controls; the tight spec
    # pairs with its private cells at the tight spec's targets, cell by cell
    targets = {c.content()["target_alpha"] for c in ca}
    cb = [c for c in cb if math.isfinite(c.eps) and c.content()["target_alpha"] in targets]
    strip = [{k: v for k, v in c.content().items() if k != "calibration"} for c in ca]
    assert strip == [{k: v for k, v in c.content().items() if k != "calibration"} for c in cb]
    assert {c.counts_stream for c in ca} == {c.counts_stream for c in cb}
    assert [(f.view, f.x, f.mode) for f in a.fits] == [(f.view, f.x, f.mode) for f in b.fits]
    assert all(fb.window[0] <= fa.window[0] and fa.window[1] <= fb.window[1]
               for fa, fb in zip(a.fits, b.fits, strict=True))
    assert {c.algorithm for c in ca} == {"gaussian_spider", "adaptive_tree_spider"}


def test_a_ledger_holding_only_the_rounding_record_reads_as_the_cells_gdp():
    """Since the counts-mode rounding is declared (issue 60) a run's ledger can hold only
    {eps_with_rounding, largest_batch, sensitivity_rounding}; the accountant and mu it lacks
    are the cell's GDP ones. It once read as an unknown ledger: spent fraction inf (the
    empirical SOSP route's rows in the reference CSV). Reference: the GDP closed form."""
    mu = gdp_mu(0.1, 1e-6)
    rounding = {"eps_with_rounding": 0.1000000000009, "largest_batch": 31623,
                "sensitivity_rounding": 8.0e-12}
    with_record = eps_spent("empirical_sosp_spider", {}, 0.1, 1e-6, ledger=rounding, mu=mu)
    without = eps_spent("empirical_sosp_spider", {}, 0.1, 1e-6, ledger=None, mu=mu)
    assert with_record is not None and without is not None
    assert with_record.spent_fraction == pytest.approx(1.0, abs=1e-6)
    assert with_record.spent_fraction == without.spent_fraction
