"""DP-SGD's and DP-GD's steps on records in compiled code (numba), the same floats as the
Python loop of `algorithms.first_order.noisy_gd` through the release engine.

Why: the practitioners' atlas searches DP-SGD's n on hard_valley and strict_saddle in record
mode (a Poisson subsample of one sample is not exact from per-coordinate counts: see "Why not
counts" below), and there a step costs ~4 ms at n 2e5, d 100 in the Python loop (one DP-SGD
cell of practitioners_d100_eps1 ran 371 s, 62,645 steps over its search's 11 runs; profiled:
109 s drawing the Poisson masks, 149 s in the per-record gradients, 41 s copying rows, 30 s
clipping). The kernel runs consecutive steps of one run in one compiled call: each step the
release (the Poisson mask `rng.random(n) < q` from the run's generator, or every record for a
full batch; each selected record's gradient; the clipped sum; the division by the public
divisor; the Gaussian noise of `algorithms.privacy.compiled_noise`) and the step x <- x - eta g~.

Same floats, operation for operation, as `ReleaseDesk._release` on records with
`SeparableSaddle.per_sample_grads`: a record z = (a1, a2, g) has gradient
(g_1 + (1 + a1) (c phi'(x_1)), g_j + ((1 + a2) mu) u_j) with u = y / sqrt(1 + y.y); the rows
are summed in record order (numpy's axis-0 sum is sequential: tests/test_compiled_sgd.py
checks it); the mask's uniforms are numpy's `random` (numba shares the generator's state and
ports its sampler; checked once per process with the normals and dot products,
`uniforms_match_numpy` and `compiled_o2.numba_matches_numpy`). The clip: `clip_rows` leaves a
row untouched (times 1.0) unless its norm exceeds C, so the kernel never clips; before each
step draws anything it bounds every record's gradient norm from the sample's coordinate
maxima (`coordinate_peaks`: max |a1|, max |a2|, max |g_j|, read once a run; they only choose
between two paths that give the same floats, so they release nothing) and hands the step to
Python unless that bound is below C by a relative margin of 1e-9 (a computed norm is within
~d ulps of its value), where the Python loop clips.

Python keeps: the deadline (checked between calls of at most CHUNK steps, so a timeout may
stop a few steps later than the Python loop's), the target monitor (the kernel returns at a
stored iterate unless ||grad F(x)|| clears the monitor's `grad_screen` by `SCREEN_MARGIN`), a
step whose guard fails or whose profile derivative raises, planted faults, the privacy
audit's probe, counts and twin samples, and any problem whose per-record gradient is not
SeparableSaddle's (`sgd_kernel_for` returns None and the Python loop runs alone).
tests/test_compiled_sgd.py holds whole runs equal with the kernel on and off (iterates, step
records, realized batch sizes, stop reason, the generator's state).

Why not counts (issue 72, item 4). On a product layout the counts are the sample's
per-coordinate counts; a Poisson subsample's counts at step t depend on which records it
shares with every earlier subsample, that is on the records themselves (which coordinate values
sit together in one record), which the marginal counts do not hold. An exact draw must keep
the n x (d + 2) sample, and then it is this record loop: the same O(q n d) work a step, plus the
n uniforms of the mask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from algorithms.privacy.compiled_noise import add_gaussian
from algorithms.privacy.poisson_gaps import gap_indices
from algorithms.sosp.compiled_o2 import numba_matches_numpy
from algorithms.sosp.compiled_o2_steps import SCREEN_MARGIN, separable_grad_norm
from algorithms.sosp.compiled_profiles import MODE_MAP, MODE_PYTHON, PY_PROFILE, o2_profile, profile_d1
from problems.compiled_separable import selected_grad_sum
from problems.counts.dataset import layout_kind
from problems.counts.layouts import CountsBatch
from problems.separable import SeparableSaddle

#: Steps per compiled call at most (the deadline is checked between calls).
CHUNK = 4096
#: Why the compiled call returned: its steps are done (CHUNK or the horizon); the last step
#: stored an iterate the monitor must see; the next step is Python's; the last step diverged
#: (its record not logged, as the Python loop's).
DONE, POST, PYTHON, DIVERGED = 0, 1, 2, 3
#: How a step draws its records: every one (a full batch), the mask, the gaps.
DRAW_ALL, DRAW_MASK, DRAW_GAPS = 0, 1, 2
#: The relative margin by which the records' gradient bound must be below the clip.
CLIP_MARGIN = 1e-9

# Float state.
F_Q, F_C, F_DENOM, F_STD, F_ETA, F_CC, F_MU, F_W, F_BETA, F_SCREEN, F_BEST, F_AMP, F_HALF, \
    F_K = range(14)
# Int state.
K_T, K_KEEP_EVERY, K_DRAW, K_MONITOR, K_MODE, K_ADDR, K_STORED, K_REALIZED, K_FIRST, K_COUNTS, \
    K_COUNT = range(11)

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _step_bound(cd1, u, peaks, mu):
    """A bound on every record's gradient norm at this iterate, from the sample's coordinate
    peaks (max |a1|, max |a2|, max |g_j|): |g_1| + (1 + |a1|) |c phi'| and
    |g_j| + (1 + |a2|) mu |u_j| per coordinate."""
    first = peaks[2] + (1.0 + peaks[0]) * abs(cd1)
    sq = first * first
    f2 = (1.0 + peaks[1]) * mu
    for j in range(u.shape[0]):
        v = peaks[3 + j] + f2 * abs(u[j])
        sq += v * v
    return math.sqrt(sq)


@_jit
def _support_bound(cd1, u, amp, mu, half):
    """`SeparableSaddle.record_grad_bound`'s arithmetic (the counts guard's whole-support
    bound), from c phi'(x_1) and u(x)."""
    first = amp * abs(cd1) + half
    rest = amp * mu * np.abs(u) + half
    return math.sqrt(first * first + np.dot(rest, rest))


@_jit
def _noised(leaf, std, rng):
    """The desk's release: the leaf plus its Gaussian noise (none drawn at std 0)."""
    return add_gaussian(leaf, std, rng) if std > 0 else leaf


@_jit
def _look(x, fs, mode, addr, w, beta, d1_params, d1_err, cc, mu):
    """Whether Python's target monitor must look at the stored iterate x: unless
    ||grad F(x)|| clears its screen (a profile derivative that raised: Python's monitor
    computes, or raises, it)."""
    if not fs[F_SCREEN] < math.inf:
        return True
    d1x = profile_d1(x[0], w, beta, mode, addr, d1_params, d1_err)
    if d1_err[0] != 0:
        d1_err[0] = 0
        return True
    return not separable_grad_norm(x, d1x, cc, mu) > fs[F_SCREEN]


@_jit
def _records_sum(rows, idx, rng, q, draw, cd1, mu, u, total):
    """The release's batch and its rows' gradient sum into total, in record order; returns
    its size. The mask's n uniforms select the records' indices in one branch-free pass
    (measured at n 4e5, q 0.003: 0.94 ms a step, against 1.8 for the uniforms stored first
    and 1.4 with a branch), then the rows are summed (a draw between rows' sums costs ~4x)."""
    k = rows.shape[0]
    if draw == DRAW_GAPS:  # the desk's sampler "gaps" (the same function as its Python path)
        k = gap_indices(rng, rows.shape[0], q, idx)
    elif draw:
        k = 0
        for i in range(rows.shape[0]):
            idx[k] = i
            k += rng.random() < q
    selected_grad_sum(rows, idx, k, cd1, mu, u, total)
    return k


@_jit
def _counts_sum(z, cd1, mu, u, kf, total):
    """The full batch's sum from counts: `SeparableSaddle._mean_grad_and_support_bound`'s mean
    at the mean record z, times k (`counts_maps`' mean x k)."""
    total[0] = z[2] + (1 + z[0]) * cd1
    f2 = (1 + z[1]) * mu
    for j in range(1, total.shape[0]):
        total[j] = z[2 + j] + f2 * u[j - 1]
    total *= kf


@_jit
def _steps(max_steps, x, rows, z, peaks, fs, ist, rng, idx, r_norm, s_x, s_t, d1_params,
           d1_err):
    """Up to max_steps steps of `_NoisyGradientMethod._run`'s loop from x (module docstring);
    returns (steps logged, reason, x)."""
    C, denom, std, eta = fs[F_C], fs[F_DENOM], fs[F_STD], fs[F_ETA]
    cc, mu, w, beta = fs[F_CC], fs[F_MU], fs[F_W], fs[F_BETA]
    mode, addr, counts = ist[K_MODE], ist[K_ADDR], ist[K_COUNTS]
    t, best = ist[K_T], fs[F_BEST]
    n, n_stored, reason = 0, 0, DONE
    total = np.empty(x.shape[0])
    while n < max_steps:
        # the guard, from public x (and the peaks, or the support), before anything is drawn
        d1 = profile_d1(x[0], w, beta, mode, addr, d1_params, d1_err)
        if d1_err[0] != 0 or not math.isfinite(d1):
            d1_err[0] = 0
            reason = PYTHON  # Python's step computes (or raises) it
            break
        y = x[1:]
        u = y / math.sqrt(1.0 + np.dot(y, y))
        cd1 = cc * d1
        if counts:
            if not C >= _support_bound(cd1, u, fs[F_AMP], mu, fs[F_HALF]) * (1 - 1e-12):
                reason = PYTHON  # Python's guard raises the error
                break
            _counts_sum(z, cd1, mu, u, fs[F_K], total)
            k = ist[K_COUNT]
        else:
            if not _step_bound(cd1, u, peaks, mu) * (1.0 + CLIP_MARGIN) < C:
                reason = PYTHON  # the Python loop clips
                break
            k = _records_sum(rows, idx, rng, fs[F_Q], ist[K_DRAW], cd1, mu, u, total)
        if ist[K_FIRST] < 0:
            ist[K_FIRST] = k
        ist[K_REALIZED] += k
        # the release: the divisor, the noise; the step
        released = _noised(total / denom, std, rng)
        est = math.sqrt(np.dot(released, released))
        x = x - eta * released
        t += 1
        if not np.all(np.isfinite(x)):
            reason = DIVERGED
            break
        r_norm[n] = est
        n += 1
        if est < best or t % ist[K_KEEP_EVERY] == 0:
            if est < best:
                best = est
            s_x[n_stored] = x
            s_t[n_stored] = t
            n_stored += 1
            if ist[K_MONITOR] and _look(x, fs, mode, addr, w, beta, d1_params, d1_err, cc, mu):
                reason = POST
                break
    fs[F_BEST] = best
    ist[K_T], ist[K_STORED] = t, n_stored
    return n, reason, x


@_jit
def _numba_uniforms(rng, n):
    out = np.empty(n)
    for i in range(n):
        out[i] = rng.random()
    return out


_UNIFORMS: dict[type, bool] = {}


def uniforms_match_numpy(bit_generator: type) -> bool:
    """Whether numba's scalar `rng.random()` draws numpy's `rng.random(n)`, float for float
    and state for state, for this bit generator type, in this process."""
    if bit_generator not in _UNIFORMS:
        a, b = (np.random.Generator(bit_generator(20261207)) for _ in range(2))
        same = np.array_equal(_numba_uniforms(a, 1000), b.random(1000))
        # and the states after (the next raw draws: a Philox state holds arrays)
        same = same and np.array_equal(a.bit_generator.random_raw(16), b.bit_generator.random_raw(16))
        _UNIFORMS[bit_generator] = bool(same)
    return _UNIFORMS[bit_generator]


@_jit
def _peaks(rows):
    """(max |entry| per column, whether every entry is finite), in one pass."""
    peaks = np.zeros(rows.shape[1])
    finite = True
    for i in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            v = abs(rows[i, j])
            if v > peaks[j]:
                peaks[j] = v
            elif not v <= peaks[j]:  # nan
                finite = False
    for j in range(rows.shape[1]):
        if peaks[j] == math.inf:
            finite = False
    return peaks, finite


def coordinate_peaks(rows: np.ndarray) -> np.ndarray | None:
    """max |a1|, max |a2| and max |g_j| (j = 1..d) over the sample's records; None if an
    entry is not finite."""
    peaks, finite = _peaks(rows)
    return peaks if finite else None


@dataclass
class SgdKernel:
    """A run's compiled steps: the records, constants, state arrays and record buffers."""

    rows: np.ndarray
    z: np.ndarray  # the full batch's mean record (counts mode)
    peaks: np.ndarray
    fs: np.ndarray
    ist: np.ndarray
    idx: np.ndarray  # the selected records' indices (every record's for a full batch)
    r_norm: np.ndarray
    s_x: np.ndarray
    s_t: np.ndarray
    profile: Any = None  # the profile whose d1 runs in Python (MODE_PYTHON), else None
    d1_params: Any = None
    d1_err: Any = None
    keep: Any = None  # an outside d1's C wrapper, alive as long as the kernel

    @property
    def noise_std(self) -> float:
        """Each release's noise std (the desk's, `ReleaseDesk.kernel_view`)."""
        return float(self.fs[F_STD])

    def run(self, x: np.ndarray, t: int, max_steps: int, best: float,
            rng: np.random.Generator) -> tuple[int, int, np.ndarray, tuple]:
        """Up to max_steps steps from (x, t); returns (steps logged, reason, x, (t, best,
        est norms, stored iterates, their steps, realized sizes (first, sum))). The arrays are
        views of the kernel's buffers, valid until its next call."""
        fs, ist = self.fs, self.ist
        fs[F_BEST] = best
        ist[K_T], ist[K_REALIZED], ist[K_FIRST] = t, 0, -1
        outer, PY_PROFILE.profile = getattr(PY_PROFILE, "profile", None), self.profile
        try:
            n, reason, x = _steps(min(max_steps, CHUNK), x, self.rows, self.z, self.peaks, fs, ist,
                                  rng, self.idx, self.r_norm, self.s_x, self.s_t,
                                  self.d1_params, self.d1_err)
        finally:
            PY_PROFILE.profile = outer
        m = int(ist[K_STORED])
        first = int(ist[K_FIRST])
        return n, reason, x, (int(ist[K_T]), float(fs[F_BEST]), self.r_norm[:n], self.s_x[:m],
                              self.s_t[:m], (None if first < 0 else first, int(ist[K_REALIZED])))


#: Off: the Python loop alone (the tests' reference for the compiled steps).
ENABLED = True

#: The per-record gradient's methods; a problem overriding one runs the Python loop.
GRAD_METHODS = ("per_sample_grads", "_block_grads")
#: The counts-mode full batch's methods (its mean, the guard's bound): likewise.
COUNTS_METHODS = ("guarded_counts_grad", "_mean_grad_and_support_bound", "record_grad_bound",
                  "_block_unit", "mean_record", "counts_grad", "batch_mean_grad")


def sgd_kernel_for(problem: Any, desk: Any, p: dict, monitor: Any, keep_every: int,
                   rng: Any) -> SgdKernel | None:
    """The compiled steps for this run, or None where their floats are not established to be
    the Python loop's (module docstring)."""
    view = desk.kernel_view() if ENABLED else None
    if view is None or not isinstance(rng, np.random.Generator):
        return None
    sample, q, denom, std = view
    cls = type(problem)
    if not isinstance(problem, SeparableSaddle) or problem.d < 2:
        return None
    d = problem.d
    counts = isinstance(sample, CountsBatch)
    if counts:  # the full batch from counts, on a product layout (module docstring)
        if q is not None or any(getattr(cls, name) is not getattr(SeparableSaddle, name)
                                for name in COUNTS_METHODS) or layout_kind(problem) == "atoms" \
                or not 0 < sample.k < 2**53:
            return None
        z = problem.mean_record(sample)[0]
        rows = np.zeros((0, d + 2))
    else:
        if any(getattr(cls, name) is not getattr(SeparableSaddle, name) for name in GRAD_METHODS):
            return None
        rows, z = sample, np.zeros(d + 2)
        if not (isinstance(rows, np.ndarray) and rows.dtype == np.float64 and rows.ndim == 2
                and rows.shape[1] == d + 2 and rows.flags.c_contiguous):
            return None
    prof = o2_profile(problem)
    if isinstance(prof, str) or prof.mode == MODE_MAP:
        return None
    bitgen = type(rng.bit_generator)
    if not (numba_matches_numpy(d, bitgen) and uniforms_match_numpy(bitgen)):
        return None
    fs = np.zeros(14)
    fs[F_Q], fs[F_C], fs[F_DENOM], fs[F_STD] = q if q is not None else 1.0, float(p["C"]), denom, std
    fs[F_ETA], fs[F_CC], fs[F_MU] = float(p["eta"]), problem.c, problem.mu
    fs[F_W], fs[F_BETA] = prof.w, prof.beta
    fs[F_AMP], fs[F_HALF] = 1 + problem.noise, problem.tau / math.sqrt(d)
    screen = getattr(monitor, "grad_screen", None)
    fs[F_SCREEN] = float(screen) * (1 + SCREEN_MARGIN) if (
        screen is not None and 1e-150 < screen < math.inf) else math.inf
    ist = np.zeros(11, dtype=np.int64)
    draw = DRAW_ALL if q is None else DRAW_GAPS if desk.plan.sampler == "gaps" else DRAW_MASK
    ist[K_KEEP_EVERY], ist[K_DRAW], ist[K_COUNTS] = keep_every, draw, counts
    ist[K_MONITOR], ist[K_MODE], ist[K_ADDR] = monitor is not None, prof.mode, prof.addr
    if counts:
        ist[K_COUNT], fs[F_K] = sample.k, float(sample.k)
    peaks = coordinate_peaks(rows)
    if peaks is None:
        return None
    n = len(rows)
    return SgdKernel(rows, z, peaks, fs, ist, np.arange(n, dtype=np.int64),
                     np.zeros(CHUNK), np.zeros((CHUNK, d)), np.zeros(CHUNK, dtype=np.int64),
                     prof.profile if prof.mode == MODE_PYTHON else None, prof.params,
                     np.zeros(1, dtype=np.int64), prof.keep)


__all__ = ["CHUNK", "DIVERGED", "DONE", "ENABLED", "POST", "PYTHON", "SgdKernel",
           "coordinate_peaks", "sgd_kernel_for", "uniforms_match_numpy"]
