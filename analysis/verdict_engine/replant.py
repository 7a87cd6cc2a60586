"""Replant a claims row from its committed points (issue 70, item 6): the engine's path of
`run_fit` for one group, from the points of `analysis.fit_points_export` instead of a store, and
the tilts of the row's curve its verdict band is defined on (`tilt`).

    from analysis.verdict_engine.replant import judge, row_points, tilt
    pts = row_points(points, row)                        # the row's runs
    out = judge(tilt(pts, -2.3, row["exponent"]), row)   # its verdict were its slope -2.3

The fit draws its bootstrap from the row's own generator (`run_fit`'s [seed, group_index]), so
the committed row's exponent and CI come back exactly from its points (tested), and a tilted
curve is read with the same resamples. No eps = inf controls: the privacy-share gate is not
replayed (`judge` returns the verdict before the regime gate).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from algorithms import get_algorithm
from analysis.verdict_engine.decide import decide
from analysis.verdict_engine.design import design_from_points
from analysis.verdict_engine.predictions import matching_claim
from analysis.verdict_engine.rates import N_BOOT
from analysis.verdict_engine.rules_curve import rules_curve


def row_points(points: pd.DataFrame, row: pd.Series | dict[str, Any]) -> pd.DataFrame:
    """The runs of one claims-CSV row (its spec, fit, mode, algorithm and group_index)."""
    mask = np.ones(len(points), bool)
    for k in ("spec", "fit", "mode", "algorithm"):
        mask &= points[k].astype(str).to_numpy() == str(row[k])
    mask &= points["group_index"].to_numpy(int) == int(row["group_index"])
    return points[mask].reset_index(drop=True)


def tilt(pts: pd.DataFrame, slope: float, est: float) -> pd.DataFrame:
    """The runs with every run at design point x multiplied by (x / x_c)^(slope - est), x_c the
    design's geometric centre: the row's curve tilted from its fitted slope `est` to `slope`,
    its seeds, spread and bend kept (`verdict_rule`'s band is defined on these). x_c is taken
    over the design points the engine keeps (a finite median), as the engine's own tilt is.
    Censored runs stay censored."""
    lx = np.log(pts["x"].to_numpy(float))
    centre = float(np.mean(np.log(design_from_points(pts).x)))
    return pts.assign(y=pts["y"].to_numpy(float) * np.exp((float(slope) - float(est)) * (lx - centre)))


def judge(pts: pd.DataFrame, row: pd.Series | dict[str, Any], n_boot: int = N_BOOT,
          seed: int = 0) -> dict[str, Any]:
    """The engine's columns for the row's group on `pts` (module docstring): the fit with the
    row's generator, its design, the algorithm's rules and `decide`."""
    from analysis.claims import fit_group

    view, x_name, mode = str(row["view"]), str(row["x"]), str(row["mode"])
    calibration = str(pts["calibration"].iloc[0]) if "calibration" in pts else "theory"
    rng = np.random.default_rng([seed, int(row["group_index"])])
    res = fit_group(pts, view, mode, {}, x_name, "y", None, n_boot, rng)
    design = design_from_points(pts, res.chosen if view == "sample_complexity" or mode == "tuned"
                                else None, x_name)
    rules = rules_curve(design, view, calibration) if len(design) else None
    predicted = row.get("predicted", math.nan)
    rival = row.get("rival_predicted", math.nan)
    out = {**res.row(), "predicted": float(predicted), "view": view, "x": x_name, "verdict": "",
           "flags": "", "rival_predicted": float(rival) if pd.notna(rival) else math.nan}
    claim = matching_claim(get_algorithm(str(row["algorithm"])), str(row["metric"]))
    out.update(decide(out, design, claim, rules, rng, calibration, None))
    return out


__all__ = ["judge", "row_points", "tilt"]
