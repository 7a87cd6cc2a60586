"""How much of its rules' bound each run pays (issue 43, item 2; issue 42, item 1): per declared
fit row, measured / rules at the window's ends and its trend, the steps run against the rules'
horizon T, the rules' private share and the bound's measured constant against the claim at
constants 1 (`budget_use_page`)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.report.layout import table_figure
from analysis.verdict_engine.typed import share_source

PER_PAGE = 22


def _ends(text: object) -> str:
    """'first .. last' of a space-separated per-design-point column ('-' when empty)."""
    if not isinstance(text, str) or not text.strip():
        return "-"
    parts = text.split()
    return parts[0] if len(parts) == 1 else f"{parts[0]} .. {parts[-1]}"


def _num(v: object, fmt: str = ".3g") -> str:
    return format(float(v), fmt) if isinstance(v, (int, float)) and math.isfinite(float(v)) else "-"


def budget_use_table(claims: pd.DataFrame) -> pd.DataFrame:
    """The page's table: declared rows with a rules curve or a measured constant."""
    if claims.empty or "rules_ratio" not in claims:
        return pd.DataFrame()
    rows = claims
    if "declared" in rows:
        rows = rows[rows["declared"].map(lambda v: str(v).lower() == "true" or v is True)]
    out = pd.DataFrame({
        "algorithm": rows["algorithm"], "problem": rows["problem"],
        "fit": rows["fit"].astype(str) + " (" + rows["mode"].astype(str) + ")",
        "measured / rules": rows["rules_ratio"].map(_ends),
        "trend": rows["rules_ratio_trend"].map(lambda v: _num(v, "+.2f")),
        "steps / T": rows.get("steps_per_horizon", pd.Series("", index=rows.index)).map(_ends),
        # the share the gate read: measured (m) from eps = inf controls, else the rules' (r)
        "private share": [_num(v, ".2f") + {"measured": " m", "rules": " r"}.get(share_source(m, src), "")
                          for v, m, src in zip(rows["private_share"],
                                               rows.get("private_share_measured",
                                                        pd.Series(None, index=rows.index, dtype=object)),
                                               rows.get("private_share_source",
                                                        pd.Series("", index=rows.index)), strict=True)],
        "C vs claim": rows["bound_constant"].map(_num),
    })
    keep = (out["measured / rules"] != "-") | (out["C vs claim"] != "-")
    return out[keep].reset_index(drop=True)


def budget_use_page(pdf: PdfPages, claims: pd.DataFrame) -> None:
    """Pages of `budget_use_table` (none when no row has a rules curve or a constant)."""
    table = budget_use_table(claims)
    for start in range(0, len(table), PER_PAGE):
        chunk = table.iloc[start:start + PER_PAGE]
        fig = table_figure("Budget use: measured against the rules' own bound", chunk,
                           [0.02, 0.14, 0.96, 0.76], fontsize=6.8, row_scale=1.25)
        fig.text(0.04, 0.10, "measured / rules: the median n* (samples to target) or error over "
                 "the bound the algorithm's own parameter rules configure at that point (knobs at "
                 "1, logs and constants included), at the window's two ends; trend: slope of its "
                 "log on log x (0: the curve follows its rules).\nsteps / T: steps run over the "
                 "rules' horizon. private share: median over the window of the private part of "
                 "the error, measured (m: 1 - eps = inf control / median) where controls exist, "
                 "else the rules' bound's split (r); the gate needs >= 0.9. C vs claim: max over "
                 "the window of measured / claim at constants 1.", fontsize=7, va="top", wrap=True)
        pdf.savefig(fig)
        plt.close(fig)
