"""The headline's own design as a test fixture (issue 55: verdict rules are checked by planting
curves on the real design, with its real residuals).

`tests/data/headline2_design.csv` holds the theory-mode points of `headline2`'s declared fit
(valley_n_star_vs_alpha: hard_valley, d 10, eps 0.1, both Spiders, 10 seeds, targets 0.0028 ..
0.09): per point x (the target alpha), rep, y (n*) and the context the engine reads. It is made
from a store of the spec by

    python -m tests.headline_fixture results/headline2.sqlite

`planted(alg, slope)` keeps the design and each seed's residual about the measured curve and
replaces the curve by a pure power law (or by any curve, `planted_curve`): the planted data
have the headline's noise, censoring pattern aside (the fixture's points are all finite).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

PATH = Path(__file__).parent / "data" / "headline2_design.csv"
KEEP = ["algorithm", "x", "rep", "y", "combo", "problem", "instance_params", "d", "eps", "delta",
        "n", "alpha", "n_steps"]


def load(algorithm: str) -> pd.DataFrame:
    """The fixture's points of one algorithm."""
    df = pd.read_csv(PATH)
    return df[df["algorithm"] == algorithm].reset_index(drop=True)


def residuals(pts: pd.DataFrame) -> np.ndarray:
    """Each point's log y minus the OLS line of log y on log x (the measured curve's shape
    removed, its seed-to-seed noise kept)."""
    lx, ly = np.log(pts["x"].to_numpy(float)), np.log(pts["y"].to_numpy(float))
    slope, icpt = np.polyfit(lx, ly, 1)
    return ly - (icpt + slope * lx)


def planted_curve(algorithm: str, log_curve: np.ndarray | None = None,
                  slope: float | None = None) -> pd.DataFrame:
    """The fixture with y = exp(curve(x) + residual): `log_curve` per row, or a pure power law
    of `slope` through the measured curve's level at the window's centre."""
    pts = load(algorithm)
    lx = np.log(pts["x"].to_numpy(float))
    res = residuals(pts)
    if log_curve is None:
        ly = np.log(pts["y"].to_numpy(float))
        centre = float(np.mean(lx))
        level = float(np.mean(ly - res))  # the line's value at the mean log x
        log_curve = level + float(slope) * (lx - centre)
    return pts.assign(y=np.exp(np.asarray(log_curve, float) + res))


def main(store: str) -> None:
    from analysis.points import fit_points_table
    from bench.store import open_store_data

    data = open_store_data(store)
    fit = next(f for f in data.spec.fits if f.name == "valley_n_star_vs_alpha")
    pts = fit_points_table(data, fit, "theory")
    pts = pts[(pts["x"] >= fit.window[0] * (1 - 1e-9)) & (pts["x"] <= fit.window[1] * (1 + 1e-9))]
    pts = pts[np.isfinite(pts["y"].to_numpy(float))]
    PATH.parent.mkdir(exist_ok=True)
    pts[KEEP].sort_values(["algorithm", "x", "rep"]).to_csv(PATH, index=False, float_format="%.10g")
    print(f"wrote {PATH} ({len(pts)} points)")


if __name__ == "__main__":
    main(sys.argv[1])
