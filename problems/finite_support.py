"""Counts-mode oracles for the two kinds of finite support we use (see `problems.counts.stream`).

* `TwoPointCoordinates`: every record coordinate j is independently `low[j]` or `high[j]`
  (probability 1/2 each), and the per-sample gradient is affine in the record. The batch mean
  of the gradients is then the gradient at the batch's mean record, which the coordinate
  counts give exactly: mean_j = low_j + (high_j - low_j) c_j / k.
* `FiniteAtoms`: records are drawn uniformly from N atoms; the batch mean is the
  counts-weighted average of the per-atom gradients of the atoms the batch holds, so a small
  batch costs O(atoms present), not O(N). `counts_grad` also returns the largest norm among
  those atoms, a statistic of the data: no guard reads it (issue 30) — on atoms every clip is
  applied per atom instead (`algorithms.counts_maps`).

Both also give the per-record bounds over the whole support (`record_grad_bound`).
"""

from __future__ import annotations

import numpy as np

from problems.counts.layouts import BinaryCoordinates, Categorical, CountsBatch


class TwoPointCoordinates:
    """Mixin: records with independent two-point coordinates and affine per-sample gradients.

    The class sets `record_low` and `record_high` (shape (record_dim,)) in its __init__ and
    calls `_init_two_point()`.
    """

    record_low: np.ndarray
    record_high: np.ndarray
    counts_capable = True
    #: The counts layout's kind (`problems.counts.dataset.layout_kind`), known per class.
    counts_layout_kind = "product"

    def _init_two_point(self) -> None:
        self.layout = BinaryCoordinates(np.full(len(self.record_low), 0.5))

    def _draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        high = rng.integers(0, 2, size=(n, len(self.record_low))).astype(bool)
        return np.where(high, self.record_high, self.record_low)

    def mean_record(self, batch: CountsBatch) -> np.ndarray:
        """The batch's mean record, exact from its counts, shape (1, record_dim)."""
        frac = batch.counts / batch.k
        return (self.record_low + (self.record_high - self.record_low) * frac)[None, :]

    def batch_mean_grad(self, x, batch):
        return self.per_sample_grads(x, self.mean_record(batch))[0]

    def batch_mean_grad_diff(self, x, y, batch):
        return self.per_sample_grad_diffs(x, y, self.mean_record(batch))[0]

    def materialize(self, batch):
        """Rows with exactly counts[j] high values in column j (the first counts[j] rows)."""
        self.layout.check(batch.counts, batch.k)
        high = np.arange(batch.k)[:, None] < batch.counts[None, :]
        return np.where(high, self.record_high, self.record_low)


class FiniteAtoms:
    """Mixin: records drawn uniformly from the rows of `self.atoms`; call `_init_atoms()`."""

    atoms: np.ndarray
    counts_capable = True
    counts_layout_kind = "atoms"

    def _init_atoms(self) -> None:
        self.layout = Categorical(np.full(len(self.atoms), 1.0 / len(self.atoms)))

    def _draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.atoms[rng.integers(0, len(self.atoms), size=n)]

    def batch_mean_grad(self, x, batch):
        return self.counts_grad(x, batch)[0]

    def batch_mean_grad_diff(self, x, y, batch):
        return self.counts_grad_diff(x, y, batch)[0]

    @staticmethod
    def _mean_and_max(rows: np.ndarray, counts: np.ndarray, k: int) -> tuple[np.ndarray, float]:
        return counts @ rows / k, float(np.sqrt(np.einsum("ij,ij->i", rows, rows).max()))

    def counts_grad(self, x, batch):
        present = np.flatnonzero(batch.counts)
        rows = self.per_sample_grads(x, self.atoms[present])
        return self._mean_and_max(rows, batch.counts[present], batch.k)

    def counts_grad_diff(self, x, y, batch):
        present = np.flatnonzero(batch.counts)
        rows = self.per_sample_grad_diffs(x, y, self.atoms[present])
        return self._mean_and_max(rows, batch.counts[present], batch.k)

    def record_grad_bound(self, x):
        g = self.per_sample_grads(x, self.atoms)
        return float(np.sqrt(np.einsum("ij,ij->i", g, g).max()))

    def record_grad_diff_bound(self, x, y):
        g = self.per_sample_grad_diffs(x, y, self.atoms)
        return float(np.sqrt(np.einsum("ij,ij->i", g, g).max()))

    def materialize(self, batch):
        self.layout.check(batch.counts, batch.k)
        return np.repeat(self.atoms, batch.counts, axis=0)
