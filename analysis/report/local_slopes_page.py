"""The local slopes of every fit whose verdict rejects a test (issue 42, item 7; sixth
edition: slower / faster than claimed, slower / faster than its rules, exceeds its bound): for
each, the slopes between consecutive design points (medians) against x, the claim's slope, the
band its declared logs allow and the rules' own slope, so a reader sees whether the curve is
heading for the claim or away from it (`local_slopes_pages`)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.report.layout import panel_grid_pages
from analysis.verdict_engine.typed import REJECTED, kind_of

#: Rows per page (a 2 x 2 grid).
PER_PAGE = 4


def _remaining(claims: pd.DataFrame) -> pd.DataFrame:
    """Declared, in-regime rows whose verdict rejects a test (`typed.REJECTED`)."""
    if claims.empty or "verdict" not in claims:
        return claims.iloc[0:0]
    keep = claims["verdict"].astype(str).map(lambda v: kind_of(v) in REJECTED)
    if "regime" in claims:
        keep &= claims["regime"].astype(str) == "in regime"
    if "declared" in claims:
        keep &= claims["declared"].map(lambda v: str(v).lower() == "true" or v is True)
    return claims[keep]


def _panel(ax: plt.Axes, r: pd.Series) -> None:
    x = np.asarray(r.get("x_design") or (), float)
    y = np.asarray(r.get("y_design") or (), float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    x, y = x[ok], y[ok]
    title = f"{r['algorithm']} / {r.get('fit', '')} ({r.get('mode', '')}, {r['problem']})"
    ax.set_title("\n".join(textwrap.wrap(title, 48)), fontsize=7)
    if len(x) < 2:
        ax.text(0.5, 0.5, "fewer than two design points", ha="center", transform=ax.transAxes)
        return
    mid = np.sqrt(x[1:] * x[:-1])
    local = np.diff(np.log(y)) / np.diff(np.log(x))
    ax.semilogx(mid, local, "o-", color="C0", label="local slopes (medians)")
    p = float(r["predicted"])
    ax.axhline(p, color="k", lw=1, label=f"claim {p:.3g}")
    lo, hi = r.get("log_power_low"), r.get("log_power_high")
    rules = r.get("rules_predicted")
    if isinstance(rules, float) and math.isfinite(rules):
        ax.axhline(rules, color="C2", ls="--", lw=1, label=f"rules {rules:.3g}")
    ax.axhline(float(r["exponent"]), color="C3", ls=":", lw=1,
               label=f"secant {float(r['exponent']):.3g} [{float(r['ci_low']):.3g}, "
                     f"{float(r['ci_high']):.3g}]")
    if isinstance(lo, float) and math.isfinite(lo):
        ax.text(0.02, 0.02, f"log power share t in [{lo:.2g}, {float(hi):.2g}] (allowed [0, 1])",
                transform=ax.transAxes, fontsize=6)
    ax.set_xlabel(str(r.get("x", "x")), fontsize=7)
    ax.set_ylabel("local slope", fontsize=7)
    ax.tick_params(labelsize=6)
    ax.legend(fontsize=5.5, loc="best")
    reason = str(r.get("verdict_reason", ""))
    ax.text(0.5, -0.32, "\n".join(textwrap.wrap(f"{r['verdict']}: {reason}", 80)[:4]),
            transform=ax.transAxes, ha="center", va="top", fontsize=5.5)


def local_slopes_pages(pdf: PdfPages, claims: pd.DataFrame, figdir: Path | None = None) -> int:
    """Pages of local-slope panels for the rows that reject a test; returns how many rows
    were drawn. `figdir`: also one PNG per row, local_slopes_<algorithm>_<fit>_<mode>.png."""
    return panel_grid_pages(
        pdf, _remaining(claims), _panel,
        "Fits that read slower / faster than claimed: their local slopes", (8.5, 11),
        lambda r: f"local_slopes_{r['algorithm']}_{r.get('fit', '')}_{r.get('mode', '')}.png",
        figdir, PER_PAGE)
