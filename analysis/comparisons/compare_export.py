"""The comparison table as exported (issue 73, item 5): strings for markdown and LaTeX
(`display`), one number per cell for CSV (`csv_rows`), and the note saying which iterate each
view reads (`selection_notes`); what `analysis.comparisons.compare` computes, written out."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.comparisons.compare import selection_code


def _num(v: float) -> str:
    if not isinstance(v, (int, float)) or math.isnan(v):
        return "-"
    return "inf" if math.isinf(v) else f"{v:.3g}"


def reading(r: pd.Series) -> str:
    """The verdict a row's ratio interval supports against its baseline."""
    if r["pairing"] == "baseline" or not r["pairing"]:
        return ""
    lo, hi = r["ratio_low"], r["ratio_high"]
    if not (isinstance(lo, float) and isinstance(hi, float)) or math.isnan(lo) or math.isnan(hi):
        return "undecided"
    if hi < 1:
        return "fewer samples"
    if lo > 1:
        return "more samples"
    return "tie (interval covers 1)"


#: The views' short names in the exported table (the notes say how each counts samples).
VIEW_SHORT = {"one pass": "one pass", "records": "n records", "n search": "n records (searched)"}


def _ci(p: float, lo: float, hi: float) -> str:
    return f"{_num(p)} [{_num(lo)}, {_num(hi)}]"


def display(table: pd.DataFrame) -> pd.DataFrame:
    """The table as strings for markdown and LaTeX (issue 73, item 5): one row per algorithm
    and group, one number per cell ("x [a, b]" for a value and its 95% interval), the baseline
    in its own column, absolute gradient evaluations (passes x samples) beside the passes; the
    iterate each row reads is a note (`selection_notes`), not a column repeated on every row."""
    if not len(table):
        return table
    many = {c: table[c].nunique() > 1 for c in ("problem", "instance", "d", "eps")}
    bound = table.get("bound", pd.Series(math.nan, index=table.index))
    out = pd.DataFrame({
        **{c: table[c].map(lambda v: v if isinstance(v, str) else f"{v:g}")
           for c in ("problem", "instance", "d", "eps") if many[c] or c == "problem"},
        "algorithm": table["algorithm"], "view": table["view"].map(VIEW_SHORT),
        "metric": [m if c == "samples_to_target" else f"{m} ({c})"
                   for m, c in zip(table["metric"], table["read_from"], strict=True)],
        "samples [95% CI]": [
            f"> {_num(b)} (censored)" if math.isinf(p) and math.isfinite(b) else _ci(p, lo, hi)
            for p, lo, hi, b in zip(table["samples"], table["ci_low"], table["ci_high"], bound,
                                    strict=True)],
        "passes": table["passes"].map(_num),
        "grad. evals": [_num(p * s) if math.isfinite(p * s) else "-"
                        for p, s in zip(table["passes"].astype(float),
                                        table["samples"].astype(float), strict=True)],
        "ratio [95% CI]": [
            "1" if pr == "baseline" else (_ci(r, lo, hi) if pr else "-")
            for r, lo, hi, pr in zip(table["ratio"], table["ratio_low"], table["ratio_high"],
                                     table["pairing"], strict=True)],
        "baseline": table["baseline"],
        "pairing": table["pairing"],
        "reads": [reading(r) for _, r in table.iterrows()],
        "flags": table["flags"],
    })
    return out


#: The CSV export's columns: one number (or one short word) per cell.
CSV_COLUMNS = ["problem", "instance", "d", "eps", "algorithm", "view", "metric", "read_from",
               "selection", "samples", "bound", "ci_low", "ci_high", "passes", "grad_evals",
               "baseline", "ratio", "ratio_low", "ratio_high", "pairing", "reps", "flags"]


def csv_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison as a CSV takes it (issue 73, item 5): one row per algorithm and group,
    one number per cell, the absolute gradient evaluations (passes x samples) beside the passes,
    and the iterate rule as a short code (`SELECTION_CODES`), not a sentence on every row."""
    if not len(table):
        return pd.DataFrame(columns=CSV_COLUMNS)
    out = table.copy()
    with np.errstate(all="ignore"):
        out["grad_evals"] = out["passes"].astype(float) * out["samples"].astype(float)
    out["selection"] = out["selection"].map(selection_code)
    return out[CSV_COLUMNS]


def selection_notes(table: pd.DataFrame) -> list[str]:
    """Which iterate each view's rows read, once per distinct rule (the exported table's note)."""
    if not len(table):
        return []
    seen: dict[tuple[str, str], list[str]] = {}
    for view, rule, alg in zip(table["view"], table["selection"], table["algorithm"], strict=True):
        seen.setdefault((VIEW_SHORT.get(view, view), rule), []).append(str(alg))
    return [f"{view} ({', '.join(dict.fromkeys(algs))}): reads the {rule}"
            for (view, rule), algs in seen.items()]
