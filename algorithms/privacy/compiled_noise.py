"""The noise engine's arithmetic in numba, for the built-in families' compiled kernels
(`algorithms.sosp.compiled_o2_steps`, `algorithms.first_order.compiled_tree`).

The same floats as `NoiseEngine.noised` and `TreeMechanism.next`, from the run's own generator
(`NoiseEngine.kernel_generator`; numba shares its state and ports numpy's sampler, checked once
per process by `algorithms.sosp.compiled_o2.numba_matches_numpy`): a kernel asks for noise
here, it does not draw it. The kernels run without planted faults (they fall back to Python),
so the planted third of the noise is not needed here.
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


@_jit
def add_gaussian(value, std, rng):
    """value + N(0, std^2 I) (`NoiseEngine.noised`; value + 0, nothing drawn, when std is 0)."""
    if std > 0:
        return value + std * rng.standard_normal(value.shape[0])
    return value + 0.0


@_jit
def tree_advance(t, levels, nodes, prefix, sigma, rng):
    """`TreeMechanism.next` for step t (already counted) on the held nodes (one row per level,
    `levels` in use) and the running prefix, both updated in place; returns the levels in use.

    The nodes of the levels below t's lowest set bit leave the decomposition of [1, t] and a
    fresh node of std sigma enters at that level."""
    d = prefix.shape[0]
    tt, level = t, 0
    while tt & 1 == 0:
        tt >>= 1
        level += 1
    for k in range(level):
        prefix -= nodes[k]
    if sigma > 0:
        node = rng.standard_normal(d)
        node *= sigma
    else:
        node = np.zeros(d)
    nodes[level] = node
    prefix += node
    return levels + 1 if level == levels else levels


__all__ = ["add_gaussian", "tree_advance"]
