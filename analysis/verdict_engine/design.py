"""The measured curve of one fit group per design point (`Design`): the seeds' values at each x
(censored runs as inf), their Harrell-Davis medians, and the context the other parts evaluate
there (n, d, eps, delta, the target or achieved alpha, the median number of steps run)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.verdict_engine.envelope import hd_median

#: Context columns carried per design point (first row of the point, or the median of n_steps).
CONTEXT = ("algorithm", "problem", "instance_params", "n", "d", "eps", "delta", "alpha")


@dataclass(frozen=True)
class Design:
    """One group's curve: `x` ascending, `reps[i]` the seeds' y at x[i] (inf: censored),
    `context` one row per design point."""

    x: np.ndarray
    reps: tuple[np.ndarray, ...]
    context: pd.DataFrame
    x_name: str = "x"  # the fit's x scale (alpha, privacy, n, d, eps, rank)

    @property
    def medians(self) -> np.ndarray:
        return np.array([float(hd_median(r)) for r in self.reps])

    def __len__(self) -> int:
        return len(self.x)

    @property
    def private(self) -> bool:
        """Whether any design point is private (finite eps): a non-private fit (eps = inf, e.g.
        the statistical term alone) has no privacy share to gate on."""
        if "eps" not in self.context or not len(self.context):
            return True  # no context: treat as private (the gate then acts on the rules' share)
        return bool(np.isfinite(self.context["eps"].to_numpy(float)).any())


def design_from_points(sub: pd.DataFrame, chosen: dict[str, Any] | None = None,
                       x_name: str = "x") -> Design:
    """The design of a fit group from its points (`analysis.points.fit_points_table` rows): in a
    tuned fit only the knob setting the envelope chose at each x (`chosen`, keyed by f"{x:g}");
    NaN y counts as inf (never reached). Design points whose median is not finite and positive
    are left out (the fit drops them too)."""
    xs, reps, ctx = [], [], []
    for xv, g in sub.groupby("x", sort=True):
        if chosen:
            pick = chosen.get(f"{xv:g}")
            if pick is None:
                continue
            g = g[g["combo"] == pick]
        y = g["y"].to_numpy(float)
        y = np.where(np.isnan(y), np.inf, y)
        if not len(y):
            continue
        med = float(hd_median(y))
        if not (math.isfinite(med) and med > 0):
            continue
        xs.append(float(xv))
        reps.append(y)
        first = g.iloc[0]
        row = {k: first[k] for k in CONTEXT if k in g}
        row["x"] = float(xv)
        row["n_steps"] = float(g["n_steps"].median()) if "n_steps" in g else math.nan
        if "alpha" in g:  # error view: the achieved alpha varies by seed; its median
            row["alpha"] = float(np.nanmedian(g["alpha"].to_numpy(float)))
        ctx.append(row)
    return Design(np.array(xs, float), tuple(reps), pd.DataFrame(ctx), x_name)
