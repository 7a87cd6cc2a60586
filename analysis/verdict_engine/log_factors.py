"""The log factors a claim's O~ hides (`algorithms.claims.LogFactor`), evaluated at a fit's
design points (`log_regressor`).

A factor (log Q)^k with 0 <= k <= K multiplies the error bound. In the samples-to-target view
the bound is inverted for n, so the same factor enters n* with power k / a, a the claim's
privacy exponent (alpha ~ (sqrt(d)/(n eps))^a (log T)^k gives n* ~ alpha^(-1/a) (log T)^(k/a)).
log Q is floored at 1 (a log factor never shrinks a bound), so Q <= e contributes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from algorithms.claims import Claim, LogFactor
from analysis.verdict_engine.design import Design


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
