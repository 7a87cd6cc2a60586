"""The tree-based private Spider's right-child steps in compiled code (numba), the same floats
as the Python loop of `algorithms.first_order.tree_private_spider`.

A round of Arora et al.'s Algorithm 1 (arXiv 2206.00846) is one root release (b records, the
full gradient) and 2^D leaves; every leaf but the first is a right child's release (b / 2^j
records, the clipped gradient difference between its iterate and its parent's, Gaussian
noise) followed by a normalized step. In counts mode on a separable strict saddle or a declared
two-point loss such a release reads two (m) coordinates' counts and a few vectors of d, a few
microseconds of arithmetic, but the Python loop around it costs ~30 us (the reference's
seed001_population3, 2.3e6 steps a cell: 19% of `make reference`'s CPU). `TreeKernel.run` runs
consecutive right-child leaves of one round in one compiled call and hands the loop back to
Python at the round's end, after CHUNK leaves (the deadline is Python's), after a step that
stores an iterate when a target monitor is set and its screen does not clear it (the store is
the kernel's, the monitor Python's), at an early return, and wherever the next leaf needs
Python: its block roots are not in the stream's two root rows, the clip guard
refuses (Python raises it), or a declared loss's function raises. The root release stays
Python's (it reads every coordinate, once a round).

Same floats, operation for operation: the map is the Spider's compiled O2 map
(`algorithms.sosp.compiled_o2_steps`, `_mean_grad_diff_and_support_bound` or a declared loss's
functions by address), followed by the release's own arithmetic in its order (the sum as mean x
k, times the scale 2^j / b, sigma = multiplier x 2 C2 scale, est = parent's + (leaf + sigma N));
numba's dot products and normals are checked against numpy's once per process
(`compiled_o2.numba_matches_numpy`), and a target monitor stating `grad_screen` is skipped only
where the kernel's ||grad F(x)|| exceeds it by `SCREEN_MARGIN`. tests/test_compiled_tree.py
holds whole runs equal (iterates, records, samples, stop, the generator's state) with the
compiled path on and off. numba's on-disk cache of `_leaves` is keyed on this file only: after
editing a function it inlines from another module (`compiled_o2_steps`, `compiled_maps`,
`compiled_profiles`, `problems.counts.kernels`) run `make clean-numba` (a fresh clone, as CI's,
compiles everything anew). Where equality is not established (planted faults, the privacy
audit's probe, record mode, a problem whose O2 map is not compiled) `tree_kernel_for` returns
None and the Python loop runs alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from algorithms.privacy.compiled_noise import add_gaussian
from algorithms.sosp.compiled_maps import call_map
from algorithms.sosp.compiled_o2 import (
    compiled_map_profile,
    held_roots,
    map_arguments,
    screen_threshold,
)
from algorithms.sosp.compiled_o2_steps import (
    I_HELD0,
    I_HELD1,
    I_PER_SUPER,
    hold_roots,
    map_mean,
    screen_norm,
    separable_factors,
)
from algorithms.sosp.compiled_profiles import (
    MODE_MAP,
    MODE_PYTHON,
    PY_PROFILE,
    profile_d1,
)
from problems.counts import kernels as _kernels
from problems.counts.coordinates import CoordinateCountsStream

#: Leaves per compiled call at most (the deadline is checked between calls).
CHUNK = 4096
#: Why the compiled call returned: the round's last leaf is done (or CHUNK leaves); the last
#: step stored an iterate (Python asks the monitor); the next leaf is Python's; the last
#: release's norm asked for an early return (no step taken); a declared loss's difference
#: raised after its leaf took its records (`TreeKernel.run` raises it from Python).
DONE, POST, PYTHON, EARLY, RAISED = 0, 1, 2, 3, 4

# Float state.
G_M, G_TWO_G, G_STEP, G_STOP_AT, G_MULT, G_C, G_MU, G_NOISE, G_W, G_BETA, G_SCREEN, G_BEST = range(12)
# Int state: the root rows' fields share `compiled_o2_steps`' layout (`hold_roots` reads
# them); the others follow it.
J_T, J_USED, J_D, J_B, J_KEEP_EVERY, J_PRIVATE, J_MONITOR, J_LEVELS, J_LEAF_LEVELS, J_MODE, \
    J_ADDR, J_MAP_M, J_NODES_STREAM, J_GRAD_EVALS, J_STORED = range(30, 45)
INT_STATE = 45

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _trailing_zeros(k):
    z = 0
    while k & 1 == 0:
        k >>= 1
        z += 1
    return z


@_jit
def _leaves(max_steps, k, x, W, E, fs, ist, rng, roots, cum, before, tags, st, meta, path, flags,
            leaf_arr, ranks, out, r_batch, r_noise, r_norm, r_samples, s_x, s_t, s_used,
            d1_params, d1_err, maddr, mparams, mlow, mspan, zh, mbuf):
    """Right-child leaves k, k + 1, ... of one round (1 <= k < 2^D), each as
    `TreePrivateSpider._run`'s loop body: its release, the path's iterates W and estimates E
    from depth j down, the early-return test and the normalized step."""
    D, b = ist[J_D], ist[J_B]
    leaves = 1 << D
    t, used = ist[J_T], ist[J_USED]
    mode, addr = ist[J_MODE], ist[J_ADDR]
    declared = mode == MODE_MAP
    n_walk = ist[J_MAP_M] if declared else 2
    M, two_g, step_len, stop_at = fs[G_M], fs[G_TWO_G], fs[G_STEP], fs[G_STOP_AT]
    c, mu, s, w, beta = fs[G_C], fs[G_MU], fs[G_NOISE], fs[G_W], fs[G_BETA]
    best = fs[G_BEST]
    n = 0
    n_stored = 0
    reason = DONE
    while n < max_steps and k < leaves:
        j = D - _trailing_zeros(k)
        size = b >> j
        xp = W[j - 1]
        step = x - xp
        c2 = M * math.sqrt(np.dot(step, step))
        if two_g < c2:  # min(M ||step||, 2 G) as Python's
            c2 = two_g
        # the map's whole-support bound at the public iterates (before any draw)
        if declared:
            bound = call_map(maddr[0], x, xp, zh, mparams, mbuf, d1_err)
            if d1_err[0] != 0:  # the declared bound raised: Python's leaf raises it
                d1_err[0] = 0
                reason = PYTHON
                break
            first, rest = 0.0, mbuf  # not read: the declared map computes the mean itself
        else:
            d1x = profile_d1(x[0], w, beta, mode, addr, d1_params, d1_err)
            d1y = profile_d1(xp[0], w, beta, mode, addr, d1_params, d1_err)
            if d1_err[0] != 0:  # an outside d1 raised: Python's leaf raises it
                d1_err[0] = 0
                reason = PYTHON
                break
            bound, first, rest = separable_factors(x, xp, d1x, d1y, c, mu, s)
        if not c2 >= bound * (1 - 1e-12):
            reason = PYTHON  # Python's guard raises the error
            break
        start, stop = used, used + size
        if not hold_roots(start >> ist[J_LEVELS], stop >> ist[J_LEVELS], ist, roots, cum, before):
            reason = PYTHON  # block roots of another superblock: Python draws them
            break
        ist[J_NODES_STREAM] += _kernels.walk_between(0, n_walk, start, stop, ist[J_LEVELS],
                                                     ist[J_LEAF_LEVELS], roots, tags, st, meta,
                                                     path, flags, leaf_arr, ranks, out)
        used = stop
        ist[J_USED] = used  # at once: the records are taken even if a later step fails
        ist[J_GRAD_EVALS] += 2 * size
        kf = float(size)
        mean = map_mean(declared, x, xp, first, rest, out, kf, s, n_walk, maddr, zh, mparams,
                        mlow, mspan, mbuf, d1_err)
        if d1_err[0] != 0:  # a declared difference raised after the take: the run raises it
            d1_err[0] = 0
            reason = RAISED
            break
        # the release (`release` in tree_private_spider): the clipped sum (mean x k), its
        # scale, the Gaussian noise on sensitivity 2 C2 scale, the parent's estimate plus it
        scale = (1 << j) / b
        leaf = (mean * kf) * scale
        sigma = 0.0
        if ist[J_PRIVATE]:  # the engine's std rule "z*s", s = 2 C2 scale
            sigma = fs[G_MULT] * (2 * c2 * scale)
        noisy = add_gaussian(leaf, sigma, rng)  # the engine's noise (compiled_noise)
        est = E[j - 1] + noisy
        for depth in range(j, D + 1):  # the right child and its left descendants
            W[depth] = x
            E[depth] = est
        norm = math.sqrt(np.dot(est, est))
        if norm <= stop_at:  # lines 19-20: early return (no step)
            reason = EARLY
            break
        x = x - step_len * est / norm
        t += 1
        k += 1
        r_batch[n], r_noise[n], r_norm[n], r_samples[n] = size, sigma, norm, used
        n += 1
        if norm < best or t % ist[J_KEEP_EVERY] == 0:
            if norm < best:  # min(best, norm) as Python's
                best = norm
            s_x[n_stored] = x
            s_t[n_stored], s_used[n_stored] = t, used
            n_stored += 1
            if ist[J_MONITOR]:
                # the monitor is Python's; where ||grad F(x)|| is clearly above target: False
                # (a user function that raised gives nan: Python's monitor raises it)
                if not fs[G_SCREEN] < math.inf or not screen_norm(
                        declared, x, maddr, zh, mparams, mbuf, d1_err, w, beta, mode, addr,
                        d1_params, c, mu)[0] > fs[G_SCREEN]:
                    reason = POST
                    break
    fs[G_BEST] = best
    ist[J_T], ist[J_STORED] = t, n_stored
    return n, reason, k, x


@dataclass
class TreeKernel:
    """A run's compiled right-child leaves: its constants, state arrays and record buffers."""

    stream: CoordinateCountsStream
    fs: np.ndarray
    ist: np.ndarray
    buffers: tuple
    no_cum: np.ndarray  # a stand-in for the cumulative roots when none are cached
    profile: Any = None  # the profile whose d1 runs in Python (MODE_PYTHON), else None
    d1_params: Any = None
    d1_err: Any = None
    d1_keep: Any = None  # an outside d1's C wrapper, alive as long as the kernel
    map_args: tuple = ()
    problem: Any = None

    def run(self, k: int, x: np.ndarray, W: np.ndarray, E: np.ndarray, t: int, best: float,
            evals: int, rng: np.random.Generator) -> tuple[int, int, int, np.ndarray, tuple]:
        """Leaves k.. of the current round from the loop's state (W, E updated in place);
        returns (steps, reason, next k, x, (t, best, evals, records, stored)). evals counts
        every leaf that took its records, an early-return leaf too (no step, no record). The
        records and stored iterates are views of the kernel's buffers, valid until its next
        call."""
        fs, ist, stream = self.fs, self.ist, self.stream
        if stream._roots_of[0] < 0 or stream._roots_of[1] < 0:  # no block roots read yet
            return 0, PYTHON, k, x, (t, best, evals, (), ())
        fs[G_BEST] = best
        ist[J_T], ist[J_USED], ist[J_GRAD_EVALS], ist[J_NODES_STREAM] = t, stream.used, evals, 0
        cum, before = held_roots(stream, ist, self.no_cum)
        # the kernel rewrites the root rows in place: until its counters are written back the
        # stream holds no root pair (as `compiled_o2.O2Kernel.run`)
        stream._roots_of[:] = [-1, -1]
        outer, PY_PROFILE.profile = getattr(PY_PROFILE, "profile", None), self.profile
        try:
            n, reason, k, x = _leaves(
                CHUNK, k, x, W, E, fs, ist, rng, stream._roots, cum, before, stream.tags,
                stream._st, stream._meta, stream._path, stream._flags, stream._leaf_arr,
                stream._ranks, stream._out, *self.buffers, self.d1_params, self.d1_err,
                *self.map_args)
        finally:
            stream._roots_of[:] = [int(ist[I_HELD0]), int(ist[I_HELD1])]
            PY_PROFILE.profile = outer
            stream.used = int(ist[J_USED])
            stream.nodes_drawn += int(ist[J_NODES_STREAM])
        if reason == RAISED:
            self._raise(x, W, k)
        m = int(ist[J_STORED])
        recs = tuple(buf[:n] for buf in self.buffers[:4])
        stored = tuple(buf[:m] for buf in self.buffers[4:])
        return n, reason, k, x, (int(ist[J_T]), float(fs[G_BEST]), int(ist[J_GRAD_EVALS]), recs,
                                 stored)

    def _raise(self, x: np.ndarray, W: np.ndarray, k: int) -> None:
        """Raise what the declared difference raised in the kernel, from Python (the same call
        on the same floats)."""
        prob = self.problem
        j = int(self.ist[J_D]) - ((k & -k).bit_length() - 1)
        zh, p = self.map_args[4], prob._params_array()  # the user's p (map_args: the kernel's)
        type(prob).grad_diff_fn(x, W[j - 1].copy(), zh.copy(), p, np.empty(prob.d))
        raise RuntimeError(f"problem {prob.name!r}: grad_diff_fn raised in the compiled steps but "
                           "not when called again from Python on the same values")


#: Off: the Python loop alone (the tests' reference for the compiled leaves).
ENABLED = True


def tree_kernel_for(alg: Any, problem: Any, stream: Any, privacy: Any, p: dict, probe: Any,
                    monitor: Any, keep_every: int, multiplier: float, rng: Any) -> TreeKernel | None:
    """The compiled right-child leaves for this run, or None where their floats are not
    established to be the Python loop's (module docstring)."""
    prof = compiled_map_profile(ENABLED, alg, problem, stream, probe, rng)
    if prof is None:
        return None
    d, const = problem.d, problem.constants
    D, b = int(p["D"]), int(p["b"])
    # b below 2^53: numba's (1 << j) / b converts b to a float first, Python's int division
    # rounds once (the same float only while b is exact)
    if D < 1 or D > 40 or b >= 2**53 or b % (1 << D):
        return None
    fs = np.zeros(12)
    fs[G_M], fs[G_TWO_G] = const.M, 2 * const.G
    fs[G_STEP], fs[G_STOP_AT] = p["step_length"], 2 * p["alpha_tilde"]
    fs[G_MULT] = multiplier
    declared = prof.mode == MODE_MAP
    if not declared:
        fs[G_C], fs[G_MU], fs[G_NOISE] = problem.c, problem.mu, problem.noise
        fs[G_W], fs[G_BETA] = prof.w, prof.beta
    ist = np.zeros(INT_STATE, dtype=np.int64)
    ist[J_D], ist[J_B], ist[J_KEEP_EVERY] = D, b, keep_every
    ist[J_PRIVATE], ist[J_MONITOR] = privacy.private, monitor is not None
    ist[J_LEVELS], ist[J_LEAF_LEVELS] = stream.levels, stream.leaf_levels
    ist[I_PER_SUPER] = stream.per_super
    ist[J_MODE], ist[J_ADDR] = prof.mode, prof.addr
    fs[G_SCREEN] = screen_threshold(monitor, prof, problem)
    buffers = (np.zeros(CHUNK, dtype=np.int64), np.zeros(CHUNK), np.zeros(CHUNK),
               np.zeros(CHUNK, dtype=np.int64), np.zeros((CHUNK, d)),
               np.zeros(CHUNK, dtype=np.int64), np.zeros(CHUNK, dtype=np.int64))
    no_cum = np.zeros((stream.per_super + 1, len(stream.tags)), dtype=np.int64)
    ist[J_MAP_M], map_args = map_arguments(prof, d)
    return TreeKernel(stream, fs, ist, buffers, no_cum,
                      prof.profile if prof.mode == MODE_PYTHON else None, prof.params,
                      np.zeros(1, dtype=np.int64), prof.keep, map_args, problem)


__all__ = ["CHUNK", "DONE", "EARLY", "ENABLED", "POST", "PYTHON", "RAISED", "TreeKernel",
           "tree_kernel_for"]
