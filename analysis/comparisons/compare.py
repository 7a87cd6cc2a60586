"""Every algorithm of one or several stores on one axis: the samples it needs to reach a target
error (`dprates compare`, issue 46). The question it answers in one table: "does DP-SGD or the
adaptive tree Spider need fewer samples on my hard instance?", where the two are measured in
different ways:

* a one-pass method (a Spider, noisy SGD, the tree-based private Spider: `setting` not
  "empirical") reads each record once, so its samples to the target are counted: the stored
  `samples_to_target` of its cells configured for that target (`n_star`, +inf when censored),
  summarized by the median over repetitions (`problems.evaluation.metrics.median_n_star`'s reading);
* a method that runs on n records (DP-GD, DP-SGD, private SpiderBoost, Pagan, ...) uses all n
  whatever the target, so its samples to the target are the smallest n whose output reaches
  it. Two readings: from its target cells, each a search over n per repetition
  (`bench.n_search`, view "n search": the median of the searched n*, passes = gradient
  evaluations / n* at n*); else from an n grid, the first crossing of the median error curve
  against n, log-log interpolated (`analysis.empirical_n_star.first_crossing`, as `dprates fit
  --n-star`), view "records".

Both estimators are functions of the repetitions (seeds) of a curve. One bootstrap over
repetitions gives every interval: a repetition's data seed depends on (base seed, problem,
parameters, d, repetition) only (`bench.cells`), and the data are prefix-consistent across n,
so a repetition is the resampling unit of a records curve as a whole and of a one-pass row.
Two rows *pair* when they share the base seed and the data mode (then repetition r reads the
same records in both): their ratio's draws apply the same resampled repetitions to both
(`ratio`); rows that do not pair get independent draws and say "unpaired". Intervals are
95% percentile intervals; a draw that never reaches the target counts as +inf, so an interval
may be open upwards.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.empirical_n_star import first_crossing
from analysis.verdict_engine.rates import LEVEL, N_BOOT
from problems.evaluation.metrics import METRIC_COLUMN  # re-exported: the comparisons read it

#: Fewer design sizes n than this make a records row's n* a "few n" read (two points fix a line).
MIN_DESIGN = 3
#: The views whose rows hold one n* per repetition (a median of them is the estimate).
COUNTED = ("one pass", "n search")


#: The CSV's short name for each iterate rule (`selection_rule` says it in words, once, in the
#: markdown and LaTeX notes): the first time the best iterate so far reaches the target, the
#: best iterate of the run at the searched n, the best / last iterate, private selection.
SELECTION_CODES = {"first time": "first_hit", "of the run at n": "best_at_n",
                   "best iterate": "best", "last iterate": "last", "private selection": "private"}


def selection_code(rule: str) -> str:
    """The CSV's code for a `selection_rule` sentence (the rule itself when it has none)."""
    return next((code for key, code in SELECTION_CODES.items() if key in rule), rule)


def selection_rule(column: str, metric: str = "", view: str = "") -> str:
    """Which iterate an error column reads (the store records it in the column's suffix;
    `metric`: the claim metric of a samples_to_target column; `view` "n search": a searched
    n*, read off each run's best iterate)."""
    emp = column.startswith("emp_") or metric.startswith("emp_")
    oracle = "empirical oracle F_S" if emp else "population oracle"
    if view == "n search":
        return f"best iterate by {oracle} of the run at n (the smallest n on the search path)"
    if column == "samples_to_target":
        return f"first time the best iterate so far (by {oracle}) reaches it"
    if column.endswith("_best"):
        return f"best iterate by {oracle}"
    if column.endswith("_last"):
        return "last iterate"
    if column.endswith("_selected"):
        return "private selection (smallest private estimate)"
    return column


def metric_of_column(column: str) -> str:
    """The claim metric an error column measures (`analysis.verdict_engine.predictions.Y_METRIC`)."""
    from analysis.verdict_engine.predictions import Y_METRIC

    return Y_METRIC.get(column, column)


@dataclass
class Row:
    """One algorithm (one knob setting, data mode and seed) of one comparison group."""

    label: str
    algorithm: str
    view: str  # "one pass", "n search" (n* per repetition, as one pass) or "records"
    metric: str  # the claim metric (alpha_sosp, ...)
    column: str  # the stored column the samples are read from
    seed: object  # base seed and data mode: rows with equal seeds pair
    reps: np.ndarray  # repetition ids (columns of `values`)
    values: np.ndarray  # one pass: (1, R) n*; records: (N, R) error per design n (NaN: missing)
    ns: np.ndarray = field(default_factory=lambda: np.zeros(0))  # records: the design sizes
    passes: float = math.nan
    flags: list[str] = field(default_factory=list)
    target: float = math.nan  # the error level the samples are counted to
    #: one pass: (1, R) what each repetition is known to need at least: its n* where it reached
    #: the target, the samples it read where it was censored (None: not stored)
    bounds: np.ndarray | None = None
    #: n* is only known to be at most the smallest n read (the target reached there): an upper
    #: bound, said in `flags` and read by the atlas's fits as this field, never from the text
    at_most: bool = False

    def lower_bound(self) -> float:
        """What the median is known to exceed when it is censored (`estimate` inf): one pass,
        the median of `bounds` (each run needs at least what it read); on records, the largest
        design n. NaN when the estimate is finite or nothing bounds it."""
        if math.isfinite(self.estimate()):
            return math.nan
        if self.view in COUNTED:
            return float(np.median(self.bounds[0])) if self.bounds is not None else math.nan
        return float(self.ns[-1]) if len(self.ns) else math.nan

    def estimate(self, cols: np.ndarray | None = None) -> float:
        """Samples to the target on the repetitions `cols` (indices into `reps`; all if None)."""
        v = self.values if cols is None else self.values[:, cols]
        if self.view in COUNTED:
            return float(np.median(v[0]))
        with np.errstate(all="ignore"):
            med = np.array([np.nanmedian(r) if np.isfinite(r).any() else math.inf for r in v])
        return first_crossing(self.ns, med, self.target)[0]

    def estimates(self, cols: np.ndarray) -> np.ndarray:
        """`estimate(c)` for each row c of the (draws, k) index array `cols`, the same floats:
        the medians of all draws in one call (a median is an order statistic, or the mean of
        two, whatever the algorithm), the crossing per draw. The bootstrap's hot path (the
        atlas spent ~2 min of the reference's report on one median per draw)."""
        cols = np.asarray(cols)
        if len(cols) == 0:
            return np.zeros(0)
        if self.view in COUNTED:
            return np.median(self.values[0][cols], axis=1).astype(float)
        v = self.values[:, cols]  # (design points, draws, k)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN draws: inf below
            med = np.where(np.isfinite(v).any(axis=2), np.nanmedian(v, axis=2), math.inf)
        return np.array([first_crossing(self.ns, med[:, i], self.target)[0]
                         for i in range(med.shape[1])])


def _draws(rng: np.random.Generator, n_reps: int, n_boot: int) -> np.ndarray:
    return rng.integers(0, n_reps, (n_boot, n_reps))


def _percentile(draws: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval; NaN draws (inf / inf ratios) dropped, NaN when most are NaN."""
    d = draws[~np.isnan(draws)]
    if len(d) < len(draws) / 2:
        return math.nan, math.nan
    a = (1 - level) / 2
    lo, hi = np.quantile(d, [a, 1 - a], method="inverted_cdf")
    return float(lo), float(hi)


def interval(row: Row, n_boot: int = N_BOOT, rng: np.random.Generator | None = None) -> tuple[float, float]:
    """The row's 95% percentile interval from resampling its repetitions."""
    rng = rng if rng is not None else np.random.default_rng(0)
    draws = row.estimates(_draws(rng, len(row.reps), n_boot))
    return _percentile(draws)


def ratio(a: Row, b: Row, n_boot: int = N_BOOT, rng: np.random.Generator | None = None
          ) -> tuple[float, float, float, str]:
    """Samples of `a` over samples of `b`: (ratio, CI low, CI high, pairing). Paired rows (same
    base seed and data mode, two or more shared repetitions) are compared on their shared
    repetitions with the same resampled repetitions on both sides; other rows with
    independent draws ("unpaired")."""
    rng = rng if rng is not None else np.random.default_rng(0)
    shared = np.intersect1d(a.reps, b.reps)
    with np.errstate(all="ignore"):
        if a.seed == b.seed and len(shared) >= 2:
            ia = np.searchsorted(a.reps, shared)
            ib = np.searchsorted(b.reps, shared)
            est = a.estimate(ia) / b.estimate(ib)
            cols = _draws(rng, len(shared), n_boot)
            draws = a.estimates(ia[cols]) / b.estimates(ib[cols])
            pairing = f"paired ({len(shared)} seeds)"
        else:
            est = a.estimate() / b.estimate()
            da, db = _draws(rng, len(a.reps), n_boot), _draws(rng, len(b.reps), n_boot)
            draws = a.estimates(da) / b.estimates(db)
            pairing = "unpaired"
    lo, hi = _percentile(draws)
    return float(est), lo, hi, pairing


def _passes(cells: pd.DataFrame) -> float:
    """Median passes over the n records: steps x batch / n (the batch is n for a full-batch
    method), plus steps / q full-batch refreshes where the rules have a period q; NaN where
    the stored parameters do not say."""
    out = []
    for p, steps, n in zip(cells["params_used"], cells["n_steps"], cells["n"], strict=True):
        p = p or {}
        if not (isinstance(steps, (int, float)) and n and math.isfinite(steps)):
            continue
        b = n if p.get("sampling") == "full" else p.get("b", n)
        v = steps * float(b) / n
        if p.get("q"):
            v += steps / float(p["q"])
        out.append(v)
    return float(np.median(out)) if out else math.nan


def _is_one_pass(algorithm: str, cells: pd.DataFrame) -> bool:
    """One pass unless the algorithm optimizes the empirical risk of n records (`setting`); an
    unregistered name (a plugin not loaded) by its cells: targeted cells read as one pass."""
    try:
        from algorithms import get_algorithm

        return getattr(get_algorithm(algorithm), "setting", None) != "empirical"
    except ValueError:
        return bool(cells["target_alpha"].notna().all())


def setting_label(algorithm: str, params: dict, knobs: tuple, several: bool) -> str:
    if not several:
        return algorithm
    keys = sorted(knobs) or sorted(params)
    return f"{algorithm} ({', '.join(f'{k}={params.get(k)}' for k in keys) or 'defaults'})"


def build_rows(cells: pd.DataFrame, target: float, column: str | None = None,
               knobs: str = "theory") -> tuple[dict[tuple, list[Row]], list[str]]:
    """The rows of every comparison group (problem, instance, d, eps) and notes on what was left
    out. `cells`: `bench.store.load` output (ok cells; a `store` column optional); `column`:
    the error column of the records view (default: the column of the group's one-pass target
    metric, so both views sit on one axis, else the algorithm's own claim metric);
    `knobs`: "theory" (knobs at their theory defaults, where an algorithm has such cells) or
    "all" (one row per knob setting)."""
    from analysis.points import theory_mask
    from analysis.verdict_engine.predictions import claim_metric

    cells = cells[cells["status"] == "ok"].copy()
    cells["instance"] = [json.dumps(p or {}, sort_keys=True) for p in cells["problem_params"]]
    cells["combo"] = [json.dumps(p or {}, sort_keys=True) for p in cells["params"]]
    if knobs == "theory" and len(cells):
        keep = theory_mask(cells)
        has = cells.assign(_t=keep).groupby("algorithm")["_t"].transform("any").to_numpy(bool)
        cells = cells[keep | ~has]
    notes: list[str] = []
    groups: dict[tuple, list[Row]] = {}
    for gkey, g in cells.groupby(["problem", "instance", "d", "eps"], sort=True):
        targeted = g[g["target_alpha"].notna()]
        at = targeted[np.isclose(targeted["target_alpha"], target, rtol=1e-9)]
        one_pass_metrics = sorted(set(at["target_metric"].dropna()))
        rows: list[Row] = []
        for alg, ga in g.groupby("algorithm", sort=True):
            one_pass = _is_one_pass(alg, ga)
            combos = ga.groupby(["combo", "data", "calibration", "base_seed"], sort=True)
            several = ga["combo"].nunique() > 1
            split = [c for c in ("data", "calibration", "base_seed") if ga[c].nunique() > 1]
            for (combo, data, cal, seed), gc in combos:
                label = setting_label(alg, json.loads(combo), gc["knobs"].iloc[0], several)
                if split:  # the same algorithm in two data modes, calibrations or seeds
                    parts = {"data": data, "calibration": cal, "base_seed": f"seed {seed}"}
                    label += " [" + ", ".join(str(parts[c]) for c in split) + "]"
                searched = (not one_pass and "n_search" in gc
                            and gc.loc[gc["target_alpha"].notna(), "n_search"].notna().any())
                if (one_pass or searched) and gc["target_alpha"].notna().any():
                    sub = gc[np.isclose(gc["target_alpha"].fillna(-1), target, rtol=1e-9)]
                    if not len(sub):
                        have = ", ".join(f"{t:g}" for t in sorted(gc["target_alpha"].dropna().unique()))
                        notes.append(f"{label} on {gkey[0]}: no cells at target {target:g} "
                                     f"(its targets: {have})")
                        continue
                    sub = sub.groupby("rep").first()
                    n_star = sub["n_star"].to_numpy(float)
                    if searched:  # censored: known to need more than the search's cap
                        read = np.array([float((ns or {}).get("n_max") or n) for ns, n in
                                         zip(sub["n_search"], sub["n"], strict=True)])
                        with np.errstate(all="ignore"):  # reached seeds only (censored: inf n*)
                            per = np.where(np.isfinite(n_star),
                                           sub["grad_evals"].to_numpy(float) / n_star, np.nan)
                        passes = float(np.nanmedian(per)) if np.isfinite(per).any() else math.nan
                    else:
                        read = (sub["samples_used"].to_numpy(float) if "samples_used" in sub
                                else np.full(len(sub), math.nan))
                        passes = 1.0
                    row = Row(label, alg, "n search" if searched else "one pass",
                              str(sub["target_metric"].iloc[0]),
                              "samples_to_target", (seed, data), sub.index.to_numpy(),
                              n_star[None, :], passes=passes, target=target,
                              bounds=np.where(np.isfinite(n_star), n_star, read)[None, :])
                    k = int(sub["censored"].sum())
                    if k:
                        row.flags.append(f"censored {k} of {len(sub)}")
                    if searched:  # reached at the search's first n: n* is an upper bound there
                        first = [ns["runs"][0]["n"] for ns in sub["n_search"]
                                 if ns and ns.get("n_star") is not None and ns.get("lo") is None]
                        if first:
                            row.at_most = True
                            row.flags.append(f"reached at the search's first n in {len(first)} of "
                                             f"{len(sub)} (n* <= {min(first):g} there)")
                    rows.append(row)
                    continue
                n_cells = gc[gc["target_alpha"].isna()]
                if not len(n_cells):
                    notes.append(f"{label} on {gkey[0]}: runs on n records but has only targeted "
                                 "cells without a search (its samples to a target are the smallest "
                                 "n: set the spec's target_metric to search n, or sweep n)")
                    continue
                col = column or METRIC_COLUMN.get(one_pass_metrics[0] if one_pass_metrics
                                                  else claim_metric(alg))
                if col not in n_cells or not n_cells[col].notna().any():
                    notes.append(f"{label} on {gkey[0]}: no {col} values")
                    continue
                rows.append(_records_row(label, alg, col, (seed, data), n_cells, target))
        if rows:
            groups[gkey] = rows
    return groups, notes


def _records_row(label: str, alg: str, col: str, seed: object, cells: pd.DataFrame,
                 target: float) -> Row:
    """A records row: the (n, repetition) matrix of `col`, its flags and passes at n*."""
    table = cells.pivot_table(index="n", columns="rep", values=col, aggfunc="first")
    ns = table.index.to_numpy(float)
    row = Row(label, alg, "records", metric_of_column(col), col, seed, table.columns.to_numpy(),
              table.to_numpy(float), ns=ns, target=target)
    with np.errstate(all="ignore"):
        med = np.array([np.nanmedian(r) for r in row.values])
    _est, status = first_crossing(ns, med, target)
    hit = np.flatnonzero(med <= target)
    if len(ns) < MIN_DESIGN:
        row.flags.append(f"few n ({len(ns)} design sizes)")
    if status == "censored":
        row.flags.append(f"ceiling: not reached by the largest n ({ns[-1]:g})")
    elif status == "left-censored":
        row.flags.append(f"reached at the smallest n ({ns[0]:g}): n* <= {ns[0]:g}")
        row.at_most = True
    elif hit[0] == len(ns) - 1:
        row.flags.append(f"ceiling: n* taken at the grid's largest n ({ns[-1]:g})")
    at = ns[hit[0]] if len(hit) else ns[-1]
    row.passes = _passes(cells[cells["n"] == at])
    return row


def compare_table(cells: pd.DataFrame, target: float, column: str | None = None,
                  baseline: str | None = None, knobs: str = "theory", n_boot: int = N_BOOT,
                  seed: int = 0) -> tuple[pd.DataFrame, list[str]]:
    """The comparison table (one row per algorithm and group) and its notes. Ratios are to the
    `baseline` algorithm of each group (default: the row needing the fewest samples)."""
    if not (target > 0 and math.isfinite(target)):
        raise ValueError(f"--target={target!r} is invalid: must be a finite error level > 0")
    groups, notes = build_rows(cells, target, column, knobs)
    out = []
    for gi, ((problem, instance, d, eps), rows) in enumerate(groups.items()):
        rng = np.random.default_rng([seed, gi])
        points = [r.estimate() for r in rows]
        if baseline is not None:
            base = next((r for r in rows if r.algorithm == baseline or r.label == baseline), None)
        else:
            finite = [i for i, p in enumerate(points) if math.isfinite(p)]
            base = rows[min(finite, key=lambda i: points[i])] if finite else None
        if baseline is not None and base is None:
            notes.append(f"{problem} d={d:g} eps={eps:g}: no row of --baseline {baseline}")
        for row, point in zip(rows, points, strict=True):
            lo, hi = interval(row, n_boot, rng)
            rec = {"problem": problem, "instance": "" if instance == "{}" else instance,
                   "d": d, "eps": eps, "algorithm": row.label, "view": row.view,
                   "metric": row.metric, "read_from": row.column,
                   "selection": selection_rule(row.column, row.metric, row.view),
                   "passes": row.passes, "samples": point, "bound": row.lower_bound(),
                   "ci_low": lo, "ci_high": hi,
                   "baseline": base.label if base else "", "ratio": math.nan,
                   "ratio_low": math.nan, "ratio_high": math.nan, "pairing": "",
                   "reps": len(row.reps), "flags": list(row.flags)}
            if base is not None and row is base:
                rec.update(ratio=1.0, ratio_low=1.0, ratio_high=1.0, pairing="baseline")
            elif base is not None:
                r, rlo, rhi, pairing = ratio(row, base, n_boot, rng)
                rec.update(ratio=r, ratio_low=rlo, ratio_high=rhi, pairing=pairing)
                if row.metric != base.metric:
                    rec["flags"].append(f"metric {row.metric} differs from the baseline's {base.metric}")
            rec["flags"] = "; ".join(rec["flags"])
            out.append(rec)
    return pd.DataFrame(out), notes
