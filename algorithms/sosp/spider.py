"""The private stochastic Spider engine (seed 000, Algorithm 2 with the oracles of Algorithm 3).

One loop, with the parts where the papers differ made pluggable:

* noise: fresh Gaussian noise per oracle answer (Ganesh et al. 2023) or one binary-tree
  mechanism (seed 000 Algorithm 1, Lemma 3.7);
* O2 batch: fixed B, or adaptive b_t = max{g sqrt(d)/(alpha eps), g kappa / alpha^2, 1} with
  g = M ||x_t - x_{t-1}|| (seed 000 Lemma 3.8 / Theorem 3.11; with eta = 1/M, g equals the
  paper's ||nabla~_{t-1}||);
* drift: sum of squared steps since the last O1 call (Ganesh) or sum of released estimate
  norms (seed 000 Algorithm 2 line 15); O1 is called when drift >= kappa (line 4);
* saddle escape (lines 9-11): when the previous released estimate is small and the frozen
  counter has run out, add g_t ~ N(0, zeta^2/d I) and freeze for Gamma steps.

Privacy is enforced here, not assumed: O1 averages per-sample gradients clipped to C1 and O2
averages per-sample gradient differences clipped to C2 <= M ||x_t - x_{t-1}||, so with
replace-one neighbours every release has L2 sensitivity at most 2 C / batch, whatever the
problem's stated constants. Each record is used once (disjoint batches from a stream).

Data: records (rows; O1 / O2 clip each per-sample row) or a counts stream (`problems.counts.stream`,
exact batch statistics). With counts, O1 / O2 take the batch mean from the problem's counts
oracles (`algorithms.counts_maps`): on an atoms layout every per-record clip is applied per
atom (exact at any threshold); on a product layout the mean equals the clipped mean only while
clipping is the identity, so `o1_leaf` and `o2_leaf` check at every call that the clip
threshold is at least the largest per-record norm over the whole support at the public
iterate (never over the values the batch holds: that would make the check a function of the
data; `CountsClipError` otherwise, before the release is noised). The privacy
verification (`probe`, planted faults) needs records.

A step that `bounded_step` shortens to length D adds exactly D^2 to the squared-step drift (not
its float norm^2): with D = sqrt(kappa) an ulp would otherwise decide "drift >= kappa".

Ambiguities of seed 000's pseudo-code and the readings taken (each a knob):
* line 10 resets the drift at each escape perturbation. `adaptive_tree_spider` takes it
  literally (`reset_drift_on_escape=True`): an escape inside an epoch postpones the next O1
  refresh. The squared-step Spiders (`gaussian_spider`, `tree_spider`) default to False: their
  drift is, by Ganesh et al.'s rule, the sum of squared steps since the last O1 call, and that
  sum bounds the O2 noise accumulated over an epoch. With the reset, on hard_valley (d 10,
  eps 0.1, target 0.05, 8 seeds) the Gaussian Spider stalled where its frozen epoch noise
  cancelled the gradient (released estimate 0.0065 against ||grad F|| ~ 0.1, steps 24x shorter
  than eta ||grad F||), escapes fired every Gamma + 1 steps and each reset the drift, so O1
  never refreshed (epochs up to 18,900 steps, squared steps 7-29x kappa, noise norm 0.20 against
  the rules' 0.065) and 3 of 8 runs ended at the horizon T; without it 8 of 8 reached the target
  in 0.07-0.13 T with 0.32-0.47x the adaptive Spider's samples (test_algorithms.py).
* NODE's line 14 ("k' <= k") is read as k' <= t (see `algorithms.privacy.mechanisms`).
* Algorithm 2 uses one TREE(t) over the global step t while nabla_t restarts at each O1 call
  (`tree_scope="global"`, default, literal). Written as a prefix sum, the O1 answer is the
  increment O1(x_t) - nabla_{t-1}, so a record moves its own leaf *and* the next restart's
  leaf: the accountant is told 2 x depth nodes. `tree_scope="epoch"` restarts the tree at
  each O1 call (Arora et al. 2023, Algorithm 1): a record moves one leaf, depth nodes.
* line 9's threshold gamma log^3(B M d / (rho omega)) and Proposition 3.4's zeta are far off
  the scale of the real estimator error once privacy noise is present (measured in early runs:
  perturbations fire every Gamma + 1 steps or never). Default `escape_rule="noise_scaled"`:
  threshold c_escape * max(gamma, noise_norm), zeta = c_zeta * max(gamma, noise_norm) /
  sqrt(log(d / omega)), where noise_norm is the bound on the privacy-noise norm in the
  released estimate; `escape_rule="literal"` uses the paper's formulas.
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import numpy as np

from algorithms.base import Privacy, Trajectory
from algorithms.claims import Claim
from algorithms.counts_maps import clipped_grad_diff_sum, clipped_grad_sum
from algorithms.privacy.accounting.gdp import Calibration, calibrate, gdp_mu
from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_none
from algorithms.privacy.faults import check_faults
from algorithms.privacy.mechanisms import TreeMechanism, clip_rows, gaussian_noise
from algorithms.rule_constants import require_rule_constants
from problems.base import Constants, Problem
from problems.counts.stream import CountsBatch, CountsStream

#: Knobs for the constants that O~ hides; all default 1 (README, the protocol, items 3-4).
KNOB_DEFAULTS: dict[str, Any] = {
    "alpha_mult": 1.0,  # multiplier on the target accuracy alpha (gamma)
    "budget_mult": 1.0,  # multiplier on the privacy budget the rules assume (eps_eff)
    "horizon_mult": 1.0,  # multiplier on the horizon T
    "c_escape": 1.0,  # constant of the escape threshold
    "c_zeta": 1.0,  # constant of the escape noise
    "c_Gamma": 1.0,  # constant of the frozen window
    "omega": 0.1,  # failure probability inside the logs of Lemma 3.3 / Proposition 3.4
    "escape_rule": "noise_scaled",
    "reset_drift_on_escape": True,
    "saddle_noise": True,  # False switches the escape perturbation g_t off (a test control)
    "tree_scope": "global",
    "max_iterate_floats": 4_000_000,  # memory cap of the stored iterates (see Trajectory)
}

#: Parameters any run can override directly (then no rule computes them).
OVERRIDABLE = ("alpha", "b", "B", "kappa", "D", "eta", "T", "Gamma", "zeta",
               "escape_threshold", "sigma", "noise_multiplier", "target_alpha")
#: The noise override each mechanism takes: the tree's node std `sigma`, the Gaussian
#: releases' `noise_multiplier` (std per unit of sensitivity). Either must be at least what
#: (eps, delta) needs; the other mechanism's key is refused, never silently ignored.
NOISE_OVERRIDE = {"tree": "sigma", "gaussian": "noise_multiplier"}

_CHOICES = {
    "escape_rule": ("noise_scaled", "literal"),
    "tree_scope": ("global", "epoch"),
}


def validate_overrides(name: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Check override keys and values before any work; ValueError names key, value, allowed."""
    out = {}
    for key, value in overrides.items():
        if key not in KNOB_DEFAULTS and key not in OVERRIDABLE:
            allowed = ", ".join([*KNOB_DEFAULTS, *OVERRIDABLE])
            raise ValueError(f"parameter {key}={value!r} is invalid for {name}: allowed: {allowed}")
        if key in _CHOICES:
            if value not in _CHOICES[key]:
                raise ValueError(f"parameter {key}={value!r} is invalid: must be one of {_CHOICES[key]}")
        elif key in ("reset_drift_on_escape", "saddle_noise"):
            if not isinstance(value, bool):
                raise ValueError(f"parameter {key}={value!r} is invalid: must be true or false")
        else:
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"parameter {key}={value!r} is invalid: must be a number") from None
            if not v > 0 or (math.isinf(v) and key not in ("T",)):
                raise ValueError(f"parameter {key}={value!r} is invalid: must be a finite number > 0")
            if key == "omega" and v >= 1:
                raise ValueError(f"parameter omega={value!r} is invalid: must be in (0, 1)")
        out[key] = value
    return out


def tree_nodes(depth: int, scope: str) -> int:
    """Gaussian node values one record can move in the tree (see module docstring)."""
    return 2 * depth if scope == "global" else depth


def noise_calibration(privacy: Privacy, sensitivity: float, noise: str, T: int,
                      scope: str) -> Calibration:
    """The accountant's calibration for this algorithm's mechanism."""
    if noise == "tree":
        depth = TreeMechanism.depth(T)
        return calibrate(privacy.eps, privacy.delta, sensitivity,
                         nodes=tree_nodes(depth, scope), method=privacy.calibration,
                         tree_steps=T)
    return calibrate(privacy.eps, privacy.delta, sensitivity, method=privacy.calibration)


def effective_eps(privacy: Privacy, noise: str, T: int, scope: str, budget_mult: float) -> float:
    """The eps the batch rules budget for, so that the noise they plan for is the noise added.

    The papers' rules make a release's sensitivity ~ eps alpha / sqrt(d) assuming noise std =
    sensitivity / eps. The accountant adds std = multiplier x sensitivity (x sqrt(popcount(t))
    <= sqrt(depth) for a tree prefix), and the replace-one sensitivity carries a factor 2.
    eps_eff = budget_mult / (2 x multiplier [x sqrt(depth)]) puts both on the same footing
    (fair rules; without it the tree's rules carried a hidden factor of ~200, measured).
    """
    if not privacy.private:
        return math.inf
    cal = noise_calibration(privacy, 1.0, noise, T, scope)
    factor = cal.multiplier
    if noise == "tree":
        factor *= math.sqrt(TreeMechanism.depth(T))
    return budget_mult / (2.0 * factor)


class Spider:
    """Base class of the private Spider configurations (see module docstring).

    Subclasses set `noise` ("gaussian" | "tree"), `batch_rule` ("fixed" | "adaptive"),
    `drift_rule` ("squared_steps" | "estimate_norms"), `bounded_step` and implement
    `theory_params`. `claimed_exponent` is the p of alpha ~ (sqrt(d)/(n eps))^p (None: no claim).
    """

    name = "spider"
    description = ""
    paper = ""
    noise = "tree"
    batch_rule = "adaptive"
    drift_rule = "estimate_norms"
    bounded_step = False
    claimed_exponent: float | None = None
    claimed_rate = ""
    #: The rates the papers claim for this algorithm (`algorithms.claims`); () for none.
    claims: ClassVar[tuple[Claim, ...]] = ()
    family = "sosp_spider"
    #: Data modes the engine runs on (counts: exact batch statistics, `problems.counts.stream`).
    data_modes: ClassVar[tuple[str, ...]] = ("records", "counts")
    #: Both calibrations of `algorithms.privacy.accounting.gdp` (the papers' formulas and tight GDP).
    calibrations: ClassVar[tuple[str, ...]] = ("tight", "theory")
    #: Problem constants the rules divide by (`algorithms.rule_constants`): eta = 1/M, the
    #: batch rules' G gamma / M^2, the escape window's log(d M B0 / (rho gamma omega)).
    rule_constants: ClassVar[dict[str, str]] = {"M": "eta = 1 / M", "G": "kappa ~ G gamma / M^2"}
    #: Knob defaults of this configuration that differ from KNOB_DEFAULTS.
    knob_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, *, planted_faults: tuple[str, ...] = (), **overrides: Any) -> None:
        self.overrides = validate_overrides(self.name, overrides)
        for mech, key in NOISE_OVERRIDE.items():
            if mech != self.noise and key in self.overrides:
                raise ValueError(f"parameter {key}={self.overrides[key]!r} is invalid for "
                                 f"{self.name}: its noise is {self.noise!r}, whose override is "
                                 f"{NOISE_OVERRIDE[self.noise]}")
        # Negative controls of the privacy verification only (algorithms.privacy.faults).
        self.planted_faults = check_faults(planted_faults)

    @classmethod
    def predicted_exponent(cls, view: str, x: str) -> float | None:
        """The exponent the claimed rate predicts for a log-log fit (None: no claim).

        The claim alpha ~ n^{-1/3} + (sqrt(d)/(n eps))^p, in its privacy-dominated regime, i.e.
        sample complexity n*(alpha) ~ sqrt(d) / (eps alpha^{1/p}) (seed 000, Theorem 3.11;
        Ganesh et al. 2023 for p = 3/7). view "error": log alpha against log x, x = privacy
        (sqrt(d)/(n eps)) -> p, n -> -p, eps -> -p, d -> p/2. view "sample_complexity":
        log n* against log x, x = alpha -> -1/p, eps -> -1, d -> +1/2.
        """
        return cls.claims[0].predicted_slope(view, x) if cls.claims else None

    # -- parameters ---------------------------------------------------------------------------
    def knobs(self) -> dict[str, Any]:
        defaults = {**KNOB_DEFAULTS, **self.knob_defaults}
        return {k: self.overrides.get(k, v) for k, v in defaults.items()}

    @classmethod
    def theory_params(cls, constants: Constants, n: int | None, d: int, privacy: Privacy,
                      **knobs: Any) -> dict[str, Any]:
        """Every parameter of a run from the paper's formulas (see subclasses)."""
        raise NotImplementedError

    def resolve_params(self, problem: Problem, n: int | None, privacy: Privacy) -> dict[str, Any]:
        """theory_params with knobs and direct overrides applied, plus derived quantities."""
        require_rule_constants(self.name, problem, self.rule_constants)
        knobs = self.knobs()
        direct = {k: v for k, v in self.overrides.items() if k in OVERRIDABLE}
        p = self.theory_params(problem.constants, n, problem.d, privacy, **knobs, **direct)
        for key, value in direct.items():
            if key in ("target_alpha",):
                continue
            p[key] = value
        for key in ("b", "B", "T", "Gamma"):
            if key in p and p[key] is not None and math.isfinite(p[key]):
                p[key] = max(1, math.ceil(p[key]))
        p.update({k: v for k, v in knobs.items()})
        return p

    # -- the run ------------------------------------------------------------------------------
    def run(self, problem: Problem, data: Any, privacy: Privacy,
            rng: np.random.Generator, *, time_limit: float | None = None,
            probe: Any = None, monitor: Any = None) -> Trajectory:
        """Run on `data` (an array from problem.sample or a stream); randomness only from rng.

        `time_limit` (seconds of wall time, optional) ends the run after the step that crosses
        it, with stop_reason "timeout"; the trajectory so far is returned (a sweep's cell limit).
        `probe` (optional, for the privacy verification): an object whose `release(**info)` is
        called at every step with the state, the batch, the clip bound, the pre-noise leaf,
        the sensitivity told to the accountant and the released estimate (see _run_engine).
        `monitor` (optional, a measurement device of the benchmark, not part of the algorithm):
        called with each stored iterate; True ends the run with stop_reason "target_reached".
        Everything up to that iterate is what the full run would have produced.
        """
        if not isinstance(privacy, Privacy):
            raise ValueError(f"privacy={privacy!r} is invalid: must be an algorithms.Privacy")
        if time_limit is not None and not time_limit > 0:
            raise ValueError(f"time_limit={time_limit!r} is invalid: must be None or a number > 0")
        stream = problem.as_stream(data)
        if isinstance(stream, CountsStream) and (probe is not None or self.planted_faults):
            raise ValueError("the privacy verification (probe, planted_faults) runs on record "
                             "mode: pass records (data='records'), not a counts stream")
        n = None if math.isinf(stream.remaining) else int(stream.remaining)
        p = self.resolve_params(problem, n, privacy)
        deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
        if "reuse_sample" in self.planted_faults:
            stream = _ReusingStream(stream)
        return _run_engine(self, problem, stream, privacy, rng, p, deadline, probe, monitor)


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


def _leaf_sensitivity(alg: Spider, p: dict, G: float, M: float, d: int) -> float:
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


def _run_engine(alg: Spider, problem: Problem, stream: Any, privacy: Privacy,
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
    it_x, it_t, it_s, it_e = [x.copy()], [0], [0], []
    best_est = math.inf

    def _store(xv: np.ndarray, step: int, used: int) -> None:
        it_x.append(xv.copy())
        it_t.append(step)
        it_s.append(used)

    rec_oracle: list[int] = []
    rec_batch: list[int] = []
    rec_noise: list[float] = []
    rec_norm: list[float] = []
    rec_drift: list[float] = []
    rec_escape: list[bool] = []
    rec_samples: list[int] = []

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
    while t < T_int:
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
            if "o2_wrong_step" in faults:  # planted fault: the previous step's length
                g_rule = M * _norm(x_prev - x_prev2)
            if alg.batch_rule == "adaptive":
                terms = [1.0, g_rule * kappa / alpha**2]
                if math.isfinite(eps_eff):
                    terms.append(g_rule * sqrt_d / (alpha * eps_eff))
                bt = math.ceil(max(terms))
            else:
                bt = int(p["B"])
            if bt > stream.remaining:
                stop = "data_exhausted"
                break
            batch = stream.take(bt)
            grad_evals += 2 * len(batch)
            clip_o2 = g
            if tree is not None and privacy.private and "o2_wrong_step" not in faults:
                clip_o2 = min(g, p["leaf_sensitivity"] * bt / 2)
            if "no_clipping" in faults:
                clip_o2 = math.inf
            leaf = o2_leaf(problem, x, x_prev, batch, clip_o2)
            clip = clip_o2
            told = s_leaf if tree is not None else 2 * clip_o2 / bt
            delta_t = leaf
            if tree is None and privacy.private:
                bound = clip_o2 if math.isfinite(clip_o2) and "o2_wrong_step" not in faults else g_rule
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
        if alg.bounded_step:
            step_norm = eta * est_norm
            if step_norm > p["D"]:
                step = step * (p["D"] / step_norm)
                # A shortened step has length D by definition. Its float norm^2 is D^2 up to
                # an ulp, and with D = sqrt(kappa) that ulp would decide "drift >= kappa"
                # (O1 or O2 next) by rounding noise; use the exact D^2.
                step_sq = p["D"] ** 2
        x_prev2 = x_prev
        x_prev = x
        x = x - step
        if alg.drift_rule == "estimate_norms":
            drift += est_norm  # line 15
        else:
            drift += float(step @ step) if step_sq is None else step_sq
        frozen_prev = frozen
        prev_norm = est_norm
        t += 1

        rec_oracle.append(oracle)
        rec_batch.append(used)
        rec_noise.append(noise_std)
        rec_norm.append(est_norm)
        rec_drift.append(drift)
        rec_escape.append(escape)
        rec_samples.append(stream.used)
        it_e.append(est_norm)
        if not np.all(np.isfinite(x)):
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

    if it_t[-1] != t:
        _store(x, t, stream.used)
    # est_norm_at[i]: norm of the estimate used to step *out of* stored iterate i.
    norms = np.array([*it_e, math.inf])
    est_at = norms[np.array(it_t)]
    if t == 0 and stop == "T_reached" and T_int > 0:
        stop = "data_exhausted"
    records = {
        "oracle": np.array(rec_oracle, dtype=np.int8),
        "batch": np.array(rec_batch, dtype=np.int64),
        "noise_std": np.array(rec_noise),
        "est_norm": np.array(rec_norm),
        "drift": np.array(rec_drift),
        "escape": np.array(rec_escape, dtype=bool),
        "samples": np.array(rec_samples, dtype=np.int64),
    }
    spent = ledger_gdp(mu, privacy.delta) if privacy.private else ledger_none(privacy.delta)
    return Trajectory(
        iterates=np.array(it_x), steps=np.array(it_t), samples_at=np.array(it_s, dtype=np.int64),
        est_norm_at=est_at, records=records, samples_used=int(stream.used),
        grad_evals=grad_evals, stop_reason=stop, privacy_spent=spent, params=p, n_steps=t,
        warnings=warnings,
    )


def escape_params(constants: Constants, d: int, gamma: float, noise_norm: float, T: float,
                  knobs: dict[str, Any]) -> dict[str, float]:
    """Escape threshold, noise zeta and frozen window Gamma (seed 000 Alg. 2 line 9, Lemma 3.3,
    Proposition 3.4), with the `escape_rule` choice described in the module docstring."""
    M, B0 = constants.M, constants.B0
    rho = constants.rho if constants.rho > 0 else 1e-12 * M  # rho = 0: no saddles
    omega = knobs["omega"]
    L = max(1.0, math.log(d * M * B0 / (rho * gamma * omega)))
    Gamma = knobs["c_Gamma"] * M * L / math.sqrt(rho * gamma)
    log_d = max(1.0, math.log(d / omega))
    if knobs["escape_rule"] == "literal":
        threshold = knobs["c_escape"] * gamma * max(1.0, math.log(B0 * M * d / (rho * omega))) ** 3
        zeta = knobs["c_zeta"] * gamma / math.sqrt(log_d)
    else:
        scale = max(gamma, noise_norm)
        threshold = knobs["c_escape"] * scale
        zeta = knobs["c_zeta"] * scale / math.sqrt(log_d)
    return {"escape_threshold": threshold, "zeta": zeta, "Gamma": min(Gamma, max(T, 1.0))}


__all__ = ["KNOB_DEFAULTS", "OVERRIDABLE", "Spider", "effective_eps", "escape_params",
           "gdp_mu", "noise_calibration", "validate_overrides"]
