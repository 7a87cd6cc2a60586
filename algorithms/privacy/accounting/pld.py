"""The accountant for Poisson-subsampled Gaussian releases (DP-SGD, private SpiderBoost's
difference steps, the ellipsoid methods), which are not mu-GDP for any mu: compositions are
evaluated on dp-accounting's privacy loss distribution (PLD) accountant, and noise scales are
refined until they spend at least 99% of eps (`_calibrate_pld`)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from algorithms.privacy.accounting.gdp import check_eps_delta, gdp_mu, spent_eps


def _replace_one():
    import dp_accounting

    return dp_accounting.NeighboringRelation.REPLACE_ONE


#: One family of Gaussian releases in a privacy ledger: (noise multiplier z, Poisson sampling
#: rate q, count). Each release adds N(0, z^2 C^2) to a sum of per-record vectors clipped to C;
#: under replace-one neighbours the sum moves by up to 2C, so a full-batch release (q = 1) is
#: 2/z-GDP. q < 1: the batch is a Poisson sample of rate q (not mu-GDP for any mu).
GaussianFamily = tuple[float, float, int]


#: The coarsest PLD discretization a calibration starts from, and the finest it refines to.
_PLD_COARSEST, _PLD_FINEST = 1e-3, 1e-7


#: The smallest noise scale a PLD search tries: a PLD evaluation costs about 1/scale^2 (0.02:
#: 13 s), so where even this scale meets the budget (large eps, few steps, tiny q) it is
#: used, with more noise than needed; the run's ledger then stores the smaller eps it spends.
_SCALE_FLOOR = 0.05


#: Calibrations must spend at least (1 - this) of eps: each family gets the noise its
#: accountant needs, no more (the protocol's fair rules).
CALIBRATION_SLACK = 0.01


def _dp_event(families: tuple[GaussianFamily, ...]):
    import dp_accounting

    parts = []
    for z, q, count in families:
        g = dp_accounting.GaussianDpEvent(z)
        parts.append(dp_accounting.SelfComposedDpEvent(
            g if q >= 1 else dp_accounting.PoissonSampledDpEvent(q, g), int(count)))
    return parts[0] if len(parts) == 1 else dp_accounting.ComposedDpEvent(parts)


def _live(families: tuple[GaussianFamily, ...]) -> tuple[GaussianFamily, ...]:
    return tuple((float(z), float(q), int(c)) for z, q, c in families if int(c) > 0)


@functools.lru_cache(maxsize=4096)  # a pure function of hashable arguments; runs repeat it
def pld_epsilons(families: tuple[GaussianFamily, ...], deltas: tuple[float, ...],
                 discretization: float = 1e-4) -> tuple[float, ...]:
    """eps at each delta of the adaptive composition of the `families` (see `GaussianFamily`),
    replace-one neighbours, from dp-accounting's privacy loss distribution (PLD) accountant: a
    pessimistic discretization at `discretization`, so an upper bound on the true eps."""
    from dp_accounting import pld

    families = _live(families)
    if not families:
        return tuple(0.0 for _ in deltas)
    acc = pld.PLDAccountant(neighboring_relation=_replace_one(),
                            value_discretization_interval=discretization)
    acc.compose(_dp_event(families))
    return tuple(float(acc.get_epsilon(d)) for d in deltas)


def poisson_gaussian_eps(z: float, q: float, steps: int, delta: float,
                         discretization: float = 1e-4) -> float:
    """eps of `steps` compositions of the Poisson-subsampled (rate q) Gaussian mechanism whose
    noise std is z C on a sum of per-record vectors clipped to C (`pld_epsilons`)."""
    return pld_epsilons(((z, q, steps),), (delta,), discretization)[0]


def full_batch_mu(families: tuple[GaussianFamily, ...]) -> float | None:
    """The exact GDP mu of the composition when every release is full-batch, else None."""
    families = _live(families)
    if any(q < 1 for _, q, _ in families):
        return None
    return math.sqrt(sum(c * (2.0 / z) ** 2 for z, _, c in families)) if families else 0.0


@dataclass(frozen=True)
class PldCalibration:
    """A noise scale found on the PLD accountant, with what it needs to be re-derived.

    scale: the calibrated parameter s (each family's multiplier is a fixed multiple of it).
    families: the composed releases at that scale. discretization: the PLD interval at which
    the composition was certified (its pessimistic eps at delta <= the target eps).
    eps: that certified eps (the run's spent eps)."""

    scale: float
    families: tuple[GaussianFamily, ...]
    discretization: float
    eps: float
    delta: float


def _calibrate_pld(families_at, eps: float, delta: float, guess: float) -> PldCalibration:
    """The smallest scale s (to CALIBRATION_SLACK of eps) whose composition `families_at(s)` is
    (eps, delta)-DP on the PLD accountant (replace-one).

    A pessimistic PLD over-states eps by up to about one discretization interval per
    composed release, so a search at a fixed coarse interval over-noises long compositions (at
    interval 1e-3, 828 steps at eps 0.1 spent 0.0898; 5,000 spent 0.046). So: search (bisection,
    dp-accounting's `calibrate_dp_mechanism`) at an interval, re-evaluate the answer at a ten
    times finer one, and refine the interval while the finer eps shows more than the slack
    unspent. The answer is certified at the interval it was searched at (private), and spends
    at least 1 - CALIBRATION_SLACK of eps by the finer evaluation (tight)."""
    import dp_accounting
    from dp_accounting import pld

    def eps_at(s: float, disc: float) -> float:
        return pld_epsilons(families_at(s), (delta,), disc)[0]

    disc = min(_PLD_COARSEST, eps / 100)
    # A bracket [lo, hi] with eps(lo) > target >= eps(hi) at the starting interval.
    hi = max(guess, 1e-2)
    while eps_at(hi, disc) > eps:
        hi *= 2
    lo = max(hi / 2, _SCALE_FLOOR)
    while eps_at(lo, disc) <= eps:
        if lo <= _SCALE_FLOOR:  # see _SCALE_FLOOR: more noise than needed, stored honestly
            return PldCalibration(lo, _live(families_at(lo)), disc, eps_at(lo, disc), delta)
        hi, lo = lo, max(lo / 2, _SCALE_FLOOR)
    s = float(dp_accounting.calibrate_dp_mechanism(
        lambda: pld.PLDAccountant(neighboring_relation=_replace_one(),
                                  value_discretization_interval=disc),
        lambda s: _dp_event(_live(families_at(s))), eps, delta,
        dp_accounting.ExplicitBracketInterval(lo, hi), tol=1e-3 * lo))
    while True:
        finer = eps_at(s, disc / 10)
        if finer >= (1 - CALIBRATION_SLACK / 2) * eps or disc / 10 < _PLD_FINEST:
            return PldCalibration(s, _live(families_at(s)), disc, eps_at(s, disc), delta)
        disc /= 10
        s = _secant_down(lambda v, disc=disc: eps_at(v, disc), s, finer, eps)


def _secant_down(eps_of, s: float, e: float, eps: float, iters: int = 6) -> float:
    """From a private scale s (eps_of(s) = e <= eps), the smallest private scale near the target
    (1 - CALIBRATION_SLACK / 4) eps, by secant steps on log eps against log s (eps is close to
    a power of s, about 1/s for Gaussians), keeping the best private point seen: a handful of
    accountant evaluations where a bisection over [s/2, s] takes a dozen."""
    target = (1 - CALIBRATION_SLACK / 4) * eps
    best, slope = s, -1.0
    s_prev, e_prev = s, e
    for _ in range(iters):
        if e_prev >= target * (1 - CALIBRATION_SLACK / 8) and e_prev <= eps:
            break
        nxt = s_prev * math.exp(math.log(target / e_prev) / slope)
        e_next = eps_of(nxt)
        if e_next <= eps and nxt < best:
            best = nxt
        if e_next > 0 and e_next != e_prev and nxt != s_prev:
            slope = math.log(e_next / e_prev) / math.log(nxt / s_prev)
            if not slope < 0:
                slope = -1.0
        s_prev, e_prev = nxt, e_next
    return best


@functools.lru_cache(maxsize=1024)
def poisson_gaussian_calibration(eps: float, delta: float, q: float, steps: int) -> PldCalibration:
    """The smallest noise multiplier z (`_calibrate_pld`: to 1% of eps) whose `steps`-fold
    Poisson-subsampled Gaussian (see `GaussianFamily`) is (eps, delta)-DP, by dp-accounting's
    PLD. q = 1 is the full-batch case, exact in closed form: each release is 2/z-GDP, so
    z = 2 sqrt(steps) / gdp_mu(eps, delta)."""
    check_eps_delta(eps, delta)
    if not 0 < q <= 1:
        raise ValueError(f"q={q!r} is invalid: must be a sampling rate in (0, 1]")
    if not (isinstance(steps, int) and steps >= 1):
        raise ValueError(f"steps={steps!r} is invalid: must be an integer >= 1")
    if q == 1:
        z = 2 * math.sqrt(steps) / gdp_mu(eps, delta)
        return PldCalibration(z, ((z, 1.0, steps),), 0.0, eps, delta)
    # The full-batch multiplier scaled by q is about the answer for small q (amplification by
    # subsampling: the q sqrt(T) / z central limit), so the bracket search starts there.
    guess = max(0.2, 2 * q * math.sqrt(steps) / gdp_mu(eps, delta))
    return _calibrate_pld(lambda z: ((z, q, steps),), eps, delta, guess)


def poisson_gaussian_multiplier(eps: float, delta: float, q: float, steps: int) -> float:
    """The noise multiplier of `poisson_gaussian_calibration`."""
    return poisson_gaussian_calibration(eps, delta, q, steps).scale


@functools.lru_cache(maxsize=256)
def two_family_calibration(eps: float, delta: float, anchors: int, r1: float, steps: int,
                           q2: float, r2: float) -> PldCalibration:
    """The smallest s (to 1% of eps) such that `anchors` full-batch Gaussian releases with
    noise multiplier s r1 composed with `steps` Poisson-subsampled (rate q2) Gaussian releases
    with multiplier s r2 are (eps, delta)-DP together (replace-one; dp-accounting's PLD).
    Private SpiderBoost's two oracle families share one budget this way (its module docstring).
    With q2 = 1 every release is full-batch and s is exact in closed form (GDP)."""
    check_eps_delta(eps, delta)
    for name, v in (("anchors", anchors), ("steps", steps)):
        if not (isinstance(v, int) and v >= 0):
            raise ValueError(f"{name}={v!r} is invalid: must be an integer >= 0")
    if not 0 < q2 <= 1:
        raise ValueError(f"q2={q2!r} is invalid: must be a sampling rate in (0, 1]")

    def families(s: float) -> tuple[GaussianFamily, ...]:
        return ((s * r1, 1.0, anchors), (s * r2, q2, steps))

    if q2 == 1 or steps == 0:  # all full-batch: mu^2 = 4 (anchors / r1^2 + steps / r2^2) / s^2
        s = 2 * math.sqrt(anchors / r1**2 + (steps / r2**2 if q2 == 1 else 0)) / gdp_mu(eps, delta)
        return PldCalibration(s, _live(families(s)), 0.0, eps, delta)
    # Lower bound: the anchors alone need s r1 >= 2 sqrt(anchors) / mu (exact GDP).
    guess = max(1e-2, 2 * math.sqrt(max(anchors, 1)) / (gdp_mu(eps, delta) * r1))
    return _calibrate_pld(families, eps, delta, guess)


def two_family_noise_scale(eps: float, delta: float, anchors: int, r1: float, steps: int,
                           q2: float, r2: float) -> float:
    """The scale s of `two_family_calibration`."""
    return two_family_calibration(eps, delta, anchors, r1, steps, q2, r2).scale


def with_noise_factor(cal: PldCalibration, factor: float) -> PldCalibration:
    """The same composition with every noise multiplier times `factor` >= 1 (a run told to add
    more noise than its budget needs): what it really spends, at the same interval."""
    if not factor >= 1:
        raise ValueError(f"factor={factor!r} is invalid: must be >= 1 (never less noise than "
                         "the calibration)")
    if factor == 1:
        return cal
    fams = tuple((z * factor, q, c) for z, q, c in cal.families)
    mu = full_batch_mu(fams)
    eps = spent_eps(mu, cal.delta) if mu is not None else \
        pld_epsilons(fams, (cal.delta,), cal.discretization)[0]
    return PldCalibration(cal.scale * factor, fams, cal.discretization, eps, cal.delta)
