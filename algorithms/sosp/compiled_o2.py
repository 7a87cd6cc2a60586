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
noise `NoiseEngine.noised`'s (the noise engine's numba arithmetic,
`algorithms.privacy.compiled_noise`), both drawn from the run's own `numpy.random.Generator`
(numba shares its state and ports numpy's sampler), and the dot products are BLAS ddot calls. numba's ddot is
scipy's OpenBLAS, not numpy's, and its normal sampler is a port, so neither equality holds by
construction: `o2_kernel_for` checks both once per process and dimension (numba's dot against
numpy's at lengths d and d - 1 on random vectors, a thousand normals from twin generators) and
falls back to the Python loop if one differs. Where an exact match is not established (a
problem overriding the map or its bound, or whose profile is neither shipped nor a checked
JitProfile; planted faults; a probe; record mode) `o2_kernel_for` returns None and the Python
loop runs alone (a plugin problem says why, once per process:
`compiled_profiles.report_fallback`). A timeout stops at most `CHUNK` steps late. The privacy
audit's probe runs the Python loop; bit-for-bit equality carries its verdict here.
Measured step costs (`make bench`): algorithms/README.md. The kernel itself, `o2_steps`, and
the layout of its state arrays live in `algorithms.sosp.compiled_o2_steps`; this module sets a
run's kernel up (`o2_kernel_for`), checks numba's floats against numpy's and moves the engine's
state in and out (`O2Kernel.run`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from algorithms.sosp.compiled_o2_steps import (  # the kernel and its state layout
    CHUNK,
    DONE,
    F_ALPHA,
    F_ALPHA2,
    F_BEST,
    F_BETA,
    F_C,
    F_D,
    F_D2,
    F_DRIFT,
    F_EPS,
    F_ETA,
    F_KAPPA,
    F_LEAF_SENS,
    F_M,
    F_MU,
    F_MULT,
    F_NOISE,
    F_PREV_NORM,
    F_SCREEN,
    F_SQRT_D,
    F_THRESHOLD,
    F_TREE_SIGMA,
    F_W,
    I_ADAPTIVE,
    I_B,
    I_BOUNDED,
    I_BUDGET,
    I_BY_NORMS,
    I_D1_ADDR,
    I_FIXED_B,
    I_FROZEN_PREV,
    I_GRAD_EVALS,
    I_HAS_TREE,
    I_HELD0,
    I_HELD1,
    I_KEEP_EVERY,
    I_LEAF_LEVELS,
    I_LEVELS,
    I_MAP_M,
    I_MONITOR,
    I_NODES_STREAM,
    I_NODES_TREE,
    I_PER_SUPER,
    I_PRIVATE,
    I_PY_PROFILE,
    I_STORED,
    I_SUPER,
    I_T,
    I_T_MAX,
    I_TREE_CLIPS,
    I_TREE_LEVELS,
    I_TREE_T,
    I_USED,
    POST,
    PYTHON,
    RAISED,
    SCREEN_MARGIN,
    o2_steps,
)
from algorithms.sosp.compiled_profiles import MODE_MAP, MODE_PYTHON, PY_PROFILE, o2_profile, report_fallback
from problems.counts.coordinates import CoordinateCountsStream
from problems.separable import SeparableSaddle

__all__ = ["CHUNK", "DONE", "ENABLED", "POST", "PYTHON", "RAISED", "O2Kernel", "numba_matches_numpy",
           "o2_kernel_for"]

_jit = numba.njit(cache=True, nogil=True)

#: Off: the Python loop alone (the tests' reference for the compiled steps).
ENABLED = True
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
        cum, before = held_roots(stream, ist, self.no_cum)
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
            n, reason, x, x_prev, x_prev2, nabla = o2_steps(
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
        zh, p = self.map_args[4], prob._params_array()  # the user's p (map_args: the kernel's)
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


def held_roots(stream: CoordinateCountsStream, ist: np.ndarray,
               no_cum: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hand a kernel the stream's two held block-root rows (their blocks into ist) and its
    cached superblock's cumulative roots with the counts before it; where none is cached for
    the current superblock, `no_cum` and zeros (the kernel then hands such roots to Python)."""
    ist[I_HELD0], ist[I_HELD1] = stream._roots_of
    cum, before = stream._super_cum, stream._before_run[1]
    if cum is None or stream._before_run[0] != stream._super_index:
        ist[I_SUPER] = -1
        return no_cum, stream._zero
    ist[I_SUPER] = stream._super_index
    return cum, before


def compiled_map_profile(enabled: bool, alg: Any, problem: Any, stream: Any, probe: Any,
                         rng: Any) -> Any:
    """How a compiled kernel computes this run's O2 map (`compiled_profiles.O2Profile`), or None
    where its floats are not established to be the Python loop's: the kernel off, the privacy
    audit's probe, planted faults, a generator that is not numpy's, a stream other than the
    compiled per-coordinate counts stream, a map the compiled code does not have (a plugin
    problem says why, once), numba's dot products or normals not numpy's here."""
    if not enabled or probe is not None or alg.planted_faults or not isinstance(rng, np.random.Generator):
        return None
    if type(stream) is not CoordinateCountsStream or not stream.compiled:
        return None
    prof = o2_profile(problem)
    if isinstance(prof, str):
        report_fallback(problem, prof)
        return None
    if not numba_matches_numpy(problem.d, type(rng.bit_generator)):
        return None
    return prof


def screen_threshold(monitor: Any, prof: Any, problem: Any) -> float:
    """The ||grad F(x)|| above which a kernel may skip a target monitor stating `grad_screen`
    (its value plus SCREEN_MARGIN), where the kernel computes ||grad F|| by the problem's own
    formula (the separable saddle's, or a declared pop_grad_fn); inf: no screen."""
    screen = getattr(monitor, "grad_screen", None)  # none for a target among subnormal squares
    screened = (screen is not None and 1e-150 < screen < math.inf
                and (prof.map.screen if prof.mode == MODE_MAP else
                     type(problem).population_grad is SeparableSaddle.population_grad))
    return float(screen) * (1 + SCREEN_MARGIN) if screened else math.inf


def map_arguments(prof: Any, d: int) -> tuple[int, tuple]:
    """A declared loss's map for a kernel (`compiled_maps`): its m and (addresses, parameters,
    the head's low and span, the head and output buffers); stand-ins for the separable map."""
    if prof.mode == MODE_MAP:
        mp = prof.map
        return mp.m, (mp.addrs, mp.params, mp.low, mp.span, np.zeros(mp.m), np.zeros(d))
    return 0, (np.zeros(3, dtype=np.int64), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1),
               np.zeros(d))


def o2_kernel_for(alg: Any, problem: Any, stream: Any, privacy: Any, p: dict, tree: Any,
                  probe: Any, monitor: Any, T_int: int, keep_every: int, mult: float,
                  rng: Any) -> O2Kernel | None:
    """The compiled O2 steps for this run, or None where their floats are not established to
    be the Python loop's (module docstring)."""
    prof = compiled_map_profile(ENABLED, alg, problem, stream, probe, rng)
    if prof is None:
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
    fs[F_SCREEN] = screen_threshold(monitor, prof, problem)
    buffers = (np.zeros(CHUNK, dtype=np.int64), *(np.zeros(CHUNK) for _ in range(3)),
               np.zeros(CHUNK, dtype=np.int64), np.zeros((CHUNK, d)), np.zeros(CHUNK, dtype=np.int64),
               np.zeros(CHUNK, dtype=np.int64))
    no_cum = np.zeros((stream.per_super + 1, len(stream.tags)), dtype=np.int64)
    ist[I_MAP_M], map_args = map_arguments(prof, d)
    return O2Kernel(stream, fs, ist, np.zeros((64, d)), np.zeros(d), tree, buffers, no_cum,
                    prof.profile if prof.mode == MODE_PYTHON else None, prof.params,
                    np.zeros(1, dtype=np.int64), prof.keep, map_args, problem)
