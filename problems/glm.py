"""A generalized linear model on a low-rank finite-support population, and its JL projection.

f(w; (y, z)) = phi(y <w, B z>) on w in R^dim, with a label y in {-1, +1}, a coordinate vector
z in R^r (r = `rank`) and a basis B (attribute `basis`, shape (dim, r)). A record is the row
[y, z_1, ..., z_r] (label in column 0, like `problems.logistic`); the feature is x = B z.

Population. N = `n_atoms` atoms z_a on the unit sphere of R^r whose first coordinate s is
uniform on [-1, 1] and whose other r - 1 coordinates are sqrt(1 - s^2) times a uniform
direction (for r = 1, z = s): the label direction has the same law at every rank, so
||grad F(0)|| = |phi'(0)| (1 - 2 flip) E|s| = |phi'(0)| (1 - 2 flip) / 2 does not shrink as
the rank grows (uniform atoms on the sphere would give E|z_1| ~ sqrt(2 / (pi r))). Labels
y_a = sign(<theta, z_a>) with theta = e_1 in R^r (sign(0) := +1), each flipped independently
with probability `flip`; records are drawn uniformly from the atoms (`FiniteAtoms`: exact
population oracles as averages over all atoms, and a counts mode). The registered problem has
dim = d and B with orthonormal columns (the Q factor of a seeded Gaussian d x r matrix, signs
fixed so that diag(R) > 0), so ||x|| = ||z|| = 1 for every atom: ||X|| = 1. The data lie in
the r-dimensional subspace range(B); `rank` is public (the dimension of the subspace the data
are known to lie in, as in the low-rank GLM setting), so algorithms may use it.

Links and their derivative bounds, with s = expit(m) = 1/(1 + e^{-m}), s' = s(1 - s):
  "logistic": phi(m) = log(1 + e^{-m}) (convex), phi' = -(1 - s) = -expit(-m), so |phi'| < 1;
    phi'' = s(1 - s) <= 1/4; phi''' = s(1 - s)(1 - 2s). With g(s) = s - 3s^2 + 2s^3,
    g'(s) = 1 - 6s + 6s^2 = 0 at s = 1/2 -+ 1/(2 sqrt 3), where s(1 - s) = 1/6 and
    |1 - 2s| = 1/sqrt 3: |phi'''| <= 1/(6 sqrt 3) = 0.096225.
  "sigmoid": phi(m) = 1/(1 + e^m) = 1 - s (non-convex, bounded in (0, 1)), phi' = -s(1 - s),
    so |phi'| <= 1/4; phi'' = -s(1 - s)(1 - 2s) = s(1 - s) tanh(m/2), |phi''| <= 1/(6 sqrt 3)
    (as above); phi''' = -s(1 - s)(1 - 6s + 6s^2) = -p(1 - 6p) with p = s(1 - s) in (0, 1/4]:
    p(1 - 6p) ranges over [-1/8, 1/24] (max 1/24 at p = 1/12, min -1/8 at p = 1/4, m = 0),
    so |phi'''| <= 1/8.
  (Numerically: a grid of 4e6 points on [-40, 40] reaches each bound to 1e-9; the tests check
  the smoothness bound by finite differences.) Stable forms: the logistic loss is
  logaddexp(0, -m), s(1 - s) is expit(m) expit(-m) and 1 - 2s is -tanh(m/2).

Constants (on R^dim). grad f = y phi'(y <w, x>) x, hess f = phi''(.) x x^T (y^2 = 1) and the
third derivative is y^3 phi'''(.) x (x) x (x) x, so with L0, L1, L2 the bounds on |phi'|,
|phi''|, |phi'''| and Xmax = max_a ||B z_a|| (1 for orthonormal B):
  G = L0 Xmax,  M = L1 Xmax^2,  rho = L2 Xmax^3,  B0 = phi(0)
(x0 = 0 and phi >= 0, so F(0) - inf F <= F(0) = phi(0): log 2 or 1/2).

JL projection (`project(Phi)`, Arora, Bassily, Guzman, Menart, Ullah 2023, arXiv 2206.00846,
Algorithm 4): the same atoms, labels and link with basis Phi B (k x r, not orthonormal), on
R^k, x0 = 0. Records are the same rows [y, z] in both spaces, so the wrapper runs the base
algorithm on the projected problem with the same data. The constants are those Algorithm 4
passes to the base algorithm: G = 2 L0 ||X||, M = 2 L1 ||X||^2 (its line 1), and our
extension rho = 4 L2 ||X||^3, with ||X|| the original Xmax; B0 = phi(0). They hold on the JL
event ||Phi x||^2 <= 2 ||x||^2 for the atoms (then ||Phi x|| <= sqrt 2 Xmax, and sqrt 2 <= 2,
2 <= 2, 2 sqrt 2 <= 4); `feature_norm_max` gives the projected instance's actual Xmax.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.special import expit

from problems.base import Constants, Problem, check_positive_int
from problems.finite_support import FiniteAtoms

#: Bounds (L0, L1, L2) on |phi'|, |phi''|, |phi'''| per link (see the module docstring).
LINK_BOUNDS = {
    "logistic": (1.0, 0.25, 1 / (6 * math.sqrt(3))),
    "sigmoid": (0.25, 1 / (6 * math.sqrt(3)), 0.125),
}
LINKS = tuple(LINK_BOUNDS)
_ATOMS_TAG, _BASIS_TAG = 7919, 7927  # SeedSequence words: atoms and basis draw independently
_NEWTON_TOL, _NEWTON_MAX_ITER = 1e-12, 200


def _phi(link: str, m: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, -m) if link == "logistic" else expit(-m)


def _dphi(link: str, m: np.ndarray) -> np.ndarray:
    # -expit(-m) = -1 / (1 + e^m) and s(1 - s) = e^-|m| / (1 + e^-|m|)^2, with numpy's exp:
    # the same values to an ulp, ~4x faster than scipy's expit (the counts-mode hot path);
    # e^m overflowing to inf gives the limit 0
    if link == "logistic":
        with np.errstate(over="ignore"):
            return -1.0 / (1.0 + np.exp(m))
    e = np.exp(-np.abs(m))
    return -e / (1.0 + e) ** 2


def _d2phi(link: str, m: np.ndarray) -> np.ndarray:
    p = expit(m) * expit(-m)
    return p if link == "logistic" else p * np.tanh(m / 2)


class GLM(FiniteAtoms, Problem):
    """f(w; (y, z)) = phi(y <w, B z>), N atoms on the unit sphere of R^rank (module docstring).

    `project(Phi)` returns the JL-projected instance (same class, `projected=True`).
    """

    name = "glm"
    character = "benign"
    description = "GLM phi(y <w, Bz>) (logistic or sigmoid link), data in a public rank-r subspace"

    def __init__(self, d: int = 10, rank: int | None = None, link: str = "logistic",
                 n_atoms: int = 1000, flip: float = 0.1, seed: int = 0) -> None:
        """`rank` defaults to min(d, 5); it must be an integer in [1, d]."""
        super().__init__(d)
        if rank is None:
            rank = min(self.d, 5)
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= self.d:
            raise ValueError(f"rank={rank!r} is invalid: must be an integer in [1, d={self.d}]")
        if link not in LINK_BOUNDS:
            raise ValueError(f"link={link!r} is invalid: must be one of {', '.join(LINKS)}")
        self.n_atoms = check_positive_int("n_atoms", n_atoms)
        if isinstance(flip, bool) or not isinstance(flip, numbers.Real) or not 0 <= flip < 0.5:
            raise ValueError(f"flip={flip!r} is invalid: must be a number in [0, 0.5)")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed={seed!r} is invalid: must be an integer >= 0")
        self.rank, self.link, self.flip, self.seed = int(rank), link, float(flip), int(seed)
        self.projected, self.source_d, self.projection = False, self.d, None
        #: Every per-sample loss is convex for the logistic link only (set per instance).
        self.convex = self.link == "logistic"

        rng = np.random.default_rng(np.random.SeedSequence([self.seed, _ATOMS_TAG]))
        # z_1 = s uniform on [-1, 1] (the label direction, the same law at every rank), the
        # other r - 1 coordinates sqrt(1 - s^2) times a uniform direction: ||z|| = 1 (r >= 2).
        s = rng.uniform(-1.0, 1.0, self.n_atoms)
        if self.rank == 1:
            z = s[:, None]
        else:
            u = rng.standard_normal((self.n_atoms, self.rank - 1))
            u /= np.linalg.norm(u, axis=1)[:, None]
            z = np.column_stack([s, np.sqrt(1 - s * s)[:, None] * u])
        y = np.where(z[:, 0] >= 0, 1.0, -1.0)  # sign(<e_1, z>)
        y[rng.random(self.n_atoms) < self.flip] *= -1
        self.atoms = np.column_stack([y, z])
        # counts mode's per-atom sums: coordinates and label-signed coordinates, contiguous
        self._atom_z = np.ascontiguousarray(self.atoms[:, 1:])
        self._atom_yz = self.atoms[:, :1] * self._atom_z
        self._atom_labels = np.ascontiguousarray(self.atoms[:, 0])

        rng = np.random.default_rng(np.random.SeedSequence([self.seed, _BASIS_TAG]))
        q, r = np.linalg.qr(rng.standard_normal((self.d, self.rank)))
        self.basis = q * np.where(np.diag(r) < 0, -1.0, 1.0)
        self._set_basis(self.basis, orthonormal=True)
        self._source_xmax = self.feature_norm_max
        self._init_atoms()

    def _set_basis(self, basis: np.ndarray, orthonormal: bool) -> None:
        """Cache the structures of B: atom feature norms ||B z_a|| (via the r x r Gram matrix)
        and an orthonormal basis Q of range(B) with coordinates R (B = Q R, R of shape (q, r))."""
        self.basis = basis
        gram = basis.T @ basis
        z = self.atoms[:, 1:]
        self._atom_norms = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", z, gram, z), 0.0))
        if orthonormal:
            self._range_q, self._range_r = basis, np.eye(self.rank)
        else:
            self._range_q, self._range_r = np.linalg.qr(basis)  # reduced: q = min(dim, r)
        self._minimizer: np.ndarray | None = None

    # ----- parameters -------------------------------------------------------------------
    @property
    def feature_norm_max(self) -> float:
        """max over the atoms of ||B z_a|| (this instance's basis)."""
        return float(self._atom_norms.max())

    @property
    def constants(self):
        l0, l1, l2 = LINK_BOUNDS[self.link]
        x = self._source_xmax
        b0 = float(_phi(self.link, np.zeros(1))[0])
        if self.projected:  # Algorithm 4 of arXiv 2206.00846 (rho: our extension)
            return Constants(G=2 * l0 * x, M=2 * l1 * x**2, rho=4 * l2 * x**3, B0=b0)
        return Constants(G=l0 * x, M=l1 * x**2, rho=l2 * x**3, B0=b0)

    @property
    def x0(self):
        return np.zeros(self.d)

    def params(self):
        out = {"d": self.source_d, "rank": self.rank, "link": self.link, "n_atoms": self.n_atoms,
               "flip": self.flip, "seed": self.seed}
        if self.projected:
            out["k"] = self.d
        return out

    # ----- projection -------------------------------------------------------------------
    def project(self, phi: np.ndarray) -> GLM:
        """The JL-projected problem of arXiv 2206.00846 Algorithm 4 with matrix `phi` (k, d):
        same atoms, labels and link, basis phi @ B, dimension k (module docstring)."""
        if self.projected:
            raise ValueError("project() is invalid on a projected GLM: project the original problem")
        phi = np.array(phi, dtype=float)  # a copy: the instance keeps it as `projection`
        if phi.ndim != 2 or phi.shape[1] != self.d or phi.shape[0] < 1:
            raise ValueError(f"phi of shape {phi.shape} is invalid: must be a 2-d array of shape "
                             f"(k, d={self.d}) with k >= 1")
        if not np.all(np.isfinite(phi)):
            raise ValueError("phi is invalid: its entries must be finite")
        new = object.__new__(GLM)
        new.__dict__.update(self.__dict__)
        Problem.__init__(new, phi.shape[0])
        new.projected, new.projection = True, phi
        new._set_basis(phi @ self.basis, orthonormal=False)
        return new

    # ----- margins and coefficients ----------------------------------------------------
    def _coef(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """y phi'(y <w, B z>) per row: the gradient of a row is this times B z."""
        y = rows[:, 0]
        m = y * (rows[:, 1:] @ (self.basis.T @ w))
        return y * _dphi(self.link, m)

    def _features(self, rows: np.ndarray) -> np.ndarray:
        return rows[:, 1:] @ self.basis.T  # (b, dim)

    # ----- per-sample oracles ---------------------------------------------------------------
    def per_sample_losses(self, x, batch):
        m = batch[:, 0] * (batch[:, 1:] @ (self.basis.T @ x))
        return _phi(self.link, m)

    def per_sample_grads(self, x, batch):
        return self._coef(x, batch)[:, None] * self._features(batch)

    def sum_grads(self, x, batch):
        return self.basis @ (batch[:, 1:].T @ self._coef(x, batch))

    def per_sample_grad_diffs(self, x, y, batch):
        return (self._coef(x, batch) - self._coef(y, batch))[:, None] * self._features(batch)

    # ----- counts mode (structured: never an (atoms, dim) array) --------------------------
    def _counts_mean(self, coef: np.ndarray, present: np.ndarray, batch) -> tuple[np.ndarray, float]:
        weights = batch.counts[present] * coef
        mean = self.basis @ (self.atoms[present, 1:].T @ weights) / batch.k
        return mean, float(np.max(np.abs(coef) * self._atom_norms[present]))

    def counts_grad(self, x, batch):
        present = np.flatnonzero(batch.counts)
        return self._counts_mean(self._coef(x, self.atoms[present]), present, batch)

    def counts_grad_diff(self, x, y, batch):
        present = np.flatnonzero(batch.counts)
        rows = self.atoms[present]
        return self._counts_mean(self._coef(x, rows) - self._coef(y, rows), present, batch)

    def counts_grads(self, xs: np.ndarray, batch) -> np.ndarray:
        """grad F_S at each row of xs (m, d), exact from the counts: per atom coef_a(x) B z_a
        weighted by its count, for m iterates in one matrix product (the metrics evaluate every
        stored iterate of a run; one `counts_grad` call each cost ~90 us at 1,000 atoms)."""
        present = np.flatnonzero(batch.counts)
        labels, z, yz = self.atoms[present, 0], self._atom_z[present], self._atom_yz[present]
        dphi = _dphi(self.link, yz @ (self.basis.T @ np.asarray(xs, dtype=float).T))  # (atoms, m)
        weights = (labels * batch.counts[present])[:, None] * dphi
        return (self.basis @ (z.T @ weights)).T / batch.k

    def counts_clipped_sum(self, x, y, batch, clip: float) -> np.ndarray:
        """sum over the batch of grad f(x; z_i) (y None) or grad f(x; z_i) - grad f(y; z_i),
        each scaled to norm at most `clip`, per atom (`algorithms.counts_maps`): a row is
        coef_a B z_a with norm |coef_a| ||B z_a||, so its clip factor is a scalar per atom and
        the sum stays B (Z^T weights), never an (atoms, dim) array. When most atoms are present
        it runs over all of them (absent ones weigh 0): no gathers, the same cost at any n."""
        counts = batch.counts
        # (the hot path of every counts-mode step on a GLM: a count, not the index list, picks
        # the branch; contiguous labels; the two columns written into place, as column_stack)
        if 2 * np.count_nonzero(counts) >= self.n_atoms:
            labels, z, yz, norms, c = (self._atom_labels, self._atom_z, self._atom_yz,
                                       self._atom_norms, counts)
        else:
            present = np.flatnonzero(counts)
            labels, z, yz = self.atoms[present, 0], self._atom_z[present], self._atom_yz[present]
            norms, c = self._atom_norms[present], counts[present]
        # margins y <w, B z> = (y z) . (B^T w), for x alone or x and y as two columns
        if y is None:
            points = x
        else:
            points = np.empty((len(x), 2))
            points[:, 0], points[:, 1] = x, y
        dphi = _dphi(self.link, yz @ (self.basis.T @ points))
        coef = labels * (dphi if y is None else dphi[:, 0] - dphi[:, 1])
        scale = np.minimum(1.0, clip / np.maximum(np.abs(coef) * norms, 1e-300))  # 1 inside
        return self.basis @ (z.T @ (c * coef * scale))

    def record_grad_bound(self, x):
        return float(np.max(np.abs(self._coef(x, self.atoms)) * self._atom_norms))

    def record_grad_diff_bound(self, x, y):
        diff = self._coef(x, self.atoms) - self._coef(y, self.atoms)
        return float(np.max(np.abs(diff) * self._atom_norms))

    def enforce_domain(self, batch: np.ndarray) -> np.ndarray:
        """Labels to their sign (0 -> +1) and coordinate vectors into the ball of the atoms'
        largest norm: the identity on every record P draws, and afterwards every record's loss
        is L1 ||X||^2-smooth and L0 ||X||-Lipschitz (||X|| the atoms' max feature norm), as the
        constants state."""
        out = np.array(batch, dtype=float, copy=True)
        out[:, 0] = np.where(out[:, 0] >= 0, 1.0, -1.0)
        z = out[:, 1:]
        zmax = float(np.sqrt(np.einsum("ij,ij->i", self.atoms[:, 1:], self.atoms[:, 1:]).max()))
        norms = np.sqrt(np.einsum("ij,ij->i", z, z))
        bad = ~np.isfinite(norms)
        z[bad] = 0.0
        over = norms > zmax
        z[over] *= (zmax / norms[over])[:, None]
        return out

    def adversarial_records(self):
        """The base rows plus GLM-structured ones: z = +-1e6 e_j and a dense z of norm 1e6,
        each with label +1 and -1, and label +-1e6 with a unit z."""
        big, r = self.ADVERSARY_SCALE, self.rank
        dense = np.random.default_rng(20261201).standard_normal(r)
        dirs = [*np.eye(r)[: min(r, 5)], dense / np.linalg.norm(dense)]
        rows = [np.concatenate([[y], s * big * u]) for u in dirs for s in (1.0, -1.0) for y in (1.0, -1.0)]
        rows += [np.concatenate([[s * big], dirs[-1]]) for s in (1.0, -1.0)]
        return np.vstack([super().adversarial_records(), np.array(rows)])

    # ----- exact population oracles (uniform average over the atoms) ---------------------
    def _margins(self, x):
        return self.atoms[:, 0] * (self.atoms[:, 1:] @ (self.basis.T @ x))

    def population_loss(self, x):
        return float(np.mean(_phi(self.link, self._margins(x))))

    def population_grad(self, x):
        coef = self._coef(x, self.atoms)
        return self.basis @ (self.atoms[:, 1:].T @ coef) / self.n_atoms

    def _hessian_coords(self, x) -> np.ndarray:
        """H_r = Z^T diag(y^2 phi''(m) / N) Z, so that hess F(x) = B H_r B^T."""
        z, y = self.atoms[:, 1:], self.atoms[:, 0]
        w = y * y * _d2phi(self.link, self._margins(x)) / self.n_atoms
        return (z * w[:, None]).T @ z

    def population_hessian(self, x):
        return self.basis @ self._hessian_coords(x) @ self.basis.T

    def population_hvp(self, x, v):
        return self.basis @ (self._hessian_coords(x) @ (self.basis.T @ v))

    def hessian_lipschitz(self) -> float:
        """A bound on the population Hessian's Lipschitz constant (operator norm) for this
        instance: each atom's Hessian is phi''(y <w, B z>) (B z)(B z)^T (y^2 = 1), which moves
        by at most L2 ||B z||^3 ||w - w'||, so L2 * feature_norm_max^3 (L2 the link's bound on
        |phi'''|; on a JL-projected instance its own projected norms, not the stated rho's
        event). problems.evaluation.curvature_screen reads it to skip lambda_min where alpha = g."""
        return LINK_BOUNDS[self.link][2] * self.feature_norm_max ** 3

    def population_lambda_min(self, x):
        """With B = Q R (Q orthonormal, dim x q), hess F = Q (R H_r R^T) Q^T: its spectrum is
        that of the q x q matrix R H_r R^T (= that of (B^T B)^{1/2} H_r (B^T B)^{1/2} when
        q = r), plus 0 when q < dim."""
        r = self._range_r
        eig = float(np.linalg.eigvalsh(r @ self._hessian_coords(x) @ r.T)[0])
        return min(eig, 0.0) if self._range_q.shape[1] < self.d else eig

    # Batched population oracles: row i is bit for bit the single-point oracle at xs[i]. Every
    # product is np.matmul over a stack of (k, 1) columns, which calls the same BLAS gemv /
    # gemm per slice as the single-point code (one gemm over all columns would sum in another
    # order), and the links' ufuncs act elementwise; problems.evaluation.metrics checks the identity once
    # per process and falls back to the single-point loop where it fails.
    def _margins_many(self, xs: np.ndarray) -> np.ndarray:
        """y <x_i, B z_a> for each row x_i of xs: shape (len(xs), N), as `_margins` row by row."""
        proj = np.matmul(self.basis.T, np.asarray(xs, dtype=float)[:, :, None])  # (m, r, 1)
        return self.atoms[:, 0] * np.matmul(self.atoms[:, 1:], proj)[:, :, 0]

    def population_grads(self, xs: np.ndarray) -> np.ndarray:
        """grad F at each row of xs, shape (m, d): `population_grad` row by row."""
        coef = self.atoms[:, 0] * _dphi(self.link, self._margins_many(xs))  # _coef per row
        inner = np.matmul(self.atoms[:, 1:].T, coef[:, :, None])  # (m, r, 1)
        return np.matmul(self.basis, inner)[:, :, 0] / self.n_atoms

    def population_lambda_mins(self, xs: np.ndarray) -> np.ndarray:
        """lambda_min(hess F) at each row of xs: `population_lambda_min` row by row."""
        z, y = self.atoms[:, 1:], self.atoms[:, 0]
        w = y * y * _d2phi(self.link, self._margins_many(xs)) / self.n_atoms  # (m, N)
        h = np.matmul((z * w[:, :, None]).transpose(0, 2, 1), z)  # (m, r, r), _hessian_coords
        r = self._range_r
        eig = np.linalg.eigvalsh(np.matmul(np.matmul(r, h), r.T))[:, 0]
        return np.minimum(eig, 0.0) if self._range_q.shape[1] < self.d else eig

    def population_minimizer(self) -> np.ndarray:
        """The minimum-norm minimizer of F (link="logistic" only), by damped Newton in the
        coordinates c of range(B) (w = Q c) to ||grad F|| <= 1e-12; cached."""
        if self.link != "logistic":
            raise ValueError(f"population_minimizer is unavailable for link={self.link!r}: a "
                             "non-convex GLM has no computable global minimizer here (use link='logistic')")
        if self.flip == 0:
            raise ValueError("flip=0.0 makes the data separable, so the logistic loss has no "
                             "finite minimizer: use flip > 0")
        if self._minimizer is None:
            self._minimizer = self._range_q @ self._newton()
        return self._minimizer.copy()

    def _newton(self) -> np.ndarray:
        y = self.atoms[:, 0]
        feats = y[:, None] * (self.atoms[:, 1:] @ self._range_r.T)  # y R z_a, (N, q)
        n = self.n_atoms

        def loss(c):
            return float(np.mean(np.logaddexp(0.0, -(feats @ c))))

        c = np.zeros(feats.shape[1])
        for _ in range(_NEWTON_MAX_ITER):
            m = feats @ c
            g = feats.T @ (-expit(-m)) / n
            if np.linalg.norm(g) <= _NEWTON_TOL:
                # Not separable means some margin is <= 0 at every c, so F >= log(2) / N; a
                # smaller value is a near-stationary point far out along a separating direction.
                if loss(c) >= math.log(2) / n:
                    return c
                break
            p = expit(m) * expit(-m)
            step = np.linalg.solve((feats * (p / n)[:, None]).T @ feats, g)
            dec = float(g @ step)  # Newton decrement squared
            t = 1.0
            if dec > 1e-10:  # outside the quadratic region: backtrack (Armijo)
                f0 = loss(c)
                while loss(c - t * step) > f0 - 0.25 * t * dec and t > 1e-12:
                    t /= 2
            c = c - t * step
        raise ValueError(f"population_minimizer did not converge in {_NEWTON_MAX_ITER} Newton steps: "
                         f"with flip={self.flip} and n_atoms={self.n_atoms} the atoms look separable "
                         "(no finite minimizer); raise flip or n_atoms")


__all__ = ["GLM", "LINKS", "LINK_BOUNDS"]
