"""The accountant: closed forms, the analytic Gaussian mechanism, dp-accounting's PLD
accountant as a second implementation, and a property test that calibrated noise never
spends more than the target eps."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from algorithms.privacy.accounting.gdp import calibrate, gaussian_sigma, gdp_eps, gdp_mu
from algorithms.privacy.mechanisms import TreeMechanism


def balle_wang_delta(eps, delta_sens, sigma):
    """Analytic Gaussian mechanism (Balle and Wang 2018, Theorem 8), written independently."""
    a = delta_sens / (2 * sigma) - eps * sigma / delta_sens
    b = -delta_sens / (2 * sigma) - eps * sigma / delta_sens
    return norm.cdf(a) - math.exp(eps) * norm.cdf(b)


@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-6), (1.0, 1e-5), (3.0, 1e-8), (8.0, 1e-3)])
def test_single_gaussian_is_the_analytic_gaussian_mechanism(eps, delta):
    sigma = gaussian_sigma(eps, delta, sensitivity=2.0)
    assert balle_wang_delta(eps, 2.0, sigma) <= delta * (1 + 1e-9)
    # ... and it is the smallest such sigma: 0.1% less noise violates delta.
    assert balle_wang_delta(eps, 2.0, sigma * 0.999) > delta


def test_known_value_and_classical_formula():
    # Balle and Wang (2018), Fig. 2 region: eps = 1, delta = 1e-5 needs sigma ~ 3.73.
    assert gaussian_sigma(1.0, 1e-5) == pytest.approx(3.7306, abs=1e-3)
    for eps in (0.05, 0.3, 0.9):
        assert gaussian_sigma(eps, 1e-6) < math.sqrt(2 * math.log(1.25 / 1e-6)) / eps


def pld_eps(noise_multiplier, count, delta):
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_event.GaussianDpEvent(noise_multiplier), count)
    return acc.get_epsilon(delta)


@pytest.mark.slow
def test_matches_dp_accounting_pld_within_one_percent():
    rng = np.random.default_rng(5)
    cases = 0
    for _ in range(24):
        eps = float(10 ** rng.uniform(-1.3, 0.9))
        delta = float(10 ** rng.uniform(-9, -3))
        T = int(10 ** rng.uniform(0.5, 6))
        cal = calibrate(eps, delta, 1.0, nodes=TreeMechanism.depth(T))
        # The tree is a composition of `nodes` Gaussians of sensitivity 1 and std sigma.
        got = pld_eps(cal.sigma, cal.nodes, delta)
        assert got == pytest.approx(eps, rel=0.01)
        cases += 1
    assert cases >= 20


@settings(max_examples=1000, deadline=None)
@given(eps=st.floats(0.01, 10.0), log_delta=st.floats(-12, -2), T=st.integers(1, 10**7),
       s=st.floats(1e-3, 1e3), method=st.sampled_from(["tight", "theory"]))
def test_calibrated_noise_never_spends_more_than_eps(eps, log_delta, T, s, method):
    delta = 10**log_delta
    nodes = TreeMechanism.depth(T)
    cal = calibrate(eps, delta, s, nodes=nodes, method=method, tree_steps=T)
    mu = s * math.sqrt(nodes) / cal.sigma
    # Independent check of the GDP -> (eps, delta) curve (Dong, Roth and Su 2022, Cor. 2.13).
    spent_delta = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert spent_delta <= delta * (1 + 1e-7) + 1e-300
    if method == "theory":
        assert cal.sigma >= calibrate(eps, delta, s, nodes=nodes).sigma * (1 - 1e-12)


def test_monotone_more_noise_less_eps():
    mus = [0.05, 0.2, 0.5, 1.0, 2.0, 5.0]
    eps = [gdp_eps(m, 1e-6) for m in mus]
    assert all(a < b for a, b in itertools.pairwise(eps))
    sig = [gaussian_sigma(e, 1e-6) for e in (0.1, 0.5, 1.0, 4.0)]
    assert all(a > b for a, b in itertools.pairwise(sig))
    assert gdp_mu(1.0, 1e-6) < gdp_mu(1.0, 1e-4)


def test_theory_tree_formula_is_theorem_2_2_when_it_suffices():
    cal = calibrate(0.5, 1e-6, 2.0, nodes=17, method="theory", tree_steps=10**5)
    paper = 4 * 2.0 * math.sqrt(math.log(10**5) * math.log(1e6)) / 0.5
    assert not cal.floored and cal.sigma == pytest.approx(paper)


def test_theory_formula_is_floored_where_it_is_not_private_enough():
    # Classical Gaussian formula at eps = 8 gives too little noise; the tight value is used.
    cal = calibrate(8.0, 1e-3, 1.0, method="theory")
    assert cal.floored and cal.sigma == pytest.approx(gaussian_sigma(8.0, 1e-3))


@pytest.mark.parametrize(("args", "needle"), [
    ((0.0, 1e-6, 1.0), "eps=0.0"), ((-1.0, 1e-6, 1.0), "eps=-1.0"),
    ((1.0, 0.0, 1.0), "delta=0.0"), ((1.0, 1.5, 1.0), "delta=1.5"),
    ((1.0, 1e-6, -1.0), "sensitivity=-1.0"),
])
def test_bad_arguments(args, needle):
    with pytest.raises(ValueError, match=needle):
        calibrate(*args)


def test_infinite_eps_means_no_noise():
    assert gaussian_sigma(math.inf, 1e-6) == 0.0
    assert calibrate(math.inf, 1e-6, 1.0, nodes=5).sigma == 0.0


@pytest.mark.parametrize("eps", [1e-3, 1e-2, 0.1, 0.5, 1.0, 3.0, 10.0, 30.0, 100.0])
def test_gdp_mu_never_overshoots_delta_at_80_digits(eps):
    """Independent check in 80-digit arithmetic (mpmath) over eps 1e-3..100 and delta
    1e-15..0.5: the returned mu spends at most delta, and at least delta (1 - 1e-9). The float
    formula checked against itself overshot by up to 2.5e-11 relative (eps 0.01, delta 1e-15)."""
    import mpmath

    def delta_of(mu: float) -> mpmath.mpf:
        with mpmath.workdps(80):
            m, e = mpmath.mpf(mu), mpmath.mpf(eps)
            return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)

    for delta in (1e-15, 1e-10, 1e-6, 1e-3, 0.1, 0.5):
        spent = delta_of(gdp_mu(eps, delta))
        assert spent <= delta, (eps, delta, float(spent / delta - 1))
        assert spent >= delta * (1 - 1e-9), (eps, delta, float(spent / delta - 1))
