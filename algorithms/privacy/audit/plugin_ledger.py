"""The ledger an outside algorithm is judged by, rebuilt from the releases it made (steps 3 and
4 of `algorithms.privacy.audit.plugin_checks`), never read from its own record.

Noise. The recorded run and `reruns` more (other seeds, each a whole run) give, at every
release, the noise it added: released minus its pre-noise value (`leaf` for the first-order
probe protocol, the running estimate `nabla` for a Spider engine's release). Consecutive
releases are pooled into groups of at least `GROUP_VALUES` values, and each group's noise std
gets a 99.9% upper confidence bound, simultaneous over the groups (Bonferroni on the chi-square
bound of a Gaussian's variance). Noise that shrinks over the run, or stops after the first
release, shows in its own group.

Rebuilt ledger. Each release r has its told sensitivity s_r (checked by the replay), its noise
std's upper bound sigma_r, and its sampling rate q_r = |batch_r| / n (the group's mean for a
Poisson batch, whose size is random). How a record enters releases follows the batches:
* one pass (each record in one release: the batches are the data's records in order): the
  worst release, mu = max_r s_r / sigma_r;
* full batch (every batch is the whole data set): exact GDP composition, mu^2 = sum_r
  (s_r / sigma_r)^2;
* stages on disjoint chunks: the worst chunk's GDP composition;
* Poisson-subsampled releases (a multi-pass run whose batches are not the whole data set, with
  a PLD ledger): the PLD of dp-accounting over families (z_r = 2 sigma_r / s_r, q_r, count),
  replace-one, as the built-ins' accountant composes them.
eps of that ledger at the run's delta is a lower confidence bound on what the releases spend
(the noise enters by its upper bound); above the budget it is FAILED.

The plugin's own record is then compared with the releases: a PLD ledger that composes fewer
releases than the run made, a sampling rate below the observed one, or a noise multiplier above
the observed noise; a GDP ledger whose mu is below what the releases compose.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from algorithms import Privacy
from algorithms.privacy.accounting.gdp import gdp_eps
from algorithms.privacy.accounting.ledger import ledger_eps
from algorithms.privacy.accounting.pld import pld_epsilons
from algorithms.privacy.audit.layers import RecordedRun
from algorithms.privacy.audit.plugin_replay import run_until

#: Noise values a group of releases pools (at least): its std's simultaneous 99.9% upper
#: bound is then within ~25-30% of the estimate.
GROUP_VALUES = 200
#: Reruns of the whole run that measure the noise (at least MIN_RERUNS, more while they fit in
#: NOISE_SECONDS).
MIN_RERUNS, MAX_RERUNS, NOISE_SECONDS = 4, 20, 4.0
#: Confidence of the simultaneous upper bounds on the groups' noise std.
CONFIDENCE = 0.999
#: Relative tolerance of an eps or mu comparison.
TOLERANCE = 1e-3
#: The rebuilt PLD's discretization: coarser than the built-ins' calibration (1e-4), so a
#: check costs well under a second, and pessimistic, so its eps errs up by ~1e-3 at most; its
#: families round z up and q down to 2 digits (less eps), which more than offsets that.
PLD_DISCRETIZATION = 1e-3


def pre_noise(e: dict) -> np.ndarray:
    """A release's value before its noise: `leaf` (first-order protocol: released = leaf +
    noise) or the running estimate `nabla` (a tree Spider's release: nabla + tree noise)."""
    return np.asarray(e["leaf"] if "denom" in e else e["nabla"], dtype=float)


def release_noises(events: list[dict]) -> list[np.ndarray]:
    """The noise each release of a non-tree run added. First-order protocol (a `denom`):
    released - leaf. The Gaussian Spider engine (no `denom`, a `nabla`) releases its running
    estimate itself (released = nabla_t, plus any public escape noise), whose new noise is
    nabla_t - leaf_t at a restart (O1) and nabla_t - nabla_{t-1} - leaf_t at an O2 step
    (released - nabla, the tree engine's rule, would read 0 there)."""
    out, prev = [], None
    for e in events:
        if "denom" in e or "nabla" not in e:
            out.append(np.ravel(np.asarray(e["released"], dtype=float) - pre_noise(e)))
            prev = None
            continue
        nabla = np.asarray(e["nabla"], dtype=float)
        base = np.asarray(e["leaf"], dtype=float)
        if int(e.get("oracle", 1)) == 2 and prev is not None:
            base = base + prev
        out.append(np.ravel(nabla - base))
        prev = nabla
    return out


@dataclass(frozen=True)
class NoiseGroups:
    """Releases [start, stop) of each group, its std estimate and 99.9% upper bound."""

    starts: list[int]
    stops: list[int]
    sigma: np.ndarray
    sigma_hi: np.ndarray
    reruns: int
    #: the groups' upper bounds per unit of told sensitivity, and each release's unit
    ratio_hi: np.ndarray | None = None
    units: np.ndarray | None = None
    #: the noise's correlation between consecutive releases, pooled over the runs and the
    #: coordinates, and the number of products it pools (`correlated_release`)
    lag_corr: float = 0.0
    lag_pairs: int = 0

    def of_release(self, r: int) -> int:
        return int(np.searchsorted(self.stops, r, side="right"))

    def std_hi_of(self, r: int) -> float:
        """The upper bound on release r's noise std (its group's, at its own sensitivity)."""
        g = self.of_release(r)
        if self.ratio_hi is None or self.units is None:
            return float(self.sigma_hi[g])
        return float(self.ratio_hi[g] * self.units[r])


def measure_noise(algorithm: str, prob: Any, run: RecordedRun, privacy: Privacy, params: dict,
                  seed: int, run_seconds: float) -> NoiseGroups:
    """The noise std of every release, pooled into groups (module docstring)."""
    made = len(run.events)
    # Each release's noise in units of its told sensitivity (the accountant's z / 2): releases
    # whose sensitivity differs (a Spider's O1 and its O2 clipped at M |x - x_prev|) pool on
    # one scale; where every told value is equal this is the absolute pooling scaled once.
    unit = [float(e["told"]) if float(e["told"]) > 0 else 1.0 for e in run.events]
    per_release: list[list[np.ndarray]] = [
        [z / u] for z, u in zip(release_noises(run.events), unit, strict=True)]
    reruns = int(min(MAX_RERUNS, max(MIN_RERUNS, NOISE_SECONDS // max(run_seconds, 1e-3))))
    t0, done = time.perf_counter(), 0
    for r in range(reruns):
        if done >= MIN_RERUNS and time.perf_counter() - t0 > NOISE_SECONDS:
            break
        evs = run_until(algorithm, prob, run.data, privacy, params,
                        np.random.default_rng([seed, 3, r]))
        for i, (e, z) in enumerate(zip(evs[:made], release_noises(evs[:made]), strict=True)):
            if e["t"] == run.events[i]["t"]:
                own = float(e["told"]) if float(e["told"]) > 0 else 1.0  # this rerun's own
                per_release[i].append(z / own)
        done += 1
    counts = [sum(v.size for v in vals) for vals in per_release]
    starts, stops = [], []
    i = 0
    while i < made:
        j, pooled = i, 0
        while j < made and pooled < GROUP_VALUES:
            pooled += counts[j]
            j += 1
        if pooled < GROUP_VALUES and starts:  # a short tail joins the group before it
            stops[-1] = j
        else:
            starts.append(i)
            stops.append(j)
        i = j
    level = (1 - CONFIDENCE) / max(1, len(starts))
    sigma, sigma_hi = [], []
    for a, b in zip(starts, stops, strict=True):
        values = np.concatenate([v for vals in per_release[a:b] for v in vals])
        m = values.size
        s = math.sqrt(float(values @ values) / m) if m else 0.0
        sigma.append(s)
        sigma_hi.append(s * math.sqrt(m / stats.chi2.ppf(level, m)) if m else math.inf)
    # back to absolute std at each group's first release (what the messages quote); the
    # per-unit values are kept for releases of other sensitivity (`std_hi_of`)
    first = np.array([unit[a] for a in starts])
    corr, pairs = _lag_correlation(per_release)
    return NoiseGroups(starts, stops, np.array(sigma) * first, np.array(sigma_hi) * first, done,
                       np.array(sigma_hi), np.array(unit), corr, pairs)


def _lag_correlation(per_release: list[list[np.ndarray]]) -> tuple[float, int]:
    """The correlation of the noise of release i and release i + 1 of the same run, pooled over
    the runs, the coordinates and i (releases whose runs or sizes do not line up are left out),
    and the number of products pooled."""
    num, sq_a, sq_b, pairs = 0.0, 0.0, 0.0, 0
    for a, b in itertools.pairwise(per_release):
        if len(a) != len(b):
            continue
        for za, zb in zip(a, b, strict=True):
            if za.shape != zb.shape:
                continue
            num += float(za @ zb)
            sq_a += float(za @ za)
            sq_b += float(zb @ zb)
            pairs += za.size
    if pairs == 0 or sq_a <= 0 or sq_b <= 0:
        return 0.0, 0
    return num / math.sqrt(sq_a * sq_b), pairs


#: |z| of the consecutive releases' noise correlation past which they are not independent.
LAG_Z = 6.0


def correlated_release(noise: NoiseGroups) -> str | None:
    """Noise correlated between consecutive releases (issue 71: noise anti-correlated across
    steps cancels in the sum of the releases, mu 7-13x what the ledger says), as a FAILED reason.
    Independent Gaussian draws give a correlation of about N(0, 1 / pairs); a ledger that
    composes the releases as independent mechanisms holds only for those."""
    if noise.lag_pairs < 100:
        return None
    z = noise.lag_corr * math.sqrt(noise.lag_pairs)
    if abs(z) <= LAG_Z:
        return None
    return (f"its noise is correlated between consecutive releases (r = {noise.lag_corr:.2f} "
            f"over {noise.lag_pairs} products of the recorded run and {noise.reruns} reruns, "
            f"z = {z:.1f}): a ledger that composes its releases as independent does not hold")


def _structure(run: RecordedRun) -> str:
    """How a record enters the releases: "chunks", "one pass", "full batch" or "subsampled"."""
    events, n = run.events, len(run.data) if run.data is not None else 0
    if "chunk" in events[0]:
        return "chunks"
    if getattr(run.traj, "sample", None) is None:
        return "one pass"
    if all(len(e["batch"]) == n for e in events):
        return "full batch"
    return "subsampled"


@dataclass(frozen=True)
class Rebuilt:
    """The rebuilt ledger: its structure, eps at the run's delta (a lower confidence bound),
    mu where it is GDP, and the PLD families where it is not."""

    structure: str
    eps: float
    mu: float | None
    families: tuple[tuple[float, float, int], ...] = ()


def _round_up(v: float, digits: int = 2) -> float:
    if not math.isfinite(v) or v <= 0:
        return v
    e = 10 ** (math.floor(math.log10(v)) - digits + 1)
    return math.ceil(v / e) * e


def _round_down(v: float, digits: int = 2) -> float:
    if not math.isfinite(v) or v <= 0:
        return v
    e = 10 ** (math.floor(math.log10(v)) - digits + 1)
    return math.floor(v / e) * e


def rebuild_ledger(run: RecordedRun, noise: NoiseGroups, delta: float) -> Rebuilt:
    """The ledger of the releases the run made (module docstring)."""
    events, n = run.events, len(run.data)
    told = np.array([float(e["told"]) for e in events])
    sig = np.array([noise.std_hi_of(r) for r in range(len(events))])
    with np.errstate(divide="ignore"):
        mus = np.where(told > 0, told / sig, 0.0)
    structure = _structure(run)
    if structure == "one pass":
        mu = float(mus.max())
    elif structure == "full batch":
        mu = float(math.sqrt(float(mus @ mus)))
    elif structure == "chunks":
        by_chunk: dict[int, float] = {}
        for e, m in zip(events, mus, strict=True):
            by_chunk[int(e["chunk"])] = by_chunk.get(int(e["chunk"]), 0.0) + float(m * m)
        mu = math.sqrt(max(by_chunk.values()))
    else:
        fams: Counter = Counter()
        for a, b in zip(noise.starts, noise.stops, strict=True):
            q = _round_down(sum(len(e["batch"]) for e in events[a:b]) / ((b - a) * n))
            for r in range(a, b):
                z = _round_up(2 * sig[r] / told[r]) if told[r] > 0 else math.inf
                fams[(z, min(1.0, q))] += 1
        families = tuple((z, q, c) for (z, q), c in sorted(fams.items()))
        if any(z == 0 for z, _, _ in families):
            return Rebuilt(structure, math.inf, None, families)
        eps = pld_epsilons(families, (delta,), PLD_DISCRETIZATION)[0]
        return Rebuilt(structure, eps, None, families)
    return Rebuilt(structure, gdp_eps(mu, delta) if math.isfinite(mu) else math.inf, mu)


def ledger_mismatch(run: RecordedRun, noise: NoiseGroups, rebuilt: Rebuilt,
                    privacy: Privacy) -> str | None:
    """Why the plugin's own record does not cover the releases it made (module docstring), or
    None."""
    spent = run.traj.privacy_spent or {}
    kind = spent.get("accountant", "gdp")
    events, n, made = run.events, len(run.data), len(run.events)
    if kind == "pld" and spent.get("families"):
        fams = [(float(z), float(q), int(c)) for z, q, c in spent["families"]]
        composed = sum(c for _, _, c in fams)
        if composed < made:
            return (f"its ledger composes {composed} releases, the run made {made} (releases "
                    f"{composed + 1} to {made} unaccounted)")
        q_ledger = max(q for _, q, _ in fams)
        read = sum(len(e["batch"]) for e in events)
        q_obs = read / (made * n)
        se = math.sqrt(max(q_ledger * (1 - q_ledger), 1e-300) / (made * n))
        if q_obs > q_ledger + 5 * se + 1e-12:
            return (f"its releases read {q_obs:.3g} of the records on average, its ledger "
                    f"composes sampling rate {q_ledger:.3g}")
        z_min = min(z for z, _, _ in fams)
        for g, (a, _b) in enumerate(zip(noise.starts, noise.stops, strict=True)):
            needed = z_min * float(events[a]["told"]) / 2  # z on the clip C, sensitivity 2C
            if noise.sigma_hi[g] < 0.95 * needed:
                return (f"its release {a + 1} adds noise std {noise.sigma[g]:.3g}, below the "
                        f"{needed:.3g} its PLD ledger's multiplier {z_min:.3g} means")
        if ledger_eps(spent) > privacy.eps * (1 + 1e-6):
            return f"its ledger re-derives eps {ledger_eps(spent):.4g} > {privacy.eps:g}"
    elif kind == "gdp" and rebuilt.mu is not None and spent.get("mu") is not None:
        mu_ledger = float(spent["mu"])
        if rebuilt.mu > mu_ledger * (1 + TOLERANCE):
            return (f"its releases compose to mu >= {rebuilt.mu:.4g} ({rebuilt.structure}, "
                    f"{made} releases), its ledger says mu = {mu_ledger:.4g}")
    return None


def silent_release(noise: NoiseGroups, run: RecordedRun) -> str | None:
    """A group of releases that adds no noise (the FAILED line), or None."""
    for g, s in enumerate(noise.sigma):
        told = float(run.events[noise.starts[g]]["told"])
        if not s > 1e-12 * max(told, 1e-300):
            a, b = noise.starts[g] + 1, noise.stops[g]
            if a == b:
                return ("its first release adds no noise" if a == 1
                        else f"its release {a} of {len(run.events)} adds no noise")
            return f"its releases {a} to {b} (of {len(run.events)}) add no noise"
    return None
