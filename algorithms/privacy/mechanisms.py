"""Clipping, the Gaussian mechanism and the streaming binary-tree mechanism.

The tree mechanism is seed 000's Algorithm 1 (Dwork et al. 2010; Chan et al. 2011): TREE(t)
is the sum of the Gaussian node values of the dyadic decomposition of [1, t]. Node (l, j)
covers steps ((j-1) 2^l, j 2^l]; the decomposition of [1, t] holds node (l, t >> l) for each
set bit l of t, so TREE(t) sums popcount(t) nodes. Algorithm 1's NODE function line 14 reads
"k' <= k", which never holds; we read it as "k' <= t" (the evident intent: take the
dyadic block when it ends at or before t), which yields exactly this decomposition.

Streaming: at each level we keep only the node currently in use, drawn when it enters the
decomposition; since t only grows, each node is drawn once, memory is O(d log T) and never
an array of all nodes. Rounding error of the incremental prefix stays at machine precision
relative to sigma (each step adds and removes O(1) nodes amortized).
A record that changes one leaf value by at most s changes one node per level:
`depth` = T.bit_length() nodes in all.
"""

from __future__ import annotations

import numpy as np


def row_norms(rows: np.ndarray) -> np.ndarray:
    """L2 norms of the rows, exact at every scale; NaN for rows with a non-finite entry.

    sqrt(sum x^2) underflows to 0 for rows below ~1e-154 and overflows to inf above ~1e154;
    those rows (and only those: the fast path costs one pass) are recomputed after dividing by
    their largest absolute entry, so a guard never depends on the scale of the data.
    """
    sq = np.einsum("ij,ij->i", rows, rows)
    risky = ~(sq > 1e-290) | ~(sq < 1e290)  # tiny, zero, huge, inf or NaN
    norms = np.sqrt(sq)
    if risky.any():
        sub = rows[risky]
        finite = np.isfinite(sub).all(axis=1)
        peak = np.abs(np.where(np.isfinite(sub), sub, 0.0)).max(axis=1)
        unit = np.divide(sub, peak[:, None], out=np.zeros_like(sub), where=peak[:, None] > 0)
        exact = peak * np.sqrt(np.einsum("ij,ij->i", unit, unit))
        norms[risky] = np.where(finite, exact, np.nan)
    return norms


def clip_rows(rows: np.ndarray, bound: float | np.ndarray) -> np.ndarray:
    """Scale each row of `rows` (in place) to L2 norm at most `bound`; returns `rows`.

    Enforces per-sample sensitivity whatever a problem's stated constants are, at every scale
    of the data (`row_norms`). Rows with a NaN or infinite entry (a problem that overflowed)
    become zero so they cannot leak through the clip.
    """
    norms = row_norms(rows)
    bad = np.isnan(norms)
    if bad.any():
        rows[bad] = 0.0
        norms[bad] = 0.0
    over = norms > bound
    scale = np.where(over, bound / np.where(over, norms, 1.0), 1.0)
    tiny = scale < 1e-290  # a subnormal factor would lose the row's precision: two steps
    if tiny.any():
        b = np.broadcast_to(np.asarray(bound, float), norms.shape)[tiny]
        rows[tiny] = rows[tiny] / norms[tiny, None] * b[:, None]
        scale[tiny] = 1.0
    rows *= scale[:, None]
    return rows


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
        self._nodes: list[np.ndarray] = []  # per level: the node of that level held now
        self._prefix = np.zeros(self.d)  # TREE(t), kept incrementally
        self.nodes_drawn = 0

    def next(self) -> np.ndarray:
        """TREE(t) for the next t: the sum of the nodes of the dyadic decomposition of [1, t].

        From t-1 to t the trailing ones of t-1 (levels < l, l = number of trailing zeros of t)
        are cleared and bit l is set: the nodes of levels < l leave the decomposition and the
        new node (l, t >> l) enters it, so each step costs O(d) amortized.
        """
        self.t += 1
        level = (self.t & -self.t).bit_length() - 1
        for k in range(level):
            self._prefix -= self._nodes[k]
        if self.sigma > 0:
            node = self._rng.standard_normal(self.d)
            node *= self.sigma  # in place: the same floats as sigma * z, one array fewer
        else:
            node = np.zeros(self.d)
        self.nodes_drawn += 1
        if level < len(self._nodes):
            self._nodes[level] = node
        else:
            self._nodes.append(node)
        self._prefix += node
        return self._prefix.copy()

    @staticmethod
    def depth(steps: int) -> int:
        """Nodes one leaf touches in a tree over `steps` leaves (one per level)."""
        return max(1, int(steps).bit_length())
