"""Private optimizers, privacy mechanisms and the accountant; the algorithm registry."""

from __future__ import annotations

from typing import Any

from algorithms.base import Privacy, Trajectory
from algorithms.claims import Claim
from algorithms.first_order import (
    DPGD,
    DPSGD,
    FirstOrderAlgorithm,
    NoisySGD,
    PrivateSpiderBoost,
    TreePrivateSpider,
)
from algorithms.sosp_spiders import AdaptiveTreeSpider, GaussianSpider, TreeSpider
from algorithms.spider import Spider

#: Every algorithm honours `cls(**overrides).run(problem, data, privacy, rng, *, time_limit,
#: probe, monitor) -> Trajectory` and declares `claims` (`algorithms.claims`).
_REGISTRY: dict[str, Any] = {
    cls.name: cls for cls in (GaussianSpider, TreeSpider, AdaptiveTreeSpider, DPGD, DPSGD, NoisySGD,
                TreePrivateSpider, PrivateSpiderBoost)
}


def available() -> list[str]:
    """Names of the registered algorithms."""
    return list(_REGISTRY)


def all_claims() -> list[Claim]:
    """Every claim of every registered algorithm, in registry order."""
    return [c for name in _REGISTRY for c in _REGISTRY[name].claims]


def get_algorithm(name: str) -> Any:
    """The algorithm class `name`; instantiate with parameter overrides, then `.run(...)`."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"algorithm={name!r} is invalid: must be one of {', '.join(available())}"
        ) from None


__all__ = ["FirstOrderAlgorithm", "Privacy", "Spider", "Trajectory", "all_claims", "available",
           "get_algorithm"]
