"""The one accountant: (eps, delta) and a sensitivity profile -> noise scales.

Two calibrations, both (eps, delta)-DP:

* **tight**: exact Gaussian differential privacy (Dong, Roth and Su 2022). A Gaussian
  release with L2 sensitivity s and noise std sigma is mu-GDP with mu = s / sigma; an
  adaptive composition of such releases is sqrt(sum mu_i^2)-GDP; mu-GDP is (eps, delta)-DP
  exactly when delta >= Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (their Corollary
  2.13). For one release this is the analytic Gaussian mechanism of Balle and Wang (2018).
  We calibrate mu by root finding on that curve.
* **theory**: the papers' formulas: sigma = s sqrt(2 log(1.25/delta)) / eps for one Gaussian
  release (Dwork and Roth 2014, Thm A.1) and sigma = 4 s sqrt(log T log(1/delta)) / eps for
  the tree mechanism over T steps (seed 000, Theorem 2.2). Those formulas are proven only
  for some ranges (eps < 1, natural logs, T >= 3); wherever a formula gives *less* noise
  than (eps, delta) needs, the tight sigma is used instead (`floored=True` says so), so
  the noise is never below what the guarantee needs.

Sensitivity profiles: a record of a Spider run enters one Gaussian release (parallel
composition over disjoint batches), or one leaf of a binary tree, which changes `depth`
node values (one per level) by at most s each: in GDP terms mu = s sqrt(nodes) / sigma.

Poisson-subsampled Gaussians (DP-SGD, private SpiderBoost's difference steps, the ellipsoid
methods) are not mu-GDP for any mu; they are calibrated on dp-accounting's privacy loss
distribution (PLD) accountant, refined until the noise spends at least 99% of eps
(`_calibrate_pld`), and their runs store a PLD ledger: the composed releases and the
discretization that certify eps, and eps at a few deltas, never a mu (`ledger_pld`,
`ledger_eps` re-derives any stored eps). GDP runs store mu (`ledger_gdp`).
"""

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


def _check_eps_delta(eps: float, delta: float) -> None:
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
    _check_eps_delta(eps, delta)
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
    _check_eps_delta(eps, delta)
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
    _check_eps_delta(eps, delta)
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


def _full_batch_mu(families: tuple[GaussianFamily, ...]) -> float | None:
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
    _check_eps_delta(eps, delta)
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
    _check_eps_delta(eps, delta)
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


# --- the privacy ledger: what a run stores as spent -----------------------------------------

#: The deltas (multiples of the run's delta) at which a PLD ledger also stores eps, so a reader
#: sees the accountant's eps(delta) curve, not one point of it.
LEDGER_DELTA_FACTORS = (0.1, 1.0, 10.0)


def ledger_gdp(mu: float, delta: float) -> dict:
    """The spent record of a mu-GDP run (exact GDP composition: the Spiders, DP-GD, noisy SGD,
    recursive regularization, any all-full-batch composition). mu = inf: non-private."""
    if math.isinf(mu):
        return ledger_none(delta)
    return {"eps": spent_eps(mu, delta), "delta": delta, "mu": mu, "accountant": "gdp"}


def ledger_none(delta: float) -> dict:
    """The spent record of a non-private run."""
    return {"eps": math.inf, "delta": delta, "mu": math.inf, "accountant": "none"}


def ledger_pld(cal: PldCalibration) -> dict:
    """The spent record of a PLD-calibrated run: no mu where the composition is not mu-GDP (a
    Poisson-subsampled Gaussian is not), the composed families and the interval that certify
    eps (so `ledger_eps` re-derives it), and eps at a few deltas around the run's."""
    mu = _full_batch_mu(cal.families)
    if mu is not None:  # every release full-batch: exact GDP, no discretization
        return ledger_gdp(mu, cal.delta)
    deltas = tuple(f * cal.delta for f in LEDGER_DELTA_FACTORS if f * cal.delta < 1)
    eps_at = pld_epsilons(cal.families, deltas, cal.discretization)
    return {"eps": cal.eps, "delta": cal.delta, "mu": None, "accountant": "pld",
            "families": [list(f) for f in cal.families], "discretization": cal.discretization,
            "eps_at": {f"{d:.3g}": e for d, e in zip(deltas, eps_at, strict=True)}}


def ledger_parallel(parts: list[dict]) -> dict:
    """The spent record of a run whose parts read disjoint records (parallel composition:
    Pagan with private scales, its moment release on held-out records and its optimization on
    the rest): the run spends the worst part's eps at every delta."""
    delta = parts[0]["delta"]
    return {"eps": max(p["eps"] for p in parts), "delta": delta, "mu": None,
            "accountant": "parallel", "parts": parts}


def ledger_jl(base: dict, delta_failure: float) -> dict:
    """The spent record of the JL method (Arora et al. 2023, Theorem 6.1): its base algorithm's
    ledger at delta - delta_failure, plus the JL embedding's failure probability delta_failure
    (so no mu: the run is not mu-GDP)."""
    return {"eps": base["eps"], "delta": base["delta"] + delta_failure, "mu": None,
            "accountant": "jl", "base": base, "delta_failure": delta_failure}


def ledger_eps(spent: dict, delta: float | None = None) -> float:
    """Re-derive a stored run's eps at `delta` (default: its own) from its ledger alone."""
    delta = spent["delta"] if delta is None else delta
    kind = spent.get("accountant", "gdp")
    if kind == "none":
        return math.inf
    if kind == "gdp":
        return spent_eps(float(spent["mu"]), delta)
    if kind == "pld":
        fams = tuple((float(z), float(q), int(c)) for z, q, c in spent["families"])
        return pld_epsilons(fams, (delta,), float(spent["discretization"]))[0]
    if kind == "parallel":
        return max(ledger_eps(part, delta) for part in spent["parts"])
    if kind == "jl":
        rest = delta - float(spent["delta_failure"])
        return ledger_eps(spent["base"], rest) if rest > 0 else math.inf
    raise ValueError(f"accountant={kind!r} is invalid: must be one of gdp, pld, parallel, jl, none")


def with_noise_factor(cal: PldCalibration, factor: float) -> PldCalibration:
    """The same composition with every noise multiplier times `factor` >= 1 (a run told to add
    more noise than its budget needs): what it really spends, at the same interval."""
    if not factor >= 1:
        raise ValueError(f"factor={factor!r} is invalid: must be >= 1 (never less noise than "
                         "the calibration)")
    if factor == 1:
        return cal
    fams = tuple((z * factor, q, c) for z, q, c in cal.families)
    mu = _full_batch_mu(fams)
    eps = spent_eps(mu, cal.delta) if mu is not None else \
        pld_epsilons(fams, (cal.delta,), cal.discretization)[0]
    return PldCalibration(cal.scale * factor, fams, cal.discretization, eps, cal.delta)
