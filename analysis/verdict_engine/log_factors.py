"""The log factors a claim's O~ hides (`algorithms.claims.LogFactor`), evaluated at a fit's
design points (`log_regressor`).

A factor (log Q)^k with 0 <= k <= K multiplies the error bound. In the samples-to-target view
the bound is inverted for n, so the same factor enters n* with power k / a, a the claim's
privacy exponent (alpha ~ (sqrt(d)/(n eps))^a (log T)^k gives n* ~ alpha^(-1/a) (log T)^(k/a)).
log Q is floored at 1 (a log factor never shrinks a bound), so Q <= e contributes nothing.

Compound quantities (one log the theorem writes, with the constants inside it, since a constant
inside a log changes its log-log slope; `algorithms.claim_logs` says who declares them):
* "d M B0/(rho alpha omega)": the saddle-escape window's log, Gamma = c_Gamma M log(d M B0 /
  (rho gamma omega)) / sqrt(rho gamma) (`algorithms.sosp.noise_rules.escape_params`), with the
  problem's M, B0, rho (rho <= 0 as the rules read it: 1e-12 M), the rules' omega (the knob
  default, `KNOB_DEFAULTS["omega"]`) and gamma the alpha of "1/alpha";
* "R/r": the net ratio of seed 000's Theorem A.2, R = 2 B0 / alpha the diameter of the empirical
  route's ball B(x0, B0 / gamma) (c_R = 1, gamma the alpha of "1/alpha"), r = min{1, M / rho}
  sqrt(d / n) its resolution;
* "L1/lambda": the argument of recursive regularization's stage count T = ceil(log2(L1 /
  lambda)) (seed 001, Theorem 5.1), evaluated as 2^T with T the stages the algorithm's own rules
  set at the design point (`resolve_params`' "stages"; JL wrappers: the base's), so that
  log2 Q is the stage count the bound's T^2 carries;
* "2n/delta": the JL embedding's k = rank log(2n / delta) (seed 001, Theorem 6.1).
The problem is rebuilt from the design's context (problem, d, instance_params), as the rules'
curve does; a design that does not tell it (or an algorithm without stages) leaves the factor
"not evaluable" (`LogRegressor.missing`).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms.claims import Claim, LogFactor
from algorithms.sosp.spider import KNOB_DEFAULTS
from analysis.verdict_engine.design import Design

#: The escape rules' failure probability omega inside the window's log (the Spiders' knob default;
#: the empirical route's `KNOBS["omega"]` is the same value).
OMEGA = float(KNOB_DEFAULTS["omega"])


@dataclass(frozen=True)
class LogRegressor:
    """z(x) = sum_j K_j' log(max(1, log Q_j(x))) at each design point, K_j' the declared
    largest power (scaled by 1/a in the samples-to-target view): the curve the claim allows is
    log y = c + p log x + t z(x) with t in [0, 1]. `factors` says which, `missing` which
    declared factors could not be evaluated (and why)."""

    z: np.ndarray
    factors: tuple[tuple[str, float], ...]
    missing: tuple[str, ...]
    varying: tuple[str, ...] = ()  # the factors that move over the design (the others are
    # constants there and only shift the level)

    @property
    def text(self) -> str:
        shown = [(q, k) for q, k in self.factors if q in self.varying]
        return " ".join(f"(log {q})^{k:.3g}" for q, k in shown) or "logs constant over the window"


def quantity_values(factor: LogFactor, design: Design, view: str, x: str,
                    horizon: np.ndarray | None) -> np.ndarray | None:
    """Q at each design point, None where the design does not tell it. In the samples-to-target
    view n is the measured n* (the medians); 1/alpha is the target there (x = alpha) and the
    achieved metric in the error view (the medians); T is the rules' horizon where the rules
    give it, else the median number of steps run."""
    ctx, q = design.context, factor.quantity
    med = design.medians
    n = med if view == "sample_complexity" else ctx["n"].to_numpy(float) if "n" in ctx else None
    if q in _COMPOUND:
        return _COMPOUND[q](design, view, x, n)
    if q == "T":
        h = horizon if horizon is not None and np.all(np.isfinite(horizon)) else None
        return h if h is not None else ctx["n_steps"].to_numpy(float)
    if q == "1/alpha":
        alpha = design.x if x == "alpha" else (med if view == "error" else ctx.get("alpha"))
        return None if alpha is None else 1.0 / np.asarray(alpha, float)
    if q in ("d", "rank"):
        col = "d" if q == "d" else "rank"
        if x == col:
            return design.x
        return ctx[col].to_numpy(float) if col in ctx else None
    if q == "1/delta":
        return 1.0 / ctx["delta"].to_numpy(float)
    if q == "1/eps":
        return 1.0 / (design.x if x == "eps" else ctx["eps"].to_numpy(float))
    if q == "n":
        return None if n is None else np.asarray(n, float)
    if q == "n eps":
        eps = design.x if x == "eps" else ctx["eps"].to_numpy(float)
        return None if n is None else np.asarray(n, float) * eps
    return None


def _alpha(design: Design, view: str, x: str) -> np.ndarray | None:
    """The alpha of "1/alpha": the target (x = alpha), the medians (error view), else the cell's."""
    ctx = design.context
    alpha = design.x if x == "alpha" else (design.medians if view == "error" else ctx.get("alpha"))
    return None if alpha is None else np.asarray(alpha, float)


def _column(design: Design, x: str, col: str) -> np.ndarray | None:
    if x == col:
        return np.asarray(design.x, float)
    return design.context[col].to_numpy(float) if col in design.context else None


@functools.lru_cache(maxsize=64)
def _problem(name: str, d: int, params: str) -> Any:
    from problems import get_problem

    return get_problem(name, d=d, **json.loads(params or "{}"))


def _problems(design: Design, d: np.ndarray | None) -> list[Any] | None:
    """The problem at each design point, rebuilt from the context (None where it cannot be)."""
    ctx = design.context
    if d is None or "problem" not in ctx:
        return None
    out = []
    for i in range(len(design)):
        params = ctx["instance_params"].iloc[i] if "instance_params" in ctx else "{}"
        if isinstance(params, dict):
            params = json.dumps(params, sort_keys=True)
        try:
            out.append(_problem(str(ctx["problem"].iloc[i]), int(d[i]),
                                params if isinstance(params, str) else "{}"))
        except (ValueError, TypeError, KeyError, json.JSONDecodeError):
            return None
    return out


def _rho(c: Any) -> float:
    return c.rho if c.rho > 0 else 1e-12 * c.M  # as escape_params reads rho = 0


def _window(design: Design, view: str, x: str, n: np.ndarray | None) -> np.ndarray | None:
    alpha, d = _alpha(design, view, x), _column(design, x, "d")
    probs = _problems(design, d)
    if alpha is None or probs is None:
        return None
    return np.array([dv * p.constants.M * p.constants.B0 / (_rho(p.constants) * a * OMEGA)
                     for a, dv, p in zip(alpha, d, probs, strict=True)])


def _net_ratio(design: Design, view: str, x: str, n: np.ndarray | None) -> np.ndarray | None:
    alpha, d = _alpha(design, view, x), _column(design, x, "d")
    probs = _problems(design, d)
    if alpha is None or probs is None or n is None:
        return None
    out = []
    for a, dv, nv, p in zip(alpha, d, np.asarray(n, float), probs, strict=True):
        c = p.constants
        r = min(1.0, c.M / c.rho if c.rho > 0 else math.inf) * math.sqrt(dv / nv)
        out.append(2.0 * c.B0 / a / r)
    return np.array(out)


def _stage_ratio(design: Design, view: str, x: str, n: np.ndarray | None) -> np.ndarray | None:
    from algorithms import Privacy, get_algorithm

    ctx = design.context
    d, eps = _column(design, x, "d"), _column(design, x, "eps")
    probs = _problems(design, d)
    if probs is None or n is None or eps is None or "algorithm" not in ctx or "delta" not in ctx:
        return None
    out = []
    for i, p in enumerate(probs):
        try:
            cls = get_algorithm(str(ctx["algorithm"].iloc[i]))
            privacy = Privacy(float(eps[i]), float(ctx["delta"].iloc[i]))
            stages = cls().resolve_params(p, round(float(n[i])), privacy).get("stages")
        except (ValueError, TypeError, KeyError, NotImplementedError, AttributeError):
            return None
        if stages is None:
            return None
        out.append(2.0 ** float(stages))
    return np.array(out)


def _k_log(design: Design, view: str, x: str, n: np.ndarray | None) -> np.ndarray | None:
    if n is None or "delta" not in design.context:
        return None
    return 2.0 * np.asarray(n, float) / design.context["delta"].to_numpy(float)


#: The compound quantities (module docstring) and their evaluation at a design's points.
_COMPOUND = {"d M B0/(rho alpha omega)": _window, "R/r": _net_ratio, "L1/lambda": _stage_ratio,
             "2n/delta": _k_log}


def log_regressor(claim: Claim, design: Design, view: str, x: str,
                  horizon: np.ndarray | None = None) -> LogRegressor:
    """The composite log regressor of `claim` over `design` (module docstring)."""
    scale = 1.0
    if view == "sample_complexity":
        a = claim.privacy_exponent
        scale = 1.0 / abs(a) if a else 1.0
    z = np.zeros(len(design))
    used, missing, varying = [], [], []
    for f in claim.logs:
        vals = quantity_values(f, design, view, x, horizon)
        if vals is None or not np.all(np.isfinite(vals)) or np.any(vals <= 0):
            missing.append(f"log {f.quantity}: not evaluable on this fit's design")
            continue
        k = f.max_power * scale
        term_z = k * np.log(np.maximum(1.0, np.log(np.asarray(vals, float))))
        z = z + term_z
        used.append((f.quantity, k))
        if float(np.ptp(term_z)) > 1e-12:
            varying.append(f.quantity)
    return LogRegressor(z, tuple(used), tuple(missing), tuple(varying))


def slope_allowance(reg: LogRegressor, x: np.ndarray) -> float:
    """How far the full allowance (t = 1) moves the log-log slope over the design: the OLS slope
    of z on log x (0 with fewer than two points or no factor)."""
    if len(x) < 2 or not reg.factors:
        return 0.0
    lx = np.log(x)
    v = float(np.var(lx))
    return float(np.cov(lx, reg.z, bias=True)[0, 1] / v) if v > 0 else 0.0


__all__ = ["LogRegressor", "log_regressor", "quantity_values", "slope_allowance"]
