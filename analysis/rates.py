"""`analysis.rates`, the documented home of `fit_exponent` (the public API in the design notes):
the exponent fits moved to `analysis.verdict_engine.rates`; these names are re-exported here so
`from analysis.rates import fit_exponent` keeps working."""

from analysis.verdict_engine.rates import fit_exponent, fit_points, scale

__all__ = ["fit_exponent", "fit_points", "scale"]
