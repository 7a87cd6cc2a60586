"""Private optimizers, privacy mechanisms and the accountant; the algorithm registry."""

from __future__ import annotations

from algorithms.base import Privacy, Trajectory
from algorithms.sosp_spiders import AdaptiveTreeSpider, GaussianSpider, TreeSpider
from algorithms.spider import Spider

_REGISTRY: dict[str, type[Spider]] = {
    cls.name: cls for cls in (GaussianSpider, TreeSpider, AdaptiveTreeSpider)
}


def available() -> list[str]:
    """Names of the registered algorithms."""
    return list(_REGISTRY)


def get_algorithm(name: str) -> type[Spider]:
    """The algorithm class `name`; instantiate with parameter overrides, then `.run(...)`."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"algorithm={name!r} is invalid: must be one of {', '.join(available())}"
        ) from None


__all__ = ["Privacy", "Spider", "Trajectory", "available", "get_algorithm"]
