"""Privacy verification, layer 3 over several releases: the composed Gaussian-DP mu a canary
reaches through a whole sequence of released estimates, against the accountant's.

The one-release audit (`algorithms.privacy.audit.audit`) cannot see composition. Here the auditor
observes every released estimate of a run (the sequence the DP guarantee covers; the iterates
are post-processing of it), projected on the canary's direction, and scores it with a linear
discriminant fitted on one half of the runs and evaluated on the other, so the empirical mu

    mu_emp = (mean of held-out scores on D' - mean on D) / pooled sd

is an honest estimate (never tuned on the runs it is measured on) of what a linear test can get.
The released sequence is Gaussian given its past, with a mean shift the canary controls, so a
linear test is the optimal one and mu_emp estimates the sequence's true mu. That true value is
also computed in closed form (`mu_exact`, from the noise actually drawn and the mechanism's
structure, not from the accountant): the test checks mu_emp against it (power) and the
accountant's mu against both (privacy). A run is flagged when the one-sided 99.9% lower bound of
mu_emp exceeds the accountant's mu.

Scenarios (mean estimation with no spread, d = 2; the canary's clipped gradient points opposite
to everyone else's, so it moves its leaf by the full sensitivity 2G/b):

* `tree_restart`: `tree_spider` in global tree scope (one tree over all T = 32 steps), O1 every
  8 steps (steps 1, 9, 17, 25: every step has length D, so the squared-step drift reaches
  kappa = 8 D^2 exactly), the canary in the O1 batch of the restart at step 9. Written as a
  prefix sum that record adds its gradient to leaf 9 and removes it at the next restart's leaf
  17: releases 9..16 are shifted, and the nodes of both leaves move. The accountant counts
  2 x depth = 12 nodes; an optimal test on the 32 prefix sums sees sqrt(8) node-shifts (the
  root and the nodes the two leaves share cancel, and some right-hand nodes are never released
  on their own), so mu_exact = sqrt(8/12) mu_acc. The planted `tree_one_leaf` (global scope
  told depth = 6 nodes, the second leaf forgotten) then gives mu_exact = sqrt(8/6) mu_told:
  15% above its claim, which 10,000 runs per side resolve (the standard error of mu_emp is
  about 0.02 there).
* `gaussian_epoch`: `gaussian_spider` with one epoch of 8 releases (one O1, seven O2 with
  their own fresh noise; each released estimate carries all noise drawn since the O1 call),
  the canary in the O1 batch. Each record enters one release, so the composed mu is that
  release's: mu_exact = mu_acc (this instance is tight); `noise_third` gives 3 mu_acc.
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms import Privacy, get_algorithm
from algorithms.privacy.audit.audit import empirical_mu
from algorithms.privacy.audit.layers import Recorder
from algorithms.privacy.faults import check_faults
from problems import get_problem

_D_STEP = 2.0**-20  # step length of the tree scenario: exact powers of two keep the drift exact


@dataclass(frozen=True)
class Scenario:
    algorithm: str
    T: int
    epoch: int  # steps between O1 calls
    canary_step: int  # the O1 step whose batch holds the canary (1-based)
    b: int = 16
    B: int = 16

    def params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"T": self.T, "b": self.b, "B": self.B, "saddle_noise": False,
                             "escape_threshold": 1e-300, "alpha": 0.1}
        if self.algorithm == "tree_spider":
            # every step is shortened to D (eta ||estimate|| >> D), so the drift after k steps
            # is k D^2 exactly and O1 fires every `epoch` steps
            p.update(eta=1.0, D=_D_STEP, kappa=self.epoch * _D_STEP**2, tree_scope="global")
        else:
            # one epoch: the drift never reaches kappa; tiny steps keep every ordinary gradient
            # at the clip (so the canary moves its release by the full sensitivity)
            p.update(eta=1e-3, kappa=1e300)
        return p

    def batch_starts(self) -> list[int]:
        """Index of the first record of each step's batch (records are read in order)."""
        starts, pos = [], 0
        for t in range(1, self.T + 1):
            starts.append(pos)
            pos += self.b if (t - 1) % self.epoch == 0 else self.B
        return [*starts, pos]


SCENARIOS: dict[str, Scenario] = {
    "tree_restart": Scenario("tree_spider", T=32, epoch=8, canary_step=9),
    "gaussian_epoch": Scenario("gaussian_spider", T=8, epoch=8, canary_step=1),
}


def _instance(sc: Scenario) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    prob = get_problem("mean_estimation", d=2, spread=0.0, start_dist=2.0, radius=2.0)
    v = (prob.x0 - prob.mean) / np.linalg.norm(prob.x0 - prob.mean)
    n = sc.batch_starts()[-1] + sc.b + 1  # the engine stops when <= b records remain
    data = np.tile(prob.mean, (n, 1))
    other = data.copy()
    other[sc.batch_starts()[sc.canary_step - 1]] = prob.x0 + 1e3 * v  # clipped to -G v
    return prob, data, other, v


def _release_features(scenario: str, eps: float, delta: float, faults: tuple[str, ...],
                      which: int, seeds: range, seed: int
                      ) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    sc = SCENARIOS[scenario]
    prob, data, other, v = _instance(sc)
    cls = get_algorithm(sc.algorithm)
    out = np.empty((len(seeds), sc.T))
    noise = np.empty(len(seeds))  # the canary step's own noise (released - leaf), along v
    info: dict[str, float] = {}
    for i, r in enumerate(seeds):
        rec = Recorder()
        alg = cls(planted_faults=faults, **sc.params())
        rng = np.random.default_rng([seed, zlib.crc32(scenario.encode()), which, r])
        traj = alg.run(prob, other if which else data, Privacy(eps, delta), rng, probe=rec)
        if len(rec.events) != sc.T:
            raise RuntimeError(f"audit scenario {scenario}: {len(rec.events)} releases, expected {sc.T}")
        o1 = [e["t"] for e in rec.events if e["oracle"] == 1]
        if o1 != list(range(1, sc.T + 1, sc.epoch)):
            raise RuntimeError(f"audit scenario {scenario}: O1 at steps {o1}, expected every {sc.epoch}")
        out[i] = [float(e["released"] @ v) for e in rec.events]
        ev = rec.events[sc.canary_step - 1]
        noise[i] = float((ev["released"] - ev["leaf"]) @ v)
        info = {"mu_accountant": float(traj.params["privacy_mu"]),
                "sigma": float(traj.params.get("sigma", math.nan)), "told": float(ev["told"])}
    return out, noise, info


def tree_prefix_cov(T: int) -> np.ndarray:
    """C[s, s'] = number of tree nodes shared by the dyadic decompositions of [1, s] and
    [1, s']: the covariance / sigma^2 of the tree's released prefix noise TREE(1..T)."""
    def nodes(s: int) -> set[tuple[int, int]]:
        out, pos = set(), 0
        for level in reversed(range(s.bit_length())):
            if s >> level & 1:
                out.add((level, pos >> level))
                pos += 1 << level
        return out

    sets = [nodes(s) for s in range(1, T + 1)]
    return np.array([[len(a & b) for b in sets] for a in sets], dtype=float)


def mu_exact(scenario: str, info: dict[str, float], o1_noise_sd: float) -> float:
    """The mu of the released sequence for a canary that moves its leaf by the told
    sensitivity, from the noise actually used (not the accountant's claim): the tree's node
    std, or the measured sd of the canary's release noise (Gaussian: a fresh draw per release,
    so the O1 release alone carries the canary)."""
    sc = SCENARIOS[scenario]
    if sc.algorithm == "tree_spider":
        shift = np.zeros(sc.T)
        shift[sc.canary_step - 1:sc.canary_step - 1 + sc.epoch] = 1.0
        q = float(shift @ np.linalg.solve(tree_prefix_cov(sc.T), shift))
        return info["told"] / info["sigma"] * math.sqrt(q)
    return info["told"] / o1_noise_sd


def held_out_mu(neg: np.ndarray, pos: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """mu of a linear discriminant fitted on the first half of the runs, on the second half."""
    hn, hp = len(neg) // 2, len(pos) // 2
    diff = pos[:hp].mean(axis=0) - neg[:hn].mean(axis=0)
    cov = (np.cov(neg[:hn], rowvar=False) + np.cov(pos[:hp], rowvar=False)) / 2
    cov = np.atleast_2d(cov)
    w = np.linalg.solve(cov + 1e-12 * np.trace(cov) * np.eye(len(cov)), diff)
    return empirical_mu(neg[hn:] @ w, pos[hp:] @ w, level)


@dataclass
class MultiReleaseResult:
    scenario: str
    algorithm: str
    eps: float
    faults: tuple[str, ...]
    runs: int
    mu_empirical: float
    mu_low: float
    mu_high: float
    mu_low_999: float
    mu_exact: float
    mu_accountant: float
    shift_profile: np.ndarray  # mean release difference D' - D per step, in units of told
    seconds: float

    @property
    def flagged(self) -> bool:
        return self.mu_low_999 > self.mu_accountant


def multi_release_audit(scenario: str, eps: float = 8.0, delta: float = 1e-6, runs: int = 10000,
                        faults: tuple[str, ...] = (), seed: int = 0,
                        n_jobs: int = 1) -> MultiReleaseResult:
    """Run `runs` times on D and on D' and audit the composed mu (see the module docstring)."""
    from joblib import Parallel, delayed

    if scenario not in SCENARIOS:
        raise ValueError(f"scenario={scenario!r} is invalid: must be one of {', '.join(SCENARIOS)}")
    if not (isinstance(runs, int) and runs >= 200):
        raise ValueError(f"runs={runs!r} is invalid: must be an integer >= 200")
    if not 0 < eps < math.inf:
        raise ValueError(f"eps={eps!r} is invalid: must be a finite number > 0")
    check_faults(faults)
    t0 = time.perf_counter()
    chunks = [range(s, min(runs, s + 1000)) for s in range(0, runs, 1000)]
    res = Parallel(n_jobs=n_jobs)(delayed(_release_features)(scenario, eps, delta, tuple(faults),
                                                             which, ch, seed)
                                  for which in (0, 1) for ch in chunks)
    k = len(chunks)
    neg = np.concatenate([r[0] for r in res[:k]])
    pos = np.concatenate([r[0] for r in res[k:]])
    noise_sd = float(np.sqrt(np.mean(np.concatenate([r[1] for r in res]) ** 2)))
    info = res[0][2]
    mu, lo, hi = held_out_mu(neg, pos)
    lo999 = held_out_mu(neg, pos, 0.998)[1]
    profile = (pos.mean(axis=0) - neg.mean(axis=0)) / info["told"]
    sc = SCENARIOS[scenario]
    return MultiReleaseResult(scenario, sc.algorithm, eps, tuple(faults), runs, mu, lo, hi, lo999,
                              mu_exact(scenario, info, noise_sd), info["mu_accountant"], profile,
                              time.perf_counter() - t0)


#: The rows of `dprates audit --multi`: each scenario honest and with the bugs it must catch.
MULTI_RELEASE_ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tree_restart", ()), ("tree_restart", ("tree_one_leaf",)), ("tree_restart", ("tree_depth_1",)),
    ("gaussian_epoch", ()), ("gaussian_epoch", ("noise_third",)),
)
