"""Central finite differences: the independent reference the oracle tests check gradients
against."""

from __future__ import annotations

import numpy as np


def central_grad(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """(f(x + h e_i) - f(x - h e_i)) / 2h for each coordinate i."""
    out = np.empty_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out
