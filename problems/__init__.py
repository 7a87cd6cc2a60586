"""Objective functions with exact population oracles, and their registry."""

from __future__ import annotations

from problems.base import Constants, Problem
from problems.glm import GLM
from problems.logistic import BreastCancerLogistic, SyntheticLogistic
from problems.mean_estimation import MeanEstimation
from problems.phase_retrieval import PhaseRetrieval
from problems.rotated import RotatedValley
from problems.scaled_linear import ScaledLinear
from problems.scaled_regression import ScaledRegression
from problems.separable import HardRamp, HardValley, StrictSaddle
from problems.streams import CHUNK, ArrayStream, DataStream, StreamExhausted, records_digest

_REGISTRY: dict[str, type[Problem]] = {
    cls.name: cls
    for cls in (StrictSaddle, HardValley, HardRamp, RotatedValley, PhaseRetrieval, SyntheticLogistic,
                BreastCancerLogistic, MeanEstimation, ScaledLinear, ScaledRegression, GLM)
}


BUILTIN = frozenset(_REGISTRY)
#: The built-in classes themselves: a plugin subclass, or a plugin reusing a built-in's name,
#: is not one of them.
_BUILTIN_CLASSES = frozenset(_REGISTRY.values())


def is_builtin(problem: Problem) -> bool:
    """Whether `problem` is an instance of a built-in class itself (its code is the suite's,
    tested; a plugin problem's is checked by `algorithms.privacy.audit.problem_checks`)."""
    return type(problem) in _BUILTIN_CLASSES


def available() -> list[str]:
    """Names of the registered problems."""
    return list(_REGISTRY)


def register(cls: type[Problem]) -> type[Problem]:
    """Add an outside problem to the registry (usable as a class decorator). The class must
    subclass `problems.Problem`, implement every abstract method (constants, x0, _draw, the
    per-sample oracles and the exact population oracles) and carry a new `name`; ValueError
    (naming the class and what is wrong) otherwise."""
    if not (isinstance(cls, type) and issubclass(cls, Problem)):
        raise ValueError(f"problem class {getattr(cls, '__name__', cls)!r} is invalid: it must "
                         "subclass problems.Problem")
    if not isinstance(cls.name, str) or not cls.name:
        raise ValueError(f"problem class {cls.__name__!r} is invalid: set a class attribute "
                         "`name` (the name specs and the CLI use)")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        owner = "a built-in problem" if cls.name in BUILTIN else "a problem already registered"
        raise ValueError(f"problem name {cls.name!r} (class {cls.__name__}) clashes with {owner}")
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise ValueError(f"problem class {cls.__name__!r} ({cls.name}) is invalid: it lacks "
                         f"{', '.join(missing)}")
    if cls.character not in ("hard", "benign", "calibration"):
        raise ValueError(f"problem class {cls.__name__!r}: character={cls.character!r} is invalid: "
                         "must be hard, benign or calibration")
    _REGISTRY[cls.name] = cls
    return cls


def describe() -> dict[str, str]:
    """One-line description per registered problem."""
    return {name: cls.description for name, cls in _REGISTRY.items()}


def character(name: str) -> str:
    """"hard", "benign" or "calibration" (see Problem.character), without building the problem."""
    if name not in _REGISTRY:
        raise ValueError(f"problem={name!r} is invalid: must be one of {', '.join(available())}")
    return _REGISTRY[name].character


def data_modes(name: str) -> tuple[str, ...]:
    """The data modes problem `name` supports, its default first ("counts" where it opts in)."""
    character(name)  # ValueError on an unknown name
    return ("counts", "records") if _REGISTRY[name].counts_capable else ("records",)


def get_problem_class(name: str) -> type[Problem]:
    """The registered class `name` (ValueError on an unknown name)."""
    character(name)
    return _REGISTRY[name]


def instance_params(name: str, params: dict | None, target_alpha: float | None) -> dict:
    """`params` with a per-target problem's instance parameter set to `target_alpha`.

    Problems built per accuracy (`Problem.per_target_param`, e.g. hard_ramp's alpha) get the
    cell's target unless `params` fixes the parameter; other problems' params are returned as
    they are.
    """
    out = dict(params or {})
    key = get_problem_class(name).per_target_param
    if key is not None and key not in out and target_alpha is not None:
        out[key] = float(target_alpha)
    return out


def get_problem(name: str, **params) -> Problem:
    """Build the problem `name` with keyword parameters (d, ...); ValueError on a bad name."""
    try:
        cls = _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"problem={name!r} is invalid: must be one of {', '.join(available())}"
        ) from None
    try:
        return cls(**params)
    except TypeError as exc:
        raise ValueError(f"bad parameters {params!r} for problem {name!r}: {exc}") from None


__all__ = ["CHUNK", "ArrayStream", "Constants", "DataStream", "Problem", "StreamExhausted",
           "available", "data_modes", "describe", "get_problem", "get_problem_class", "instance_params",
           "records_digest", "register"]
