"""Old verdict -> new verdict per fit row between two editions of the claims CSV (issue 42,
item 7): `verdict_changes` matches rows on (spec, fit, mode, algorithm, problem, where, eps,
d) and says why each verdict moved, from the part of the engine that moved it;
`changes_markdown` renders the table for reports/.
"""

from __future__ import annotations

import math

import pandas as pd

KEYS = ("spec", "fit", "mode", "algorithm", "problem", "where", "eps", "d")

#: Why a row's verdict moved, by its new verdict (the engine's order, analysis.verdict_engine.
#: decide).
WHY = {
    "consistent": "the seeds' CI lies within the declared margin m of the claim's slope",
    "follows its rules, whose asymptote is the claim": "the residual slope against the "
        "algorithm's own rules is within +-m and the rules' local slope tends to the claim",
    "follows its rules, whose asymptote is not the claim": "the curve follows its rules, but "
        "the rules' local slope does not tend to the claimed exponent",
    "not refuted by the O~ claim": "the CI meets the claim's band (its declared logs, +-m) "
        "but the rules test does not decide it",
    "the O~ claim is untestable on this window": "the O~ band accepts the rival claim too (or "
        "is wider than the gap to it) and the rules test does not decide it",
    "approaches its bound from below": "the local slopes extrapolate to the claim's within m",
    "design too short": "fewer than 5 design points or under 1.5 decades",
    "not in regime": "the regime gate (ceiling, floor or the private share below 0.9)",
    "inconclusive": "no CI to read",
    "no claim": "the algorithm declares no claim on this metric",
}


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
        base = after.split(" (joint")[0].split(" (accepts")[0]
        why = WHY.get(base, "")
        if "even with logs" in after:
            why = "the CI clears the claim's band (its declared logs, +-m)"
        elif "than claimed" in after:
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
