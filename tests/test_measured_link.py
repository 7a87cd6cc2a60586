"""The claim link on data (issue 70, item 3; `analysis.verdict_engine.measured_link`): on planted
curves over two decades, the deepest decade's slope and its CI against closed forms, the link
reached only where the curve's own deep slope is within m of the claim, the rival excluded only
beyond its margin, and the verdict rule reading "follows its rules and reaches the claim on its
deepest decade" for exactly the tilts whose deep slope clears the margin."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.verdict_engine.design import design_from_points
from analysis.verdict_engine.measured_link import measured_link
from analysis.verdict_engine.rules_curve import RulesCurve
from analysis.verdict_engine.typed import VerdictKind
from tests.test_verdict_engine import SQRT_PRIVACY, _claim, _judge, _points

X = np.geomspace(9e-4, 0.09, 13)  # two decades, six points a decade (the headline6 design)


def _design(log_y: np.ndarray, sigma: float = 0.03, reps: int = 8, seed: int = 5):
    return design_from_points(_points(X, log_y, reps, sigma, seed), x_name="alpha")


def test_a_pure_power_law_reads_its_exponent_over_the_deepest_decade():
    """Noise-free: the deepest and first decades' slopes are the exponent, the trend 0."""
    d = _design(-2.0 * np.log(X) + 3.0, sigma=0.0)
    link = measured_link(d, -2.0, 0.083, -7 / 3, None, np.random.default_rng(0))
    assert link.available and link.reached and link.excluded_rival
    assert link.deep[0] == pytest.approx(-2.0, abs=1e-9)
    assert link.first[0] == pytest.approx(-2.0, abs=1e-9)
    assert link.trend[0] == pytest.approx(0.0, abs=1e-9)
    assert link.deep_window == pytest.approx((9e-4, 9e-3), rel=1e-6)
    assert all(s == pytest.approx(-2.0, abs=1e-9) for _, s, _, _ in link.local)


def test_a_two_term_curve_reads_its_closed_form_secants():
    """y = x^-2 + c x^-3 (a bend toward -3 at small x): each decade's OLS slope of log y is the
    closed-form OLS slope of the noise-free curve, and the trend is their difference."""
    c = 2e-3
    ly = np.log(X ** -2.0 + c * X ** -3.0)
    d = _design(ly, sigma=0.0)
    link = measured_link(d, -2.0, 0.083, -7 / 3, None, np.random.default_rng(0))
    lx = np.log(X)
    deep = np.polyfit(lx[:7], ly[:7], 1)[0]
    first = np.polyfit(lx[6:], ly[6:], 1)[0]
    assert link.deep[0] == pytest.approx(deep, abs=1e-9)
    assert link.first[0] == pytest.approx(first, abs=1e-9)
    assert link.trend[0] == pytest.approx(deep - first, abs=1e-9)
    assert deep < first - 0.1  # the bend steepens the deep end, and the link sees it
    assert not link.reached


@pytest.mark.parametrize("slope, reached", [(-2.0, True), (-2.05, True), (-2.15, False),
                                            (-1.85, False)])
def test_the_link_is_reached_only_within_m(slope, reached):
    d = _design(slope * np.log(X), sigma=0.02)
    link = measured_link(d, -2.0, 0.083, -7 / 3, None, np.random.default_rng(1))
    assert link.deep[1] <= slope <= link.deep[2]  # the CI covers the planted slope
    assert link.reached is reached


def test_the_rival_is_excluded_only_beyond_its_margin():
    d = _design(-2.3 * np.log(X), sigma=0.02)
    link = measured_link(d, -2.0, 0.083, -7 / 3, None, np.random.default_rng(1))
    assert not link.excluded_rival  # -2.3 is within m of -7/3
    d = _design(-2.1 * np.log(X), sigma=0.02)
    assert measured_link(d, -2.0, 0.083, -7 / 3, None, np.random.default_rng(1)).excluded_rival


def test_the_ci_covers_the_planted_slope_at_its_level():
    """Coverage of the deepest decade's 95% CI over 60 planted datasets (fixed seeds): at least
    50 of 60 (a binomial(60, 0.95) falls below 51 with probability ~0.03)."""
    hits = 0
    for seed in range(60):
        d = _design(-2.2 * np.log(X), sigma=0.1, seed=100 + seed)
        link = measured_link(d, -2.0, 0.083, -7 / 3, None, np.random.default_rng(seed))
        hits += link.deep[1] <= -2.2 <= link.deep[2]
    assert hits >= 50


def test_a_short_design_carries_no_measured_link():
    x = np.geomspace(2.8e-3, 0.09, 10)  # 1.5 decades: the headline2 design
    d = design_from_points(_points(x, -2 * np.log(x), 5, 0.02, 1), x_name="alpha")
    link = measured_link(d, -2.0, 0.083, -7 / 3, None, np.random.default_rng(0))
    assert not link.available and "1.5 decades" in link.note


def _engine(slope: float) -> dict:
    """A planted two-decade curve through the whole engine with rules that follow it exactly
    (the primary test holds) and whose asymptote the claim is not (the chain would read "not
    the claim" without the measured link)."""
    pts = _points(X, slope * np.log(X) + 10, 8, 0.02, 3)
    rules = RulesCurve(3 * np.exp(slope * np.log(X) + 10), np.full(13, 0.99), np.full(13, 1e4),
                       "planted")
    return _judge(pts, _claim(SQRT_PRIVACY), -2.0, "sample_complexity", "alpha", rules,
                  rival=-7 / 3, n_boot=300)


def test_the_verdict_reads_the_measured_link():
    """A curve whose deepest decade is within m of -2 reads FOLLOWS_MEASURED; one 0.2 steeper
    does not (its deep CI clears the margin), whatever the rules' asymptote says."""
    near = _engine(-2.02)
    assert near["verdict_kind"] == VerdictKind.FOLLOWS_MEASURED, near["verdict_reason"]
    assert "reaches the claim" in near["claim_link"]
    assert near["link_reached"] and near["link_excludes_rival"]
    assert near["separates_rival"].startswith("yes (measured)")
    far = _engine(-2.2)
    assert far["verdict_kind"] != VerdictKind.FOLLOWS_MEASURED, far["verdict_reason"]
    assert not far["link_reached"]
    lo, hi = near["verdict_band_low"], near["verdict_band_high"]
    # the band of FOLLOWS_MEASURED: the tilts whose deep CI stays within -2 +- m and whose
    # residual CI against the rules stays within +-m (both move by the tilt)
    m, est = 0.0833, near["exponent"]
    half_lo = near["link_deep"] - near["link_deep_low"]
    half_hi = near["link_deep_high"] - near["link_deep"]
    shift = est - near["link_deep"]
    deep_lo, deep_hi = -2.0 - m + half_lo + shift, -2.0 + m - half_hi + shift
    rules_lo = est - m - near["rules_residual_low"]
    rules_hi = est + m - near["rules_residual_high"]
    assert lo == pytest.approx(max(deep_lo, rules_lo), abs=0.002)
    assert hi == pytest.approx(min(deep_hi, rules_hi), abs=0.002)


def test_without_a_rules_decision_the_deep_decade_reads_reaches_the_claim():
    """No rules curve: a two-decade curve at -2.02 reads "reaches the claim on its deepest
    decade" (before the O~ test's "consistent"); at -2.2 its deep CI clears the margin and it does
    not."""
    claim = _claim(SQRT_PRIVACY)
    near = _judge(_points(X, -2.02 * np.log(X), 8, 0.02, 3), claim, -2.0, "sample_complexity",
                  "alpha", None, rival=-7 / 3, n_boot=300)
    assert near["verdict_kind"] == VerdictKind.REACHES_MEASURED, near["verdict_reason"]
    far = _judge(_points(X, -2.2 * np.log(X), 8, 0.02, 3), claim, -2.0, "sample_complexity",
                 "alpha", None, rival=-7 / 3, n_boot=300)
    assert far["verdict_kind"] != VerdictKind.REACHES_MEASURED


def test_a_bent_curve_reads_monotone_in_the_slope():
    """A two-decade curve whose first decade is 0.12 steeper than its deepest (the measured
    Gaussian headline's bend), tilted by -0.4..+0.4 through the engine (no rules): read from
    the slowest to the fastest tilt, the verdict's side (slow-side rejection, agreement, fast-side
    rejection) never moves back, and the measured link's kinds sit inside the agreement."""
    from analysis.verdict_engine.typed import DIRECTION

    claim = _claim(SQRT_PRIVACY)
    lx = np.log(X)
    base = -2.0 * lx - 0.03 * (lx - lx.mean()) ** 2  # local slope -2 - 0.06 (lx - mean)
    sides = []
    for t in np.arange(-0.4, 0.41, 0.02):
        out = _judge(_points(X, base + t * lx, 8, 0.02, 3), claim, -2.0, "sample_complexity",
                     "alpha", None, rival=-7 / 3, n_boot=200)
        kind = VerdictKind(out["verdict_kind"])
        sides.append({"slower": -1, "faster": +1}.get(DIRECTION.get(kind, ""), 0))
    assert sides == sorted(sides), sides
    assert sides[0] == -1 and sides[-1] == +1
