"""The Spiders' compiled O2 steps themselves (`o2_steps`, numba), with the state layout they
share with `algorithms.sosp.compiled_o2`, which sets them up per run, checks that their floats
are the Python loop's and hands them the engine's state (its docstring says what they compute
and why they give the loop's floats, operation for operation)."""

from __future__ import annotations

import math

import numba
import numpy as np

from algorithms.privacy.compiled_noise import add_gaussian, tree_advance
from algorithms.sosp.compiled_maps import call_map
from algorithms.sosp.compiled_profiles import MODE_MAP, profile_d1
from problems.counts import kernels as _kernels

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
def separable_factors(x, y, d1x, d1y, c, mu, s):
    """The separable O2 map's two factors at (x, y), first = c (phi'(x1) - phi'(y1)) and rest =
    mu (u(x) - u(y)), and its whole-support bound (1 + s) ||(first, rest)||: the arithmetic of
    `SeparableSaddle._mean_grad_diff_and_support_bound`, operation for operation."""
    first = c * (d1x - d1y)
    rest = _unit(x) - _unit(y)
    rest *= mu
    return (1 + s) * math.sqrt(first * first + np.dot(rest, rest)), first, rest


@_jit
def map_mean(declared, x, y, first, rest, out, k, s, n_walk, maddr, zh, mparams, mlow, mspan,
             mbuf, d1_err):
    """The batch's mean gradient difference from its counts `out` of k records: a declared
    loss's at the mean record's head (`mean_record`'s arithmetic; d1_err set if it raised), or
    the separable map's ((1 + mean a1) first, (1 + mean a2) rest)."""
    if declared:
        for j in range(n_walk):
            zh[j] = mlow[j] + mspan[j] * (out[j] / k)
        call_map(maddr[1], x, y, zh, mparams, mbuf, d1_err)
        return mbuf
    a1 = -s + 2 * s * (out[0] / k)
    a2 = -s + 2 * s * (out[1] / k)
    mean = np.empty(x.shape[0])
    mean[0] = (1 + a1) * first
    mean[1:] = rest * (1 + a2)
    return mean


@_jit
def separable_grad_norm(x, d1x, c, mu):
    """||grad F(x)|| of the separable saddle (`population_grad`'s formula), from phi'(x1)."""
    g0, g_rest = c * d1x, _unit(x) * mu
    return math.sqrt(g0 * g0 + np.dot(g_rest, g_rest))


@_jit
def hold_roots(first, last, ist, roots, cum, before):
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
def screen_norm(declared, x, maddr, zh, mparams, mbuf, d1_err, w, beta, mode, addr, d1_params,
                c, mu):
    """(||grad F(x)|| for the target monitor's screen, the separable map's d1 at x): the
    declared loss's pop_grad_fn or the separable map's; nan where a user function raised
    (its error flag cleared)."""
    if declared:
        call_map(maddr[2], x, x, zh, mparams, mbuf, d1_err)
        if d1_err[0] != 0:
            d1_err[0] = 0
            return math.nan, math.nan
        return math.sqrt(np.dot(mbuf, mbuf)), math.nan
    d1 = profile_d1(x[0], w, beta, mode, addr, d1_params, d1_err)
    if d1_err[0] != 0:
        d1_err[0] = 0
        return math.nan, math.nan
    return separable_grad_norm(x, d1, c, mu), d1


@_jit
def _adaptive_batch(g, kappa, fs):
    """ceil(max([1.0, g kappa / alpha^2, g sqrt(d) / (alpha eps_eff)])), max as Python's; -1
    where Python's step decides (inf, nan, past exact ints)."""
    top = 1.0
    t1 = g * kappa / fs[F_ALPHA2]
    if t1 > top:
        top = t1
    if math.isfinite(fs[F_EPS]):
        t2 = g * fs[F_SQRT_D] / (fs[F_ALPHA] * fs[F_EPS])
        if t2 > top:
            top = t2
    if not top < 9.0e15:
        return -1
    return math.ceil(top)


@_jit
def _cached_d1(u, cu, cd1, w, beta, mode, addr, d1_params, d1_err):
    """d1 at u: the cached cd1 where u is the cached cu (the same float, sign of zero
    included), else computed."""
    if u == cu and math.copysign(1.0, u) == math.copysign(1.0, cu):
        return cd1
    return profile_d1(u, w, beta, mode, addr, d1_params, d1_err)


@_jit
def _noised_release(delta, nabla, clip, g, bt, fs, ist, nodes, prefix, rng):
    """The O2 release through the noise engine's arithmetic: the Gaussian leaf (std rule
    "z*2*C/n") or the tree's next prefix; (nabla, released, noise std)."""
    noise_std = 0.0
    if not ist[I_HAS_TREE] and ist[I_PRIVATE]:
        bnd = clip if math.isfinite(clip) else g
        noise_std = fs[F_MULT] * 2 * bnd / bt
        delta = add_gaussian(delta, noise_std, rng)
    nabla = nabla + delta
    if not ist[I_HAS_TREE]:
        return nabla, nabla, noise_std
    ist[I_TREE_T] += 1
    ist[I_TREE_LEVELS] = tree_advance(ist[I_TREE_T], ist[I_TREE_LEVELS], nodes, prefix,
                                      fs[F_TREE_SIGMA], rng)
    ist[I_NODES_TREE] += 1
    return nabla, nabla + prefix, fs[F_TREE_SIGMA]


@_jit
def _advance(x, released, est, eta, D, D2, bounded, by_norms, drift):
    """Lines 12-15: x - eta nabla~ (shortened to length D on a bounded step) and the drift;
    (x_{t+1}, drift)."""
    step = eta * released
    shortened = False
    if bounded:
        step_norm = eta * est
        if step_norm > D:
            step = step * (D / step_norm)
            shortened = True
    if by_norms:
        return x - step, drift + est
    return x - step, drift + (D2 if shortened else np.dot(step, step))


@_jit
def _o2_clip(g, bt, fs, ist):
    """The O2 clip: M ||x_t - x_{t-1}||, at most the tree's leaf sensitivity x bt / 2 where the
    tree clips (min as Python's)."""
    if ist[I_TREE_CLIPS]:
        cap = fs[F_LEAF_SENS] * bt / 2
        if cap < g:
            return cap
    return g


@_jit
def _take(bt, n_walk, ist, roots, cum, before, tags, st, meta, path, flags, leaf_arr, ranks, out):
    """The next bt records' counts (the stream's walks for n_walk coordinates into out); False
    where a block root of another superblock is needed (Python draws it)."""
    start, stop, levels = ist[I_USED], ist[I_USED] + bt, ist[I_LEVELS]
    if not hold_roots(start >> levels, stop >> levels, ist, roots, cum, before):
        return False
    ist[I_NODES_STREAM] += _kernels.walk_between(0, n_walk, start, stop, levels,
                                                 ist[I_LEAF_LEVELS], roots, tags, st, meta, path,
                                                 flags, leaf_arr, ranks, out)
    ist[I_USED] = stop  # at once: the records are taken even if a later step fails
    ist[I_GRAD_EVALS] += 2 * bt
    return True


@_jit
def _declared_bound(maddr, x, x_prev, zh, mparams, mbuf, d1_err):
    """A declared loss's whole-support bound (the suite's, by address); nan where the user's
    function raised (its flag cleared: Python's step raises it)."""
    bound = call_map(maddr[0], x, x_prev, zh, mparams, mbuf, d1_err)
    if d1_err[0] != 0:
        d1_err[0] = 0
        return math.nan
    return bound


@_jit
def o2_steps(max_steps, x, x_prev, nabla, fs, ist, nodes, prefix, rng, roots, cum, before, tags,
             st, meta, path, flags, leaf_arr, ranks, out, r_batch, r_noise, r_norm, r_drift,
             r_samples, s_x, s_t, s_used, d1_params, d1_err, maddr, mparams, mlow, mspan, zh, mbuf):
    n, n_stored, reason = 0, 0, DONE
    x_prev2 = x_prev
    drift, prev_norm, best = fs[F_DRIFT], fs[F_PREV_NORM], fs[F_BEST]
    kappa, eta, D, D2 = fs[F_KAPPA], fs[F_ETA], fs[F_D], fs[F_D2]
    M, c, mu, s, w, beta = fs[F_M], fs[F_C], fs[F_MU], fs[F_NOISE], fs[F_W], fs[F_BETA]
    t, used, frozen_prev = ist[I_T], ist[I_USED], ist[I_FROZEN_PREV]
    mode, addr = ist[I_PY_PROFILE], ist[I_D1_ADDR]  # how d1 is computed (compiled_profiles)
    # a declared loss's map (MODE_MAP, compiled_maps): its functions by address, m coordinates
    declared, n_walk = mode == MODE_MAP, ist[I_MAP_M] if mode == MODE_MAP else 2
    # the previous step's d1 at x is this step's at x_prev (same float in, same float out)
    last_u, last_d1 = math.nan, 0.0
    screen_u, screen_d1 = math.nan, 0.0  # the monitor screen's d1 at the last stored x
    while n < max_steps:
        # the loop's own tests, in its order: T, data, O1, escape (each one Python's step)
        if t >= ist[I_T_MAX] or ist[I_BUDGET] - used <= ist[I_B] or drift >= kappa or \
                (prev_norm <= fs[F_THRESHOLD] and frozen_prev <= 0):
            reason = PYTHON
            break
        diff = x - x_prev
        step_len = math.sqrt(np.dot(diff, diff))
        if not math.isfinite(step_len):
            reason = PYTHON
            break
        g = M * step_len
        bt = _adaptive_batch(g, kappa, fs) if ist[I_ADAPTIVE] else ist[I_FIXED_B]
        if bt < 0 or bt > ist[I_BUDGET] - used:  # (-1: inf / nan: Python's step decides)
            reason = PYTHON
            break
        clip = _o2_clip(g, bt, fs, ist)
        # the O2 map's whole-support bound (before any draw) and, for the separable map, its
        # two factors
        if declared:  # (nan where the declared function raised: the guard below refuses)
            bound = _declared_bound(maddr, x, x_prev, zh, mparams, mbuf, d1_err)
            first, rest = 0.0, mbuf  # not read: the declared map computes the mean itself
        else:
            d1x = _cached_d1(x[0], screen_u, screen_d1, w, beta, mode, addr, d1_params, d1_err)
            d1y = _cached_d1(x_prev[0], last_u, last_d1, w, beta, mode, addr, d1_params, d1_err)
            if d1_err[0] != 0:  # an outside d1 raised: Python's step raises it
                d1_err[0] = 0
                reason = PYTHON
                break
            last_u, last_d1 = x[0], d1x
            bound, first, rest = separable_factors(x, x_prev, d1x, d1y, c, mu, s)
        if not clip >= bound * (1 - 1e-12):
            reason = PYTHON  # Python's guard raises the error
            break
        if not _take(bt, n_walk, ist, roots, cum, before, tags, st, meta, path, flags, leaf_arr,
                     ranks, out):
            reason = PYTHON  # block roots of another superblock: Python draws them
            break
        used = ist[I_USED]
        k = float(bt)
        mean = map_mean(declared, x, x_prev, first, rest, out, k, s, n_walk, maddr, zh, mparams,
                        mlow, mspan, mbuf, d1_err)
        if d1_err[0] != 0:  # a declared difference raised after the take: the run raises it
            d1_err[0] = 0
            reason = RAISED
            break
        delta = (mean * k) / k  # clipped_grad_diff_sum's sum, o2_leaf's division
        nabla, released, noise_std = _noised_release(delta, nabla, clip, g, bt, fs, ist, nodes,
                                                     prefix, rng)
        frozen = frozen_prev - 1
        est = math.sqrt(np.dot(released, released))
        x_prev2 = x_prev
        x_prev = x
        x, drift = _advance(x, released, est, eta, D, D2, ist[I_BOUNDED], ist[I_BY_NORMS], drift)
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
                # (no pop_grad_fn: no screen; a user function that raised: Python's raises it)
                if declared and not fs[F_SCREEN] < math.inf:
                    reason = POST
                    break
                gnorm, d1 = screen_norm(declared, x, maddr, zh, mparams, mbuf, d1_err, w, beta,
                                        mode, addr, d1_params, c, mu)
                if not declared:
                    screen_u, screen_d1 = x[0], d1
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
