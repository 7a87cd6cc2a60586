"""The empirical privacy audit of an engine release with a canary record (issue 74, item 6): a
lower confidence bound on eps from many runs of one release on neighbouring data sets, against
the eps the accountant claims.

D is the data; D' replaces its last record by the canary. The release is one of the engine's
(`ReleaseDesk`, the one every private method of the language-model experiment uses) at the
point x0, Poisson sampled at rate 1 so the canary is always read: the strongest single release
the claim covers. The auditor knows both records, so it scores each release by its projection
on the direction the canary moves it (the difference of the two clipped gradients, in the
release's coordinates), and `audit.eps_lower_bound` turns the scores into a (level) lower
bound on eps (a threshold test chosen on half the runs, its rates bounded by Clopper-Pearson on
the other half). The audit flags the mechanism when that bound exceeds the claimed eps.

A correct mechanism passes; a planted bug that removes the noise (the release run at eps = inf
while the claim stays eps) gives perfectly separated scores and a bound of about
log(runs / 7), far above any eps the test claims. What it cannot see: a release whose privacy
fails only at other points x, other neighbouring pairs, or through composition (one release).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms.base import Privacy
from algorithms.counts_maps import clip_rows
from algorithms.privacy.audit.audit import eps_lower_bound
from algorithms.privacy.engine import ReleaseDesk, ReleasePlan
from problems.streams import ArrayStream


@dataclass(frozen=True)
class CanaryAudit:
    eps_claimed: float
    eps_lb: float
    runs: int
    flagged: bool


def canary_audit(problem: Any, data: np.ndarray, canary: np.ndarray, x0: np.ndarray, clip: float,
                 claimed: Privacy, runs: int = 2000, seed: int = 0,
                 mechanism: Privacy | None = None, faults: tuple[str, ...] = ()) -> CanaryAudit:
    """The audit of the module docstring: `runs` releases on D and on D'. `mechanism`: the
    privacy the release is really run at (a planted bug: eps inf, no noise; default the
    claim); `faults`: the engine's planted faults."""
    mechanism = mechanism or claimed
    n = len(data)
    neighbour = np.array(data, copy=True)
    neighbour[-1] = canary
    rows = np.stack([data[-1], canary])
    clipped = clip_rows(problem.per_sample_grads(x0, rows), clip)
    direction = clipped[1] - clipped[0]
    direction = direction / max(float(np.linalg.norm(direction)), 1e-300)
    plan = ReleasePlan("poisson", 1, float(clip), n)
    scores = []
    for which, rows_ in enumerate((data, neighbour)):
        out = np.empty(runs)
        for r in range(runs):
            desk = ReleaseDesk(problem, ArrayStream(rows_), n, mechanism,
                               np.random.default_rng([seed, which, r]), plan, faults=faults)
            out[r] = float(desk.mean_gradient(x0) @ direction)
        scores.append(out)
    lb = eps_lower_bound(scores[0], scores[1], claimed.delta, rng=np.random.default_rng(seed))
    return CanaryAudit(claimed.eps, lb["eps_lb"], runs, lb["eps_lb"] > claimed.eps)


__all__ = ["CanaryAudit", "canary_audit"]
