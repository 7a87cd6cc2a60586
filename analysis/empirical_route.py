"""The empirical route's measurements (seed 000, Appendix A.2; `algorithms.sosp.empirical`):
the empirical SOSP metric of a run, and which statistical term the population alpha follows.

Metrics (`problems.evaluation.metrics.empirical_sosp_metrics`, added to every run's metrics by `evaluate`;
NaN where the run keeps no sample or the problem has no closed-form empirical Hessian):
* emp_alpha_best: min over the stored iterates of alpha_SOSP of F_S (the run's own data set),
  exact (`problems.empirical_hessian`): the empirical claim's "at least one output";
* emp_alpha_last / emp_alpha_selected: at the last iterate / the smallest released estimate;
* emp_lambda_min_best: lambda_min(hess F_S) at the emp_alpha_best iterate;
* alpha_at_emp_best: the *population* alpha_SOSP at that same iterate: the route of Theorem
  A.2 (an SOSP of F_S, carried to F), unlike alpha_best (the best population alpha over all
  iterates, which can pick a point the empirical route would never single out).

Which statistical term (`statistical_reading`): at eps = inf the population alpha of the
empirical SOSP is the statistical error alone. Its exponent in n is -1 as seed 000 prints the
rate (sqrt(d)/n) and -1/2 by Theorem A.2 as stated (sqrt(d/n)); a fit's CI says which.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def statistical_reading(readings: tuple[tuple[str, float], ...], ci_low: float,
                        ci_high: float) -> str:
    """Which of the readings' exponents of n (name, exponent) the CI [ci_low, ci_high] holds:
    "follows <name> (exponent e)", "cannot tell <a> from <b>" (both inside), or "follows
    neither (...)"; "" without a finite CI or readings."""
    if not readings or not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return ""
    inside = [(name, e) for name, e in readings if ci_low <= e <= ci_high]
    if len(inside) == 1:
        return f"follows {inside[0][0]} (exponent {inside[0][1]:g})"
    if len(inside) > 1:
        return "cannot tell " + " from ".join(f"{n} ({e:g})" for n, e in inside)
    return "follows neither (" + ", ".join(f"{n}: {e:g}" for n, e in readings) + ")"


#: The statistical term sets the population alpha of the empirical SOSP only where the
#: empirical alpha there is well below it: at most this fraction (median per design point).
OPTIMIZATION_LIMITED = 1 / 3


def optimization_limited(cells: pd.DataFrame | None) -> str:
    """"" when every design point's median emp_alpha_best / alpha_at_emp_best is at most
    OPTIMIZATION_LIMITED, else the reason naming the points where the empirical alpha (the
    optimization) and not the sample (statistics) sets the population alpha. `cells`: the
    fit's cells with columns x, emp_alpha_best, alpha_at_emp_best."""
    if cells is None or not {"emp_alpha_best", "alpha_at_emp_best", "x"} <= set(cells.columns):
        return ""
    ratio = cells["emp_alpha_best"].astype(float) / cells["alpha_at_emp_best"].astype(float)
    med = ratio.groupby(cells["x"].to_numpy()).median()
    bad = [f"{x:g}" for x, r in med.items() if not r <= OPTIMIZATION_LIMITED]
    if not bad:
        return ""
    return (f"optimization-limited at n = {', '.join(bad)}: the empirical alpha is above "
            f"{OPTIMIZATION_LIMITED:.2g} of the population alpha there, so the slope is the "
            "optimizer's, not the statistical term's")


def reading_for_fit(cls: Any, fit_x: str, view: str, private: bool, ci_low: float,
                    ci_high: float, cells: pd.DataFrame | None = None) -> str:
    """The reading of a non-private error fit against n for an algorithm that declares
    `statistical_readings` ("" for every other fit); "optimization-limited ..." instead where
    the fit's cells (`optimization_limited`) show the optimizer, not the sample, at work."""
    readings = getattr(cls, "statistical_readings", ())
    if private or view != "error" or fit_x != "n" or not readings:
        return ""
    limited = optimization_limited(cells)
    return limited or statistical_reading(tuple(readings), ci_low, ci_high)


__all__ = ["OPTIMIZATION_LIMITED", "optimization_limited", "reading_for_fit", "statistical_reading"]
