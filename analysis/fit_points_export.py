"""Every declared fit's points, compact (issue 70, item 6): what anyone needs to replant a row of
the claims CSV without its store.

One row per run inside a fit's window, in the fit's declared mode: the row's key in the claims
CSV (spec, fit, mode, algorithm, group_index: the fit's group as `run_fit` numbers it), its
design point x, the seed `rep`, the measured y (inf: censored, the run never reached its
target), the knob setting `combo`, and the context the engine evaluates the algorithm's rules
at (problem, instance_params, d, eps, delta, n, alpha, n_steps), plus the fit's view, x scale
and the spec's calibration. `tests/test_planted_bands.py` plants pure power laws on these points
through the engine and checks every row's stated verdict band.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.declarations import StoreData
from analysis.points import fit_points_table, group_columns

#: The key of a claims-CSV row (with `group_index`, unique per spec, fit and mode).
KEY = ["spec", "fit", "mode", "algorithm", "group_index"]
#: What the engine reads at each point.
POINT = ["x", "rep", "y", "combo", "problem", "instance_params", "d", "eps", "delta", "n",
         "alpha", "n_steps"]
FIT = ["view", "x_name", "calibration"]


def fit_points_export(data: StoreData) -> pd.DataFrame:
    """The points of every declared fit of one store (module docstring), in `run_fit`'s group
    order."""
    frames = []
    for fit in data.spec.fits:
        pts = fit_points_table(data, fit, fit.mode)
        if pts.empty:
            continue
        pts = pts[(pts["x"] >= fit.window[0] * (1 - 1e-9)) & (pts["x"] <= fit.window[1] * (1 + 1e-9))]
        by = group_columns(fit)
        for k, (_key, sub) in enumerate(pts.groupby(by, dropna=False, sort=True)):
            part = sub[[c for c in POINT if c in sub]].copy()
            part["y"] = np.where(np.isnan(part["y"].to_numpy(float)), np.inf, part["y"])
            part.insert(0, "group_index", k)
            part.insert(0, "algorithm", sub["algorithm"].to_numpy())
            part.insert(0, "mode", fit.mode)
            part.insert(0, "fit", fit.name)
            part.insert(0, "spec", data.spec.name)
            part = part.assign(view=fit.view, x_name=fit.x, calibration=data.spec.calibration)
            frames.append(part)
    if not frames:
        return pd.DataFrame(columns=[*KEY, *POINT, *FIT])
    return pd.concat(frames, ignore_index=True)


def write_fit_points(stores: list[StoreData], path: str) -> int:
    """All stores' fit points to one CSV (floats to 10 significant digits); the row count. The
    runs keep `run_fit`'s order within a group: its bootstrap draws seeds by position, so a
    replant with the row's generator draws the same resamples."""
    table = pd.concat([fit_points_export(d) for d in stores], ignore_index=True)
    table.to_csv(path, index=False, float_format="%.10g")
    return len(table)


__all__ = ["FIT", "KEY", "POINT", "fit_points_export", "write_fit_points"]
