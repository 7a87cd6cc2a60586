"""The practitioners' atlas (issue 57, item 3): on each instance, d, eps and target, which
algorithm needs the fewest samples, by how much (the atlas's margin with its paired interval),
and at what compute (median gradient evaluations and passes over the data), read from the
atlas's long table (`analysis.comparisons.atlas`) and the stores' counts.

`practitioners_table` joins the two into one row per (point, algorithm) for the samples-to-
target view: what `reports/practitioners.csv` holds, so the README's table and its
recommendation line are read from a committed file. `summary_rows` and `recommendation` make
them; every sentence is derived from the rows, nothing is typed about a result.

Compute: a cell's `grad_evals` are the per-sample gradients it computed (the expected q n T of
Poisson-sampled families, never the realized sizes), its passes `grad_evals / n*`; a one-pass
method reads each sample once, and a gradient difference counts two evaluations. Medians over
the seeds that reached the target.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from analysis.comparisons.atlas import KEY, SAMPLES, WINNER, shared_instance

#: The algorithms that search n and run many passes over n records (the practitioner's default).
MULTI_PASS = ("dp_sgd", "dp_gd")
#: The SOSP Spiders (one pass) and the first-order tree Spider.
SPIDERS = ("gaussian_spider", "adaptive_tree_spider", "tree_private_spider")
COLUMNS = [*KEY, "algorithm", "value", "bound", "ci_low", "ci_high", "ratio", "ratio_low",
           "ratio_high", "pairing", "reps", "winner", "reading", "grad_evals", "passes",
           "upper_bound", "best_spider", "vs_spider", "vs_spider_low", "vs_spider_high"]


def compute_medians(cells: pd.DataFrame) -> pd.DataFrame:
    """Per targeted (problem, instance, d, eps, target, algorithm): the median gradient
    evaluations and passes over the ok seeds that reached the target."""
    t = cells[(cells["status"] == "ok") & cells["target_alpha"].notna()
              & cells["samples_to_target"].notna()].copy()
    if t.empty:
        return pd.DataFrame(columns=["problem", "instance", "d", "eps", "x", "algorithm",
                                     "grad_evals", "passes", "upper_bound"])
    t["instance"] = [shared_instance(p, json.dumps(q or {}, sort_keys=True))
                     for p, q in zip(t["problem"], t["problem_params"], strict=True)]
    t["instance"] = t["instance"].replace("{}", "")
    t["passes"] = t["grad_evals"].astype(float) / t["samples_to_target"].astype(float)
    t["first_n"] = [_first_n(v) for v in t.get("n_search", pd.Series([None] * len(t),
                                                                     index=t.index))]
    g = t.groupby(["problem", "instance", "d", "eps", "target_alpha", "algorithm"], sort=True)
    out = g.agg(grad_evals=("grad_evals", "median"), passes=("passes", "median"),
                first_n=("first_n", "mean")).reset_index()
    # the median seed reached the target at the search's first n: n* is an upper bound there
    out["upper_bound"] = out["first_n"] > 0.5
    return out.drop(columns="first_n").rename(columns={"target_alpha": "x"})


def spider_ratios(cells: pd.DataFrame, n_boot: int = 2000) -> pd.DataFrame:
    """Per targeted point and non-Spider algorithm: how many times more samples the point's best
    Spider (smallest median n*) needs than it, `vs_spider` [low, high], a 95% bootstrap interval
    over seeds (`analysis.comparisons.compare.ratio`: paired where base seed and data mode
    agree, else unpaired; a censored seed counts as n* = inf), and which Spider that is."""
    import zlib

    from analysis.comparisons.compare import Row, ratio

    cols = ["problem", "instance", "d", "eps", "x", "algorithm", "best_spider", "vs_spider",
            "vs_spider_low", "vs_spider_high"]
    t = cells[(cells["status"] == "ok") & cells["target_alpha"].notna()].copy()
    if t.empty:
        return pd.DataFrame(columns=cols)
    t["instance"] = [shared_instance(p, json.dumps(q or {}, sort_keys=True))
                     for p, q in zip(t["problem"], t["problem_params"], strict=True)]
    t["instance"] = t["instance"].replace("{}", "")
    out = []
    for key, g in t.groupby(["problem", "instance", "d", "eps", "target_alpha"], sort=True):
        rows = {}
        for alg, ga in g.groupby("algorithm", sort=True):
            per = ga.groupby("rep").first()
            rows[alg] = Row(alg, alg, "one pass", "", "n_star",
                            (per["base_seed"].iloc[0], per["data"].iloc[0]),
                            per.index.to_numpy(), per["n_star"].to_numpy(float)[None, :])
        spiders = [a for a in rows if a in SPIDERS]
        if not spiders:
            continue
        best = min(spiders, key=lambda a: (rows[a].estimate(), a))
        rng = np.random.default_rng([zlib.crc32(json.dumps([str(k) for k in key]).encode())])
        for alg, row in rows.items():
            if alg in SPIDERS:
                continue
            r, lo, hi, _ = ratio(rows[best], row, n_boot, rng)
            out.append([*key, alg, best, r, lo, hi])
    res = pd.DataFrame(out, columns=cols)
    res["d"], res["eps"] = res["d"].astype(float), res["eps"].astype(float)
    return res


def _first_n(search: object) -> bool:
    """Whether an n search reached its target at its first n (no n below it was tried)."""
    if isinstance(search, str):
        try:
            search = json.loads(search)
        except ValueError:
            return False
    return isinstance(search, dict) and not search.get("censored") and search.get("lo") is None


def practitioners_table(atlas: pd.DataFrame, cells: pd.DataFrame, n_boot: int = 2000
                        ) -> pd.DataFrame:
    """The atlas's samples-to-target rows with each algorithm's compute beside its samples and,
    for a non-Spider algorithm, the best Spider's samples over its own (`spider_ratios`)."""
    a = atlas[atlas["view"] == SAMPLES].copy()
    a["instance"] = a["instance"].fillna("")
    a["_x"] = a["x"].astype(float).round(12)
    comp = compute_medians(cells)
    comp["_x"] = comp["x"].astype(float).round(12)
    comp["d"], comp["eps"] = comp["d"].astype(float), comp["eps"].astype(float)
    merged = a.merge(comp.drop(columns="x"), how="left",
                     on=["problem", "instance", "d", "eps", "algorithm", "_x"])
    vs = spider_ratios(cells, n_boot)
    vs["_x"] = vs["x"].astype(float).round(12)
    merged = merged.merge(vs.drop(columns="x"), how="left",
                          on=["problem", "instance", "d", "eps", "algorithm", "_x"])
    return merged[COLUMNS].sort_values([*KEY, "value", "algorithm"], kind="stable",
                                       ignore_index=True)


def _fmt(v: float) -> str:
    return "n/a" if not (isinstance(v, (int, float)) and math.isfinite(v)) else f"{v:.3g}"


def _range(v: pd.Series) -> str:
    v = v.astype(float)
    v = v[np.isfinite(v)]
    return "n/a" if v.empty else f"{_fmt(v.min())}-{_fmt(v.max())}x"


def point_readings(table: pd.DataFrame) -> pd.DataFrame:
    """One row per design point and multi-pass method (DP-SGD, DP-GD): the point's reading
    (winner or not, the best median and the runner-up with the margin), the method's samples,
    passes and gradient evaluations, and the best Spider's samples over its own with the
    interval, and its gradient evaluations."""
    out = []
    for key, g in table.groupby(KEY, sort=True):
        g = g.sort_values("value")
        top, runner = g.iloc[0], (g.iloc[1] if len(g) > 1 else None)
        base = {**dict(zip(KEY, key, strict=True)), "reading": str(top["reading"]),
                "best": str(top["algorithm"]), "winner": top["winner"] if isinstance(
                    top["winner"], str) else "",
                "runner_up": "" if runner is None else str(runner["algorithm"]),
                "margin": math.nan if runner is None else float(runner["ratio"]),
                "margin_low": math.nan if runner is None else float(runner["ratio_low"]),
                "margin_high": math.nan if runner is None else float(runner["ratio_high"])}
        for alg in MULTI_PASS:
            m = g[g["algorithm"] == alg]
            if m.empty:
                continue
            m = m.iloc[0]
            sp = g[g["algorithm"] == m["best_spider"]]
            out.append({**base, "algorithm": alg, "samples": float(m["value"]),
                        "upper_bound": bool(m["upper_bound"]) if pd.notna(m["upper_bound"]) else False,
                        "passes": float(m["passes"]), "grad_evals": float(m["grad_evals"]),
                        "spider": m["best_spider"] if isinstance(m["best_spider"], str) else "",
                        "vs_spider": float(m["vs_spider"]),
                        "vs_spider_low": float(m["vs_spider_low"]),
                        "vs_spider_high": float(m["vs_spider_high"]),
                        "spider_grad_evals": float(sp["grad_evals"].iloc[0]) if len(sp) else math.nan})
    return pd.DataFrame(out)


def _reading_text(p: pd.Series) -> str:
    if p["reading"] == WINNER:
        return (f"{p['winner']}, {_fmt(p['margin'])}x [{_fmt(p['margin_low'])}, "
                f"{_fmt(p['margin_high'])}] fewer than {p['runner_up']}")
    if p["runner_up"]:
        return f"{p['best']} or {p['runner_up']} ({p['reading']})"
    return f"{p['reading']}"


def summary_rows(table: pd.DataFrame) -> list[list[str]]:
    """README rows: per (metric, instance, d, eps, target), the point's reading and, for DP-SGD
    and DP-GD, their samples (passes) with how many times more the best Spider needs [95% CI],
    and their gradient evaluations over the best Spider's."""
    pts = point_readings(table)
    rows = []
    if pts.empty:
        return rows
    pts = pts.sort_values(["metric", "problem", "instance", "d", "eps", "x"],
                          ascending=[True, True, True, True, True, False], kind="stable")
    for key, g in pts.groupby(["metric", "problem", "instance", "d", "eps", "x"], sort=False):
        metric, problem, instance, d, eps, x = key
        first = g.iloc[0]
        cells = []
        for alg in MULTI_PASS:
            m = g[g["algorithm"] == alg]
            if m.empty:
                cells += ["not run", ""]
                continue
            m = m.iloc[0]
            cells.append(("<= " if m["upper_bound"] else "") + f"{_fmt(m['samples'])} "
                         f"({_fmt(m['passes'])} passes); {m['spider'] or 'no Spider'} "
                         f"{_fmt(m['vs_spider'])}x [{_fmt(m['vs_spider_low'])}, "
                         f"{_fmt(m['vs_spider_high'])}]")
            cells.append(f"{_fmt(m['grad_evals'] / m['spider_grad_evals'])}x")
        inst = f"`{problem}`" + (f" {instance}" if instance else "")
        rows.append([metric, inst, f"{d:g}", f"{eps:g}", f"{x:g}", _reading_text(first), *cells])
    return rows


def recommendation(table: pd.DataFrame) -> str:
    """One line from the rows: at how many points DP-SGD and DP-GD need fewer samples than the
    best Spider (interval above 1), by how much, and at what gradient evaluations."""
    pts = point_readings(table)
    if pts.empty:
        return "No point with DP-SGD or DP-GD and a Spider was measured."
    parts = []
    for alg in MULTI_PASS:
        g = pts[pts["algorithm"] == alg]
        if g.empty:
            continue
        fewer = g[g["vs_spider_low"] > 1]
        more = g[g["vs_spider_high"] < 1]
        evals = g["grad_evals"] / g["spider_grad_evals"]
        text = (f"{alg} needs fewer samples than the best Spider at {len(fewer)} of {len(g)} "
                f"points (interval above 1; the Spider needs {_range(fewer['vs_spider'])} more)")
        if len(more):
            text += f", more at {len(more)} ({_range(1 / more['vs_spider'])})"
        if len(fewer) == len(g) or len(more) == len(g):
            text += " (the answer does not flip on this grid)"
        text += f", at {_range(evals)} the Spider's gradient evaluations"
        parts.append(text)
    return ("; ".join(parts) + ". n* is the oracle's (the first n whose best iterate, judged by "
            "the exact population metric, reaches the target), not samples to the algorithm's "
            "own output.")


def _ci_text(v: float, lo: float, hi: float) -> str:
    if isinstance(v, (int, float)) and math.isinf(v):
        return "inf"  # a censored rival: the ratio's interval is open upwards
    return "-" if not (isinstance(v, (int, float)) and math.isfinite(v)) else \
        f"{_fmt(v)} [{_fmt(lo)}, {_fmt(hi)}]"


def _samples_text(v: float, lo: float, hi: float, bound: float, upper: object) -> str:
    """A row's samples with their interval; a censored median (never reached: inf) as what it is
    known to exceed, never as a bare '-'; '<= ' where the median seed reached it at the search's
    first n."""
    if isinstance(v, (int, float)) and math.isinf(v):
        return f"> {_fmt(bound)} (censored)" if math.isfinite(float(bound)) else "inf (censored)"
    return ("<= " if str(upper).lower() == "true" else "") + _ci_text(v, lo, hi)


def export_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The practitioners' table for a design doc (issue 73, item 5): one row per design point
    and algorithm, one number per cell ("x [a, b]" for a value and its 95% interval): the
    samples it needs (the oracle's n*), its passes and absolute gradient evaluations, its ratio
    to the point's fewest (the runner-up margin of the atlas), and for DP-SGD / DP-GD which
    Spider needs the fewest samples and its samples over their own (two columns: one name, one
    number)."""
    t = table.sort_values([*KEY, "value", "algorithm"], kind="stable")
    inst = [f"{p} {i}".strip() if isinstance(i, str) else str(p)
            for p, i in zip(t["problem"], t["instance"], strict=True)]
    return pd.DataFrame({
        "metric": t["metric"].to_numpy(), "instance": inst,
        "d": [f"{v:g}" for v in t["d"]], "eps": [f"{v:g}" for v in t["eps"]],
        "target": [f"{v:g}" for v in t["x"]], "algorithm": t["algorithm"].to_numpy(),
        "samples n* [95% CI]": [_samples_text(v, lo, hi, b, ub) for v, lo, hi, b, ub in zip(
            t["value"], t["ci_low"], t["ci_high"], t["bound"], t["upper_bound"], strict=True)],
        "passes": [_fmt(v) for v in t["passes"]],
        "grad. evals": [_fmt(v) for v in t["grad_evals"]],
        "ratio to fewest [95% CI]": [_ci_text(v, lo, hi) for v, lo, hi in
                                     zip(t["ratio"], t["ratio_low"], t["ratio_high"], strict=True)],
        "best Spider": [sp if isinstance(sp, str) and sp and a in MULTI_PASS else "-"
                        for a, sp in zip(t["algorithm"], t["best_spider"], strict=True)],
        "best Spider / n* [95% CI]": [
            _ci_text(v, lo, hi) if isinstance(sp, str) and sp and a in MULTI_PASS
            else "-" for a, sp, v, lo, hi in zip(t["algorithm"], t["best_spider"], t["vs_spider"],
                                                 t["vs_spider_low"], t["vs_spider_high"],
                                                 strict=True)],
        "reading": t["reading"].to_numpy(),
    })
