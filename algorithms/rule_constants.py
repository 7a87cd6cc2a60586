"""Refuse a problem / algorithm pair whose parameter rules cannot work, before any work.

Each rule that divides by a problem constant (eta = eta_mult / M, a horizon over G, a log of
M / rho, ...) names it in its class's `rule_constants` (constant -> the rule that needs it > 0);
`require_rule_constants` turns a zero there into the suite's one-line error, naming the
algorithm, the problem, the constant, its value and the rule, instead of a ZeroDivisionError
deep in the rules (e.g. dp_gd on scaled_linear, whose linear loss states M = 0)."""

from __future__ import annotations

from typing import Any

_WHY = {"M": " (a linear or piecewise-linear loss states M = 0; the box problems' algorithms "
             "pasan, pagan, private_sgd_iso, ... need no M)",
        "rho": " (a loss with a constant Hessian states rho = 0)",
        "G": ""}


def require_rule_constants(algorithm: str, problem: Any, needs: dict[str, str]) -> None:
    """ValueError unless every constant in `needs` is > 0 (module docstring)."""
    constants = problem.constants
    for key, rule in needs.items():
        value = getattr(constants, key)
        if not value > 0:
            raise ValueError(
                f"problem {getattr(problem, 'name', '?')!r} is invalid for {algorithm}: its rule "
                f"{rule} needs constants.{key} > 0, and the problem states {key} = {value:g}"
                f"{_WHY.get(key, '')}")


__all__ = ["require_rule_constants"]
