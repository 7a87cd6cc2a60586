"""The atlas (issue 45): which algorithm wins where, read from the measurements with the evidence.

A practitioner asks "at my n, d and eps, which algorithm should I run, and how sure is that?".
The atlas answers it point by point, on the rows and intervals of `dprates compare`
(`analysis.comparisons.compare`: its rows, its bootstrap over repetitions and its paired ratios are reused
here, not re-implemented). Two views, each a set of *design points*:

* "samples to target": at each (problem, instance, d, eps) and each target the one-pass cells
  were configured for, the samples every algorithm needs to reach it (`compare.build_rows`:
  counted for one-pass methods, the smallest n whose output reaches it for methods on n
  records); the winner needs the fewest. x = the target.
* "error at n": at each (problem, instance, d, eps) and design size n of the untargeted cells,
  the median error of each algorithm on each metric column of `compare.METRIC_COLUMN` it
  stores; the winner has the lowest. x = n (the map draws n eps / sqrt(d)).

Algorithms are compared only within one metric and one instance, never across. At each point
the winner's margin is the runner-up's value over the winner's, with the 95% interval of
`compare.ratio` (paired over seeds where the rows pair: same base seed and data mode;
independent draws otherwise). The point reads "winner" when the interval excludes 1, "no
significant winner" when it covers 1, "not measured" when fewer than two algorithms measured it
(including grid points no store covers: the grid of an instance is the product of its measured
d, eps and x values).

The long table (`atlas_table`, one row per point and algorithm: median, interval, ratio to the
point's best median and its interval; `pairing` "best median" on that row) is what
`reports/atlas.csv` holds (`atlas_csv.write_csv` / `read_csv`); the point table (`points_table`) and
everything drawn from it are recomputed from it, so an atlas read back from its CSV gives the
same answers as the stores. Maps: `analysis.comparisons.atlas_map`;
recommendations: `analysis.comparisons.atlas_recommend`.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.comparisons.compare import (
    COUNTED,
    METRIC_COLUMN,
    Row,
    build_rows,
    interval,
    ratio,
    setting_label,
)
from analysis.verdict_engine.rates import N_BOOT

SAMPLES, ERROR = "samples to target", "error at n"
VIEWS = (SAMPLES, ERROR)
KEY = ["view", "metric", "problem", "instance", "d", "eps", "x"]
#: The long table's columns: the atlas CSV's (`winner` and `reading` are for its reader:
#: `read_csv` recomputes them).
COLUMNS = [*KEY, "algorithm", "read_from", "value", "bound", "at_most", "ci_low", "ci_high", "ratio",
           "ratio_low", "ratio_high", "pairing", "reps", "flags", "source", "winner", "reading"]
#: Columns an older atlas CSV may lack (read as NaN): `bound`, the censored median's lower bound;
#: `at_most`, whether the value is only an upper bound (`Row.at_most`; an older row's is read
#: off its flags by `atlas_recommend`).
OPTIONAL = ("bound", "at_most")
#: The pairing of a winner whose runner-up is censored: the margin is only a lower bound.
CENSORED_RIVAL = "runner-up censored"
#: The reading where the runner-up is censored below the best median: nobody is known to win.
CENSORED_UNDECIDED = "undecided: runner-up censored below the best median"
NOT_MEASURED, NO_WINNER, WINNER = "not measured", "no significant winner", "winner"
#: Seeds each of the two best rows needs before a point names a winner: a bootstrap over one
#: seed gives a point interval ([1.19, 1.19] read "wins" on a one-seed probe), over two only
#: three distinct resamples.
MIN_SEEDS_FOR_WINNER = 3
FEW_SEEDS = f"undecided: fewer than {MIN_SEEDS_FOR_WINNER} seeds"
#: The pairing of a point's reference row: the best median (its ratios are to this row).
BEST = "best median"
#: What a reading of the atlas means (the header of its printed forms and report page).
READING_NOTE = (
    "The atlas: per metric and instance, the algorithm with the best median at each design point "
    "(samples to target: fewest samples; error at n: lowest error) and its margin over the "
    "runner-up (runner-up / winner) with a 95% bootstrap interval over seeds, paired where the "
    "seeds pair. 'winner' where the interval excludes 1, 'no significant winner' where it covers "
    "1, 'not measured' where fewer than two algorithms measured the point.")


def _rtol_in(v: float, values: list[float]) -> bool:
    return any(math.isclose(v, w, rel_tol=1e-9) for w in values)


def _sources(cells: pd.DataFrame) -> str:
    return "; ".join(sorted({Path(str(s)).name for s in cells["store"].dropna()})) \
        if "store" in cells else ""


def _theory(cells: pd.DataFrame, knobs: str) -> pd.DataFrame:
    """Cells at theory knob defaults where an algorithm has such cells (`compare.build_rows`'s
    rule, applied to the error view the same way)."""
    from analysis.points import theory_mask

    if knobs != "theory" or not len(cells):
        return cells
    keep = theory_mask(cells)
    has = cells.assign(_t=keep).groupby("algorithm")["_t"].transform("any").to_numpy(bool)
    return cells[keep | ~has]


def _error_rows(g: pd.DataFrame, col: str, metric: str) -> dict[float, list[Row]]:
    """The error view of one group: per design n, one row per algorithm setting holding its
    error at n per repetition. (A `Row` in the "one pass" view estimates the median of one value
    per repetition, which is exactly the error-at-n estimator, so `interval` and `ratio` apply
    unchanged.)"""
    out: dict[float, list[Row]] = {}
    g = g[g[col].notna()]
    for alg, ga in g.groupby("algorithm", sort=True):
        several = ga["combo"].nunique() > 1
        split = [c for c in ("data", "calibration", "base_seed") if ga[c].nunique() > 1]
        for (combo, data, cal, seed), gc in ga.groupby(["combo", "data", "calibration", "base_seed"],
                                                       sort=True):
            label = setting_label(alg, json.loads(combo), gc["knobs"].iloc[0], several)
            if split:
                parts = {"data": data, "calibration": cal, "base_seed": f"seed {seed}"}
                label += " [" + ", ".join(str(parts[c]) for c in split) + "]"
            for n, gn in gc.groupby("n", sort=True):
                per_rep = gn.groupby("rep")[col].first()
                row = Row(label, alg, "one pass", metric, col, (seed, data), per_rep.index.to_numpy(),
                          per_rep.to_numpy(float)[None, :], target=math.nan)
                row.flags = []
                row.source = _sources(gn)  # type: ignore[attr-defined]
                out.setdefault(float(n), []).append(row)
    return out


def _point(key: dict, rows: list[Row], n_boot: int, rng: np.random.Generator) -> list[dict]:
    """The long-table records of one design point: each row's median and interval, its ratio to
    the best median (the row with the smallest median) with the paired interval."""
    values = [r.estimate() for r in rows]
    order = sorted(range(len(rows)), key=lambda i: (not math.isfinite(values[i]), values[i],
                                                    rows[i].label))
    win = rows[order[0]]
    out = []
    for i in order:
        row = rows[i]
        lo, hi = interval(row, n_boot, rng)
        rec = {**key, "algorithm": row.label, "read_from": row.column, "value": values[i],
               "bound": row.lower_bound(), "at_most": bool(getattr(row, "at_most", False)),
               "ci_low": lo, "ci_high": hi, "ratio": 1.0,
               "ratio_low": 1.0, "ratio_high": 1.0,
               "pairing": BEST, "reps": len(row.reps), "flags": "; ".join(row.flags),
               "source": getattr(row, "source", "")}
        if row is not win:
            r, rlo, rhi, pairing = ratio(row, win, n_boot, rng)
            rec.update(ratio=r, ratio_low=rlo, ratio_high=rhi, pairing=pairing)
        out.append(rec)
    return out


def shared_instance(problem: str, instance: str) -> str:
    """The instance without a per-target parameter (hard_ramp is built per alpha: its instances
    at the targets of one map are one family, as in `analysis.points`)."""
    try:
        from problems import get_problem_class

        per_target = get_problem_class(problem).per_target_param
    except ValueError:  # a plugin problem not loaded here
        return instance
    if not per_target:
        return instance
    params = {k: v for k, v in json.loads(instance or "{}").items() if k != per_target}
    return json.dumps(params, sort_keys=True)


def _one_per_algorithm(rows: list[Row]) -> list[Row]:
    """One row per algorithm at a point: the atlas asks which algorithm wins, so the same
    algorithm from two stores (another base seed, data mode or knob setting at its defaults) is
    not its own rival. Kept: a row measured at the target (a one-pass run's consumed samples)
    before a row read off fixed budgets (the smallest n whose error reaches the target, a
    crossing interpolated on a coarse grid of n, an upper bound for a one-pass method), then the
    row whose seed pairs with the most other algorithms' rows, then the one with the most
    repetitions; its label loses the seed suffix it no longer needs."""
    by_alg: dict[str, list[Row]] = {}
    for r in rows:
        by_alg.setdefault(r.algorithm, []).append(r)
    out = []
    for alg, cands in by_alg.items():
        if len(cands) > 1:
            others = [r.seed for r in rows if r.algorithm != alg]
            cands = sorted(cands, key=lambda r: (r.view not in COUNTED,
                                                 -sum(o == r.seed for o in others), -len(r.reps),
                                                 r.label))
        # one row per algorithm: its name is its label at every point (a suffix naming a knob
        # setting or a store's seed would make one algorithm two colours on a map)
        cands[0].label = alg
        out.append(cands[0])
    return out


def _claimed(algorithm: str) -> set[str]:
    """The metrics an algorithm's claims are on (its default claim metric when it claims
    nothing); every metric of the atlas for an algorithm not registered here (a plugin not
    loaded)."""
    from algorithms import get_algorithm
    from analysis.verdict_engine.predictions import claim_metric

    try:
        return {c.metric for c in get_algorithm(algorithm).claims} or {claim_metric(algorithm)}
    except ValueError:
        return set(METRIC_COLUMN)


def atlas_table(cells: pd.DataFrame, n_boot: int = N_BOOT, knobs: str = "theory",
                seed: int = 0, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """The long table of the atlas from `bench.store.load` cells (a `store` column optional):
    one row per design point and algorithm (see the module docstring), sorted by point. Why
    long: it holds the per-point medians, ratios and intervals every later reading needs, so a
    CSV of it (`write_csv`) stands in for the stores, which are not in the repository.
    `metrics`: the error view's metrics (default: those the group's algorithms claim a rate on,
    so a GLM comparison is not repeated on every column its cells happen to store)."""
    cells = cells[cells["status"] == "ok"].copy()
    if not len(cells):
        return pd.DataFrame(columns=COLUMNS)
    cells["instance"] = [json.dumps(p or {}, sort_keys=True) for p in cells["problem_params"]]
    cells["combo"] = [json.dumps(p or {}, sort_keys=True) for p in cells["params"]]
    recs: list[dict] = []

    def emit(view: str, metric: str, gkey: tuple, x: float, rows: list[Row]) -> None:
        problem, instance, d, eps = gkey
        instance = shared_instance(problem, instance)
        key = {"view": view, "metric": metric, "problem": problem,
               "instance": "" if instance == "{}" else instance, "d": float(d), "eps": float(eps),
               "x": float(x)}
        # a point's draws depend on the point only: the same intervals whatever else is loaded
        stream = zlib.crc32(json.dumps(key, sort_keys=True).encode())
        rows = _one_per_algorithm(rows) if knobs == "theory" else rows
        recs.extend(_point(key, rows, n_boot, np.random.default_rng([seed, stream])))

    targeted = cells[cells["target_alpha"].notna()]
    wanted = {k: sorted(set(g["target_alpha"])) for k, g in
              targeted.groupby(["problem", "instance", "d", "eps"], sort=True)}
    for t in sorted(set(targeted["target_alpha"])):
        groups, _notes = build_rows(cells, float(t), knobs=knobs)
        for gkey, rows in groups.items():
            if not _rtol_in(float(t), wanted.get(gkey, [])):
                continue
            g = cells[(cells["problem"] == gkey[0]) & (cells["instance"] == gkey[1])]
            for row in rows:
                mine = g[g["algorithm"] == row.algorithm]
                row.source = _sources(mine)  # type: ignore[attr-defined]
            for metric in sorted({r.metric for r in rows}):
                emit(SAMPLES, metric, gkey, float(t), [r for r in rows if r.metric == metric])
    plain = _theory(cells[cells["target_alpha"].isna() & cells["n"].notna()], knobs)
    for gkey, g in plain.groupby(["problem", "instance", "d", "eps"], sort=True):
        wanted_metrics = set(metrics) if metrics is not None else \
            set().union(*(_claimed(a) for a in g["algorithm"].unique()))
        for metric, col in sorted(METRIC_COLUMN.items()):
            if metric not in wanted_metrics or col not in g or not g[col].notna().any():
                continue
            for n, rows in _error_rows(g, col, metric).items():
                emit(ERROR, metric, gkey, n, rows)
    table = pd.DataFrame(recs, columns=[c for c in COLUMNS if c not in ("winner", "reading")])
    return with_readings(table)


def _reading(rows: pd.DataFrame) -> tuple[str, str, str, float, float, float, str]:
    """(reading, winner, runner-up, margin, its low, its high, pairing) of one point's rows
    (sorted by value, the winner first)."""
    rows = rows.sort_values(["value", "algorithm"], kind="stable")
    labels = list(rows["algorithm"])
    if len(rows) < 2:
        return (f"{NOT_MEASURED} (only {labels[0]})" if labels else NOT_MEASURED), "", "", \
            math.nan, math.nan, math.nan, ""
    win, run = rows.iloc[0], rows.iloc[1]
    if not math.isfinite(win["value"]):
        return "not reached by any", "", "", math.nan, math.nan, math.nan, ""
    if not math.isfinite(run["value"]):
        # a censored runner-up (issue 57, item 2): its median is only known to exceed its bound,
        # so the margin is a lower bound (never "inf x"), and a bound below the best median
        # decides nothing
        bound = float(run["bound"]) if "bound" in run and pd.notna(run["bound"]) else math.nan
        if math.isfinite(bound) and bound >= float(win["value"]) > 0:
            return WINNER, str(win["algorithm"]), str(run["algorithm"]), math.nan, \
                bound / float(win["value"]), math.inf, CENSORED_RIVAL
        return CENSORED_UNDECIDED, str(win["algorithm"]), str(run["algorithm"]), math.nan, \
            math.nan, math.nan, CENSORED_RIVAL
    lo, hi = float(run["ratio_low"]), float(run["ratio_high"])
    seeds = min(_reps(win), _reps(run))
    if math.isnan(lo) or math.isnan(hi):
        reading = "undecided"
    elif seeds < MIN_SEEDS_FOR_WINNER:
        reading = FEW_SEEDS
    else:
        reading = WINNER if lo > 1 else NO_WINNER
    return reading, str(win["algorithm"]), str(run["algorithm"]), float(run["ratio"]), lo, hi, \
        str(run["pairing"])


def _reps(row: pd.Series) -> int:
    """A long-table row's seeds (an old CSV without the column: enough, as it was read then)."""
    v = row.get("reps", math.nan)
    return int(v) if pd.notna(v) else MIN_SEEDS_FOR_WINNER


def with_readings(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with its point-level `winner` and `reading` columns (re)computed."""
    table = table.sort_values([*KEY, "value", "algorithm"], kind="stable").reset_index(drop=True)
    table["winner"], table["reading"] = "", ""
    for _, idx in table.groupby(KEY, sort=False).groups.items():
        reading, win, *_ = _reading(table.loc[idx])
        table.loc[idx, "winner"] = win if reading == WINNER else ""
        table.loc[idx, "reading"] = reading
    return table[COLUMNS]


def points_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per grid point of each (view, metric, problem, instance): its reading, the
    algorithm with the best median (`best`: a winner only where the reading says "winner"), the
    runner-up and the margin (runner-up over best, >= 1) with its interval and pairing. The
    grid is the product of the instance's measured d, eps and x values, so a point no store
    covers reads "not measured" beside the measured ones."""
    out = []
    if not len(table):
        return pd.DataFrame(columns=[*KEY, "reading", "best", "runner_up", "margin",
                                     "margin_low", "margin_high", "pairing", "measured_by"])
    for (view, metric, problem, instance), g in table.groupby(KEY[:4], sort=True):
        got = {k: gk for k, gk in g.groupby(["d", "eps", "x"], sort=True)}
        for d in sorted(set(g["d"])):
            for eps in sorted(set(g["eps"])):
                for x in sorted(set(g["x"])):
                    rows = got.get((d, eps, x), g.iloc[:0])
                    reading, win, run, m, lo, hi, pairing = _reading(rows)
                    if not len(rows):
                        reading = f"{NOT_MEASURED} (no store covers it)"
                    out.append({"view": view, "metric": metric, "problem": problem,
                                "instance": instance, "d": d, "eps": eps, "x": x,
                                "reading": reading, "best": win, "runner_up": run, "margin": m,
                                "margin_low": lo, "margin_high": hi, "pairing": pairing,
                                "measured_by": ", ".join(sorted(rows["algorithm"]))})
    return pd.DataFrame(out)


# ----- display --------------------------------------------------------------------------------

def num3(v: float) -> str:
    if not isinstance(v, (int, float)) or math.isnan(v):
        return "-"
    return "inf" if math.isinf(v) else f"{v:.3g}"


def x_name(view: str, metric: str) -> str:
    """What x is in `view`."""
    return f"target {metric}" if view == SAMPLES else "n"


def margin_text(p: pd.Series | dict) -> str:
    """"3.0x [2.5, 3.6] fewer samples than B (paired 5 seeds)" for a point with a runner-up."""
    what = "fewer samples" if p["view"] == SAMPLES else "lower error"
    if p["pairing"] == CENSORED_RIVAL:
        if p["reading"] == WINNER:
            return (f"more than {num3(p['margin_low'])}x {what} than {p['runner_up']} (censored: "
                    "it never reached the target, only a lower bound on its median is known)")
        return (f"{p['runner_up']} censored below the best median (it stopped short of the "
                "target before the best median's size): no margin")
    return (f"{num3(p['margin'])}x [{num3(p['margin_low'])}, {num3(p['margin_high'])}] {what} than "
            f"{p['runner_up']} ({pairing_text(p['pairing'])})")


def pairing_text(pairing: str) -> str:
    """"paired (5 seeds)" as "paired over 5 seeds" (inside parentheses)."""
    return re.sub(r"^paired \((\d+) seeds\)$", r"paired over \1 seeds", str(pairing))


def display(points: pd.DataFrame) -> pd.DataFrame:
    """The point table as strings for markdown (numbers to 3 significant digits)."""
    if not len(points):
        return points
    rows = []
    for _, p in points.iterrows():
        best = p["best"] if p["reading"] == WINNER else (f"({p['best']})" if p["best"] else "-")
        rows.append({"problem": p["problem"] + (f" {p['instance']}" if p["instance"] else ""),
                     "metric": p["metric"], "view": p["view"], "d": f"{p['d']:g}",
                     "eps": f"{p['eps']:g}", "x": f"{x_name(p['view'], p['metric'])} {p['x']:g}",
                     "winner": best, "reading": p["reading"],
                     "margin [95% CI]": margin_text(p) if p["runner_up"] else "-"})
    return pd.DataFrame(rows)


def text_lines(points: pd.DataFrame) -> list[str]:
    """One line per point, grouped under a header per (view, metric, instance)."""
    lines: list[str] = []
    for (view, metric, problem, instance), g in points.groupby(KEY[:4], sort=True):
        inst = f" {instance}" if instance else ""
        lines.append(f"{metric} on {problem}{inst}, {view}:")
        for _, p in g.iterrows():
            where = f"d={p['d']:g} eps={p['eps']:g} {x_name(view, metric)}={p['x']:g}"
            if p["runner_up"] and p["reading"] == WINNER:
                lines.append(f"  {where}: {p['best']} wins, {margin_text(p)}")
            elif p["runner_up"]:
                lines.append(f"  {where}: {p['reading']} (best median: {p['best']}, "
                             f"{margin_text(p)})")
            else:
                lines.append(f"  {where}: {p['reading']}")
    return lines

