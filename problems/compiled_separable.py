"""The separable saddles' exact empirical gradient sum in compiled code (numba): the floats of
`SeparableSaddle.per_sample_grads(x, batch).sum(axis=0)`, without the (b, d) array.

Why: an empirical algorithm's run on records is evaluated by ||grad F_S|| at up to
EMP_EVAL_POINTS stored iterates (`problems.evaluation.metrics.empirical_grad_norm`), each a sum
over the n records. On the practitioners' DP-SGD at n 5e5, d 100 that evaluation was 76 s of an
83 s run (0.43 s an iterate in numpy: the per-record rows, their copy, the outer product).

Same floats, operation for operation: a record z = (a1, a2, g) gives the row
(g_1 + (1 + a1) (c phi'(x_1)), g_j + ((1 + a2) mu) u_j), u = y / sqrt(1 + y.y), as
`SeparableSaddle._block_grads` writes it; phi'(x_1) and u come from Python (the profile's own
d1, whichever profile), so only the rows' arithmetic and their sum are compiled; the rows are
summed in record order from the first (numpy's axis-0 sum of a C-ordered array is sequential;
tests/test_compiled_sgd.py checks it). tests/test_compiled_separable.py holds the sum equal
to the numpy one byte for byte on the three shipped problems.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def selected_grad_sum(rows, idx, k, cd1, mu, u, total):
    """sum over the records rows[idx[:k]] ((a1, a2, g_1..g_d) each) of their gradients, in that
    order, into total (module docstring); zeros for k = 0. DP-SGD's compiled release
    (`algorithms.first_order.compiled_sgd`) sums its Poisson batch with it."""
    d = total.shape[0]
    for m in range(k):
        r = rows[idx[m]]
        f1 = (1.0 + r[0]) * cd1
        f2 = (1.0 + r[1]) * mu
        if m == 0:
            total[0] = r[2] + f1
            for j in range(1, d):
                total[j] = r[2 + j] + f2 * u[j - 1]
        else:
            total[0] += r[2] + f1
            for j in range(1, d):
                total[j] += r[2 + j] + f2 * u[j - 1]
    if k == 0:
        total[:] = 0.0
    return total


@numba.njit(cache=True, nogil=True)
def record_grad_sum(rows, cd1, mu, u):
    """sum over all the rows of their gradients (`selected_grad_sum` in record order)."""
    n = rows.shape[0]
    return selected_grad_sum(rows, np.arange(n), n, cd1, mu, u, np.zeros(rows.shape[1] - 2))


__all__ = ["record_grad_sum", "selected_grad_sum"]
