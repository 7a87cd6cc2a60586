"""A Lipschitz screen on lambda_min for the running minimum of alpha_SOSP: the same floats,
far fewer Hessians.

alpha_SOSP(x) = max(g, max(0, -lambda)^2 / rho) with g = ||grad F(x)|| and lambda =
lambda_min(hess F(x)) (`problems.evaluation.metrics.sosp_alpha`). Along a run whose gradient keeps
falling, `running_min_alpha` needs alpha at nearly every stored iterate, and lambda_min is
most of an evaluation's cost (a 916,000-step eps = inf private SpiderBoost cell on the GLM
spent ~45 of its 62 s of evaluation there). But alpha = g exactly wherever the curvature part
is below g, i.e. -lambda < sqrt(rho g), and lambda_min is Lipschitz along the path: by Weyl's
inequality |lambda_min(H(x)) - lambda_min(H(y))| <= ||H(x) - H(y)||_2 <= L ||x - y|| with L
the population Hessian's Lipschitz constant. So one computed lambda_min at a reference point
x_r certifies alpha = g at every later candidate x with

    lambda_r - L ||x - x_r|| - slack >= -MARGIN sqrt(rho g)    (or > 0),

and those need no Hessian. Certified points get alpha = g, the float `sosp_alpha` returns there
(its curvature part is then at most MARGIN^2 g, below g with room for rounding); the others are
computed as before. The output is the unscreened one bit for bit.

Only a problem that declares `hessian_lipschitz()` (a proven bound on L for its population
Hessian, `problems.glm.GLM`'s from its link's third derivative) is screened. A wrong bound
would change numbers, so every AUDIT_EVERY-th certified point is computed anyway: a mismatch
turns the screen off for that problem class for the rest of the process, with one warning, and
the caller recomputes without it (`problems.evaluation.metrics.running_min_alpha`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from problems.evaluation.batched_oracles import row_norms

#: Share of the admissible negative curvature sqrt(rho g) a certificate may use: the certified
#: curvature part is then at most 0.9801 g.
MARGIN = 0.99

#: Absolute slack on the computed lambda_min at the reference and at the candidate, relative to
#: the smoothness constant M (a bound on ||hess F||): dense eigvalsh errs by ~1e-16 ||H||,
#: Lanczos (d > 200) by its tolerance 1e-10.
SLACK = 1e-8

#: Every this many certified points, alpha is computed anyway and compared (the audit).
AUDIT_EVERY = 64

_disabled: set[type] = set()


class ScreenMismatch(RuntimeError):
    """A certified point's computed alpha differed from its gradient norm: the declared
    Hessian-Lipschitz bound does not hold for this problem."""


def lipschitz_of(problem: object) -> float | None:
    """The problem's declared Hessian-Lipschitz bound, or None (no screen): undeclared, turned
    off by a failed audit in this process, or not a finite positive number."""
    fn = getattr(problem, "hessian_lipschitz", None)
    if fn is None or type(problem) in _disabled:
        return None
    value = float(fn())
    return value if math.isfinite(value) and value > 0 else None


def disable(problem: object, detail: str) -> None:
    """Turn the screen off for the problem's class (a failed audit), with one warning."""
    _disabled.add(type(problem))
    warnings.warn(f"{type(problem).__name__}.hessian_lipschitz() does not bound the Hessian's "
                  f"change on this run ({detail}): evaluating lambda_min at every candidate",
                  RuntimeWarning, stacklevel=3)


def reset() -> None:
    """Forget every failed audit (tests)."""
    _disabled.clear()


class CurvatureScreen:
    """Certificates alpha = g from one reference lambda_min (module docstring)."""

    def __init__(self, lipschitz: float, rho: float, smoothness: float) -> None:
        self.lipschitz, self.rho = float(lipschitz), float(rho)
        self.slack = SLACK * max(float(smoothness), 0.0) if math.isfinite(smoothness) else math.inf
        self._x: np.ndarray | None = None
        self._lam = math.nan

    @property
    def has_reference(self) -> bool:
        return self._x is not None

    def set_reference(self, x: np.ndarray, lam: float) -> None:
        """A point and its computed lambda_min; a non-finite one certifies nothing."""
        if math.isfinite(lam):
            self._x, self._lam = np.array(x, dtype=float), float(lam)
        else:
            self._x, self._lam = None, math.nan

    def certifies(self, xs: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Mask over the rows of xs (gradient norms g): alpha = g there, without a Hessian."""
        if self._x is None or not math.isfinite(self.slack):
            return np.zeros(len(xs), dtype=bool)
        dist = row_norms(np.asarray(xs, dtype=float) - self._x)
        lower = self._lam - self.lipschitz * dist - 2 * self.slack - abs(self._lam) * 1e-12
        with np.errstate(invalid="ignore"):
            room = MARGIN * np.sqrt(self.rho * g) if self.rho > 0 else np.zeros_like(g)
            ok = (lower > 0) | ((g > 0) & (-lower <= room))
        return ok & np.isfinite(g) & np.isfinite(dist)

    def certifies_one(self, x: np.ndarray, g: float) -> bool:
        """`certifies` for one point, in scalar arithmetic (the by-point loop's hot path)."""
        if self._x is None or not math.isfinite(self.slack) or not math.isfinite(g):
            return False
        diff = np.asarray(x, dtype=float) - self._x
        dist = math.sqrt(float(diff @ diff))
        lower = self._lam - self.lipschitz * dist - 2 * self.slack - abs(self._lam) * 1e-12
        if not math.isfinite(lower):
            return False
        if lower > 0:
            return True
        room = MARGIN * math.sqrt(self.rho * g) if self.rho > 0 else 0.0
        return g > 0 and -lower <= room


def alphas(grad_norm: np.ndarray, lam: np.ndarray, rho: float) -> list[float]:
    """sosp_alpha's alpha from a gradient norm and lambda_min, elementwise (its formula)."""
    out = []
    for g, lm in zip(grad_norm.tolist(), lam.tolist(), strict=True):
        if not (math.isfinite(g) and math.isfinite(lm)):
            out.append(math.nan)
            continue
        neg = max(0.0, -lm)
        curv = 0.0 if neg == 0 else (neg**2 / rho if rho > 0 else math.inf)
        out.append(max(g, curv))
    return out


def running_min_by_point(problem: Any, iterates: np.ndarray, grads: np.ndarray,
                         lipschitz: float | None, lambda_min: Callable[[Any, np.ndarray], float]
                         ) -> np.ndarray:
    """`running_min_alpha` one candidate at a time, for a problem without a batched
    lambda_min: alpha from sosp_alpha's own floats (the single-point gradient's norm, which a
    batched gradient may miss by an ulp, and lambda_min), rho read once; with a declared
    Hessian-Lipschitz bound, lambda_min only where the screen cannot certify alpha = g, every
    AUDIT_EVERY-th certified point computed too (a mismatch raises ScreenMismatch)."""
    constants = problem.constants
    rho = constants.rho
    screen = None if lipschitz is None else \
        CurvatureScreen(lipschitz, rho, constants.M)
    best = math.inf
    out = np.empty(len(iterates))
    certified = 0
    for i, x in enumerate(iterates):
        if grads[i] < best:
            g = np.array([np.linalg.norm(problem.population_grad(x))])
            if screen is not None and screen.certifies_one(x, float(g[0])):
                alpha = float(g[0])
                certified += 1
                if certified % AUDIT_EVERY == 0:
                    got = alphas(g, np.array([lambda_min(problem, x)]), rho)[0]
                    if not got == alpha:
                        raise ScreenMismatch(
                            f"alpha {got!r} against the gradient norm {alpha!r} at iterate {i}")
            else:
                lam = lambda_min(problem, x)
                alpha = alphas(g, np.array([lam]), rho)[0]
                if screen is not None:
                    screen.set_reference(x, lam)
            best = min(best, alpha)
        out[i] = best
    return out


def running_min_screened(problem: Any, iterates: np.ndarray, grads: np.ndarray,
                         lams: Callable[[np.ndarray], np.ndarray], lipschitz: float,
                         chunk: int) -> np.ndarray:
    """`running_min_alpha`'s batched loop with the Lipschitz screen (problems.evaluation.curvature_screen):
    the same candidates per chunk, each one's alpha either certified = g or computed, in
    batches of 1, 2, 4, ... while the certificates keep failing; every AUDIT_EVERY-th certified
    point is computed too, and a mismatch raises ScreenMismatch."""
    constants = problem.constants
    rho = constants.rho
    screen = CurvatureScreen(lipschitz, rho, constants.M)
    best = math.inf
    out = np.empty(len(iterates))
    step = chunk
    width, certified = 1, 0
    for start in range(0, len(iterates), step):
        g = grads[start:start + step]
        cand = np.flatnonzero(g < best)
        alpha: dict[int, float] = {}
        pos = 0
        while pos < len(cand):
            rest = cand[pos:]
            ok = screen.certifies(iterates[start + rest], g[rest])
            upto = int(np.argmin(ok)) if not ok.all() else len(rest)
            for i in rest[:upto].tolist():
                certified += 1
                alpha[i] = float(g[i])
                if certified % AUDIT_EVERY == 0:
                    got = alphas(g[[i]], lams(iterates[[start + i]]), rho)[0]
                    if not got == alpha[i]:
                        raise ScreenMismatch(
                            f"alpha {got!r} against the gradient norm {alpha[i]!r} at iterate "
                            f"{start + i}")
            # a miss right after a fresh reference: the certificates fail here, batch more
            width = 1 if upto or not screen.has_reference else min(2 * width, step)
            pos += upto
            if pos == len(cand):
                break
            idx = cand[pos:pos + width]
            lam = np.asarray(lams(iterates[start + idx]), dtype=float)
            alpha.update(zip(idx.tolist(), alphas(g[idx], lam, rho), strict=True))
            screen.set_reference(iterates[start + idx[-1]], float(lam[-1]))
            pos += len(idx)
        for i, gi in enumerate(g.tolist()):
            if gi < best:
                best = min(best, alpha[i])
            out[start + i] = best
    return out
