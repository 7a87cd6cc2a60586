"""The sixth edition's verdict rule (issue 70, items 1 and 4) on planted curves through the real
engine path (the seeds' fit, the design, the Spiders' real rules, `decide`, the regime gate):
the verdict is monotone in the slope (a steeper curve never reads closer to its claim), a curve
above its own bound reads "exceeds its bound", Pasan and Pagan are each other's rivals, and the
band of slopes a row states is the band planting finds."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from analysis.verdict_engine import margins
from analysis.verdict_engine.claim_test import claim_test
from analysis.verdict_engine.rules_curve import RulesCurve
from analysis.verdict_engine.typed import DIRECTION, Verdict, VerdictKind, kind_of
from tests import headline_fixture
from tests.test_verdict_engine import SPIDER_P, SQRT_PRIVACY, _claim, _headline, _judge, _points

TILTS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)


def _side(kind: VerdictKind) -> int:
    """-1: a slope test rejected on the slow side (slower than its rules or than claimed); +1: on
    the fast side; 0: agrees, or cannot tell. (The bound's level check has no side: a tilt about
    the centre can lift either end; the headline's tilts stay below their bound.)"""
    return {"slower": -1, "faster": +1}.get(DIRECTION.get(kind, ""), 0)


@pytest.mark.parametrize("alg", list(SPIDER_P))
def test_the_verdict_is_monotone_in_the_slope(alg):
    """Issue 70, item 4: the measured curve tilted by +-0.005 to +-0.2 (and the curve at the
    claim's slope tilted so): read from the slowest to the fastest tilt, the verdict's side never
    moves back (slow-side rejection, then agreement or 'cannot tell', then fast-side rejection),
    so a steeper curve never reads closer to its claim. n* on alpha: a steeper (more negative)
    slope is slower."""
    pts = headline_fixture.load(alg)
    measured = float(np.polyfit(np.log(pts["x"]), np.log(pts["y"]), 1)[0])
    for start in (measured, SPIDER_P[alg]):
        slopes = sorted({start + t for t in (0.0, *TILTS, *(-t for t in TILTS))})  # slow -> fast
        seen = []
        for s in slopes:
            out = _headline(alg, headline_fixture.planted_curve(alg, slope=s), n_boot=300)
            assert out["verdict_kind"] != VerdictKind.EXCEEDS_BOUND, out["verdict_reason"]
            seen.append((s, _side(VerdictKind(out["verdict_kind"])), out["verdict"]))
        for (s0, r0, v0), (s1, r1, v1) in itertools.pairwise(seen):
            assert r1 >= r0, f"{alg}: slope {s0:.3f} reads {v0!r}, faster {s1:.3f} reads {v1!r}"


@pytest.mark.parametrize("alg", list(SPIDER_P))
def test_the_stated_band_is_the_band_planting_finds(alg):
    """The row's verdict band (the tilts of its curve that receive its kind): the curve tilted to
    0.01 inside each finite edge receives the row's kind, tilted 0.01 outside does not."""
    from analysis.verdict_engine.replant import tilt

    pts = headline_fixture.load(alg)
    out = _headline(alg, pts, n_boot=300)
    kind, est = out["verdict_kind"], out["exponent"]
    lo, hi = out["verdict_band_low"], out["verdict_band_high"]
    assert math.isfinite(lo) or math.isfinite(hi)
    assert (not math.isfinite(lo) or lo <= est) and (not math.isfinite(hi) or est <= hi)
    for edge, inward in ((lo, +1), (hi, -1)):
        if not math.isfinite(edge):
            continue
        inside = _headline(alg, tilt(pts, edge + inward * 0.01, est), n_boot=300)
        outside = _headline(alg, tilt(pts, edge - inward * 0.01, est), n_boot=300)
        assert inside["exponent"] == pytest.approx(edge + inward * 0.01, abs=1e-9)
        assert inside["verdict_kind"] == kind, (edge, inside["verdict_reason"])
        assert outside["verdict_kind"] != kind, (edge, outside["verdict_reason"])


def test_a_curve_above_its_own_bound_reads_exceeds_its_bound():
    claim = _claim(SQRT_PRIVACY)
    x = np.geomspace(1e-3, 1e-1, 7)
    law = -2.0 * np.log(x)
    pts = _points(x, law, 10, 0.05, 11)
    # the rules' bound at 0.7 of the measured curve: 1.43x above it, far beyond 10 seeds' noise
    low = RulesCurve(0.7 * np.exp(law), np.full(7, 0.99), np.full(7, 1e4), "planted")
    out = _judge(pts, claim, -2.0, "sample_complexity", "alpha", low)
    assert out["verdict_kind"] == VerdictKind.EXCEEDS_BOUND, out["verdict_reason"]
    assert out["verdict"].startswith("exceeds its bound (1.4")
    assert out["bound_exceed_low"] > 1
    # the seeds' mean 0.9x the bound (lognormal seeds of noise 0.3: the mean is exp(0.045) times
    # the median): below it, not exceeded
    near = RulesCurve(np.exp(law + 0.045) / 0.9, np.full(7, 0.99), np.full(7, 1e4), "planted")
    out = _judge(_points(x, law, 10, 0.3, 12), claim, -2.0, "sample_complexity", "alpha", near)
    assert out["verdict_kind"] != VerdictKind.EXCEEDS_BOUND, out["verdict_reason"]
    # below its bound (ratio 0.5): the slope tests decide (it follows its rules)
    high = RulesCurve(2.0 * np.exp(law), np.full(7, 0.99), np.full(7, 1e4), "planted")
    out = _judge(pts, claim, -2.0, "sample_complexity", "alpha", high)
    assert out["verdict_kind"] != VerdictKind.EXCEEDS_BOUND


def test_the_exceedance_check_holds_its_level_under_the_null():
    """A curve exactly at its bound (mean = bound at every point, lognormal seeds): 'exceeds its
    bound' in at most 5% of 200 designs (Bonferroni keeps the family-wise level)."""
    from analysis.verdict_engine.design import design_from_points
    from analysis.verdict_engine.verdict_rule import exceedance

    x = np.geomspace(1e-3, 1e-1, 7)
    sigma = 0.3
    hits = 0
    for seed in range(200):
        pts = _points(x, -2.0 * np.log(x), 10, sigma, 1000 + seed)
        design = design_from_points(pts)
        # the mean of exp(N(mu, sigma^2)) is exp(mu + sigma^2 / 2)
        bound = RulesCurve(np.exp(-2.0 * np.log(design.x) + sigma ** 2 / 2), np.full(7, 0.99),
                           np.full(7, 1e4), "planted")
        hits += exceedance(design, bound).worst()[0] > 1
    assert hits / 200 <= 0.05


def test_pasan_and_pagan_are_each_others_rivals():
    for a, b in (("pasan", "pagan"), ("pagan", "pasan"), ("pagan_public_scales", "pasan"),
                 ("pagan_private_scales", "pasan")):
        assert margins.RIVALS[a] == b
    # Pagan's polylog band (its logs move the slope by ~0.47 over d 10..1000) accepts slopes up to
    # just under Pasan's 0.5: wider than the gap, so the O~ test cannot tell them apart
    ct = claim_test(0.1, 0.09, 0.11, 0.0, 0.47, 0.025, "error", "d", rival=0.5)
    assert ct.untestable and ct.accepts_high >= 0.5
    ct = claim_test(0.5, 0.49, 0.51, 0.5, 0.0, 0.025, "error", "d", rival=0.0)
    assert not ct.untestable


def test_the_typed_verdict_renders_and_reads_back():
    v = Verdict(VerdictKind.RULES_SLOWER, by=-0.4481)
    assert v.text == "slower than its rules by 0.448" and kind_of(v.text) is VerdictKind.RULES_SLOWER
    v = Verdict(VerdictKind.NOT_REFUTED, accepts="accepts 0.1..0.2")
    assert v.text == "not refuted by the O~ claim (accepts 0.1..0.2)"
    assert kind_of(v.text) is VerdictKind.NOT_REFUTED
    assert kind_of("follows its rules, whose asymptote is not the claim") is VerdictKind.FOLLOWS_OTHER
    assert kind_of("slower than claimed even with logs") is VerdictKind.CLAIM_SLOWER
    assert kind_of("exceeds its bound (1.28x)") is VerdictKind.EXCEEDS_BOUND
    assert kind_of("consistent up to logs") is None  # a fourth-edition name
    assert Verdict(VerdictKind.CONSISTENT, band_low=math.nan, band_high=0.3).band == "-inf..0.3"
