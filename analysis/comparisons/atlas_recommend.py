"""The atlas's recommendation line (issue 45, point 3): "at n, d, eps (and a target), run X: its
margin over the runner-up with its interval, measured or extrapolated, and the cells it rests
on", read from the atlas's long table (`analysis.comparisons.atlas.atlas_table` or its CSV).

* **measured**: the requested (d, eps, x) is a design point two or more algorithms measured
  (x = the target in the samples-to-target view, n in the error view); the answer is that
  point's reading, margin and paired interval (`analysis.comparisons.atlas.points_table`).
* **extrapolated**: otherwise. In the nearest measured setting (d, eps; distance in log d and
  log eps over the keys given) every algorithm's measured curve (its medians against x) gets a
  log-log least-squares line, evaluated at the requested x. The interval is from redrawing each
  median on the log scale with the spread of its own 95% interval (plus the line's residual
  spread when it has three or more points) and refitting; the margin's draws divide the two
  fits' draws (independent, so "unpaired, from the fits"). A change of d or eps against the
  nearest setting is not modelled: the line says so. Why this much and no more: the fits are
  what the measurements support without a claim's constants; a model across d and eps is the
  sensitivity study's (issue 43).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.comparisons.atlas import (
    CENSORED_RIVAL,
    ERROR,
    NOT_MEASURED,
    SAMPLES,
    WINNER,
    num3,
    pairing_text,
    points_table,
)
from analysis.verdict_engine.rates import LEVEL, N_BOOT

AT_KEYS = ("n", "d", "eps")
EXAMPLE = {"n": "1e8", "d": "10", "eps": "0.1"}


def parse_at(text: str) -> dict[str, float]:
    """`n=1e8,d=10,eps=0.1` as {"n": 1e8, "d": 10.0, "eps": 0.1}; ValueError naming the key, the
    value and what is allowed."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"--at {part!r} is invalid: must be KEY=VALUE pairs with KEY one of "
                             f"{', '.join(AT_KEYS)} (e.g. --at n=1e8,d=10,eps=0.1)")
        key, value = (s.strip() for s in part.split("=", 1))
        if key not in AT_KEYS:
            raise ValueError(f"--at key {key!r} (in {part!r}) is invalid: allowed keys are "
                             f"{', '.join(AT_KEYS)}")
        try:
            v = float(value)
        except ValueError:
            v = math.nan
        if not (v > 0 and (math.isfinite(v) or key == "eps")):
            raise ValueError(f"--at {key}={value!r} is invalid: must be a number > 0"
                             + (" (or inf)" if key == "eps" else "") + f", e.g. {key}={EXAMPLE[key]}")
        out[key] = v
    if not out:
        raise ValueError(f"--at {text!r} is invalid: give KEY=VALUE pairs, KEY one of "
                         f"{', '.join(AT_KEYS)}")
    return out


@dataclass
class Recommendation:
    """The answer for one (view, metric, problem, instance)."""

    view: str
    metric: str
    problem: str
    instance: str
    where: str  # the requested point, as text
    status: str  # "measured", "extrapolated" or "cannot extrapolate"
    reading: str = ""
    winner: str = ""
    runner_up: str = ""
    margin: float = math.nan
    margin_low: float = math.nan
    margin_high: float = math.nan
    pairing: str = ""
    how: str = ""  # how an extrapolation was made
    rests_on: list[str] = field(default_factory=list)
    budget: str = ""  # samples view with n given: whether n covers the winner's samples
    winner_value: float = math.nan  # the winner's median (measured) or fitted value

    def lines(self) -> list[str]:
        """The recommendation line and the lines of the cells it rests on."""
        inst = f" {self.instance}" if self.instance else ""
        head = f"{self.metric} on {self.problem}{inst} ({self.view}) at {self.where}: "
        if not self.winner and not self.runner_up:
            out = [head + f"{self.reading or 'no recommendation'} ({self.status}"
                   + (f": {self.how}" if self.how else "") + ")"]
        else:
            what = "fewer samples" if self.view == SAMPLES else "lower error"
            verdict = f"run {self.winner}" if self.reading == WINNER else \
                f"{self.reading} (best median: {self.winner})"
            if self.pairing == CENSORED_RIVAL:  # the margin is a lower bound, or nothing
                margin = (f"more than {num3(self.margin_low)}x {what} than {self.runner_up} "
                          "(censored: it never reached the target)" if self.reading == WINNER
                          else f"{self.runner_up} censored below the best median: no margin")
            else:
                margin = (f"{num3(self.margin)}x [{num3(self.margin_low)}, "
                          f"{num3(self.margin_high)}] {what} than {self.runner_up} "
                          f"({pairing_text(self.pairing)})")
            out = [head + f"{verdict}, {margin}; "
                   + self.status + (f": {self.how}" if self.how else "")]
        if self.budget:
            out.append(f"  {self.budget}")
        out += [f"  rests on: {c}" for c in self.rests_on]
        return out


def _close(a: float, b: float) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-9)


def _cell_text(r: pd.Series) -> str:
    x = "target" if r["view"] == SAMPLES else "n"
    src = f"; {r['source']}" if r.get("source", "") else ""
    return (f"{r['algorithm']} at d={r['d']:g} eps={r['eps']:g} {x}={r['x']:g}: median "
            f"{num3(r['value'])} [{num3(r['ci_low'])}, {num3(r['ci_high'])}] over {int(r['reps'])} "
            f"seeds{src}")


def _curve_text(alg: str, rows: pd.DataFrame) -> str:
    """One algorithm's measured curve a fit rests on, one line."""
    x = "target" if rows["view"].iloc[0] == SAMPLES else "n"
    r0 = rows.iloc[0]
    pts = ", ".join(f"{x}={r['x']:g}: {num3(r['value'])} [{num3(r['ci_low'])}, {num3(r['ci_high'])}]"
                    f" ({int(r['reps'])} seeds)" for _, r in rows.iterrows())
    src = f"; {r0['source']}" if r0.get("source", "") else ""
    return f"{alg} at d={r0['d']:g} eps={r0['eps']:g}: {pts}{src}"


def loglog_fit(x: np.ndarray, y: np.ndarray, lo: np.ndarray, hi: np.ndarray, x0: float,
               n_draw: int = N_BOOT, rng: np.random.Generator | None = None
               ) -> tuple[float, np.ndarray, float, np.ndarray]:
    """Least-squares line of log y on log x through the medians y (intervals [lo, hi]),
    evaluated at x0: (prediction, its draws, slope, the slope's draws). Draws perturb each log
    median with the sd its 95% interval implies (plus the residual sd with 3+ points)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    lx, ly = np.log(x), np.log(y)
    with np.errstate(all="ignore"):
        sd = (np.log(hi) - np.log(lo)) / (2 * 1.959964)
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, 0.0)
    b, a = np.polyfit(lx, ly, 1)
    if len(lx) >= 3:
        res = ly - (a + b * lx)
        sd = np.sqrt(sd ** 2 + float(np.sum(res ** 2)) / (len(lx) - 2))
    draws = ly + rng.standard_normal((n_draw, len(lx))) * sd
    mx = lx.mean()
    slopes = ((lx - mx) * (draws - draws.mean(axis=1, keepdims=True))).sum(axis=1) / \
        ((lx - mx) ** 2).sum()
    inter = draws.mean(axis=1) - slopes * mx
    return float(math.exp(a + b * math.log(x0))), np.exp(inter + slopes * math.log(x0)), float(b), slopes


def _pct(draws: np.ndarray) -> tuple[float, float]:
    a = (1 - LEVEL) / 2
    d = draws[np.isfinite(draws)]
    if not len(d):
        return math.nan, math.nan
    lo, hi = np.quantile(d, [a, 1 - a])
    return float(lo), float(hi)


def _fittable(g: pd.DataFrame) -> np.ndarray:
    """Medians a fit may use: finite, > 0 and not a bound (a target reached at the smallest n
    reads n* <= n_min: the `at_most` column, `Row.at_most`; a row of an older atlas CSV without
    it is read off `analysis.comparisons.compare`'s flag text)."""
    typed = g["at_most"] if "at_most" in g else pd.Series(None, index=g.index, dtype=object)
    legacy = g["flags"].astype(str).str.contains("n* <=", regex=False)
    at_most = np.array([bool(t) if isinstance(t, (bool, np.bool_)) else bool(old)
                        for t, old in zip(typed, legacy, strict=True)], dtype=bool)
    return (np.isfinite(g["value"]) & (g["value"] > 0)).to_numpy(bool) & ~at_most


def _log_gap(a: float, b: float) -> float:
    if math.isfinite(a) and math.isfinite(b):
        return abs(math.log(a / b))
    return 0.0 if a == b else math.inf


def _nearest(g: pd.DataFrame, at: dict[str, float]) -> tuple[float, float] | None:
    """The measured (d, eps) nearest `at` (log distance over the keys given) where two or more
    algorithms have two or more finite medians to fit."""
    best, best_dist = None, math.inf
    for (d, eps), s in g.groupby(["d", "eps"], sort=True):
        ok = s[_fittable(s)]
        if (ok.groupby("algorithm")["x"].nunique() >= 2).sum() < 2:
            continue
        dist = sum(_log_gap(v, at[k]) for k, v in (("d", d), ("eps", eps)) if k in at)
        if dist < best_dist:
            best, best_dist = (float(d), float(eps)), dist
    return best


def _extrapolate(rec: Recommendation, g: pd.DataFrame, at: dict[str, float], x0: float,
                 n_boot: int, seed: int) -> Recommendation:
    near = _nearest(g, at)
    xn = "target" if rec.view == SAMPLES else "n"
    yn = "n*" if rec.view == SAMPLES else rec.metric
    if near is None:
        rec.status = "cannot extrapolate"
        rec.reading = NOT_MEASURED
        rec.how = (f"no measured setting has two algorithms with two or more {xn} values to fit")
        return rec
    d, eps = near
    s = g[np.isclose(g["d"], d) & np.isclose(g["eps"], eps) & _fittable(g)]
    rng = np.random.default_rng(seed)
    fits = {}
    for alg, ga in s.groupby("algorithm", sort=True):
        ga = ga.sort_values("x")
        if ga["x"].nunique() < 2:
            continue
        pred, draws, slope, sdraws = loglog_fit(ga["x"].to_numpy(float), ga["value"].to_numpy(float),
                                                ga["ci_low"].to_numpy(float),
                                                ga["ci_high"].to_numpy(float), x0, n_boot, rng)
        fits[alg] = (pred, draws, slope, _pct(sdraws), ga)
    order = sorted(fits, key=lambda a: (fits[a][0], a))
    win, run = order[0], order[1]
    ratio_draws = fits[run][1] / fits[win][1]
    rec.winner, rec.runner_up, rec.winner_value = win, run, fits[win][0]
    rec.margin = fits[run][0] / fits[win][0]
    rec.margin_low, rec.margin_high = _pct(ratio_draws)
    rec.pairing = "unpaired, from the fits"
    rec.reading = WINNER if rec.margin_low > 1 else "no significant winner"
    rec.status = "extrapolated"
    xs = sorted(set(s["x"]))
    inside = xs[0] <= x0 <= xs[-1]
    moved = [f"{k}={at[k]:g}" for k, v in (("d", d), ("eps", eps)) if k in at and not _close(at[k], v)]
    laws = "; ".join(f"{a} {yn} ~ {xn}^{fits[a][2]:.3g} [{num3(fits[a][3][0])}, {num3(fits[a][3][1])}]"
                     f" -> {num3(fits[a][0])} [{num3(_pct(fits[a][1])[0])}, {num3(_pct(fits[a][1])[1])}]"
                     for a in order)
    rec.how = (f"per-algorithm log-log fits of {yn} against {xn} over the measured {xn} "
               f"{xs[0]:g}..{xs[-1]:g} ({'inside' if inside else 'beyond'} that range) at d={d:g}, "
               f"eps={eps:g}, the nearest measured setting"
               + (f" ({', '.join(moved)} requested: the fits do not model that change)" if moved else "")
               + f"; fits with 95% intervals: {laws}")
    rec.rests_on = [_curve_text(a, fits[a][4]) for a in order]
    return rec


def recommend(table: pd.DataFrame, at: dict[str, float], target: float | None = None,
              n_boot: int = N_BOOT, seed: int = 0) -> list[Recommendation]:
    """One recommendation per (metric, problem, instance) of `table` (already filtered) in the
    view the request names: samples to `target` when given (n, if given, is checked against
    the winner's samples), else the error at n. ValueError naming what is missing."""
    view = SAMPLES if target is not None else ERROR
    if view == ERROR and "n" not in at:
        raise ValueError("--at needs n=VALUE when no --target is given (the error view reads the "
                         "error at n); or give --target for the samples-to-target view")
    x0 = float(target) if target is not None else at["n"]
    sub = table[table["view"] == view]
    if not len(sub):
        held = ", ".join(sorted(set(table["view"]))) or "nothing"
        raise ValueError(f"{'--target' if view == SAMPLES else '--at n'}: the atlas holds no "
                         f"{view} comparison for this selection (it holds: {held})")
    points = points_table(sub)
    where = ", ".join(f"{k}={at[k]:g}" for k in AT_KEYS if k in at) + \
        (f", target={target:g}" if target is not None else "")
    out = []
    for i, ((metric, problem, instance), g) in enumerate(
            sub.groupby(["metric", "problem", "instance"], sort=True)):
        rec = Recommendation(view, metric, problem, instance, where, "measured")
        p = points[(points["metric"] == metric) & (points["problem"] == problem)
                   & (points["instance"] == instance)]
        hit = p[[(_close(r["x"], x0) and all(_close(r[k], at[k]) for k in ("d", "eps") if k in at))
                 for _, r in p.iterrows()]]
        hit = hit[hit["runner_up"] != ""]
        if len(hit):
            h = hit.iloc[0]
            rec.reading, rec.winner, rec.runner_up = h["reading"], h["best"], h["runner_up"]
            rec.margin, rec.margin_low, rec.margin_high = h["margin"], h["margin_low"], h["margin_high"]
            rec.pairing = h["pairing"]
            if len(hit) > 1:
                rec.how = f"{len(hit)} measured settings match; the first shown (give d and eps)"
            cells = g[np.isclose(g["d"], h["d"]) & np.isclose(g["eps"], h["eps"])
                      & np.isclose(g["x"], h["x"])]
            rec.rests_on = [_cell_text(r) for _, r in cells.iterrows()]
            rec.winner_value = float(cells[cells["algorithm"] == rec.winner]["value"].iloc[0])
        else:
            rec = _extrapolate(rec, g, at, x0, n_boot, seed + i)
        if view == SAMPLES and "n" in at and math.isfinite(rec.winner_value):
            ok = rec.winner_value <= at["n"] * (1 + 1e-9)
            rec.budget = (f"n={at['n']:g} {'covers' if ok else 'is below'} {rec.winner}'s "
                          f"samples to the target ({num3(rec.winner_value)})")
        out.append(rec)
    return out
