"""The language-model experiment's results as seed 002 shows them (issue 74, item 5): a table of
validation and test perplexity per method and eps with 95% intervals over seeds (its Table 1's
shape), validation perplexity against the step per eps (its Figure 2's shape), and the paper's
qualitative claim as rows the measurement can decide.

The claim (seed 002, arXiv 2106.13756, "Training Private Language Models on WikiText-2": Pagan
beats the non-adaptive private methods at every eps) is judged per eps on the test perplexity
of the last iterate, over the seeds of each method's tuned setting: "Pagan below DP-SGD and
below Pasan" **holds** when both Welch 95% intervals of the mean difference (Pagan minus the
other) lie below 0, **fails** when either lies above 0, and is **undecided** otherwise; each row
states its resolution (the intervals' half-widths: a difference smaller than that could not be
seen) and that a run of this size is not the paper's (model, corpus, steps).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

METHOD_ORDER = ("sgd", "adagrad", "dp_sgd", "pasan", "pagan")
LABELS = {"sgd": "SGD (non-private)", "adagrad": "AdaGrad (non-private)", "dp_sgd": "DP-SGD",
          "pasan": "Pasan", "pagan": "Pagan"}


def tuned_runs(df: pd.DataFrame, tuned: dict) -> pd.DataFrame:
    """The runs at each method's tuned setting (every eps and seed)."""
    keep = [(r.method in tuned and r.lr_mult == tuned[r.method][0] and r.B == tuned[r.method][1])
            for r in df.itertuples()]
    return df[keep]


def _ci(values: np.ndarray) -> tuple[float, float, float]:
    v = values[np.isfinite(values)]
    if len(v) == 0:
        return math.nan, math.nan, math.nan
    m = float(v.mean())
    if len(v) < 2:
        return m, math.nan, math.nan
    h = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return m, m - h, m + h


def perplexity_table(tuned_df: pd.DataFrame) -> pd.DataFrame:
    """Table 1's shape: per method and eps, the tuned setting, seeds, and the mean validation
    and test perplexity of the last iterate with 95% t-intervals over the seeds."""
    rows = []
    for (m, eps), g in tuned_df.groupby(["method", "eps"]):
        ok = g[g["status"] == "ok"]
        val, test = _ci(ok["validation"].to_numpy()), _ci(ok["test"].to_numpy())
        rows.append({"method": m, "eps": eps, "lr_mult": g["lr_mult"].iloc[0], "B": g["B"].iloc[0],
                     "seeds": len(ok), "failed": len(g) - len(ok),
                     "validation": val[0], "validation_lo": val[1], "validation_hi": val[2],
                     "test": test[0], "test_lo": test[1], "test_hi": test[2],
                     "noise_multiplier": float(g["z"].iloc[0]),
                     "eps_moments_accountant": float(g["eps_rdp"].iloc[0])})
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    t["order"] = [METHOD_ORDER.index(m) for m in t["method"]]
    return t.sort_values(["order", "eps"]).drop(columns="order").reset_index(drop=True)


def welch_difference(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """(mean(a) - mean(b), its Welch 95% interval)."""
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan, math.nan
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    diff, se = float(a.mean() - b.mean()), math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff
    dof = (va + vb) ** 2 / ((va**2 / (len(a) - 1)) + (vb**2 / (len(b) - 1)))
    h = float(stats.t.ppf(0.975, dof) * se)
    return diff, diff - h, diff + h


def claim_rows(tuned_df: pd.DataFrame, eps_values=(0.5, 1.0, 3.0)) -> pd.DataFrame:
    """The paper's claim per eps (module docstring): holds / fails / undecided, with the two
    differences and their intervals."""
    rows = []
    ok = tuned_df[tuned_df["status"] == "ok"]
    for eps in eps_values:
        at = ok[ok["eps"] == eps]
        pagan = at[at["method"] == "pagan"]["test"].to_numpy()
        diffs = {o: welch_difference(pagan, at[at["method"] == o]["test"].to_numpy())
                 for o in ("dp_sgd", "pasan")}
        verdict = _verdict(diffs)
        row = {"claim": f"Pagan's test perplexity below DP-SGD's and Pasan's at eps {eps:g}",
               "eps": eps, "verdict": verdict}
        for o, (d, lo, hi) in diffs.items():
            row.update({f"pagan_minus_{o}": d, f"pagan_minus_{o}_lo": lo,
                        f"pagan_minus_{o}_hi": hi})
        row["resolution"] = max((hi - lo) / 2 for _, lo, hi in diffs.values()) \
            if all(math.isfinite(v[1]) for v in diffs.values()) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _verdict(diffs: dict) -> str:
    if any(not math.isfinite(lo) for _, lo, _ in diffs.values()):
        return "undecided (fewer than 2 finished seeds)"
    if any(lo > 0 for _, lo, _ in diffs.values()):
        return "fails"
    if all(hi < 0 for _, _, hi in diffs.values()):
        return "holds"
    return "undecided"


__all__ = ["LABELS", "METHOD_ORDER", "claim_rows", "perplexity_table", "tuned_runs",
           "welch_difference"]
