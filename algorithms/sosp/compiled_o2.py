"""The Spiders' O2 steps in compiled code (numba), the same floats as the Python engine.

In counts mode a Spider step's arithmetic is a few microseconds (two coordinates' walks down the
counts trees, the separable O2 map, one tree node), but the Python engine around it costs
~15 us more (issue 27). `run_o2_steps` runs consecutive O2 steps of `algorithms.sosp.engine`'s
loop in one compiled call and hands the loop back to Python at every step that needs more
than an O2 step: an O1 (drift >= kappa), a saddle escape, a take whose block roots are not in
the stream's two root rows, a clip the guard refuses, a non-finite step, the data budget or T;
and after every step that stores an iterate (a new lowest norm, every keep_every-th step, a
non-finite iterate), so that the store, the monitor and the divergence check stay Python's.
A target monitor stating `grad_screen` (False wherever ||grad F(x)|| > it) is skipped where the
kernel's ||grad F(x)|| (population_grad's formula) exceeds it by `SCREEN_MARGIN`: to alpha 1e-2
at d 10, 31-340 steps a call instead of 2, 10-20 us a step instead of 60-65.

Same floats, operation for operation (tests/test_compiled_o2.py holds whole runs equal,
iterates, records and the generator's state after, with the compiled path on and off): the map
is `problems.separable.SeparableSaddle._mean_grad_diff_and_support_bound` with the profile's d1
from `algorithms.sosp.compiled_profiles` (hard_valley's compiled, the other shipped ones
numpy's through an object mode block, ~2.5 us a call, once a step: the previous step's d1 at x
is this step's at x_prev; an outside problem's `problems.jit_profile.JitProfile` its own
compiled function, called by address: problems/README.md); the clip guard is
`require_identity_clip`'s test, the tree node is `TreeMechanism.next`'s and the Gaussian O2
noise `gaussian_noise`'s, both drawn from the run's own `numpy.random.Generator` (numba shares
its state and ports numpy's sampler), and the dot products are BLAS ddot calls. numba's ddot is
scipy's OpenBLAS, not numpy's, and its normal sampler is a port, so neither equality holds by
construction: `o2_kernel_for` checks both once per process and dimension (numba's dot against
numpy's at lengths d and d - 1 on random vectors, a thousand normals from twin generators) and
falls back to the Python loop if one differs. Where an exact match is not established (a
problem overriding the map or its bound, or whose profile is neither shipped nor a checked
JitProfile; planted faults; a probe; record mode) `o2_kernel_for` returns None and the Python
loop runs alone (a plugin problem says why, once per process:
`compiled_profiles.report_fallback`). A timeout stops at most `CHUNK` steps late. The privacy
audit's probe runs the Python loop; bit-for-bit equality carries its verdict here.
Measured step costs (`make bench`): algorithms/README.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from algorithms.sosp.compiled_maps import call_map
from algorithms.sosp.compiled_profiles import (
    MODE_MAP,
    MODE_PYTHON,
    PY_PROFILE,
    o2_profile,
    profile_d1,
    report_fallback,
)
from problems.counts import kernels as _kernels
from problems.counts.coordinates import CoordinateCountsStream
from problems.separable import SeparableSaddle

#: Off: the Python loop alone (the tests' reference for the compiled steps).
ENABLED = True
#: Steps per compiled call at most (a deadline is checked between calls).
CHUNK = 4096
#: Why the compiled call returned: CHUNK steps done; the last step stores an iterate (Python
#: runs its post-step block); the next step is Python's; a declared loss's difference raised
#: after the step took its records (`O2Kernel.run` raises it from Python).
DONE, POST, PYTHON, RAISED = 0, 1, 2, 3

# Float state (one array, read and written by the kernel).
F_DRIFT, F_PREV_NORM, F_BEST, F_KAPPA, F_ETA, F_D, F_D2, F_ALPHA2, F_ALPHA, F_EPS, F_SQRT_D, \
    F_LEAF_SENS, F_MULT, F_TREE_SIGMA, F_THRESHOLD, F_M, F_C, F_MU, F_NOISE, F_W, F_BETA, \
    F_SCREEN = range(22)
# Int state.
I_T, I_T_MAX, I_USED, I_BUDGET, I_B, I_FIXED_B, I_FROZEN_PREV, I_KEEP_EVERY, I_TREE_T, \
    I_TREE_LEVELS, I_GRAD_EVALS, I_NODES_STREAM, I_NODES_TREE, I_ADAPTIVE, I_BOUNDED, \
    I_BY_NORMS, I_HAS_TREE, I_PRIVATE, I_TREE_CLIPS, I_HELD0, I_HELD1, I_LEVELS, \
    I_LEAF_LEVELS, I_MONITOR, I_STORED, I_SUPER, I_PER_SUPER, I_PY_PROFILE, I_D1_ADDR, I_MAP_M = \
    range(30)

_jit = numba.njit(cache=True, nogil=True)

#: The screen's relative margin: far above the few ulps by which the kernel's ||grad F(x)|| can
#: differ from population_grad's, so a skipped monitor would have said False, as Python's.
SCREEN_MARGIN = 1e-9


@_jit
def _unit(x):
    xb = x[1:]
    return xb / math.sqrt(1.0 + np.dot(xb, xb))


@_jit
def _hold_roots(first, last, ist, roots, cum, before):
    """`CoordinateCountsStream._between`'s root rows for blocks first and last: the start
    block's from the rows held (consecutive takes start where the last one stopped), the stop
    block's from the stream's cached superblock (its cumulative roots `cum`, the counts
    `before` it); False (nothing changed) when they are not there."""
    held0, held1, sup, per = ist[I_HELD0], ist[I_HELD1], ist[I_SUPER], ist[I_PER_SUPER]
    if first != held0 and first != held1:
        return False
    if last != held1 and last != first and (sup < 0 or last // per != sup):
        return False
    if first != held0:
        roots[0] = roots[2]
        roots[1] = roots[3]
        ist[I_HELD0] = first
    if last != held1:
        if last == first:
            roots[2] = roots[0]
            roots[3] = roots[1]
        else:
            b_in = last - sup * per
            roots[2] = cum[b_in + 1] - cum[b_in]
            roots[3] = before + cum[b_in]
        ist[I_HELD1] = last
    return True


@_jit
def _o2_steps(max_steps, x, x_prev, nabla, fs, ist, nodes, prefix, rng, roots, cum, before, tags,
              st, meta, path,
              flags, leaf_arr, ranks, out, r_batch, r_noise, r_norm, r_drift, r_samples, s_x, s_t, s_used,
              d1_params, d1_err, maddr, mparams, mlow, mspan, zh, mbuf):
    d = x.shape[0]
    n = 0
    n_stored = 0
    reason = DONE
    x_prev2 = x_prev
    drift, prev_norm, best = fs[F_DRIFT], fs[F_PREV_NORM], fs[F_BEST]
    kappa, eta, D, D2 = fs[F_KAPPA], fs[F_ETA], fs[F_D], fs[F_D2]
    M, c, mu, s, w, beta = fs[F_M], fs[F_C], fs[F_MU], fs[F_NOISE], fs[F_W], fs[F_BETA]
    t, used, frozen_prev = ist[I_T], ist[I_USED], ist[I_FROZEN_PREV]
    levels, leaf_levels = ist[I_LEVELS], ist[I_LEAF_LEVELS]
    mode, addr = ist[I_PY_PROFILE], ist[I_D1_ADDR]  # how d1 is computed (compiled_profiles)
    # a declared loss's map (MODE_MAP, compiled_maps): its functions by address, m coordinates
    declared, n_walk = mode == MODE_MAP, ist[I_MAP_M] if mode == MODE_MAP else 2
    # the previous step's d1 at x is this step's at x_prev (same float in, same float out)
    last_u, last_d1 = math.nan, 0.0
    screen_u, screen_d1 = math.nan, 0.0  # the monitor screen's d1 at the last stored x
    while n < max_steps:
        # the loop's own tests, in its order: T, data, O1, escape (each one Python's step)
        if t >= ist[I_T_MAX] or ist[I_BUDGET] - used <= ist[I_B] or drift >= kappa:
            reason = PYTHON
            break
        if prev_norm <= fs[F_THRESHOLD] and frozen_prev <= 0:
            reason = PYTHON
            break
        diff = x - x_prev
        step_len = math.sqrt(np.dot(diff, diff))
        if not math.isfinite(step_len):
            reason = PYTHON
            break
        g = M * step_len
        if ist[I_ADAPTIVE]:
            # ceil(max([1.0, g kappa / alpha^2, g sqrt(d) / (alpha eps_eff)])), max as Python's
            top = 1.0
            t1 = g * kappa / fs[F_ALPHA2]
            if t1 > top:
                top = t1
            if math.isfinite(fs[F_EPS]):
                t2 = g * fs[F_SQRT_D] / (fs[F_ALPHA] * fs[F_EPS])
                if t2 > top:
                    top = t2
            if not top < 9.0e15:  # inf / nan / past exact ints: Python's step decides
                reason = PYTHON
                break
            bt = math.ceil(top)
        else:
            bt = ist[I_FIXED_B]
        if bt > ist[I_BUDGET] - used:
            reason = PYTHON
            break
        clip = g
        if ist[I_TREE_CLIPS]:
            cap = fs[F_LEAF_SENS] * bt / 2
            if cap < g:  # min(g, cap) as Python's
                clip = cap
        # the O2 map's whole-support bound (before any draw) and, for the separable map, its
        # two factors
        if declared:
            bound = call_map(maddr[0], x, x_prev, zh, mparams, mbuf, d1_err)
            if d1_err[0] != 0:  # the declared bound raised: Python's step raises it
                d1_err[0] = 0
                reason = PYTHON
                break
            first, rest = 0.0, mbuf  # not read: the declared map computes the mean itself
        else:
            ux = x[0]
            if ux == screen_u and math.copysign(1.0, ux) == math.copysign(1.0, screen_u):
                d1x = screen_d1
            else:
                d1x = profile_d1(ux, w, beta, mode, addr, d1_params, d1_err)
            uy = x_prev[0]
            if uy == last_u and math.copysign(1.0, uy) == math.copysign(1.0, last_u):
                d1y = last_d1
            else:
                d1y = profile_d1(uy, w, beta, mode, addr, d1_params, d1_err)
            if d1_err[0] != 0:  # an outside d1 raised: Python's step raises it
                d1_err[0] = 0
                reason = PYTHON
                break
            last_u, last_d1 = x[0], d1x
            first = c * (d1x - d1y)
            rest = _unit(x) - _unit(x_prev)
            rest *= mu
            bound = (1 + s) * math.sqrt(first * first + np.dot(rest, rest))
        if not clip >= bound * (1 - 1e-12):
            reason = PYTHON  # Python's guard raises the error
            break
        start, stop = used, used + bt
        if not _hold_roots(start >> levels, stop >> levels, ist, roots, cum, before):
            reason = PYTHON  # block roots of another superblock: Python draws them
            break
        ist[I_NODES_STREAM] += _kernels.walk_between(0, n_walk, start, stop, levels, leaf_levels, roots,
                                                     tags, st, meta, path, flags, leaf_arr, ranks,
                                                     out)
        used = stop
        ist[I_USED] = used  # at once: the records are taken even if a later step fails
        ist[I_GRAD_EVALS] += 2 * bt
        k = float(bt)
        if declared:  # the mean record's head (`mean_record`'s arithmetic), then the difference
            for j in range(n_walk):
                zh[j] = mlow[j] + mspan[j] * (out[j] / k)
            call_map(maddr[1], x, x_prev, zh, mparams, mbuf, d1_err)
            if d1_err[0] != 0:  # after the take: the run raises it (O2Kernel.run)
                d1_err[0] = 0
                reason = RAISED
                break
            mean = mbuf
        else:
            a1 = -s + 2 * s * (out[0] / k)
            a2 = -s + 2 * s * (out[1] / k)
            mean = np.empty(d)
            mean[0] = (1 + a1) * first
            mean[1:] = rest * (1 + a2)
        delta = (mean * k) / k  # clipped_grad_diff_sum's sum, o2_leaf's division
        noise_std = 0.0
        if not ist[I_HAS_TREE] and ist[I_PRIVATE]:
            bnd = clip if math.isfinite(clip) else g
            noise_std = fs[F_MULT] * 2 * bnd / bt
            sig = noise_std * 1.0
            if sig == 0:
                delta = delta + np.zeros(d)
            else:
                delta = delta + sig * rng.standard_normal(d)
        nabla = nabla + delta
        frozen = frozen_prev - 1
        if ist[I_HAS_TREE]:
            ist[I_TREE_T] += 1
            tt = ist[I_TREE_T]
            level = 0
            while tt & 1 == 0:
                tt >>= 1
                level += 1
            for kk in range(level):
                prefix -= nodes[kk]
            if fs[F_TREE_SIGMA] > 0:
                node = rng.standard_normal(d)
                node *= fs[F_TREE_SIGMA]
            else:
                node = np.zeros(d)
            ist[I_NODES_TREE] += 1
            nodes[level] = node
            if level == ist[I_TREE_LEVELS]:
                ist[I_TREE_LEVELS] += 1
            prefix += node
            released = nabla + prefix
            noise_std = fs[F_TREE_SIGMA]
        else:
            released = nabla
        est = math.sqrt(np.dot(released, released))
        step = eta * released
        shortened = False
        if ist[I_BOUNDED]:
            step_norm = eta * est
            if step_norm > D:
                step = step * (D / step_norm)
                shortened = True
        x_prev2 = x_prev
        x_prev = x
        x = x - step
        if ist[I_BY_NORMS]:
            drift += est
        else:
            drift += D2 if shortened else np.dot(step, step)
        frozen_prev = frozen
        prev_norm = est
        t += 1
        r_batch[n], r_noise[n], r_norm[n], r_drift[n], r_samples[n] = bt, noise_std, est, drift, used
        n += 1
        if not math.isfinite(np.dot(x, x)):
            reason = POST  # Python's divergence check
            break
        if est < best or t % ist[I_KEEP_EVERY] == 0:
            if ist[I_MONITOR]:
                # the monitor is Python's; where ||grad F(x)|| is clearly above target: False
                if declared:
                    if not fs[F_SCREEN] < math.inf:  # no pop_grad_fn: no screen
                        reason = POST
                        break
                    call_map(maddr[2], x, x, zh, mparams, mbuf, d1_err)
                    if d1_err[0] != 0:  # the declared gradient raised: Python's monitor raises it
                        d1_err[0] = 0
                        reason = POST
                        break
                    gnorm = math.sqrt(np.dot(mbuf, mbuf))
                else:
                    screen_u = x[0]
                    screen_d1 = profile_d1(screen_u, w, beta, mode, addr, d1_params, d1_err)
                    if d1_err[0] != 0:  # an outside d1 raised: Python's monitor raises it
                        d1_err[0] = 0
                        screen_u = math.nan
                        reason = POST
                        break
                    g0, g_rest = c * screen_d1, _unit(x) * mu
                    gnorm = math.sqrt(g0 * g0 + np.dot(g_rest, g_rest))
                if not gnorm > fs[F_SCREEN]:
                    reason = POST
                    break
            if est < best:  # min(best, est) as Python's
                best = est
            s_x[n_stored] = x
            s_t[n_stored], s_used[n_stored] = t, used
            n_stored += 1
    fs[F_DRIFT], fs[F_PREV_NORM], fs[F_BEST] = drift, prev_norm, best
    ist[I_STORED] = n_stored
    ist[I_T], ist[I_FROZEN_PREV] = t, frozen_prev
    return n, reason, x, x_prev, x_prev2, nabla


@dataclass
class O2Kernel:
    """A run's compiled O2 steps: its constants, state arrays and record buffers."""

    stream: CoordinateCountsStream
    fs: np.ndarray
    ist: np.ndarray
    nodes: np.ndarray
    prefix: np.ndarray
    tree: Any
    buffers: tuple
    no_cum: np.ndarray  # a stand-in for the cumulative roots when none are cached
    profile: Any = None  # the profile whose d1 runs in Python (MODE_PYTHON), else None
    d1_params: Any = None  # an outside profile's params (MODE_ADDRESS), else a stand-in
    d1_err: Any = None  # set by a raise in an outside d1
    d1_keep: Any = None  # its C wrapper, alive as long as the kernel
    #: a declared loss's map (MODE_MAP): addresses, parameters, the head's low and span, the
    #: head and output buffers (stand-ins otherwise); the problem
    map_args: tuple = ()
    problem: Any = None

    def run(self, x, x_prev, nabla, drift, prev_norm, best, frozen_prev, t, grad_evals, rng):
        """Up to CHUNK O2 steps from the engine's state; returns (steps, reason, new state,
        records, stored iterates) with the stream's and the tree mechanism's own state moved
        on. The records and stored iterates are views of this kernel's buffers, valid until
        its next call: the engine copies them in at once."""
        fs, ist, stream, tree = self.fs, self.ist, self.stream, self.tree
        if stream._roots_of[0] < 0 or stream._roots_of[1] < 0:  # no block roots read yet
            return 0, PYTHON, None
        fs[F_DRIFT], fs[F_PREV_NORM], fs[F_BEST] = drift, prev_norm, best
        ist[I_T], ist[I_USED], ist[I_FROZEN_PREV] = t, stream.used, frozen_prev
        ist[I_GRAD_EVALS], ist[I_NODES_STREAM] = grad_evals, 0
        ist[I_HELD0], ist[I_HELD1] = stream._roots_of
        cum, before = stream._super_cum, stream._before_run[1]
        if cum is None or stream._before_run[0] != stream._super_index:
            ist[I_SUPER], cum, before = -1, self.no_cum, stream._zero  # roots: Python's
        else:
            ist[I_SUPER] = stream._super_index
        if tree is not None:
            held = tree._nodes
            for k, node in enumerate(held):
                self.nodes[k] = node
            self.prefix[:] = tree._prefix
            ist[I_TREE_T], ist[I_TREE_LEVELS], ist[I_NODES_TREE] = tree.t, len(held), 0
        # The kernel rewrites the root rows and walks the paths in place: until its counters
        # are written back the stream holds no root pair (an exception or Ctrl-C raised during
        # or right after the call must not leave a stale pair, as in `_between`).
        stream._roots_of[:] = [-1, -1]
        outer, PY_PROFILE.profile = getattr(PY_PROFILE, "profile", None), self.profile
        try:
            n, reason, x, x_prev, x_prev2, nabla = _o2_steps(
                CHUNK, x, x_prev, nabla, fs, ist, self.nodes, self.prefix, rng, stream._roots, cum,
                before, stream.tags, stream._st, stream._meta, stream._path, stream._flags,
                stream._leaf_arr, stream._ranks, stream._out, *self.buffers, self.d1_params,
                self.d1_err, *self.map_args)
        finally:
            stream._roots_of[:] = [int(ist[I_HELD0]), int(ist[I_HELD1])]
            PY_PROFILE.profile = outer  # a run nested in a d1 hands the outer one its profile back
            stream.used = int(ist[I_USED])
            stream.nodes_drawn += int(ist[I_NODES_STREAM])
        if reason == RAISED:  # the declared difference raised after its step took the records
            self._raise(x, x_prev)
        if n == 0:
            return 0, reason, None
        if tree is not None:
            levels = int(ist[I_TREE_LEVELS])
            tree._nodes = [self.nodes[k].copy() for k in range(levels)]
            tree._prefix = self.prefix.copy()
            tree.t = int(ist[I_TREE_T])
            tree.nodes_drawn += int(ist[I_NODES_TREE])
        recs = tuple(buf[:n] for buf in self.buffers[:5])  # views: the engine copies them in
        m = int(ist[I_STORED])
        s_x, s_t, s_used = self.buffers[5:]
        stored = (s_x[:m], s_t[:m], s_used[:m])  # views, as recs
        state = (x, x_prev, x_prev2, nabla, float(fs[F_DRIFT]), float(fs[F_PREV_NORM]),
                 float(fs[F_BEST]), int(ist[I_FROZEN_PREV]), int(ist[I_T]), int(ist[I_GRAD_EVALS]))
        return n, reason, (state, recs, stored)


    def _raise(self, x: np.ndarray, x_prev: np.ndarray) -> None:
        """Raise what the declared difference raised in the kernel, from Python (the same call
        on the same floats: the mean record's head the kernel held)."""
        prob = self.problem
        zh, p = self.map_args[4], self.map_args[1]
        type(prob).grad_diff_fn(x, x_prev, zh.copy(), p, np.empty(prob.d))
        raise RuntimeError(f"problem {prob.name!r}: grad_diff_fn raised in the compiled steps but "
                           "not when called again from Python on the same values")


@_jit
def _numba_dot(a, b):
    return np.dot(a, b)


@_jit
def _numba_normals(rng, n):
    return rng.standard_normal(n)


_AGREES: dict[tuple, bool] = {}


def numba_matches_numpy(d: int, bit_generator: type) -> bool:
    """Whether numba's dot products (lengths d and d - 1) and standard normals (from this bit
    generator type) are numpy's, float for float, in this process (module docstring)."""
    key = (d, bit_generator)
    if key not in _AGREES:
        gen = np.random.default_rng(20261203)
        same = True
        for n in (d, d - 1):
            for _ in range(64):
                a, b = gen.standard_normal(n) * gen.uniform(1e-3, 1e3), gen.standard_normal(n)
                same = same and float(_numba_dot(a, b)) == float(a.dot(b))
        twin_a, twin_b = (np.random.Generator(bit_generator(20261203)) for _ in range(2))
        same = same and np.array_equal(_numba_normals(twin_a, 1000), twin_b.standard_normal(1000))
        _AGREES[key] = bool(same)
    return _AGREES[key]


def o2_kernel_for(alg: Any, problem: Any, stream: Any, privacy: Any, p: dict, tree: Any,
                  probe: Any, monitor: Any, T_int: int, keep_every: int, mult: float,
                  rng: Any) -> O2Kernel | None:
    """The compiled O2 steps for this run, or None where their floats are not established to
    be the Python loop's (module docstring)."""
    if not ENABLED or probe is not None or alg.planted_faults or not isinstance(rng, np.random.Generator):
        return None
    if type(stream) is not CoordinateCountsStream or not stream.compiled:
        return None
    # the shipped profiles and checked outside ones (compiled_profiles); a plugin problem
    # refused says why, once
    prof = o2_profile(problem)
    if isinstance(prof, str):
        report_fallback(problem, prof)
        return None
    if not numba_matches_numpy(problem.d, type(rng.bit_generator)):
        return None
    adaptive = alg.batch_rule == "adaptive"
    bounded = alg.bounded_step
    d, const = problem.d, problem.constants
    fs = np.zeros(22)
    fs[F_KAPPA], fs[F_ETA] = p["kappa"], p["eta"]
    fs[F_D] = p["D"] if bounded else math.inf
    fs[F_D2] = p["D"] ** 2 if bounded else math.inf  # the engine's float power
    fs[F_ALPHA], fs[F_EPS] = p["alpha"], p["eps_eff"]
    fs[F_ALPHA2] = p["alpha"] ** 2
    fs[F_SQRT_D] = math.sqrt(d)
    fs[F_LEAF_SENS] = p.get("leaf_sensitivity", math.nan)
    fs[F_MULT] = mult
    fs[F_TREE_SIGMA] = tree.sigma if tree is not None else 0.0
    fs[F_THRESHOLD], fs[F_M] = p["escape_threshold"], const.M
    declared = prof.mode == MODE_MAP
    if not declared:  # the separable map's constants (a declared map reads its own params)
        fs[F_C], fs[F_MU], fs[F_NOISE] = problem.c, problem.mu, problem.noise
        fs[F_W], fs[F_BETA] = prof.w, prof.beta
    ist = np.zeros(30, dtype=np.int64)
    # b or B past 2^62 (overrides, rules at tiny alpha): the cap ends every step in Python,
    # which stops the run as before
    ist[I_T_MAX], ist[I_B] = T_int, min(int(p["b"]), 2**62)
    ist[I_BUDGET] = int(min(stream.budget, 2**62))  # an unbudgeted stream: never the limit
    ist[I_FIXED_B] = -1 if adaptive else min(int(p["B"]), 2**62)
    ist[I_KEEP_EVERY] = keep_every
    ist[I_ADAPTIVE], ist[I_BOUNDED] = adaptive, bounded
    ist[I_BY_NORMS] = alg.drift_rule == "estimate_norms"
    ist[I_HAS_TREE], ist[I_PRIVATE] = tree is not None, privacy.private
    ist[I_TREE_CLIPS] = tree is not None and privacy.private
    ist[I_LEVELS], ist[I_LEAF_LEVELS] = stream.levels, stream.leaf_levels
    ist[I_PER_SUPER] = stream.per_super
    ist[I_PY_PROFILE], ist[I_D1_ADDR] = prof.mode, prof.addr
    ist[I_MONITOR] = monitor is not None
    screen = getattr(monitor, "grad_screen", None)  # none for a target among subnormal squares
    screened = (screen is not None and 1e-150 < screen < math.inf
                and (prof.map.screen if declared else
                     type(problem).population_grad is SeparableSaddle.population_grad))
    fs[F_SCREEN] = float(screen) * (1 + SCREEN_MARGIN) if screened else math.inf
    buffers = (np.zeros(CHUNK, dtype=np.int64), *(np.zeros(CHUNK) for _ in range(3)),
               np.zeros(CHUNK, dtype=np.int64), np.zeros((CHUNK, d)), np.zeros(CHUNK, dtype=np.int64),
               np.zeros(CHUNK, dtype=np.int64))
    no_cum = np.zeros((stream.per_super + 1, len(stream.tags)), dtype=np.int64)
    if declared:
        mp = prof.map
        ist[I_MAP_M] = mp.m
        map_args = (mp.addrs, mp.params, mp.low, mp.span, np.zeros(mp.m), np.zeros(d))
    else:
        map_args = (np.zeros(3, dtype=np.int64), np.zeros(1), np.zeros(1), np.zeros(1),
                    np.zeros(1), np.zeros(d))
    return O2Kernel(stream, fs, ist, np.zeros((64, d)), np.zeros(d), tree, buffers, no_cum,
                    prof.profile if prof.mode == MODE_PYTHON else None, prof.params,
                    np.zeros(1, dtype=np.int64), prof.keep, map_args, problem)
