"""The Spider loop itself (seed 000, Algorithm 2 with the oracles of Algorithm 3): the O1 / O2
leaves (clipped per-record gradients and gradient differences, or their exact counts-mode
means), the noise, the drift and restart rule, the saddle escape and the trajectory it records.
`algorithms.sosp.spider` explains the pluggable parts and the readings of the paper taken."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from algorithms.base import Privacy, Trajectory
from algorithms.counts_maps import clipped_grad_diff_sum, clipped_grad_sum
from algorithms.privacy.accounting.gdp import calibrate
from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_none
from algorithms.privacy.mechanisms import TreeMechanism, clip_rows, gaussian_noise
from algorithms.sosp.compiled_o2 import POST, PYTHON, o2_kernel_for
from algorithms.sosp.noise_rules import noise_calibration
from algorithms.step_log import STEP_COLUMNS, Columns, iterate_columns
from problems.base import Problem
from problems.counts.layouts import CountsBatch


class _ReusingStream:
    """Planted fault "reuse_sample": each batch's first record is the previous batch's last."""

    def __init__(self, inner: Any) -> None:
        self._inner, self._last = inner, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def take(self, k: int) -> np.ndarray:
        out = np.array(self._inner.take(k))
        if self._last is not None and len(out):
            out[0] = self._last
        if len(out):
            self._last = out[-1].copy()
        return out



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



def o1_leaf(problem: Problem, x: np.ndarray, batch: np.ndarray | CountsBatch,
            clip: float) -> np.ndarray:
    """O1's pre-noise answer: the mean of per-sample gradients clipped to `clip`.

    From a `CountsBatch` (counts mode) the mean comes from the batch's value counts: clipped
    per atom on an atoms layout (exact at any clip), and on a product layout only while the
    clip is the identity on the whole support at this public iterate (checked at every call;
    `algorithms.counts_maps`).
    """
    if isinstance(batch, CountsBatch):  # per atom, or the whole-support guard (counts_maps)
        return clipped_grad_sum(problem, x, batch, clip, "O1") / batch.k
    return clip_rows(problem.per_sample_grads(x, batch), clip).mean(axis=0)



def o2_leaf(problem: Problem, x: np.ndarray, x_prev: np.ndarray, batch: np.ndarray | CountsBatch,
            clip: float) -> np.ndarray:
    """O2's pre-noise answer: the mean of per-sample gradient differences clipped to `clip`
    (from counts as in `o1_leaf`)."""
    if isinstance(batch, CountsBatch):
        return clipped_grad_diff_sum(problem, x, x_prev, batch, clip, "O2") / batch.k
    return clip_rows(problem.per_sample_grad_diffs(x, x_prev, batch), clip).mean(axis=0)



def _run_engine(alg: Any, problem: Problem, stream: Any, privacy: Privacy,
                rng: np.random.Generator, p: dict, deadline: float = math.inf,
                probe: Any = None, monitor: Any = None) -> Trajectory:
    const = problem.constants
    d, G, M = problem.d, const.G, const.M
    x = np.array(problem.x0, dtype=float)
    b, T, kappa, eta = int(p["b"]), p["T"], p["kappa"], p["eta"]
    T_int = int(T) if math.isfinite(T) else 2**62
    warnings: list[str] = []
    if stream.remaining < b:
        warnings.append(f"first O1 batch b={b} exceeds the data budget {stream.remaining}: no step run")

    # Noise calibration (fixed before the run; Lemma 3.7 for the tree).
    faults = alg.planted_faults
    noise_factor = 1 / 3 if "noise_third" in faults else 1.0  # planted fault
    tree: TreeMechanism | None = None
    if alg.noise == "tree":
        s_leaf = _leaf_sensitivity(alg, p, G, M, d)
        cal = noise_calibration(privacy, s_leaf, "tree", T_int, p["tree_scope"])
        if "tree_depth_1" in faults:  # planted fault: one node per record
            cal = calibrate(privacy.eps, privacy.delta, s_leaf, nodes=1, method=privacy.calibration)
        if "tree_one_leaf" in faults:  # planted fault: one leaf per record in global scope
            cal = noise_calibration(privacy, s_leaf, "tree", T_int, "epoch")
        sigma = cal.sigma
        if "sigma" in alg.overrides:
            if float(alg.overrides["sigma"]) < sigma:
                raise ValueError(f"parameter sigma={alg.overrides['sigma']!r} is invalid: must be "
                                 f">= {sigma:.6g}, the noise (eps, delta) needs")
            sigma = float(alg.overrides["sigma"])
        tree = TreeMechanism(d, sigma * noise_factor, rng)
        mu = s_leaf * math.sqrt(cal.nodes) / sigma if sigma > 0 else math.inf
        p.update(sigma=sigma, leaf_sensitivity=s_leaf, tree_depth=TreeMechanism.depth(T_int),
                 tree_nodes=cal.nodes, calibration_floored=cal.floored)
        clip_o1 = min(G, s_leaf * b / 2) if privacy.private else G
        if "no_clipping" in faults:
            clip_o1 = math.inf
    else:
        s_leaf = math.nan  # per-release sensitivities instead (told with each release)
        cal = noise_calibration(privacy, 1.0, "gaussian", T_int, "epoch")
        mult = cal.multiplier
        if "noise_multiplier" in alg.overrides:
            if float(alg.overrides["noise_multiplier"]) < mult:
                raise ValueError(f"parameter noise_multiplier={alg.overrides['noise_multiplier']!r} "
                                 f"is invalid: must be >= {mult:.6g}, the noise (eps, delta) needs")
            mult = float(alg.overrides["noise_multiplier"])
        mu = 1.0 / mult if mult > 0 else math.inf
        p.update(noise_multiplier=mult, calibration_floored=cal.floored)
        clip_o1 = math.inf if "no_clipping" in faults else G
    p["privacy_mu"] = mu

    # Storage of iterates (see Trajectory): thin when T x d is large.
    cap_steps = T_int if math.isfinite(T) else int(min(stream.remaining, 2**40) // max(1, b))
    keep_every = max(1, math.ceil(min(cap_steps, 10**9) * d / p["max_iterate_floats"]))
    p["keep_every"] = keep_every
    kept = Columns(iterate_columns(d))  # the kept iterates x, their step t and samples used
    kept.append(x, 0, 0)
    best_est = math.inf
    _store = kept.append

    log = Columns(STEP_COLUMNS)  # the per-step records (Trajectory.records)

    drift = kappa  # line 2: drift_0 = kappa, so step 0 calls O1
    frozen_prev = 1  # frozen_{-1} = 1
    nabla = np.zeros(d)
    x_prev = x.copy()
    x_prev2 = x.copy()  # x_{t-2}: only the planted fault "o2_wrong_step" reads it
    prev_norm = math.inf
    grad_evals = 0
    stop = "T_reached"
    t = 0
    sqrt_d = math.sqrt(d)
    threshold, Gamma, zeta = p["escape_threshold"], int(p["Gamma"]), p["zeta"]
    eps_eff, alpha = p["eps_eff"], p["alpha"]
    # Loop invariants, read once (the loop runs millions of times in counts mode).
    wrong_step, no_clip = "o2_wrong_step" in faults, "no_clipping" in faults
    adaptive = alg.batch_rule == "adaptive"
    tree_clips_o2 = tree is not None and privacy.private and not wrong_step
    leaf_sens = p.get("leaf_sensitivity", math.nan)
    fixed_B = None if adaptive else int(p["B"])  # a fixed-batch rule without B: KeyError
    bounded = alg.bounded_step
    D = p["D"] if bounded else math.inf  # a bounded step without D: KeyError
    drift_by_norms = alg.drift_rule == "estimate_norms"
    o2k = o2_kernel_for(alg, problem, stream, privacy, p, tree, probe, monitor, T_int, keep_every,
                        mult if tree is None else math.nan, rng)
    python_next = False
    while t < T_int:
        # Runs of O2 steps in compiled code where its floats are the loop's (compiled_o2); it
        # hands back every step that needs Python (O1, escape, new block roots, ...) and every
        # step that stores an iterate, whose post-step block below then runs here.
        kernel_step = False
        if o2k is not None and not python_next and drift < kappa:
            n_done, why, res = o2k.run(x, x_prev, nabla, drift, prev_norm, best_est, frozen_prev,
                                       t, grad_evals, rng)
            if n_done:
                state, recs, stored = res
                x, x_prev, x_prev2, nabla, drift, prev_norm, best_est, frozen_prev, t, grad_evals = state
                kept.extend(len(stored[1]), *stored)
                log.extend(n_done, 2, recs[0], recs[1], recs[2], recs[3], False, recs[4])
                est_norm = prev_norm
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
            noise_std = 0.0
            restart = False
            if drift >= kappa:  # line 4-5: O1
                batch = stream.take(b)
                grad_evals += len(batch)
                leaf = o1_leaf(problem, x, batch, clip_o1)
                clip = clip_o1
                told = s_leaf if tree is not None else 2 * clip_o1 / b
                nabla = leaf
                if tree is None and privacy.private:
                    noise_std = mult * 2 * (G if "no_clipping" in faults else clip_o1) / b
                    told = noise_std / mult
                    nabla = nabla + gaussian_noise(d, noise_std * noise_factor, rng)
                if tree is not None and p["tree_scope"] == "epoch":
                    tree.restart()
                    restart = True
                drift = 0.0
                oracle, used = 1, b
            else:  # line 7: O2
                step_len = _norm(x - x_prev)
                if not math.isfinite(step_len):  # finite iterates whose difference overflows
                    stop = "diverged"
                    break
                g = M * step_len
                g_rule = g  # the step bound the batch rule and the noise use
                if wrong_step:  # planted fault: the previous step's length
                    g_rule = M * _norm(x_prev - x_prev2)
                if adaptive:
                    terms = [1.0, g_rule * kappa / alpha**2]
                    if math.isfinite(eps_eff):
                        terms.append(g_rule * sqrt_d / (alpha * eps_eff))
                    bt = math.ceil(max(terms))
                else:
                    bt = fixed_B
                if bt > stream.remaining:
                    stop = "data_exhausted"
                    break
                batch = stream.take(bt)
                grad_evals += 2 * len(batch)
                clip_o2 = g
                if tree_clips_o2:
                    clip_o2 = min(g, leaf_sens * bt / 2)
                if no_clip:
                    clip_o2 = math.inf
                leaf = o2_leaf(problem, x, x_prev, batch, clip_o2)
                clip = clip_o2
                told = s_leaf if tree is not None else 2 * clip_o2 / bt
                delta_t = leaf
                if tree is None and privacy.private:
                    bound = clip_o2 if math.isfinite(clip_o2) and not wrong_step else g_rule
                    noise_std = mult * 2 * bound / bt  # scaled to the step taken (public)
                    told = noise_std / mult
                    delta_t = delta_t + gaussian_noise(d, noise_std * noise_factor, rng)
                nabla = nabla + delta_t
                oracle, used = 2, bt
            frozen = frozen_prev - 1
            released = nabla + tree.next() if tree is not None else nabla
            if tree is not None:
                noise_std = tree.sigma
            escape = False
            if prev_norm <= threshold and frozen_prev <= 0:  # line 9 (||nabla~_{t-1}||, frozen_{t-1})
                frozen = Gamma
                if p["reset_drift_on_escape"]:
                    drift = 0.0
                if p["saddle_noise"]:
                    released = released + gaussian_noise(d, zeta / sqrt_d, rng)
                escape = True
            est_norm = _norm(released)
            if probe is not None:
                probe.release(t=t + 1, oracle=oracle, x=x.copy(), x_prev=x_prev.copy(), batch=batch,
                              clip=clip, leaf=leaf, told=told, noise_std=noise_std, nabla=nabla.copy(),
                              released=released.copy(), restart=restart, escape=escape)
            step = eta * released
            step_sq = None
            if bounded:
                step_norm = eta * est_norm
                if step_norm > D:
                    step = step * (D / step_norm)
                    # A shortened step has length D by definition. Its float norm^2 is D^2 up to
                    # an ulp, and with D = sqrt(kappa) that ulp would decide "drift >= kappa"
                    # (O1 or O2 next) by rounding noise; use the exact D^2.
                    step_sq = D ** 2
            x_prev2 = x_prev
            x_prev = x
            x = x - step
            if drift_by_norms:
                drift += est_norm  # line 15
            else:
                drift += float(step @ step) if step_sq is None else step_sq
            frozen_prev = frozen
            prev_norm = est_norm
            t += 1

            log.append(oracle, used, noise_std, est_norm, drift, escape, stream.used)
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

    if kept.last("t") != t:
        _store(x, t, stream.used)
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
        grad_evals=grad_evals, stop_reason=stop, privacy_spent=spent, params=p, n_steps=t,
        warnings=warnings,
    )
