"""The adaptive step rules of Pasan and Pagan (Asi, Duchi, Fallah, Javidbakht, Talwar 2021,
arXiv 2106.13756, Algorithms 1 and 2, reconstructed as `algorithms.adaptive_noise.ellipsoid`
explains), as small stateful objects: one code for the synthetic experiment's loop and the
language-model experiment's (issue 74), so the two run the same update.

* `AdaGradNormStep` (Pasan): x <- x - alpha / sqrt(sum_{i<=k} ||g~_i||^2) g~_k [CHOICE];
* `DiagonalAdaGradStep` (Pagan): x <- x - alpha g~_k / (sqrt(sum_{i<=k} g~_i^2) + delta0),
  coordinate by coordinate [DERIVED].

Both read only released (noised) gradients: the step is post-processing.
"""

from __future__ import annotations

import math

import numpy as np


class AdaGradNormStep:
    """Pasan's AdaGrad-norm step (module docstring)."""

    def __init__(self, alpha: float) -> None:
        self.alpha = float(alpha)
        self.acc = 0.0

    def step(self, x: np.ndarray, released: np.ndarray) -> np.ndarray:
        self.acc += float(released @ released)
        return x - (self.alpha / math.sqrt(self.acc + 1e-300)) * released


class DiagonalAdaGradStep:
    """Pagan's diagonal AdaGrad step (module docstring)."""

    def __init__(self, alpha: float, d: int, delta0: float = 1e-8) -> None:
        self.alpha, self.delta0 = float(alpha), float(delta0)
        self.acc = np.zeros(int(d))

    def step(self, x: np.ndarray, released: np.ndarray) -> np.ndarray:
        self.acc += released * released
        return x - self.alpha * released / (np.sqrt(self.acc) + self.delta0)


def adaptive_step(rule: str, alpha: float, d: int,
                  delta0: float = 1e-8) -> AdaGradNormStep | DiagonalAdaGradStep:
    """The step of `rule` ("pasan": AdaGrad-norm, "pagan": diagonal AdaGrad)."""
    if rule == "pasan":
        return AdaGradNormStep(alpha)
    if rule == "pagan":
        return DiagonalAdaGradStep(alpha, d, delta0)
    raise ValueError(f"step rule={rule!r} is invalid: must be pasan or pagan")


__all__ = ["AdaGradNormStep", "DiagonalAdaGradStep", "adaptive_step"]
