"""Clipping, the Gaussian mechanism and the streaming binary-tree mechanism.

The tree mechanism is seed 000's Algorithm 1 (Dwork et al. 2010; Chan et al. 2011): TREE(t)
is the sum of the Gaussian node values of the dyadic decomposition of [1, t]. Node (l, j)
covers steps ((j-1) 2^l, j 2^l]; the decomposition of [1, t] holds node (l, t >> l) for each
set bit l of t, so TREE(t) sums popcount(t) nodes. Algorithm 1's NODE function line 14 reads
"k' <= k", which never holds; we read it as "k' <= t" (the evident intent: take the
dyadic block when it ends at or before t), which yields exactly this decomposition.

Streaming: at each level we keep only the node currently in use (its index and its noise),
drawn when first needed; since t only grows, each node is drawn once, memory is
O(d log T) and never an array of all nodes. A record that changes one leaf value by at
most s changes one node per level, `depth` = T.bit_length() nodes in all.
"""

from __future__ import annotations

import numpy as np


def clip_rows(rows: np.ndarray, bound: float | np.ndarray) -> np.ndarray:
    """Scale each row of `rows` (in place) to L2 norm at most `bound`; returns `rows`.

    Enforces per-sample sensitivity whatever a problem's stated constants are. NaN rows
    (a problem that overflowed) become zero so they cannot leak through the clip.
    """
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    bad = ~np.isfinite(norms)
    if bad.any():
        rows[bad] = 0.0
        norms[bad] = 0.0
    scale = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    rows *= scale[:, None]
    return rows


def clipped_mean(rows: np.ndarray, bound: float) -> np.ndarray:
    """Mean of the rows after clipping each to norm `bound` (replace-one sensitivity 2 bound / b)."""
    return clip_rows(rows, bound).mean(axis=0)


def gaussian_noise(d: int, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """N(0, sigma^2 I_d) (zeros without consuming randomness when sigma == 0)."""
    if sigma == 0:
        return np.zeros(d)
    return sigma * rng.standard_normal(d)


class TreeMechanism:
    """Streaming binary-tree noise: `next()` returns TREE(t) for t = 1, 2, ...

    Parameters: d (dimension), sigma (std of every node), rng (the run's Generator).
    `restart()` starts a fresh tree (new nodes) at t = 1.
    """

    def __init__(self, d: int, sigma: float, rng: np.random.Generator) -> None:
        if not (isinstance(d, int) and d >= 1):
            raise ValueError(f"d={d!r} is invalid: must be an integer >= 1")
        if not sigma >= 0:
            raise ValueError(f"sigma={sigma!r} is invalid: must be >= 0")
        self.d, self.sigma, self._rng = d, float(sigma), rng
        self.restart()

    def restart(self) -> None:
        """Forget every node; the next call to `next()` returns TREE(1) of a fresh tree."""
        self.t = 0
        self._index: list[int] = []  # per level: j of the node held, 0 = none
        self._noise: list[np.ndarray] = []
        self.nodes_drawn = 0

    def _node(self, level: int, j: int) -> np.ndarray:
        while len(self._index) <= level:
            self._index.append(0)
            self._noise.append(np.zeros(self.d))
        if self._index[level] != j:
            self._index[level] = j
            self._noise[level] = (
                self.sigma * self._rng.standard_normal(self.d) if self.sigma > 0 else np.zeros(self.d)
            )
            self.nodes_drawn += 1
        return self._noise[level]

    def next(self) -> np.ndarray:
        """TREE(t) for the next t: the sum of the nodes of the dyadic decomposition of [1, t]."""
        self.t += 1
        t = self.t
        out = np.zeros(self.d)
        level = 0
        while (t >> level) > 0:
            if (t >> level) & 1:
                out += self._node(level, t >> level)
            level += 1
        return out

    @staticmethod
    def depth(steps: int) -> int:
        """Nodes one leaf touches in a tree over `steps` leaves (one per level)."""
        return max(1, int(steps).bit_length())
