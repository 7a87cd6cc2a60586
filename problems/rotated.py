"""`hard_valley_rotated`: the hard valley composed with a fixed random rotation (not separable).

The separable families (`problems.separable`) put the hard direction, the saddle's negative
curvature and the valley after it, on the first coordinate axis, and their noise factors and
blocks on fixed coordinates: an algorithm whose steps are coordinate-wise (per-coordinate
scales, clipping or preconditioning, a coordinate subspace) can be helped by that structure
without the rate claims saying so. This family removes it: with Q a fixed orthogonal d x d
matrix drawn from `rotation_seed` (Haar on SO(d): `scipy.stats.special_ortho_group` with
`random_state=np.random.default_rng(rotation_seed)`), every per-sample loss is the valley's at
the rotated point,

    f_rot(x; z) = f(Q^T x; z),        F_rot(x) = F(Q^T x),

so F_rot(Q u) = F(u): x0 = Q x0_valley (the saddle at 0 by default, `start` along Q e_1), the
saddle and the minima are the valley's rotated, and the negative-curvature direction at the
saddle is Q e_1, a dense unit vector (for d >= 10 and the seeds tested, no component above 0.9
in absolute value), not a coordinate.

Oracles, all exact and closed form (the valley's, rotated; no Monte Carlo):
grad f_rot(x; z) = Q grad f(Q^T x; z), grad F_rot(x) = Q grad F(Q^T x),
hess F_rot(x) = Q hess F(Q^T x) Q^T, lambda_min(hess F_rot(x)) = lambda_min(hess F(Q^T x)).

Constants: rotation preserves norms and spectra, so G, M, rho (the bounds on ||grad f||,
||hess f|| and the Hessian-Lipschitz constant, all on R^d) and B0 = F(x0) - inf F are
`hard_valley`'s, unchanged (`constants` is inherited); so is every per-record norm bound
(`record_grad_bound(x)` = the valley's at Q^T x) and with it the sensitivity and clipping
analysis of every algorithm. The records z and their law are the valley's.

Counts mode is exact, as the valley's: grad f_rot(x; z) = Q grad f(Q^T x; z) is still affine in
the record z, so a batch's mean gradient (and gradient difference) is Q times the valley's at
the batch's mean record, which the coordinate counts give; the whole-support bound the clip
guard reads is rotation invariant. The compiled O2 steps (`algorithms.sosp.compiled_o2`)
compute the valley's unrotated map, so this problem's Spiders run their O2 steps in the Python
loop (the same numbers a compiled step would give, slower).
"""

from __future__ import annotations

import numpy as np

from problems.separable import HardValley


def rotation(d: int, rotation_seed: int) -> np.ndarray:
    """The fixed rotation Q (d x d, det +1) for `rotation_seed`: Haar on SO(d), drawn by
    `scipy.stats.special_ortho_group` from `np.random.default_rng(rotation_seed)`."""
    if d == 1:
        return np.ones((1, 1))
    # imported here: scipy.stats costs ~0.8 s to import, which every `dprates` process paid
    from scipy.stats import special_ortho_group

    return special_ortho_group.rvs(d, random_state=np.random.default_rng(rotation_seed))


class RotatedValley(HardValley):
    """Hard, not separable: `hard_valley` composed with a fixed random rotation Q (module docstring).

    f_rot(x; z) = f(Q^T x; z) and F_rot(x) = F(Q^T x) with f, F the valley's and Q drawn from
    `rotation_seed`; x0, the saddle and the minima are the valley's rotated, the saddle's
    negative-curvature direction Q e_1 is not a coordinate axis. Why: on the separable families
    coordinate-wise structure can help an algorithm; here it cannot. Every oracle is exact (the
    valley's closed forms, rotated), the constants and per-record bounds are the valley's
    (rotation preserves norms), and counts mode is exact (gradients stay affine in the record).
    Defaults are hard_valley's: alpha_SOSP(x0) = 0.915, G = 2.18, M = 6, rho = 17.49, B0 = 8.90.
    """

    name = "hard_valley_rotated"
    character = "hard"
    description = "hard_valley composed with a fixed random rotation Q: not separable, same constants"

    def __init__(self, d: int = 10, c: float = 1.0, w: float = 0.5, beta: float = 5e-5,
                 mu: float = 0.5, noise: float = 0.5, tau: float = 0.5, start: float = 0.0,
                 rotation_seed: int = 0) -> None:
        super().__init__(d, c, w, beta, mu, noise, tau, start)
        if isinstance(rotation_seed, bool) or not isinstance(rotation_seed, (int, np.integer)) \
                or rotation_seed < 0:
            raise ValueError(f"rotation_seed={rotation_seed!r} is invalid: must be an integer >= 0")
        self.rotation_seed = int(rotation_seed)
        self.Q = np.ascontiguousarray(rotation(self.d, self.rotation_seed))
        self.Qt = np.ascontiguousarray(self.Q.T)

    def params(self):
        return {**super().params(), "rotation_seed": self.rotation_seed}

    def _in(self, x: np.ndarray) -> np.ndarray:
        """Q^T x: the valley's coordinates of x."""
        return self.Qt @ x

    @property
    def x0(self) -> np.ndarray:
        """Q (start, 0, ..., 0): the saddle 0 by default (`HardValley.x0`, rotated)."""
        return self.Q @ super().x0

    def minima(self) -> np.ndarray:
        """The valley's two minimizers, rotated, shape (2, d)."""
        return super().minima() @ self.Qt

    # --- counts mode: the valley's one-pass maps at Q^T x, the mean rotated back; the bound
    # over the support is rotation invariant, so it is the valley's at Q^T x ------------------
    def _mean_grad_and_support_bound(self, x, batch):
        g, bound = super()._mean_grad_and_support_bound(self._in(x), batch)
        return self.Q @ g, bound

    def _mean_grad_diff_and_support_bound(self, x, y, batch):
        g, bound = super()._mean_grad_diff_and_support_bound(self._in(x), self._in(y), batch)
        return self.Q @ g, bound

    def record_grad_bound(self, x):
        return super().record_grad_bound(self._in(x))

    def record_grad_diff_bound(self, x, y):
        return super().record_grad_diff_bound(self._in(x), self._in(y))

    # The guard's pair: the one-pass bound is `record_grad_bound`'s (the same formula at Q^T x,
    # a function of the public iterate only), so it is used as it is.
    def guarded_counts_grad(self, x, batch):
        return self._mean_grad_and_support_bound(x, batch)

    def guarded_counts_grad_diff(self, x, y, batch):
        return self._mean_grad_diff_and_support_bound(x, y, batch)

    # --- per sample: the valley's at Q^T x; gradients (rows) rotated back ------------------
    def per_sample_losses(self, x, batch):
        return super().per_sample_losses(self._in(x), batch)

    def per_sample_grads(self, x, batch):
        return super().per_sample_grads(self._in(x), batch) @ self.Qt

    def per_sample_grad_diffs(self, x, y, batch):
        return super().per_sample_grad_diffs(self._in(x), self._in(y), batch) @ self.Qt

    # --- population (closed form, rotated) -------------------------------------------------
    def population_loss(self, x):
        return super().population_loss(self._in(x))

    def population_grad(self, x):
        return self.Q @ super().population_grad(self._in(x))

    def population_hessian(self, x):
        return self.Q @ super().population_hessian(self._in(x)) @ self.Qt

    def population_hvp(self, x, v):
        return self.Q @ super().population_hvp(self._in(x), self.Qt @ v)

    def population_lambda_min(self, x):
        return super().population_lambda_min(self._in(x))
