"""One verdict per claim (issue 42, item 5): where several fits measure one claim (against
alpha, eps, d, rank, or at several eps), each fit's verdict is kept and the claim gets one
(`claim_verdicts`).

The fits test one exponent: a claim (sqrt(d)/(n eps))^a predicts every fit's slope as a known
multiple of a (alpha -> -1/a, eps -> -1 or -a, d -> a/2 or 1/2, ...), so each in-regime fit's
slope over its prediction, r_i = s_i / p_i, estimates the same ratio 1. They are combined by
inverse variance (each fit's CI half-width / 1.96 as its standard error; fits on different
cells are independent):

- every in-regime fit agrees (consistent, follows its rules whose asymptote is the claim, not
  refuted by the O~ claim): the claim reads the weakest of those;
- a fit whose own bound or rules test is rejected (sixth edition: exceeds its bound, slower /
  faster than its rules) is a failed primary test, which the pooled slope cannot undo: the claim
  reads that fit's verdict (the first such fit; where they disagree in direction,
  "inconclusive: fits disagree");
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

from analysis.verdict_engine import typed
from analysis.verdict_engine.typed import VerdictKind

#: Verdict kinds that say the data agree with the claim, strongest first (a claim reads the
#: weakest of its fits').
AGREEING = typed.AGREEING
#: Kinds of a failed primary test (the bound, the rules).
PRIMARY_REJECTED = (VerdictKind.EXCEEDS_BOUND, VerdictKind.RULES_SLOWER, VerdictKind.RULES_FASTER)
CLAIM_REJECTED = (VerdictKind.CLAIM_SLOWER, VerdictKind.CLAIM_FASTER)


def _kind(row: pd.Series) -> VerdictKind | None:
    """A fit row's verdict kind: its `verdict_kind` column, else read from an older CSV's text."""
    k = row.get("verdict_kind", "")
    if isinstance(k, str) and k:
        return VerdictKind(k)
    return typed.kind_of(str(row.get("verdict", "")))
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
    kinds = [_kind(r) for _, r in rows.iterrows()]
    keep = [k in AGREEING or k in CLAIM_REJECTED or k in PRIMARY_REJECTED for k in kinds]
    judged = rows[keep]
    kinds = [k for k, ok in zip(kinds, keep, strict=True) if ok]
    out: dict[str, object] = {"claim_fits": labels, "claim_ratio": math.nan,
                              "claim_ratio_low": math.nan, "claim_ratio_high": math.nan}
    if judged.empty:
        out["claim_verdict"] = ""
        return out
    if len(judged) == 1:
        out["claim_verdict"] = str(judged["verdict"].iloc[0])
        return out
    verdicts = [str(v) for v in judged["verdict"]]
    if all(k in AGREEING for k in kinds):
        out["claim_verdict"] = max(zip(verdicts, kinds, strict=True),
                                   key=lambda vk: AGREEING.index(vk[1]))[0]
        return out
    primary = [(v, k) for v, k in zip(verdicts, kinds, strict=True) if k in PRIMARY_REJECTED]
    if primary:
        sides = {typed.DIRECTION.get(k, "exceeds") for _, k in primary}
        out["claim_verdict"] = primary[0][0] if len(sides) == 1 else "inconclusive: fits disagree"
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
    directions = {typed.DIRECTION[k] for k in kinds if k in CLAIM_REJECTED}
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
