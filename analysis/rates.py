"""Rate fits with bootstrap confidence intervals (README, the protocol, items 2, 3 and 7).

Every fit is an ordinary least-squares slope in log-log space. Confidence intervals come from
one stratified bootstrap of ours (`_resample_indices`): repetitions are resampled *within* each
design point (the x values are the design, fixed by the spec), and for paired quantities the
same repetition indices are used for every algorithm / knob value at a design point, so the CI
includes the pairing and, for the tuned envelope, the selection of the best knob. We do not use
scipy.stats.bootstrap because it cannot express that shared, paired resampling.

- `fit_exponent`: slope of log y on log x over all repetitions (not medians: with 5-20 seeds the
  median is discrete and its bootstrap lumpy), percentile CI, OLS standard error alongside.
- `envelope_fit`: the tuned envelope: at each design point the best median over a knob grid
  (Harrell-Davis medians: smooth, so the bootstrap of the envelope is not lumpy).
- `two_term_fit`: y = a x^p + b n^{-1/3} in log space (robust loss, several starts).
- `paired_difference`: mean of log y_A - log y_B per design point and the slope of that
  difference (its prediction is the difference of the two exponents).
- `verdict`: consistent / faster than claimed / slower than claimed / inconclusive.

Censoring (sample complexity: a cell that never reached a threshold has n* = NaN): a design
point where any repetition is censored is excluded from `fit_exponent` and counted
(`dropped_design`, `n_censored`); the envelope treats a censored run as n* = inf (never
reached is the worst outcome), so a knob setting that censors loses to one that does not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares
from scipy.stats import norm
from scipy.stats import t as student_t

#: Named x scales (column expressions of a cells / points table).
SCALES = ("privacy", "n", "d", "eps", "alpha", "rank")
#: Default bootstrap size and confidence level.
N_BOOT, LEVEL = 2000, 0.95
#: A CI wider than this makes a verdict "inconclusive": about twice the gap between the two
#: headline predictions (0.071 in the error view, 0.33 in the sample-complexity view).
MAX_CI_WIDTH = {"error": 0.15, "sample_complexity": 0.66}
#: Direction of "faster than claimed": +1 if an exponent above the prediction is more
#: favourable in the regime the claim is about (large n, small target alpha, strong privacy
#: i.e. small eps, high dimension), -1 if below. Example: n* ~ alpha^-1 measured against a
#: claimed alpha^-2 needs fewer samples as alpha -> 0: faster than claimed.
FAVOURABLE = {
    ("error", "privacy"): +1, ("error", "n"): -1, ("error", "eps"): +1, ("error", "d"): -1,
    ("error", "rank"): -1,
    ("sample_complexity", "alpha"): +1, ("sample_complexity", "eps"): +1,
    ("sample_complexity", "d"): -1, ("sample_complexity", "privacy"): -1,
}


def scale(df: pd.DataFrame, x: str) -> pd.Series:
    """The named x scale: privacy = sqrt(d) / (n eps); n, d, eps; alpha (threshold / target);
    rank (a GLM's feature rank, from the problem parameters)."""
    if x == "privacy":
        return np.sqrt(df["d"].astype(float)) / (df["n"].astype(float) * df["eps"].astype(float))
    if x == "alpha":
        if "alpha" in df:
            return df["alpha"].astype(float)
        return df["target_alpha"].astype(float)
    if x in ("n", "d", "eps"):
        return df[x].astype(float)
    if x == "rank":  # a problem parameter (GLMs): read from the cell's problem parameters
        if "rank" in df:
            return df["rank"].astype(float)
        params = df["problem_params"].map(lambda s: json.loads(s) if isinstance(s, str) else (s or {}))
        return params.map(lambda p: float(p.get("rank", math.nan)))
    if x in df:
        return df[x].astype(float)
    raise ValueError(f"x={x!r} is invalid: must be one of {', '.join(SCALES)} or a column")


@dataclass(frozen=True)
class ExponentFit:
    """One group's fit. `exponent` is the slope of log y on log x; CI by the stratified bootstrap."""

    group: dict[str, Any]
    x: str
    y: str
    exponent: float
    ci_low: float
    ci_high: float
    se_ols: float
    intercept: float
    r2: float
    n_points: int
    n_design: int
    n_censored: int = 0
    dropped_design: int = 0
    window: tuple[float, float] | None = None
    method: str = "ols-all-reps, stratified bootstrap"
    n_boot: int = N_BOOT
    chosen: dict[str, Any] = field(default_factory=dict)
    x_design: tuple[float, ...] = ()
    y_design: tuple[float, ...] = ()

    @property
    def ci_width(self) -> float:
        return self.ci_high - self.ci_low

    def row(self) -> dict[str, Any]:
        out = {**self.group, **{k: v for k, v in asdict(self).items() if k != "group"}}
        return out


def _resample_indices(sizes: Sequence[int], n_boot: int, rng: np.random.Generator) -> list[np.ndarray]:
    """For each design point with m repetitions, (n_boot, m) indices drawn with replacement."""
    return [rng.integers(0, m, size=(n_boot, m)) for m in sizes]


def _ols(lx: np.ndarray, ly: np.ndarray) -> tuple[float, float, float, float]:
    """slope, intercept, R^2 and the slope's OLS standard error."""
    xc = lx - lx.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (ly - ly.mean())) / sxx
    intercept = float(ly.mean() - slope * lx.mean())
    resid = ly - intercept - slope * lx
    sst = float(((ly - ly.mean()) ** 2).sum())
    r2 = 1.0 - float(resid @ resid) / sst if sst > 0 else 1.0
    dof = len(lx) - 2
    se = math.sqrt(float(resid @ resid) / dof / sxx) if dof > 0 else math.nan
    return slope, intercept, r2, se


def _slopes(lx: np.ndarray, ly: np.ndarray) -> np.ndarray:
    """OLS slopes of each row of ly (B, N) on lx (N,), vectorized."""
    xc = lx - lx.mean()
    return (ly - ly.mean(axis=1, keepdims=True)) @ xc / float(xc @ xc)


def _percentile_ci(boot: np.ndarray, level: float) -> tuple[float, float]:
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        return math.nan, math.nan
    a = (1 - level) / 2
    lo, hi = np.quantile(boot, [a, 1 - a])
    return float(lo), float(hi)


def _design_groups(xv: np.ndarray, yv: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    order = np.argsort(xv, kind="stable")
    xs, ys = xv[order], yv[order]
    ux, starts = np.unique(xs, return_index=True)
    return ux, np.split(ys, starts[1:])


def fit_points(xv: np.ndarray, yv: np.ndarray, *, group: dict | None = None, x: str = "x",
               y: str = "y", window: tuple[float, float] | None = None, n_boot: int = N_BOOT,
               level: float = LEVEL, rng: np.random.Generator | None = None) -> ExponentFit:
    """Fit log y = c + e log x over all repetitions; design points are the distinct x values.
    NaN y is censored: its whole design point is excluded (and counted)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    xv, yv = np.asarray(xv, float), np.asarray(yv, float)
    if window is not None:
        keep = (xv >= window[0] * (1 - 1e-12)) & (xv <= window[1] * (1 + 1e-12))
        xv, yv = xv[keep], yv[keep]
    if np.any(yv[np.isfinite(yv)] <= 0) or np.any(xv <= 0):
        raise ValueError("fit_points: x and y must be > 0 for a log-log fit")
    ux, groups = _design_groups(xv, yv)
    censored = sum(int(np.sum(~np.isfinite(g))) for g in groups)
    good = [i for i, g in enumerate(groups) if len(g) and np.all(np.isfinite(g))]
    dropped = len(groups) - len(good)
    ux, groups = ux[good], [groups[i] for i in good]
    nan_fit = ExponentFit(group=group or {}, x=x, y=y, exponent=math.nan, ci_low=math.nan,
                          ci_high=math.nan, se_ols=math.nan, intercept=math.nan, r2=math.nan,
                          n_points=int(sum(len(g) for g in groups)), n_design=len(ux),
                          n_censored=censored, dropped_design=dropped, window=window, n_boot=0)
    if len(ux) < 2:
        return nan_fit
    lx = np.concatenate([np.full(len(g), math.log(u)) for u, g in zip(ux, groups, strict=True)])
    ly = np.log(np.concatenate(groups))
    slope, intercept, r2, se = _ols(lx, ly)
    idx = _resample_indices([len(g) for g in groups], n_boot, rng)
    boot_y = np.concatenate([np.log(g)[i] for g, i in zip(groups, idx, strict=True)], axis=1)
    lo, hi = _percentile_ci(_slopes(lx, boot_y), level)
    # Small-sample correction: resampling m repetitions shrinks the variance of a design
    # point's mean by (m - 1) / m, and a normal-theory interval on N points would use Student's
    # t with N - 2 dof; widen the percentile interval about the estimate by
    # sqrt(m / (m - 1)) t_{N-2} / z (m: harmonic mean of the repetitions). Measured coverage
    # (2000 simulated datasets each): 0.92-0.94 without, 0.94-0.95 with it (tests/test_rates.py).
    m_h = len(groups) / sum(1.0 / len(g) for g in groups)
    if m_h > 1 and len(lx) > 2:
        q = 1 - (1 - level) / 2
        c = math.sqrt(m_h / (m_h - 1)) * float(student_t.ppf(q, len(lx) - 2) / norm.ppf(q))
        lo, hi = slope - c * (slope - lo), slope + c * (hi - slope)
    med = [float(np.median(g)) for g in groups]
    return ExponentFit(group=group or {}, x=x, y=y, exponent=slope, ci_low=lo, ci_high=hi,
                       se_ols=se, intercept=intercept, r2=r2, n_points=len(lx), n_design=len(ux),
                       n_censored=censored, dropped_design=dropped, window=window, n_boot=n_boot,
                       x_design=tuple(float(u) for u in ux), y_design=tuple(med))


def fit_exponent(df: pd.DataFrame, x: str, y: str, by: Sequence[str] = ("algorithm", "problem"),
                 window: tuple[float, float] | None = None, n_boot: int = N_BOOT,
                 level: float = LEVEL, seed: int = 0) -> pd.DataFrame:
    """Per group of `by`: the exponent of y in the named scale x with its bootstrap CI.

    Returns one row per group: the group columns, exponent, ci_low, ci_high, se_ols, intercept,
    r2, n_points, n_design, n_censored, dropped_design, window, method."""
    if y not in df:
        raise ValueError(f"y={y!r} is invalid: not a column (columns: {', '.join(df.columns)})")
    work = df.assign(_x=scale(df, x))
    rows = []
    groups = work.groupby(list(by), dropna=False, sort=True) if by else [((), work)]
    for k, (key, sub) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        fit = fit_points(sub["_x"].to_numpy(), sub[y].to_numpy(), group=dict(zip(by, key, strict=True)),
                         x=x, y=y, window=window, n_boot=n_boot, level=level,
                         rng=np.random.default_rng([seed, k]))
        rows.append(fit.row())
    return pd.DataFrame(rows)


def envelope_fit(xv: np.ndarray, combo: np.ndarray, rep: np.ndarray, yv: np.ndarray, *,
                 group: dict | None = None, x: str = "x", y: str = "y",
                 window: tuple[float, float] | None = None, n_boot: int = N_BOOT,
                 level: float = LEVEL, rng: np.random.Generator | None = None,
                 combo_labels: Sequence[Any] | None = None) -> ExponentFit:
    """Tuned envelope: at each design point x, the smallest median of y over knob settings
    (`combo` ids), then the slope of log(envelope) on log x. The bootstrap resamples repetition
    ids within each design point (the same ids for every knob setting: seeds are paired) and
    takes the minimum again, so the CI includes the selection. NaN y (censored) counts as inf."""
    rng = rng if rng is not None else np.random.default_rng(0)
    xv, yv = np.asarray(xv, float), np.where(np.isfinite(yv), np.asarray(yv, float), np.inf)
    combo, rep = np.asarray(combo), np.asarray(rep)
    if window is not None:
        keep = (xv >= window[0] * (1 - 1e-12)) & (xv <= window[1] * (1 + 1e-12))
        xv, yv, combo, rep = xv[keep], yv[keep], combo[keep], rep[keep]
    ux = np.unique(xv)
    ucombo = np.unique(combo)
    ureps = np.unique(rep)
    cube = np.full((len(ux), len(ucombo), len(ureps)), np.nan)
    cube[np.searchsorted(ux, xv), np.searchsorted(ucombo, combo), np.searchsorted(ureps, rep)] = yv
    env, best = _envelope(cube)
    finite = np.isfinite(env) & (env > 0)
    censored = int(np.sum(np.isinf(cube)))
    chosen_ids = [ucombo[b] for b in best[finite]]
    chosen = {f"{u:g}": (combo_labels[c] if combo_labels is not None else c)
              for u, c in zip(ux[finite], chosen_ids, strict=True)}
    if finite.sum() < 2:
        return ExponentFit(group=group or {}, x=x, y=y, exponent=math.nan, ci_low=math.nan,
                           ci_high=math.nan, se_ols=math.nan, intercept=math.nan, r2=math.nan,
                           n_points=int(finite.sum()), n_design=int(finite.sum()),
                           n_censored=censored, dropped_design=int((~finite).sum()), window=window,
                           method="envelope-hd-median", n_boot=0, chosen=chosen)
    lx, ly = np.log(ux[finite]), np.log(env[finite])
    slope, intercept, r2, se = _ols(lx, ly)
    cube_f = cube[finite]
    m = cube_f.shape[2]
    boot = np.empty(n_boot)
    for start in range(0, n_boot, 256):  # blocks bound the memory of (B, D, C, m)
        stop = min(n_boot, start + 256)
        ids = rng.integers(0, m, size=(stop - start, cube_f.shape[0], 1, m))
        res = np.take_along_axis(cube_f[None], ids, axis=3)
        e, _ = _envelope(res)
        ok = np.all(np.isfinite(e) & (e > 0), axis=1)
        with np.errstate(all="ignore"):
            sl = _slopes(lx, np.log(np.where(e > 0, e, 1.0)))
        boot[start:stop] = np.where(ok, sl, np.nan)
    lo, hi = _percentile_ci(boot, level)
    return ExponentFit(group=group or {}, x=x, y=y, exponent=slope, ci_low=lo, ci_high=hi,
                       se_ols=se, intercept=intercept, r2=r2, n_points=int(np.isfinite(cube_f).sum()),
                       n_design=int(finite.sum()), n_censored=censored,
                       dropped_design=int((~finite).sum()), window=window, method="envelope-hd-median",
                       n_boot=n_boot, chosen=chosen, x_design=tuple(ux[finite].tolist()),
                       y_design=tuple(env[finite].tolist()))


def hd_median(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """Harrell-Davis median along `axis`: a Beta((m+1)/2, (m+1)/2)-weighted average of the
    order statistics. Smooth in the data, unlike the sample median, so its bootstrap
    distribution is not lumpy (the sample median of 5-20 seeds takes few distinct values).
    Where a slice holds inf (censored runs) the sample median is returned instead: inf only
    when at least half the runs are censored."""
    from scipy.special import betainc

    v = np.sort(np.moveaxis(values, axis, -1), axis=-1)
    m = v.shape[-1]
    a = (m + 1) / 2
    w = np.diff(betainc(a, a, np.arange(m + 1) / m))
    has_inf = np.isinf(v).any(axis=-1)
    finite_v = np.where(np.isinf(v), 0.0, v)
    hd = finite_v @ w
    if has_inf.any():
        hd = np.where(has_inf, np.median(v, axis=-1), hd)
    return hd


def _envelope(cube: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Min over knob settings (axis -2) of the median over repetitions (axis -1); settings
    with no run are skipped. The median is Harrell-Davis's (see hd_median)."""
    with np.errstate(all="ignore"):
        if np.isnan(cube).any():  # ragged: a knob setting missing some repetitions
            med = np.nanmedian(cube, axis=-1)
        else:
            med = hd_median(cube, axis=-1)
    med = np.where(np.isnan(med), np.inf, med)
    best = np.argmin(med, axis=-1)
    return np.take_along_axis(med, best[..., None], axis=-1)[..., 0], best


@dataclass(frozen=True)
class TwoTermFit:
    """y = a x^p + b n^{-1/3} (the power law plus the non-private floor; README, the protocol, item 3)."""

    p: float
    ci_low: float
    ci_high: float
    a: float
    b: float
    n_points: int
    n_boot: int
    converged: bool


_TWO_TERM_BOUNDS = ([-50, 0.01, -50], [50, 3.0, 50])


def _two_term_solve(lx: np.ndarray, ln: np.ndarray, ly: np.ndarray, q: float = 1 / 3,
                    starts: Sequence[np.ndarray] | None = None) -> tuple[np.ndarray, bool]:
    """Robust least squares of log y = logaddexp(A + p log x, B - q log n) from each start
    (default: six spread starts), the best kept. The Jacobian is analytic: with w the share
    of the first term, d resid / d(A, p, B) = -(w, w log x, 1 - w)."""
    def resid(theta: np.ndarray) -> np.ndarray:
        return ly - np.logaddexp(theta[0] + theta[1] * lx, theta[2] - q * ln)

    def jac(theta: np.ndarray) -> np.ndarray:
        u1, u2 = theta[0] + theta[1] * lx, theta[2] - q * ln
        w = np.exp(u1 - np.logaddexp(u1, u2))
        return -np.stack([w, w * lx, 1.0 - w], axis=1)

    if starts is None:
        base = float(np.median(ly))
        starts = [np.array([base - p0 * float(np.median(lx)), p0, base + q * float(np.median(ln))
                            + b_off]) for p0 in (0.25, 0.5, 1.0) for b_off in (-3.0, 0.0)]
    best, best_cost = None, math.inf
    for theta0 in starts:
        theta0 = np.clip(theta0, np.array(_TWO_TERM_BOUNDS[0]) + 1e-9,
                         np.array(_TWO_TERM_BOUNDS[1]) - 1e-9)
        sol = least_squares(resid, theta0, jac=jac, loss="soft_l1", f_scale=0.3,
                            bounds=_TWO_TERM_BOUNDS)
        if sol.cost < best_cost:
            best, best_cost = sol, sol.cost
    return best.x, bool(best.success)


def _two_term_starts(lx: np.ndarray, ln: np.ndarray, ly: np.ndarray, q: float) -> np.ndarray:
    """The six spread starts of `_two_term_solve`, per row of (B, N) data: shape (B, 6, 3)."""
    base, mx, mn = (np.median(v, axis=1) for v in (ly, lx, ln))
    out = [np.stack([base - p0 * mx, np.full_like(base, p0), base + q * mn + b_off], axis=1)
           for p0 in (0.25, 0.5, 1.0) for b_off in (-3.0, 0.0)]
    return np.stack(out, axis=1)


def _two_term_solve_batch(lx: np.ndarray, ln: np.ndarray, ly: np.ndarray, q: float = 1 / 3,
                          f_scale: float = 0.3, iters: int = 200) -> np.ndarray:
    """`_two_term_solve` for B data sets at once (rows of (B, N) arrays): the same soft-L1
    objective, bounds and six starts, minimized by a vectorized Levenberg-Marquardt on the
    robust-weighted normal equations (iteratively reweighted: soft-L1's weight 1/sqrt(1 + z),
    z = (r / f)^2), steps projected onto the bounds; per row, the start with the lowest
    objective wins. Returns (B, 3) parameters (log a, p, log b)."""
    B = lx.shape[0]
    if B == 0:
        return np.empty((0, 3))
    lo, hi = np.array(_TWO_TERM_BOUNDS[0], float), np.array(_TWO_TERM_BOUNDS[1], float)
    th = np.clip(_two_term_starts(lx, ln, ly, q), lo + 1e-9, hi - 1e-9).reshape(-1, 3)
    X = np.repeat(lx, 6, axis=0)
    L = np.repeat(ln, 6, axis=0)
    Y = np.repeat(ly, 6, axis=0)

    def cost(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        u1 = t[:, :1] + t[:, 1:2] * X
        u2 = t[:, 2:3] - q * L
        m = np.logaddexp(u1, u2)
        r = Y - m
        z = (r / f_scale) ** 2
        return (f_scale**2 * (np.sqrt(1 + z) - 1)).sum(axis=1), r, np.exp(u1 - m)

    c, r, w = cost(th)
    lam = np.full(len(th), 1e-3)
    eye = np.eye(3)
    for _ in range(iters):
        J = np.stack([w, w * X, 1.0 - w], axis=2)  # d model / d theta (resid = Y - model)
        rw = 1.0 / np.sqrt(1 + (r / f_scale) ** 2)
        H = np.einsum("bn,bni,bnj->bij", rw, J, J)
        g = np.einsum("bn,bni,bn->bi", rw, J, r)
        diag = np.einsum("bii->bi", H)[:, :, None] * eye
        step = np.linalg.solve(H + lam[:, None, None] * (diag + 1e-12 * eye), g[:, :, None])[:, :, 0]
        new = np.clip(th + step, lo, hi)
        c_new, r_new, w_new = cost(new)
        better = c_new < c
        gain = np.where(better, c - c_new, 0.0)
        th = np.where(better[:, None], new, th)
        c, r, w = np.where(better, c_new, c), np.where(better[:, None], r_new, r), \
            np.where(better[:, None], w_new, w)
        lam = np.where(better, lam / 3, np.minimum(lam * 4, 1e12))
        if np.all((gain <= 1e-12 * (1 + c)) & ~better | (better & (gain <= 1e-12 * (1 + c)))):
            break
    best = np.argmin(c.reshape(B, 6), axis=1)
    return th.reshape(B, 6, 3)[np.arange(B), best]


def two_term_fit(x: np.ndarray, n: np.ndarray, y: np.ndarray, *, n_boot: int = 300,
                 level: float = LEVEL, rng: np.random.Generator | None = None,
                 floor_exponent: float = 1 / 3) -> TwoTermFit:
    """Fit y = a x^p + b n^{-q} (q = `floor_exponent`: 1/3 for the SOSP claims, 1/2 for the
    convex ones) by robust least squares on log y (log-sum-exp of the two terms, soft-L1 loss,
    six starting points); CI on p by resampling repetitions within each design point (x, n).
    Every bootstrap replicate searches the same six starts as the full fit (warm-starting
    replicates from the full fit alone misses the second mode a replicate can land in: on a
    54-cell store it narrowed a CI from [0.07, 0.59] to [0.44, 0.59]); the replicates are
    solved all at once by `_two_term_solve_batch` (the same objective, tested against
    scipy's least_squares replicate by replicate), ~10x faster than one solve each."""
    rng = rng if rng is not None else np.random.default_rng(0)
    x, n, y = (np.asarray(v, float) for v in (x, n, y))
    ok = np.isfinite(y) & (y > 0)
    x, n, y = x[ok], n[ok], y[ok]
    theta, conv = _two_term_solve(np.log(x), np.log(n), np.log(y), floor_exponent)
    keys = np.stack([x, n], axis=1)
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.ravel()
    members = [np.flatnonzero(inv == g) for g in range(inv.max() + 1)]
    picks = np.stack([np.concatenate([mem[rng.integers(0, len(mem), len(mem))] for mem in members])
                      for _ in range(n_boot)]) if n_boot else np.empty((0, len(y)), int)
    lx, ln, ly = np.log(x), np.log(n), np.log(y)
    ps = _two_term_solve_batch(lx[picks], ln[picks], ly[picks], floor_exponent)[:, 1]
    lo, hi = _percentile_ci(ps, level)
    return TwoTermFit(p=float(theta[1]), ci_low=lo, ci_high=hi, a=float(math.exp(theta[0])),
                      b=float(math.exp(theta[2])), n_points=len(y), n_boot=n_boot, converged=conv)


@dataclass(frozen=True)
class PairedDifference:
    """log y_A - log y_B on paired seeds: per design point mean with CI, and its slope."""

    x_design: tuple[float, ...]
    mean: tuple[float, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]
    n_pairs: tuple[int, ...]
    slope: float
    slope_ci_low: float
    slope_ci_high: float
    #: Where the fitted line of the difference crosses 0 (A and B need the same y), with a
    #: bootstrap CI; NaN when the slope's CI contains 0 (no crossing can be located).
    #: `crossover_where`: "inside" the design range, "below" / "above" it (an extrapolation
    #: of the line), or "none".
    crossover: float = math.nan
    crossover_ci_low: float = math.nan
    crossover_ci_high: float = math.nan
    crossover_where: str = "none"


def _crossover(lx: np.ndarray, means: np.ndarray, boot_means: np.ndarray, slope: float,
               s_lo: float, s_hi: float, level: float) -> tuple[float, float, float, str]:
    """x where c + s log x = 0 for the OLS line through the design-point means, and its
    percentile CI from the same bootstrap replicates (replicates with slope of the other sign
    have no crossing of the same kind and count as beyond either end)."""
    if not (math.isfinite(s_lo) and math.isfinite(s_hi)) or s_lo <= 0 <= s_hi:
        return math.nan, math.nan, math.nan, "none"
    def root(m: np.ndarray, s: np.ndarray) -> np.ndarray:
        center = m.mean(axis=-1)  # the difference at the mean log x
        with np.errstate(divide="ignore", invalid="ignore"):
            r = lx.mean() - center / s
        # A replicate whose slope has the other sign never crosses this way: put its crossing
        # beyond the end the measured line points to.
        return np.where(np.sign(s) == np.sign(slope), r, -np.sign(slope) * np.sign(center) * np.inf)

    lroot = float(root(means, np.array(slope)))
    boot = root(boot_means, _slopes(lx, boot_means))
    a = (1 - level) / 2
    lo, hi = np.quantile(np.nan_to_num(boot, nan=np.inf), [a, 1 - a])
    where = "inside" if lx.min() <= lroot <= lx.max() else ("below" if lroot < lx.min() else "above")
    return float(np.exp(lroot)), float(np.exp(lo)), float(np.exp(hi)), where


def paired_difference(xv: np.ndarray, rep: np.ndarray, ya: np.ndarray, yb: np.ndarray, *,
                      n_boot: int = N_BOOT, level: float = LEVEL,
                      rng: np.random.Generator | None = None) -> PairedDifference:
    """Pairs (same x and repetition, hence the same data seed) of y_A and y_B; pairs with a
    censored side are dropped. Resamples pairs within each design point."""
    rng = rng if rng is not None else np.random.default_rng(0)
    xv, ya, yb = np.asarray(xv, float), np.asarray(ya, float), np.asarray(yb, float)
    ok = np.isfinite(ya) & np.isfinite(yb) & (ya > 0) & (yb > 0)
    diff = np.log(ya[ok]) - np.log(yb[ok])
    ux, groups = _design_groups(xv[ok], diff)
    groups = [g for g in groups if len(g)]
    idx = _resample_indices([len(g) for g in groups], n_boot, rng)
    boot_means = np.stack([g[i].mean(axis=1) for g, i in zip(groups, idx, strict=True)], axis=1)
    means = np.array([g.mean() for g in groups])
    a = (1 - level) / 2
    lo = np.quantile(boot_means, a, axis=0)
    hi = np.quantile(boot_means, 1 - a, axis=0)
    cross = (math.nan, math.nan, math.nan, "none")
    if len(ux) >= 2:
        lx = np.log(ux)
        slope = float(_slopes(lx, means[None, :])[0])
        s_lo, s_hi = _percentile_ci(_slopes(lx, boot_means), level)
        cross = _crossover(lx, means, boot_means, slope, s_lo, s_hi, level)
    else:
        slope, s_lo, s_hi = math.nan, math.nan, math.nan
    return PairedDifference(x_design=tuple(ux.tolist()), mean=tuple(means.tolist()),
                            ci_low=tuple(lo.tolist()), ci_high=tuple(hi.tolist()),
                            n_pairs=tuple(len(g) for g in groups), slope=slope,
                            slope_ci_low=s_lo, slope_ci_high=s_hi, crossover=cross[0],
                            crossover_ci_low=cross[1], crossover_ci_high=cross[2],
                            crossover_where=cross[3])


def verdict(fit: ExponentFit | dict, predicted: float | None, view: str = "error",
            x: str | None = None, max_width: float | None = None) -> str:
    """consistent (prediction inside the CI), faster / slower than claimed (CI entirely on the
    favourable / unfavourable side, see FAVOURABLE), or inconclusive (no prediction, no CI,
    or a CI wider than `max_width`, by default MAX_CI_WIDTH[view])."""
    f = fit if isinstance(fit, dict) else asdict(fit)
    lo, hi = f["ci_low"], f["ci_high"]
    xname = x or f["x"]
    width = MAX_CI_WIDTH.get(view, math.inf) if max_width is None else max_width
    if predicted is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    if hi - lo > width:
        return "inconclusive"
    if lo <= predicted <= hi:
        return "consistent"
    above = lo > predicted
    sign = FAVOURABLE.get((view, xname))
    if sign is None:
        raise ValueError(f"(view, x)=({view!r}, {xname!r}) is invalid: no favourable direction "
                         f"is defined; allowed are {sorted(FAVOURABLE)}")
    return "faster than claimed" if (above == (sign > 0)) else "slower than claimed"
