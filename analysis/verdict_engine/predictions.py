"""What a fit is held against: the metric it measures (`fit_metric`, `claim_metric`, `Y_METRIC`)
and the exponent the algorithm's claim on that metric predicts (`predicted_slope`, from
`matching_claim`). The slope the implemented rules predict over the same design points is
`analysis.verdict_engine.rules_curve`'s. `claim_metric` lives beside the registry
(`algorithms.claim_metric`: a sweep targets its cells on it) and is re-exported here.
"""

from __future__ import annotations

from typing import Any

from algorithms import claim_metric
from analysis.declarations import FitSpec


def matching_claim(cls: Any, metric: str) -> Any:
    """The algorithm's claim on `metric`, None if it declares none on that metric (a fit of
    another metric, e.g. DP-GD's population ||grad F|| beside its empirical claim, has no
    claimed slope and so no verdict, rather than the first claim's)."""
    return next((c for c in getattr(cls, "claims", ()) if c.metric == metric), None)


def predicted_slope(cls: Any, fit: FitSpec, metric: str, private: bool = True) -> float | None:
    """The exponent the algorithm's claim on `metric` predicts for the fit: its privacy term's
    where the cells are private, its statistical term's (the one in n alone) where every cell
    is non-private (eps = inf); None where the claim predicts nothing for this x."""
    claim = matching_claim(cls, metric)
    if claim is None:
        return None
    if not private:
        if fit.view != "error" or fit.x not in ("n", "d", "rank"):
            return None
        stat = claim.statistical_term
        return stat.exponent(fit.x) if stat is not None else None
    try:
        return claim.predicted_slope(fit.view, fit.x)
    except ValueError:
        return None


#: The claim metric each stored column measures (error view).
Y_METRIC = {"alpha_best": "alpha_sosp", "alpha_last": "alpha_sosp", "alpha_selected": "alpha_sosp",
            "grad_norm_best": "grad_norm", "pop_grad_best": "grad_norm", "pop_grad_last": "grad_norm",
            "emp_grad_best": "emp_grad_norm", "emp_grad_last": "emp_grad_norm",
            "emp_grad_selected": "emp_grad_norm", "excess_best": "excess_risk",
            "excess_last": "excess_risk", "alpha_at_emp_best": "alpha_sosp",
            "emp_alpha_best": "emp_alpha_sosp", "emp_alpha_last": "emp_alpha_sosp",
            "emp_alpha_selected": "emp_alpha_sosp"}


def fit_metric(fit: FitSpec, algorithm: str) -> str:
    """The metric a fit measures: its y column's (error view) or, for samples-to-target, the
    metric the algorithm's cells are targeted on (its first claim's)."""
    if fit.view == "sample_complexity":
        return claim_metric(algorithm)
    return Y_METRIC.get(fit.y, "other")


__all__ = ["Y_METRIC", "claim_metric", "fit_metric", "matching_claim", "predicted_slope"]
