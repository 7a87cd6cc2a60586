"""Poisson sampling of records by the gaps between the selected ones (numba): the release
desk's `sampler="gaps"` (DP-SGD's `sampler` choice), for record mode at a small rate q.

The desk's default draw ("mask") keeps record i when the i-th of n uniforms is below q: n
uniforms a release, whatever q. At q ~ 0.002 (the practitioners' DP-SGD at d 100, eps 0.1)
those uniforms are the whole cost of a compiled step (algorithms/first_order/compiled_sgd.py).
Here the records are the same law, each kept independently with probability q, read off the
gaps: the number of records skipped before the next kept one is Geometric(q) on {0, 1, ...},
P(G >= m) = (1 - q)^m, drawn by inversion G = floor(log(U) / log(1 - q)) with U = 1 - (a
uniform in [0, 1)), so U is in (0, 1] and P(G >= m) = P(U <= (1 - q)^m) = (1 - q)^m. The
successive gaps are independent, which is exactly independent Bernoulli(q) inclusions in index
order. A release then costs ~q n + 1 uniforms and logarithms. Exact up to the rounding of the
logarithm and the quotient (a relative 1e-16 on each threshold), as the mask's comparison with
a rounded q is; tests/test_poisson_gaps.py checks the law (the count, each index's rate, the
gaps' distribution) at fixed seeds.

Another draw from the same generator than the mask's: a run with sampler "gaps" is not the
run with "mask" (a spec chooses it as a parameter, so its cells have keys of their own). Both
the desk (Python) and the compiled steps call this one function, so the two paths stay one
run, bit for bit.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: The desk's samplers of a Poisson plan on records.
SAMPLERS = ("mask", "gaps")


@numba.njit(cache=True, nogil=True)
def gap_indices(rng, n, q, idx):
    """The records kept by one Poisson draw at rate q from n, in increasing order, written to
    idx[:k]; returns k."""
    if q >= 1.0:
        for i in range(n):
            idx[i] = i
        return n
    if not q > 0.0:
        return 0
    lq = math.log1p(-q)  # < 0
    k = 0
    i = -1
    while True:
        u = 1.0 - rng.random()  # (0, 1]
        g = math.log(u) / lq  # >= 0, or inf past every record's chance
        if not g < n - i:  # i + 1 + floor(g) >= n: no record left to keep (also inf)
            return k
        i += 1 + math.floor(g)
        if i >= n:
            return k
        idx[k] = i
        k += 1


def poisson_gap_subsample(sample: np.ndarray, q: float, rng: np.random.Generator) -> np.ndarray:
    """The records a Poisson draw at rate q keeps, by gaps (module docstring), in order."""
    idx = np.empty(len(sample), dtype=np.int64)
    k = gap_indices(rng, len(sample), float(q), idx)
    return sample[idx[:k]]


__all__ = ["SAMPLERS", "gap_indices", "poisson_gap_subsample"]
