"""The Spider loop itself (seed 000, Algorithm 2 with the oracles of Algorithm 3): the O1 / O2
releases, the drift and restart rule, the saddle escape and the trajectory it records.
`algorithms.sosp.spider` explains the pluggable parts and the readings of the paper taken.

The clipped leaves (per-record gradients and gradient differences, or their exact counts-mode
means), the Gaussian and tree noise, the generator and the planted faults are the noise
engine's (`algorithms.privacy.noise_engine`, issue 71): this loop asks it for each release
with public values (the iterates, the batch sizes, the step bound M ||x_t - x_{t-1}||)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from algorithms.base import Privacy, Trajectory
from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_none
from algorithms.privacy.mechanisms import TreeMechanism
from algorithms.privacy.noise_engine import NoiseEngine, batch_size, o1_leaf, o2_leaf
from algorithms.sosp.compiled_o2 import POST, PYTHON, o2_kernel_for
from algorithms.sosp.noise_rules import noise_calibration
from algorithms.step_log import STEP_COLUMNS, Columns, iterate_columns
from problems.base import Problem


def _norm(v: np.ndarray) -> float:
    """||v||_2 of a 1-d float array: np.linalg.norm's own formula (sqrt(v . v), so the same
    float) without its dispatch, which cost ~4 us a call, 3 calls a step."""
    return math.sqrt(v.dot(v))



def _leaf_sensitivity(alg: Any, p: dict, G: float, M: float, d: int) -> float:
    """A-priori bound on one release's replace-one sensitivity, enforced by the clips."""
    s_o1 = 2 * G / p["b"]
    if alg.batch_rule == "adaptive":
        s_o2 = 2 * p["alpha"] * p["eps_eff"] / math.sqrt(d) if math.isfinite(p["eps_eff"]) else 0.0
    else:
        s_o2 = 2 * M * p["D"] / p["B"] if alg.bounded_step else 0.0
    return max(s_o1, s_o2)



def _configure_noise(engine: NoiseEngine, alg: Any, problem: Problem, privacy: Privacy,
                     p: dict, T_int: int) -> tuple[float, float, float]:
    """The noise rule, set on the engine from public values (Lemma 3.7 for the tree);
    returns (mu of the run, the O1 clip, the Gaussian multiplier or nan for a tree)."""
    G, M, d = problem.constants.G, problem.constants.M, problem.d
    if alg.noise == "tree":
        s_leaf = _leaf_sensitivity(alg, p, G, M, d)
        cal = engine.tree_calibration(privacy, s_leaf, T_int, p["tree_scope"], noise_calibration)
        sigma = cal.sigma
        if "sigma" in alg.overrides:
            if float(alg.overrides["sigma"]) < sigma:
                raise ValueError(f"parameter sigma={alg.overrides['sigma']!r} is invalid: must be "
                                 f">= {sigma:.6g}, the noise (eps, delta) needs")
            sigma = float(alg.overrides["sigma"])
        engine.use_tree(sigma, s_leaf)
        mu = s_leaf * math.sqrt(cal.nodes) / sigma if sigma > 0 else math.inf
        p.update(sigma=sigma, leaf_sensitivity=s_leaf, tree_depth=TreeMechanism.depth(T_int),
                 tree_nodes=cal.nodes, calibration_floored=cal.floored)
        return mu, engine.tree_clip(G, int(p["b"])), math.nan
    cal = noise_calibration(privacy, 1.0, "gaussian", T_int, "epoch")
    mult = cal.multiplier
    if "noise_multiplier" in alg.overrides:
        if float(alg.overrides["noise_multiplier"]) < mult:
            raise ValueError(f"parameter noise_multiplier={alg.overrides['noise_multiplier']!r} "
                             f"is invalid: must be >= {mult:.6g}, the noise (eps, delta) needs")
        mult = float(alg.overrides["noise_multiplier"])
    engine.use_gaussian(mult, "z*2*C/n")
    p.update(noise_multiplier=mult, calibration_floored=cal.floored)
    return (1.0 / mult if mult > 0 else math.inf), G, mult



class _Step:
    """What one Python step released and where it stands (the loop's state between steps)."""

    __slots__ = ("drift", "escape", "frozen_prev", "grad_evals", "nabla", "noise_std", "prev_norm",
                 "x", "x_prev", "x_prev2")

    def __init__(self, x: np.ndarray, kappa: float) -> None:
        self.x = x
        self.drift = kappa  # line 2: drift_0 = kappa, so step 0 calls O1
        self.frozen_prev = 1  # frozen_{-1} = 1
        self.nabla = np.zeros(len(x))
        self.x_prev = x.copy()
        self.x_prev2 = x.copy()  # x_{t-2}: only the planted fault "o2_wrong_step" reads it
        self.prev_norm = math.inf
        self.grad_evals = 0
        self.noise_std, self.escape = 0.0, False  # the last Python step's, for its log row


def _o1(engine: NoiseEngine, st: _Step, stream: Any, b: int, clip_o1: float, p: dict) -> tuple:
    """Lines 4-5: O1 on the next b records; (batch, leaf, release info) for the probe."""
    batch = stream.take(b)
    st.grad_evals += len(batch)
    restart = False
    if engine.tree is None:
        r = engine.gaussian_release(st.x, batch, clip_o1, b, oracle="O1")
        st.nabla, told, noise_std, leaf, clip = r.value, r.told, r.std, r.leaf, r.clip
    else:
        clip = engine.applied(clip_o1)
        leaf = engine.clipped_sum(st.x, batch, clip_o1, oracle="O1") / batch_size(batch)
        st.nabla, told, noise_std = leaf, engine.leaf_sensitivity, 0.0
        if p["tree_scope"] == "epoch":
            engine.tree.restart()
            restart = True
    st.drift = 0.0
    return batch, leaf, clip, told, noise_std, restart, 1, b


def _o2(engine: NoiseEngine, st: _Step, stream: Any, rule: tuple, M: float) -> tuple | str:
    """Line 7: O2 on a batch the rule sizes from the public step; a stop reason if none."""
    adaptive, fixed_B, kappa, alpha, eps_eff, sqrt_d = rule
    step_len = _norm(st.x - st.x_prev)
    if not math.isfinite(step_len):  # finite iterates whose difference overflows
        return "diverged"
    g = M * step_len
    g_rule = g  # the step bound the batch rule and the noise use
    if engine.wrong_step:  # planted fault: the previous step's length
        g_rule = M * _norm(st.x_prev - st.x_prev2)
    if adaptive:
        terms = [1.0, g_rule * kappa / alpha**2]
        if math.isfinite(eps_eff):
            terms.append(g_rule * sqrt_d / (alpha * eps_eff))
        bt = math.ceil(max(terms))
    else:
        bt = fixed_B
    if bt > stream.remaining:
        return "data_exhausted"
    batch = stream.take(bt)
    st.grad_evals += 2 * len(batch)
    if engine.tree is None:
        told_clip = g_rule if engine.wrong_step else None
        r = engine.gaussian_release(st.x, batch, g, bt, y=st.x_prev, oracle="O2",
                                    told_clip=told_clip)
        st.nabla = st.nabla + r.value
        return batch, r.leaf, r.clip, r.told, r.std, False, 2, bt
    clip_o2 = engine.tree_clip(g, bt, cap=not engine.wrong_step)
    leaf = engine.clipped_sum(st.x, batch, clip_o2, y=st.x_prev, oracle="O2") / batch_size(batch)
    st.nabla = st.nabla + leaf
    return batch, leaf, engine.applied(clip_o2), engine.leaf_sensitivity, 0.0, False, 2, bt


def _step(engine: NoiseEngine, st: _Step, out: tuple, moves: tuple, t: int, probe: Any) -> float:
    """Lines 8-15 after a release: the tree's noise, the saddle escape (line 9-10), the probe's
    record, the (bounded) step and the drift; returns ||nabla~_t||."""
    threshold, Gamma, zeta_d, reset_drift, saddle_noise, eta, bounded, D, drift_by_norms = moves
    batch, leaf, clip, told, noise_std, restart, oracle, _ = out
    frozen = st.frozen_prev - 1
    released = st.nabla + engine.tree_noise() if engine.tree is not None else st.nabla
    if engine.tree is not None:
        noise_std = engine.tree.sigma
    escape = False
    if st.prev_norm <= threshold and st.frozen_prev <= 0:  # line 9 (||nabla~_{t-1}||, frozen_{t-1})
        frozen = Gamma
        if reset_drift:
            st.drift = 0.0
        if saddle_noise:
            released = released + engine.perturbation(zeta_d)
        escape = True
    est_norm = _norm(released)
    if probe is not None:
        probe.release(t=t + 1, oracle=oracle, x=st.x.copy(), x_prev=st.x_prev.copy(),
                      batch=batch, clip=clip, leaf=leaf, told=told, noise_std=noise_std,
                      nabla=st.nabla.copy(), released=released.copy(), restart=restart,
                      escape=escape)
    step = eta * released
    step_sq = None
    if bounded:
        step_norm = eta * est_norm
        if step_norm > D:
            step = step * (D / step_norm)
            # A shortened step has length D by definition. Its float norm^2 is D^2 up to an
            # ulp, and with D = sqrt(kappa) that ulp would decide "drift >= kappa" (O1 or O2
            # next) by rounding noise; use the exact D^2.
            step_sq = D ** 2
    st.x_prev2 = st.x_prev
    st.x_prev = st.x
    st.x = st.x - step
    if drift_by_norms:
        st.drift += est_norm  # line 15
    else:
        st.drift += float(step @ step) if step_sq is None else step_sq
    st.frozen_prev = frozen
    st.prev_norm = est_norm
    st.noise_std, st.escape = noise_std, escape
    return est_norm


def run_engine(alg: Any, problem: Problem, stream: Any, privacy: Privacy,
               rng: np.random.Generator, p: dict, deadline: float = math.inf,
               probe: Any = None, monitor: Any = None) -> Trajectory:
    """One Spider run (module docstring); the generator goes to the noise engine."""
    const = problem.constants
    d, M = problem.d, const.M
    engine = NoiseEngine(problem, rng, private=privacy.private, faults=alg.planted_faults)
    stream = engine.stream(stream)
    st = _Step(np.array(problem.x0, dtype=float), p["kappa"])
    b, T, kappa = int(p["b"]), p["T"], p["kappa"]
    T_int = int(T) if math.isfinite(T) else 2**62
    warnings: list[str] = []
    if stream.remaining < b:
        warnings.append(f"first O1 batch b={b} exceeds the data budget {stream.remaining}: no step run")
    mu, clip_o1, mult = _configure_noise(engine, alg, problem, privacy, p, T_int)
    p["privacy_mu"] = mu

    # Storage of iterates (see Trajectory): thin when T x d is large.
    cap_steps = T_int if math.isfinite(T) else int(min(stream.remaining, 2**40) // max(1, b))
    keep_every = max(1, math.ceil(min(cap_steps, 10**9) * d / p["max_iterate_floats"]))
    p["keep_every"] = keep_every
    kept = Columns(iterate_columns(d))  # the kept iterates x, their step t and samples used
    kept.append(st.x, 0, 0)
    best_est = math.inf
    _store = kept.append
    log = Columns(STEP_COLUMNS)  # the per-step records (Trajectory.records)
    stop = "T_reached"
    t = 0
    sqrt_d = math.sqrt(d)
    moves = (p["escape_threshold"], int(p["Gamma"]), p["zeta"] / sqrt_d, p["reset_drift_on_escape"],
             p["saddle_noise"], p["eta"], alg.bounded_step,
             p["D"] if alg.bounded_step else math.inf,  # a bounded step without D: KeyError
             alg.drift_rule == "estimate_norms")
    rule = (alg.batch_rule == "adaptive", None if alg.batch_rule == "adaptive" else int(p["B"]),
            kappa, p["alpha"], p["eps_eff"], sqrt_d)  # a fixed-batch rule without B: KeyError
    o2k = o2_kernel_for(alg, problem, stream, privacy, p, engine.tree, probe, monitor, T_int,
                        keep_every, mult, engine.kernel_generator())
    python_next = False
    while t < T_int:
        # Runs of O2 steps in compiled code where its floats are the loop's (compiled_o2); it
        # hands back every step that needs Python (O1, escape, new block roots, ...) and every
        # step that stores an iterate, whose post-step block below then runs here.
        kernel_step = False
        if o2k is not None and not python_next and st.drift < kappa:
            n_done, why, res = o2k.run(st.x, st.x_prev, st.nabla, st.drift, st.prev_norm,
                                       best_est, st.frozen_prev, t, st.grad_evals,
                                       engine.kernel_generator())
            if n_done:
                state, recs, stored = res
                (st.x, st.x_prev, st.x_prev2, st.nabla, st.drift, st.prev_norm, best_est,
                 st.frozen_prev, t, st.grad_evals) = state
                kept.extend(len(stored[1]), *stored)
                log.extend(n_done, 2, recs[0], recs[1], recs[2], recs[3], False, recs[4])
                est_norm = st.prev_norm
                if why != POST:
                    python_next = why == PYTHON
                    if time.perf_counter() > deadline:
                        stop = "timeout"
                        break
                    continue
                kernel_step = True
        python_next = False
        if not kernel_step:
            if stream.remaining <= b:  # line 3
                stop = "data_exhausted"
                break
            out = _o1(engine, st, stream, b, clip_o1, p) \
                if st.drift >= kappa else _o2(engine, st, stream, rule, M)
            if isinstance(out, str):
                stop = out
                break
            est_norm = _step(engine, st, out, moves, t, probe)
            t += 1
            log.append(out[6], out[7], st.noise_std, est_norm, st.drift, st.escape, stream.used)
        x = st.x
        # x . x is finite unless an entry is inf / nan (or the sum overflows: then the exact
        # check decides); one dot product instead of an elementwise test every step.
        if not math.isfinite(x.dot(x)) and not np.isfinite(x).all():
            stop = "diverged"
            _store(x, t, stream.used)
            break
        if est_norm < best_est or t % keep_every == 0:
            best_est = min(best_est, est_norm)
            _store(x, t, stream.used)
            if monitor is not None and monitor(x):
                stop = "target_reached"
                break
        if time.perf_counter() > deadline:
            stop = "timeout"
            break

    return _trajectory(st, kept, log, t, T_int, stop, mu, privacy, stream, p, warnings)


def _trajectory(st: _Step, kept: Columns, log: Columns, t: int, T_int: int, stop: str,
                mu: float, privacy: Privacy, stream: Any, p: dict, warnings: list[str]
                ) -> Trajectory:
    """The run's trajectory: the last iterate stored, each stored iterate's estimate norm, the
    ledger of mu-GDP."""
    if kept.last("t") != t:
        kept.append(st.x, t, stream.used)
    records = log.arrays()
    iterates = kept.arrays()
    # est_norm_at[i]: norm of the estimate used to step *out of* stored iterate i.
    norms = np.append(records["est_norm"], math.inf)
    est_at = norms[iterates["t"]]
    if t == 0 and stop == "T_reached" and T_int > 0:
        stop = "data_exhausted"
    spent = ledger_gdp(mu, privacy.delta) if privacy.private else ledger_none(privacy.delta)
    return Trajectory(
        iterates=iterates["x"], steps=iterates["t"], samples_at=iterates["used"],
        est_norm_at=est_at, records=records, samples_used=int(stream.used),
        grad_evals=st.grad_evals, stop_reason=stop, privacy_spent=spent, params=p, n_steps=t,
        warnings=warnings,
    )


__all__ = ["o1_leaf", "o2_leaf", "run_engine"]  # the leaves: the engine's, re-exported here
