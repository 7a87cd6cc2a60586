"""Private optimizers, privacy mechanisms and the accountant; the algorithm registry."""

from __future__ import annotations

from typing import Any

from algorithms.adaptive_noise import (
    PDPSGD,
    Pagan,
    PaganPrivateScales,
    PaganPublicScales,
    Pasan,
    PrivateAdaGradIsotropic,
    PrivateSGDIsotropic,
)
from algorithms.base import Privacy, Trajectory
from algorithms.claims import Claim, validate_claims
from algorithms.convex import RecursiveRegularization, RecursiveRegularizationLinear
from algorithms.first_order import (
    DPGD,
    DPSGD,
    FirstOrderAlgorithm,
    NoisySGD,
    PrivateSpiderBoost,
    TreePrivateSpider,
)
from algorithms.glm import JLDPGD, JLPrivateSpiderBoost, JLRecursiveRegularization
from algorithms.privacy import accounting, mechanisms  # `algorithms.accounting` etc. as DESIGN names them
from algorithms.sosp import AdaptiveTreeSpider, GaussianSpider, Spider, TreeSpider
from algorithms.sosp.empirical import EmpiricalSospSpider

#: Every algorithm honours `cls(**overrides).run(problem, data, privacy, rng, *, time_limit,
#: probe, monitor) -> Trajectory` and declares `claims` (`algorithms.claims`).
_REGISTRY: dict[str, Any] = {
    cls.name: cls for cls in (GaussianSpider, TreeSpider, AdaptiveTreeSpider, DPGD, DPSGD, NoisySGD,
                TreePrivateSpider, PrivateSpiderBoost, RecursiveRegularization, RecursiveRegularizationLinear,
                JLDPGD,
                JLPrivateSpiderBoost, JLRecursiveRegularization, Pasan, Pagan,
                PaganPrivateScales, PaganPublicScales,
                PrivateSGDIsotropic, PrivateAdaGradIsotropic, PDPSGD, EmpiricalSospSpider)
}


def available() -> list[str]:
    """Names of the registered algorithms."""
    return list(_REGISTRY)


BUILTIN = frozenset(_REGISTRY)


def register(cls: Any) -> Any:
    """Add an outside algorithm to the registry (usable as a class decorator); it then runs
    from specs, the CLI, sweeps, fits and reports like a built-in one. The class must subclass
    `FirstOrderAlgorithm` (implementing `theory_params` or `resolve_params`, and `_run`) or
    `Spider` (implementing `theory_params`), carry a new `name`, and declare its `claims`
    (`algorithms.claims`, () for none). ValueError (naming the class and what is wrong)
    otherwise."""
    if not (isinstance(cls, type) and issubclass(cls, (FirstOrderAlgorithm, Spider))):
        raise ValueError(f"algorithm class {getattr(cls, '__name__', cls)!r} is invalid: it must "
                         "subclass algorithms.FirstOrderAlgorithm or algorithms.Spider")
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name or name in ("first_order", "spider"):
        raise ValueError(f"algorithm class {cls.__name__!r} is invalid: set a class attribute "
                         "`name` (the name specs and the CLI use)")
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        owner = "a built-in algorithm" if name in BUILTIN else "an algorithm already registered"
        raise ValueError(f"algorithm name {name!r} (class {cls.__name__}) clashes with {owner}")
    if issubclass(cls, FirstOrderAlgorithm):
        missing = [m for m, base in (("_run", FirstOrderAlgorithm._run),) if getattr(cls, m) is base]
        if (cls.theory_params.__func__ is FirstOrderAlgorithm.theory_params.__func__
                and cls.resolve_params is FirstOrderAlgorithm.resolve_params):
            missing.append("theory_params")
    else:
        missing = (["theory_params"] if cls.theory_params.__func__ is Spider.theory_params.__func__
                   else [])
    if missing:
        raise ValueError(f"algorithm class {cls.__name__!r} ({name}) is invalid: it lacks "
                         f"{', '.join(missing)}")
    validate_claims(name, tuple(cls.claims))
    _REGISTRY[name] = cls
    return cls


def all_claims() -> list[Claim]:
    """Every claim of every registered algorithm, in registry order."""
    return [c for name in _REGISTRY for c in _REGISTRY[name].claims]


def check_calibration(name: str, calibration: str) -> None:
    """ValueError (one line) unless algorithm `name` honours `calibration`: each class lists
    the calibrations it implements in `calibrations` (the Spiders and the tree private Spider
    have the papers' formulas; the other families calibrate tightly only)."""
    from algorithms.privacy.accounting.gdp import CALIBRATIONS, require_calibration

    require_calibration(name, calibration,
                        tuple(getattr(get_algorithm(name), "calibrations", CALIBRATIONS)))


def data_modes_note(cls: Any) -> str:
    """The data modes an algorithm runs on, as `dprates list` shows them: "counts|records",
    "counts (atoms problems)|records" for one that re-reads its sample (exact from counts on an
    atoms layout only, `problems.counts.dataset`), or "records" with the reason."""
    if "counts" not in getattr(cls, "data_modes", ("records",)):
        why = getattr(cls, "records_only_reason", "")
        return "records" + (f" ({why})" if why else "")
    if getattr(cls, "counts_rereads", ""):
        return "counts (atoms problems)|records"
    return "counts|records"


def get_algorithm(name: str) -> Any:
    """The algorithm class `name`; instantiate with parameter overrides, then `.run(...)`."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"algorithm={name!r} is invalid: must be one of {', '.join(available())}"
        ) from None


def claim_metric(algorithm: str) -> str:
    """The metric of the algorithm's first claim (alpha_sosp when it claims nothing): what its
    cells are targeted on and a sample-complexity fit of it measures."""
    cls = get_algorithm(algorithm)
    return cls.claims[0].metric if cls.claims else "alpha_sosp"


__all__ = [
    "FirstOrderAlgorithm",
    "Privacy",
    "Spider",
    "Trajectory",
    "accounting",
    "all_claims",
    "available",
    "check_calibration",
    "claim_metric",
    "data_modes_note",
    "get_algorithm",
    "mechanisms",
    "register",
]
