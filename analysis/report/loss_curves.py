"""Loss curves of repeated runs: the median excess risk against the step with a 95% CI, after a
step-size choice per method (seed 002's synthetic experiment, Asi, Duchi, Fallah, Javidbakht,
Talwar 2021, arXiv 2106.13756, Section 6.1 and Figure 1).

The seed's protocol: tune the initial step size over a grid, then run each method 30 times and
plot the median loss against the iteration with 95% confidence intervals. Here a method is an
algorithm with its fixed parameters (`config_label`: PDP-SGD at k = 20 and at k = 50 are two
methods); the tuned knob (`alpha` by default) is chosen per method and design point (problem,
n, d, delta, eps) by the smallest median final excess risk over the repetitions
(`tuned_configs`); the curves and the final-loss table use every repetition of that choice, so
their CIs are conditional on a choice made on the same runs; the table's split check
(`_split_check`: choose on the first half of the seeds, report the median on the other half)
measures how much that selection flatters a method.
The tuning reads the exact population excess risk: non-private tuning, as in the seed. The CI
of a median is the distribution-free one from order statistics (`scipy.stats.quantile_test`),
so no normality is assumed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import quantile_test

from analysis.declarations import StoreData

#: Fixed parameters that do not name a method (storage and cost knobs).
NOT_IN_LABEL = ("max_iterate_floats", "public_m", "refresh")


def config_label(algorithm: str, params: dict[str, Any] | None, tuned: str = "alpha") -> str:
    """The method's name: the algorithm and the parameters that define it (all but the tuned
    knob and the storage / cost knobs; another grid knob makes one method per value)."""
    keep = {k: v for k, v in sorted((params or {}).items()) if k not in NOT_IN_LABEL and k != tuned}
    return algorithm + ("" if not keep else " (" + ", ".join(f"{k} = {v:g}" if isinstance(
        v, (int, float)) else f"{k} = {v}" for k, v in keep.items()) + ")")


def median_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """(median, lower, upper): the median's distribution-free CI (order statistics)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return (np.nan, np.nan, np.nan)
    med = float(np.median(v))
    if len(v) < 2:
        return (med, np.nan, np.nan)
    ci = quantile_test(v, q=med, p=0.5).confidence_interval(level)
    return (med, float(ci.low), float(ci.high))


#: One design point: a method is tuned and compared within one of these.
POINT = ["problem", "n", "d", "delta", "eps"]


def _with_labels(cells: pd.DataFrame, knob: str = "alpha") -> pd.DataFrame:
    """The finished cells with a `method` column and the tuned knob's value (NaN for cells not
    tuned over it)."""
    ok = cells[(cells["status"] == "ok") & cells["excess_last"].notna()].copy()
    ok["method"] = [config_label(a, p, knob) for a, p in zip(ok["algorithm"], ok["params"], strict=True)]
    ok[knob] = [float((p or {}).get(knob, np.nan)) if knob in (k or ()) else np.nan
                for p, k in zip(ok["params"], ok["knobs"], strict=True)]
    return ok


def tuned_configs(cells: pd.DataFrame, knob: str = "alpha", y: str = "excess_last") -> pd.DataFrame:
    """Per (problem, method, eps): the knob value with the smallest median `y` over the
    repetitions (ties: the smaller value), with that median and how many runs it has. Cells
    without the knob (a method run at one setting) keep their single setting."""
    ok = _with_labels(cells, knob)
    if ok.empty:
        return pd.DataFrame(columns=[*POINT, "method", knob, "median", "runs"])
    rows = []
    for key, g in ok.groupby([*POINT, "method"], dropna=False):
        meds = g.groupby(knob, dropna=False)[y].agg(["median", "size"]).reset_index()
        best = meds.sort_values(["median", knob]).iloc[0]
        rows.append({**dict(zip([*POINT, "method"], key, strict=True)), knob: best[knob],
                     "median": float(best["median"]), "runs": int(best["size"]),
                     "algorithm": g["algorithm"].iloc[0]})
    return pd.DataFrame(rows).sort_values(["problem", "eps", "median"]).reset_index(drop=True)


def _cells_at(ok: pd.DataFrame, chosen: pd.DataFrame, knob: str) -> pd.DataFrame:
    """The labelled cells `ok` at the knob value `chosen` names for their method and point."""
    merged = ok.merge(chosen[[*POINT, "method", knob]], on=[*POINT, "method", knob])
    # a method without the knob (NaN) merges on NaN == NaN only through this path
    nan_knob = ok[ok[knob].isna()]
    return pd.concat([merged, nan_knob], ignore_index=True).drop_duplicates("key")


def _chosen_cells(cells: pd.DataFrame, knob: str) -> pd.DataFrame:
    ok = _with_labels(cells, knob)
    return ok if ok.empty else _cells_at(ok, tuned_configs(cells, knob), knob)


def _split_check(cells: pd.DataFrame, knob: str) -> dict[tuple, dict[str, float]]:
    """The selection's own check: the knob chosen on the first half of the repetitions and the
    median final excess of that choice on the other half (fresh seeds, so no selection bias)."""
    ok = _with_labels(cells, knob)
    if ok.empty or ok["rep"].nunique() < 4:
        return {}
    half = ok["rep"] < (ok["rep"].max() + 1) // 2
    chosen = tuned_configs(ok[half], knob)
    held = _cells_at(ok[~half], chosen, knob)
    medians = held.groupby([*POINT, "method"])["excess_last"].median()
    return {tuple(c[k] for k in [*POINT, "method"]): {
        f"{knob}_split": c[knob],
        "median_split": float(medians.get(tuple(c[k] for k in [*POINT, "method"]), np.nan))}
        for _, c in chosen.iterrows()}


def final_loss_table(cells: pd.DataFrame, knob: str = "alpha", level: float = 0.95) -> pd.DataFrame:
    """Per (problem, eps, method) at the chosen knob: the median final excess risk with its
    distribution-free CI, the best run's and the runs' count; best method first per eps."""
    ch = _chosen_cells(cells, knob)
    split = _split_check(cells, knob)
    rows = []
    for key, g in ch.groupby([*POINT, "method"]):
        med, lo, hi = median_ci(g["excess_last"].to_numpy(), level)
        row = dict(zip([*POINT, "method"], key, strict=True))
        rows.append({**row, knob: g[knob].iloc[0], "runs": len(g), "median": med, "ci_low": lo,
                     "ci_high": hi, **split.get(key, {})})
    out = pd.DataFrame(rows)
    return out.sort_values(["problem", "eps", "median"]).reset_index(drop=True) if len(out) else out


def loss_curves(data: StoreData, knob: str = "alpha", level: float = 0.95,
                points: int = 60) -> pd.DataFrame:
    """Per (problem, eps, method) at the chosen knob, on `points` log-spaced steps common to
    its runs: the median excess risk of the output iterate over the repetitions with its CI
    (from the cells' trajectory profiles; runs whose profile has no excess risk are left
    out)."""
    ch = _chosen_cells(data.cells, knob)
    if ch.empty:
        return pd.DataFrame()
    profiles = data.load_curves("trajectory", ch["key"])
    rows = []
    for key, g in ch.groupby([*POINT, "method"]):
        point = dict(zip([*POINT, "method"], key, strict=True))
        runs = []
        for key in g["key"]:
            prof = profiles.get(key) or {}
            if prof.get("excess"):
                runs.append((np.asarray(prof["iterate_step"], float), np.asarray(prof["excess"], float)))
        if not runs:
            continue
        last = min(r[0][-1] for r in runs)
        grid = np.unique(np.concatenate([[0], np.round(np.geomspace(1, max(last, 1), points))]))
        # each run's value at a grid step: its latest stored iterate at or before that step
        # (runs store different steps: an iterate is kept at a fixed stride and whenever the
        # private estimate reaches a new low)
        vals = np.array([e[np.searchsorted(s, grid, side="right") - 1] for s, e in runs])
        for j, step in enumerate(grid):
            med, lo, hi = median_ci(vals[:, j], level)
            rows.append({**point, "step": int(step), "median": med, "ci_low": lo, "ci_high": hi,
                         "runs": len(runs)})
    return pd.DataFrame(rows)
