"""An empirical lower bound on the eps of an audited plugin (issue 56, item 4): a distinguishing
test between neighbouring data sets over many runs, in the style of canary-based DP auditing.

D is the configuration's sample; D' replaces one record by a canary, an adversarial record
scaled so that its gradient at the start has norm 10 C (C the first release's clip: an honest
plugin clips it to C, a plugin that does not lets ten times that through). The plugin runs
`RUNS` times on each, with fresh seeds, up to its second release; each run is scored by the
first iterate it moved to (x_1, a stored output; the first release where the run makes only
one). The direction of the test is the mean difference of the first half of the runs; on the
second half, `algorithms.privacy.audit.audit.eps_lower_bound` chooses a threshold on one half
and bounds its true- and false-positive rates on the other (Clopper-Pearson, 95% jointly):
eps_lb = log((TPR_low - delta) / FPR_high), which a correct (eps, delta)-DP plugin exceeds with
probability at most 5%. Beside it, the standardized mean difference (an empirical Gaussian-DP
mu of that one step, with a 95% interval).

What it can detect: a first step noised far below its budget (an empirical eps is limited by
the runs: 1000 scored runs per side, halved again to choose the threshold, cap eps_lb near
log(500 / 3.7) = 4.9). It sees
one step of the run, so a leak that starts later, or one spread thinly over many releases,
stays below it; that is what the replays of `plugin_checks` are for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms import Privacy
from algorithms.privacy.audit.audit import empirical_mu, eps_lower_bound
from algorithms.privacy.audit.plugin_replay import run_until, scaled_records

#: Runs per data set (two runs of the plugin up to its second release each).
RUNS = 2000
#: The canary's gradient norm at the start, in units of the clip.
CANARY_CLIPS = 10.0


@dataclass(frozen=True)
class LowerBound:
    """eps_lb: the 95% lower confidence bound; mu, mu_low, mu_high: the empirical mu of the
    scored step and its 95% interval; eps: the declared budget; runs: runs per data set."""

    eps_lb: float
    mu: float
    mu_low: float
    mu_high: float
    eps: float
    runs: int
    scored: str

    @property
    def flagged(self) -> bool:
        return self.eps_lb > self.eps

    def text(self) -> str:
        return (f"empirical eps >= {self.eps_lb:.3g} (95% lower bound from {self.runs} runs per "
                f"neighbouring data set, scored on {self.scored}; mu {self.mu:.3g} "
                f"[{self.mu_low:.3g}, {self.mu_high:.3g}]) beside the declared eps {self.eps:g}")


def lower_bound(algorithm: str, prob: Any, data: np.ndarray, first: dict, privacy: Privacy,
                params: dict, seed: int, runs: int = RUNS) -> LowerBound:
    """The audit of the module docstring; `first`: a recorded run's first release (its
    iterate and clip place the canary)."""
    advs = np.asarray(prob.adversarial_records(), dtype=float)
    canary = scaled_records(prob, {"x": first["x"], "oracle": 1}, advs, float(first["clip"]),
                            (CANARY_CLIPS,))
    canary = canary[0] if len(canary) else advs[0]
    j = int(np.random.default_rng([seed, 12]).integers(len(data)))
    other = np.array(data, dtype=float, copy=True)
    other[j] = canary
    firsts: list[list[np.ndarray]] = [[], []]
    iterates: list[list[np.ndarray]] = [[], []]
    for r in range(runs):
        for side, ds in enumerate((data, other)):
            events = run_until(algorithm, prob, ds, privacy, params,
                               np.random.default_rng([seed, 13, r, side]), index=1)
            firsts[side].append(np.ravel(np.asarray(events[0]["released"], dtype=float)))
            if len(events) > 1:
                iterates[side].append(np.ravel(np.asarray(events[1]["x"], dtype=float)))
    # x_1 where every run moved to one, else the first release (one score kind for all runs)
    if all(len(v) == runs for v in iterates):
        neg, pos, scored = np.array(iterates[0]), np.array(iterates[1]), "the first iterate"
    else:
        neg, pos, scored = np.array(firsts[0]), np.array(firsts[1]), "the first release"
    h = runs // 2
    direction = pos[:h].mean(axis=0) - neg[:h].mean(axis=0)
    norm = float(np.linalg.norm(direction))
    direction = direction / norm if norm > 0 else np.eye(len(direction))[0]
    s_neg, s_pos = neg[h:] @ direction, pos[h:] @ direction
    bound = eps_lower_bound(s_neg, s_pos, privacy.delta, rng=np.random.default_rng([seed, 14]))
    mu, lo, hi = empirical_mu(s_neg, s_pos)
    return LowerBound(float(bound["eps_lb"]), mu, lo, hi, privacy.eps, runs - h, scored)


def no_bound_reason(exc: Exception) -> str:
    """The label text when the audit could not run."""
    return f"no empirical eps bound ({type(exc).__name__}: {exc})"


__all__ = ["CANARY_CLIPS", "RUNS", "LowerBound", "lower_bound", "no_bound_reason"]
