"""The claim link on data (issue 70, item 3): for every fit whose design spans two decades or
more (`analysis.verdict_engine.measured_link`), its measured local slopes with their CIs beside
the algorithm's own rules' local-slope profile, drawn from the window's top to six decades past
its deep end (the Gaussian Spider's steepening to ~-2.66 included), the claim with its margin m,
the rival claim, and the deepest decade's slope with its CI: whether the measured curve itself
reaches the claim, and where the rules say it would.

`claim_link_pages` draws a 2 x 2 grid a page; the main report draws the rows over alpha (the
headline's, `alpha_only`), the appendix every row with a measured link.
"""

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

#: Panels a page (2 x 2).
PER_PAGE = 4


def _parse(text: object) -> list[tuple[float, ...]]:
    """The "x:s[lo,hi]" / "x:s" items of a link column as tuples of floats."""
    out: list[tuple[float, ...]] = []
    if not isinstance(text, str) or not text.strip():
        return out
    for item in text.split():
        x, _, rest = item.partition(":")
        s, _, ci = rest.partition("[")
        vals = [float(x), float(s)]
        if ci:
            lo, _, hi = ci.rstrip("]").partition(",")
            vals += [float(lo), float(hi)]
        out.append(tuple(vals))
    return out


def linked_rows(claims: pd.DataFrame, alpha_only: bool = False) -> pd.DataFrame:
    """The rows with a measured claim link (a `link_local` profile); `alpha_only`: the
    headline's, samples to alpha on a hard instance."""
    if claims.empty or "link_local" not in claims:
        return claims.iloc[0:0]
    keep = claims["link_local"].map(lambda v: isinstance(v, str) and bool(v.strip()))
    keep &= pd.to_numeric(claims["predicted"], errors="coerce").notna()
    if alpha_only:
        keep &= claims["x"].astype(str) == "alpha"
        if "character" in claims:
            keep &= claims["character"].astype(str) == "hard"
    return claims[keep]


def _panel(ax: plt.Axes, r: pd.Series) -> None:
    p, m = float(r["predicted"]), float(r.get("margin", math.nan))
    local = _parse(r.get("link_local"))
    prof = _parse(r.get("rules_profile"))
    eps = r.get("eps")
    title = (f"{r['algorithm']} / {r.get('fit', '')} ({r['problem']}"
             + (f", eps {float(eps):g}" if isinstance(eps, float) and math.isfinite(eps) else "")
             + ")")
    ax.set_title("\n".join(textwrap.wrap(title, 52)), fontsize=7)
    if prof:
        px, ps = np.array([q[0] for q in prof]), np.array([q[1] for q in prof])
        ax.semilogx(px, ps, "-", color="C2", lw=1, label="rules' local slope (knobs at 1)")
    if local:
        lx = np.array([q[0] for q in local])
        ls = np.array([q[1] for q in local])
        lo = np.array([q[2] for q in local])
        hi = np.array([q[3] for q in local])
        ax.errorbar(lx, ls, yerr=[np.maximum(ls - lo, 0), np.maximum(hi - ls, 0)], fmt="o",
                    ms=3, color="C0", capsize=2, lw=0.8,
                    label="measured local slopes (half-decades, 95% CI)")
        ax.set_xscale("log")
    if math.isfinite(m):
        ax.axhspan(p - m, p + m, color="0.85", zorder=0, label=f"claim {p:.3g} +- m {m:.2g}")
    ax.axhline(p, color="k", lw=1)
    rival = pd.to_numeric(pd.Series([r.get("rival_predicted")]), errors="coerce").iloc[0]
    if math.isfinite(rival):
        ax.axhline(rival, color="C3", ls=":", lw=1, label=f"rival claim {rival:.3g}")
    a, b = float(r.get("link_deep_from", math.nan)), float(r.get("link_deep_to", math.nan))
    s = float(r.get("link_deep", math.nan))
    if all(math.isfinite(v) for v in (a, b, s)):
        dlo, dhi = float(r["link_deep_low"]), float(r["link_deep_high"])
        ax.fill_between([a, b], [dlo, dlo], [dhi, dhi], color="C1", alpha=0.35,
                        label=f"deepest decade {s:.3f} [{dlo:.3f}, {dhi:.3f}]")
    ax.set_xlabel(str(r.get("x", "x")), fontsize=7)
    ax.set_ylabel("local slope", fontsize=7)
    ax.tick_params(labelsize=6)
    ax.legend(fontsize=5.5, loc="best")
    # under the x label, wherever its tick labels put it (at a fixed -0.2 it overlapped them)
    ax.annotate("\n".join(textwrap.wrap(f"{r['verdict']}. {r.get('claim_link', '')}", 95)[:6]),
                xy=(0.5, 0), xycoords=ax.xaxis.label, xytext=(0, -2),
                textcoords="offset points", ha="center", va="top", fontsize=5.5)


def claim_link_pages(pdf: PdfPages, claims: pd.DataFrame, alpha_only: bool = False,
                     figdir: Path | None = None,
                     calibrations: dict[str, str] | None = None) -> int:
    """Pages of claim-link panels (module docstring); returns how many rows were drawn.
    `figdir`: also one PNG per row, claim_link_<algorithm>_<fit>_<group_index>.png.
    `calibrations`: spec -> calibration; with it the title names the calibration of the rows'
    stores and which n* they count (the main report's figures, issue 73, item 2)."""
    from analysis.report.equal_privacy_panel import figure_caption

    rows = linked_rows(claims, alpha_only)
    caption = ("\n" + figure_caption([calibrations.get(str(s), "?") for s in rows["spec"]])
               if calibrations is not None and "spec" in rows else "")
    return panel_grid_pages(
        pdf, rows, _panel,
        "The claim link on data: measured local slopes (95% CIs over the seeds) beside the "
        "rules' own profile, the claim +- m and the rival" + caption, (11.69, 8.27),
        lambda r: f"claim_link_{r['algorithm']}_{r.get('fit', '')}_{r.get('group_index', 0)}.png",
        figdir, PER_PAGE, rect=(0, 0.02, 1, 0.95), h_pad=7, png_size=(6, 4.5))


__all__ = ["claim_link_pages", "linked_rows"]
