"""The headline's leading panel (issue 73, item 2): the two Spiders at equal privacy (tight
calibration, each spending all of its eps), as the crossover alpha* against eps at d 10 on each
hard instance, from reports/crossovers.csv's law rows (knobs at 1). Below a line the adaptive
tree Spider needs fewer samples to reach alpha, above it the Gaussian Spider; n* is the oracle's
first hitting time, as in every panel beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

#: The crossovers' rows at the Spiders' own constants (`headline_page.CENTRAL_CONSTANTS`).
_CENTRAL = ("knobs at 1", "defaults")
#: The d at which the panel draws alpha* against eps (the law's eps sweep).
PANEL_D = 10
#: What every figure of the main report names (issue 73, item 2).
TIGHT = "tight calibration (equal privacy: each Spider spends all of its eps)"
THEORY = "theory calibration (the papers' noise formulas: unequal spend)"
ORACLE_N = "n*: the oracle's first hitting time"


def figure_caption(calibrations: list[str]) -> str:
    """The line a figure of the main report carries (issue 73, item 2): the calibrations of the
    stores it draws and which n* it counts."""
    what = {"tight": TIGHT, "theory": THEORY}
    cals = "; ".join(what.get(c, f"{c} calibration") for c in sorted(set(calibrations)))
    return f"Calibration: {cals or 'not recorded'}. {ORACLE_N} (samples to target)."


def atlas_caption(datas: list[Any], atlas: pd.DataFrame) -> str:
    """The atlas maps' line: each calibration with the algorithms whose cells it drew (the maps
    join stores: the empirical Spider's are tight, the headline's Spiders' theory), and n*."""
    shown = set(atlas["algorithm"]) if "algorithm" in atlas else set()
    by_cal: dict[str, set[str]] = {}
    for d in datas:
        if len(d.cells) and "algorithm" in d.cells:
            by_cal.setdefault(d.spec.calibration, set()).update(
                set(d.cells["algorithm"]) & shown)
    what = {"tight": TIGHT, "theory": THEORY}
    parts = [f"{what.get(c, c + ' calibration')} for {', '.join(sorted(a))}"
             for c, a in sorted(by_cal.items()) if a]
    return f"Calibration: {'; '.join(parts) or 'not recorded'}. {ORACLE_N} (samples to target)."


def equal_privacy_rows(crossovers: pd.DataFrame | None) -> pd.DataFrame:
    """The crossovers the panel draws: tight calibration, knobs at 1, d = PANEL_D, a finite
    alpha* with its CI, at least two eps per instance."""
    if crossovers is None or not len(crossovers) or "alpha_star" not in crossovers:
        return pd.DataFrame()
    c = crossovers[crossovers["constants"].isin(_CENTRAL)
                   & crossovers["source"].astype(str).str.contains("(tight)", regex=False)
                   & (crossovers["d"] == PANEL_D)]
    c = c[np.isfinite(c["alpha_star"].astype(float))].drop_duplicates(["problem", "eps"])
    keep = c.groupby("problem")["eps"].transform("nunique") >= 2
    return c[keep].sort_values(["problem", "eps"])


def draw_equal_privacy(ax: Any, rows: pd.DataFrame) -> None:
    """alpha* [95% CI] against eps per instance, log-log: a crossover inside its bracket of
    paired targets filled and joined, one outside it (an extrapolation) hollow; the caption
    says who wins where. One tick label per eps, none between (no overlapping labels)."""
    from matplotlib.ticker import FixedLocator, LogLocator, NullFormatter, NullLocator

    for k, (problem, g) in enumerate(rows.groupby("problem", sort=True)):
        colour, marker = ("#444444", "#8c6d31")[k % 2], "os"[k % 2]
        a = g["alpha_star"].astype(float).to_numpy()
        err = np.array([a - g["ci_low"].astype(float).to_numpy(),
                        g["ci_high"].astype(float).to_numpy() - a])
        inside = (g["where"] == "inside").to_numpy()
        ax.errorbar(g["eps"][inside], a[inside], yerr=err[:, inside], marker=marker, capsize=2,
                    linewidth=1.2, color=colour, label=f"{problem}: alpha*")
        if (~inside).any():
            ax.errorbar(g["eps"][~inside], a[~inside], yerr=err[:, ~inside], marker=marker,
                        capsize=2, linestyle="none", color=colour, markerfacecolor="white",
                        label=f"{problem}: outside its targets")
    ax.set_xscale("log")
    ax.set_yscale("log")
    eps = sorted(rows["eps"].astype(float).unique())
    ax.xaxis.set_major_locator(FixedLocator(eps))
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("eps (d 10)", fontsize=8)
    ax.set_ylabel("crossover alpha*", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.set_title(f"Equal privacy: {TIGHT.split(' (')[0]}\n(each spends all of its eps; knobs "
                 f"at 1)\n{ORACLE_N}", fontsize=8)
    ax.legend(fontsize=5.5, loc="upper left")
    ax.text(0.03, 0.03, "below a line: the adaptive\ntree Spider needs fewer\nsamples; above: "
            "the\nGaussian Spider", transform=ax.transAxes, fontsize=5.5, ha="left",
            va="bottom")
