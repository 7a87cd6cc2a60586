"""The ellipsoid release of seed 002's Pasan and Pagan as an ordinary release of the one engine.

Pasan and Pagan (Asi, Duchi, Fallah, Javidbakht, Talwar 2021, arXiv 2106.13756, Algorithms 1-2,
reconstructed in `algorithms.adaptive_noise.ellipsoid`) project every per-record gradient onto
the ellipsoid E_A = {g : g^T A g <= 1} (A diagonal, public) radially and add noise
N(0, z^2 A^-1) to the sum. In whitened coordinates u = A^{1/2} g that is exactly the engine's
release: each record's u clipped to norm 1 (the radial projection: g min(1, 1 / ||g||_A) is
A^{-1/2} of u min(1, 1 / ||u||)), noise N(0, z^2 I) on the sum, z from the one accountant. So
`WhitenedProblem` hands the engine the whitened per-record gradients and `unwhiten` maps the
release back: the clip, the noise and the ledger are the engine's (issue 71), and the ellipsoid
methods of the language-model experiment (issue 74) run through it unchanged.

The whitening A^{1/2} must be public (from public data or fixed before the run): it is a
change of coordinates the accountant does not see.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class WhitenedProblem:
    """`problem`'s per-record gradients in the coordinates u = w * g, w = A^{1/2} (public,
    finite, > 0). Only what the engine's records path reads: d, name and per_sample_grads."""

    def __init__(self, problem: Any, w: np.ndarray) -> None:
        w = np.asarray(w, dtype=float)
        if w.shape != (problem.d,) or not np.all(np.isfinite(w) & (w > 0)):
            raise ValueError(f"whitening w of shape {w.shape} is invalid: must be {problem.d} "
                             "finite values > 0 (A^1/2 of a positive definite diagonal A)")
        self.inner, self.w, self.d = problem, w, problem.d
        self.name = f"{problem.name} (whitened)"

    def per_sample_grads(self, x: np.ndarray, rows: Any) -> np.ndarray:
        return self.inner.per_sample_grads(x, rows) * self.w

    def unwhiten(self, released: np.ndarray) -> np.ndarray:
        """A release in u coordinates mapped back to gradient coordinates (A^{-1/2} u)."""
        return released / self.w


__all__ = ["WhitenedProblem"]
