"""One verdict per claim (issue 42, item 5): where several fits measure one claim (against
alpha, eps, d, rank, or at several eps), each fit's verdict is kept and the claim gets one
(`claim_verdicts`).

The fits test one exponent: a claim (sqrt(d)/(n eps))^a predicts every fit's slope as a known
multiple of a (alpha -> -1/a, eps -> -1 or -a, d -> a/2 or 1/2, ...), so each in-regime fit's
slope over its prediction, r_i = s_i / p_i, estimates the same ratio 1. They are combined by
inverse variance (each fit's CI half-width / 1.96 as its standard error; fits on different
cells are independent):

- every in-regime fit agrees (consistent, follows its rules whose asymptote is the claim, not
  refuted by the O~ claim, approaches its bound): the claim reads the weakest of those;
- otherwise the joint ratio decides: its CI covers 1 -> "consistent (joint over k fits)"; it
  excludes 1 and the "than claimed" fits agree in direction -> that direction (joint); they
  disagree -> "inconclusive: fits disagree";
- fits with a zero prediction (a polylog claim's d fit) keep their own verdict and are not
  pooled; a single in-regime fit decides alone.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.verdict_engine.claim_test import CONSISTENT, NOT_REFUTED
from analysis.verdict_engine.decide import APPROACHES, FOLLOWS_CHAIN

#: Verdicts that say the data agree with the claim, strongest first (a claim reads the weakest
#: of its fits'). A verdict may carry its acceptance range after the name ("not refuted by the
#: O~ claim (accepts a..b)"): it is read by its name (`_name`).
AGREEING = (CONSISTENT, FOLLOWS_CHAIN, NOT_REFUTED, APPROACHES)


def _name(verdict: str) -> str:
    """A verdict's name without its acceptance range."""
    return verdict.split(" (accepts")[0]
Z95 = 1.959963984540054


def _declared(df: pd.DataFrame) -> pd.Series:
    if "declared" not in df:
        return pd.Series(True, index=df.index)
    return df["declared"].map(lambda v: str(v).strip().lower() == "true" if isinstance(v, str)
                              else bool(v) if v is not None and not (isinstance(v, float) and math.isnan(v))
                              else False)


def _fit_label(r: pd.Series) -> str:
    at = f" eps {float(r['eps']):g}" if "eps" in r and isinstance(r["eps"], (int, float)) \
        and math.isfinite(r["eps"]) and r.get("x") != "eps" else ""
    return f"{r.get('fit', '')} (x = {r.get('x', '')}{at}): {r.get('verdict', '')}"


def combine(rows: pd.DataFrame) -> dict[str, object]:
    """The claim's verdict from its in-regime fit rows (module docstring)."""
    labels = "; ".join(_fit_label(r) for _, r in rows.iterrows())
    judged = rows[rows["verdict"].astype(str).map(
        lambda v: _name(v) in AGREEING or "than claimed" in v)]
    out: dict[str, object] = {"claim_fits": labels, "claim_ratio": math.nan,
                              "claim_ratio_low": math.nan, "claim_ratio_high": math.nan}
    if judged.empty:
        out["claim_verdict"] = ""
        return out
    if len(judged) == 1:
        out["claim_verdict"] = str(judged["verdict"].iloc[0])
        return out
    verdicts = [str(v) for v in judged["verdict"]]
    if all(_name(v) in AGREEING for v in verdicts):
        out["claim_verdict"] = max(verdicts, key=lambda v: AGREEING.index(_name(v)))
        return out
    pooled = judged[judged["predicted"].astype(float).abs() > 1e-12]
    r, w = [], []
    for _, f in pooled.iterrows():
        p = float(f["predicted"])
        lo, hi = sorted((float(f["ci_low"]) / p, float(f["ci_high"]) / p))
        se = (hi - lo) / (2 * Z95)
        if se > 0 and math.isfinite(se):
            r.append(float(f["exponent"]) / p)
            w.append(1 / se ** 2)
    directions = {v.split(" than claimed")[0] for v in verdicts if "than claimed" in v}
    if len(r) >= 2:
        est = float(np.dot(r, w) / np.sum(w))
        se = 1 / math.sqrt(float(np.sum(w)))
        out.update(claim_ratio=est, claim_ratio_low=est - Z95 * se, claim_ratio_high=est + Z95 * se)
        if est - Z95 * se <= 1 <= est + Z95 * se:
            out["claim_verdict"] = f"consistent (joint over {len(r)} fits)"
            return out
    if len(directions) == 1:
        out["claim_verdict"] = f"{directions.pop()} than claimed (joint over {len(judged)} fits)"
    else:
        out["claim_verdict"] = "inconclusive: fits disagree"
    return out


def claim_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """`table` (a claims table) with claim_verdict, claim_fits and the joint ratio (claim_ratio
    and its CI) on every declared row of each (algorithm, metric, problem), from its declared
    in-regime rows."""
    if table.empty or "verdict" not in table:
        return table
    out = table.copy()
    for col in ("claim_verdict", "claim_fits"):
        out[col] = ""
    for col in ("claim_ratio", "claim_ratio_low", "claim_ratio_high"):
        out[col] = math.nan
    declared = _declared(out)
    in_regime = out.get("regime", pd.Series("in regime", index=out.index)).astype(str) == "in regime"
    keys = ["algorithm", "metric", "problem"]
    for _, idx in out[declared].groupby(keys, dropna=False).groups.items():
        rows = out.loc[idx]
        res = combine(rows[in_regime.loc[idx]])
        for col, v in res.items():
            out.loc[idx, col] = v
    return out
