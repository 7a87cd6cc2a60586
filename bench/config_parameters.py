"""What a problem or an algorithm accepts, read from the registry: a problem's parameters with
their defaults, an algorithm's knobs and overrides, the refusal of an unknown problem
parameter, and the default data mode of a (problem, algorithm) pair. Used by spec validation
(`bench.config`) and the command line (`dprates list --params`, `dprates run`)."""

from __future__ import annotations

from typing import Any

from bench.config_values import SpecError, did_you_mean


def problem_parameters(name: str) -> dict[str, Any]:
    """The parameters problem `name` takes besides d, with their defaults (from its class)."""
    import inspect

    import problems

    sig = inspect.signature(problems.get_problem_class(name).__init__)
    return {k: (None if p.default is inspect.Parameter.empty else p.default)
            for k, p in sig.parameters.items()
            if k not in ("self", "d") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


def algorithm_parameters(name: str) -> list[str]:
    """The knobs and overrides algorithm `name` accepts, as its own validation lists them
    (every family refuses an unknown key with "...: allowed: a, b, ..."; we ask it)."""
    import algorithms

    cls = algorithms.get_algorithm(name)
    try:
        cls(**{"__no_such_parameter__": 0})
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if "allowed: " in msg:
            return [k.strip() for k in msg.split("allowed: ", 1)[1].split(",") if k.strip()]
    return []


def check_problem_params(name: str, params: dict[str, Any], where: str) -> None:
    """One line naming an unknown problem parameter and the allowed ones (not the constructor's
    "unexpected keyword argument" TypeError)."""
    allowed = problem_parameters(name)
    for k, v in params.items():
        if k not in allowed and k != "d":
            shown = ", ".join(allowed) or "none"
            at = f"{where} {k}={v!r}" if where.startswith("--") else f"{where}.{k}={v!r}"
            raise SpecError(f"{at} is invalid: {name} has no parameter {k!r}"
                            f"{did_you_mean(k, allowed)}; its parameters are {shown} "
                            f"(`dprates list --params {name}`)")


def default_data_mode(problem: str, algorithm: str) -> str:
    """"counts" where counts mode is exact for the pair (`problems.counts.dataset.counts_exact`:
    e.g. DP-SGD re-reads its sample, exact on atoms problems only), else "records"."""
    import algorithms
    from problems import get_problem_class
    from problems.counts.dataset import counts_exact

    cls = algorithms.get_algorithm(algorithm)
    return "counts" if counts_exact(get_problem_class(problem), cls) else "records"
