"""Old verdict -> new verdict per fit row between two editions of the claims CSV (issue 42,
item 7): `verdict_changes` matches rows on (spec, fit, mode, algorithm, problem, where, eps,
d) and says why each verdict moved, from the part of the engine that moved it;
`changes_markdown` renders the table for reports/.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.verdict_engine.typed import MEANING, VerdictKind, kind_of

KEYS = ("spec", "fit", "mode", "algorithm", "problem", "where", "eps", "d")

#: Why a row's verdict moved, by its new verdict's kind (the engine's order,
#: analysis.verdict_engine.verdict_rule).
WHY = {k.value: v for k, v in MEANING.items()}


def _key(r: pd.Series) -> tuple:
    out = []
    for k in KEYS:
        v = r.get(k, "")
        if isinstance(v, float):
            v = "" if math.isnan(v) else f"{v:g}"
        out.append(str(v))
    return tuple(out)


def verdict_changes(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per fit row of `new` (declared rows where the CSV marks them): its old verdict
    ("-" where the old edition had no such row), new verdict, whether it moved, and why."""
    def declared(df: pd.DataFrame) -> pd.DataFrame:
        if "declared" not in df:
            return df
        return df[df["declared"].map(lambda v: str(v).strip().lower() == "true")]

    old_by = {_key(r): r for _, r in declared(old).iterrows()}
    rows = []
    for _, r in declared(new).iterrows():
        o = old_by.get(_key(r))
        before = str(o["verdict"]) if o is not None else "-"
        after = str(r["verdict"])
        k = r.get("verdict_kind", "")
        kind = VerdictKind(k) if isinstance(k, str) and k else kind_of(after.split(" (joint")[0])
        why = MEANING.get(kind, "") if kind is not None else ""
        if kind in (VerdictKind.CLAIM_SLOWER, VerdictKind.CLAIM_FASTER) \
                and "even with logs" not in after:
            why = "the CI clears the claim's slope by more than m (no declared log moves here)"
        reason = r.get("verdict_reason", "")
        reason = "" if not isinstance(reason, str) else reason
        rows.append({"algorithm": r["algorithm"], "problem": r["problem"],
                     "fit": f"{r.get('spec', '')}/{r.get('fit', '')} ({r.get('mode', '')})",
                     "old verdict": before, "new verdict": after,
                     "moved": before != after, "why": why if before != after else "",
                     "detail": reason})
    return pd.DataFrame(rows)


def changes_markdown(changes: pd.DataFrame) -> str:
    """The table as markdown, moved rows first, with a count line."""
    if changes.empty:
        return "No fit rows.\n"
    moved = changes.sort_values("moved", ascending=False, kind="stable")
    n_moved = int(changes["moved"].sum())
    lines = [f"{n_moved} of {len(changes)} declared fit rows changed verdict.", "",
             "| algorithm | problem | fit | old verdict | new verdict | why | detail |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for _, r in moved.iterrows():
        cells = [str(r[c]).replace("|", "\\|") for c in ("algorithm", "problem", "fit", "old verdict",
                                                         "new verdict", "why", "detail")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
