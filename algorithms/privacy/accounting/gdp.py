"""Gaussian differential privacy (Dong, Roth and Su 2022): the tight and the theory
calibrations of Gaussian and tree-mechanism releases, mu <-> (eps, delta), and the noise
multiplier of a composition of full-batch releases."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

CALIBRATIONS = ("tight", "theory")


def require_calibration(algorithm: str, calibration: str, allowed: tuple[str, ...]) -> None:
    """ValueError (one line) unless `algorithm`, which implements the calibrations `allowed`,
    can honour `calibration`."""
    if calibration not in allowed:
        raise ValueError(f"calibration={calibration!r} is invalid for {algorithm}: it implements "
                         f"{', '.join(allowed)} only")


def check_eps_delta(eps: float, delta: float) -> None:
    if not (isinstance(eps, (int, float)) and eps > 0 and not math.isnan(eps)):
        raise ValueError(f"eps={eps!r} is invalid: must be > 0 (math.inf for non-private)")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta={delta!r} is invalid: must be in (0, 1)")


def gdp_delta(mu: float, eps: float) -> float:
    """delta(eps) of mu-GDP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (DRS22 Cor. 2.13)."""
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = -eps / mu + mu / 2
    b = -eps / mu - mu / 2
    # e^eps Phi(b) computed in log space to avoid overflow for large eps.
    second = math.exp(eps + log_ndtr(b)) if b > -40 or eps < 700 else 0.0
    return max(0.0, float(ndtr(a)) - second)


def gdp_eps(mu: float, delta: float) -> float:
    """The smallest eps with mu-GDP => (eps, delta)-DP."""
    if mu <= 0:
        return 0.0
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(mu, hi) > delta:
        hi *= 2
        if hi > 1e6:
            return math.inf
    return brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12)


@functools.lru_cache(maxsize=4096)  # a pure function of two floats; a run calibrates several times
def gdp_mu(eps: float, delta: float) -> float:
    """The largest mu such that mu-GDP is (eps, delta)-DP (root of gdp_delta(mu, eps) = delta)."""
    check_eps_delta(eps, delta)
    if math.isinf(eps):
        return math.inf
    hi = 1.0
    while gdp_delta(hi, eps) < delta:
        hi *= 2
    lo = 0.0
    mu = brentq(lambda m: gdp_delta(m, eps) - delta, lo, hi, xtol=1e-14, rtol=1e-14)
    # Step to the safe side of the root, judged in 50-digit arithmetic: the float formula
    # (a difference of two close normal tails) is off by up to ~1e-11 relative at small eps
    # and delta, so checking it against itself let mu overshoot delta.
    step = 1e-15
    while _gdp_delta_precise(mu, eps) > delta:
        mu *= 1.0 - step
        step *= 2.0
    return mu


def _gdp_delta_precise(mu: float, eps: float) -> float:
    """gdp_delta in 50-digit arithmetic (mpmath), rounded up to the next float."""
    import mpmath

    with mpmath.workdps(50):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        value = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
    return math.nextafter(float(value), math.inf)


def gaussian_sigma(eps: float, delta: float, sensitivity: float = 1.0) -> float:
    """Tight noise std for one Gaussian release of L2 `sensitivity` under (eps, delta)-DP.

    Equals the analytic Gaussian mechanism of Balle and Wang (2018, Theorem 8)."""
    if sensitivity < 0:
        raise ValueError(f"sensitivity={sensitivity!r} is invalid: must be >= 0")
    check_eps_delta(eps, delta)
    if math.isinf(eps) or sensitivity == 0:
        return 0.0
    return sensitivity / gdp_mu(eps, delta)


@dataclass(frozen=True)
class Calibration:
    """The outcome of calibrating one mechanism.

    sigma: noise std per coordinate (per node for the tree). multiplier: sigma per unit of
    sensitivity. nodes: how many Gaussian values one record can move (1 for a single
    release, the tree depth (or twice it) for the tree). floored: the paper formula gave
    less noise than needed and the tight value was used. mu: the GDP parameter spent.
    """

    sigma: float
    multiplier: float
    sensitivity: float
    nodes: int
    method: str
    floored: bool
    mu: float


def calibrate(eps: float, delta: float, sensitivity: float, *, nodes: int = 1,
              method: str = "tight", tree_steps: int | None = None) -> Calibration:
    """Noise std for a mechanism where one record moves `nodes` Gaussian values by <= sensitivity.

    `method="theory"` uses the paper formula (tree: Theorem 2.2 of seed 000 with
    Sigma = tree_steps; single release: sqrt(2 log(1.25/delta))/eps), floored at tight.
    """
    check_eps_delta(eps, delta)
    if method not in CALIBRATIONS:
        raise ValueError(f"calibration={method!r} is invalid: must be one of {CALIBRATIONS}")
    if not (isinstance(nodes, int) and nodes >= 1):
        raise ValueError(f"nodes={nodes!r} is invalid: must be an integer >= 1")
    if sensitivity < 0:
        raise ValueError(f"sensitivity={sensitivity!r} is invalid: must be >= 0")
    if math.isinf(eps):
        return Calibration(0.0, 0.0, sensitivity, nodes, method, False, math.inf)
    mu = gdp_mu(eps, delta)
    tight_mult = math.sqrt(nodes) / mu
    mult, floored = tight_mult, False
    if method == "theory":
        if nodes == 1 and tree_steps is None:
            paper = math.sqrt(2 * math.log(1.25 / delta)) / eps
        else:
            steps = max(2, tree_steps or 2**nodes)
            paper = 4 * math.sqrt(math.log(steps) * math.log(1 / delta)) / eps
        if paper >= tight_mult:
            mult = paper
        else:
            floored = True
    sigma = mult * sensitivity
    spent = math.sqrt(nodes) / mult if mult > 0 else math.inf
    return Calibration(sigma, mult, sensitivity, nodes, method, floored, spent)


def spent_eps(mu: float, delta: float) -> float:
    """eps spent at `delta` by a mechanism that is mu-GDP (inf for a non-private run)."""
    return math.inf if math.isinf(mu) else gdp_eps(mu, delta)


def composed_gaussian_multiplier(eps: float, delta: float, releases: int) -> float:
    """Noise multiplier z (std per unit of L2 sensitivity) for `releases` adaptively composed
    Gaussian releases that together are (eps, delta)-DP: each is 1/z-GDP and GDP composes
    exactly (mu^2 adds), so z = sqrt(releases) / gdp_mu(eps, delta)."""
    if not (isinstance(releases, int) and releases >= 1):
        raise ValueError(f"releases={releases!r} is invalid: must be an integer >= 1")
    return math.sqrt(releases) / gdp_mu(eps, delta)
