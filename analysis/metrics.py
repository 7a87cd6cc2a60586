"""`analysis.metrics`, the design notes' documented home of `sosp_alpha` (public API): the
evaluation of a point against a problem's exact oracles moved beside the problems
(`problems.evaluation.metrics`, issue 75: a running sweep evaluates there and never calls into
analysis); these names are re-exported so `from analysis.metrics import sosp_alpha` keeps
working."""

from problems.evaluation.metrics import evaluate, lambda_min, sosp_alpha

__all__ = ["evaluate", "lambda_min", "sosp_alpha"]
