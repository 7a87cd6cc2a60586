"""What the analysis reads, declared below both `bench` and `analysis`' other modules: a fit
declaration (`FitSpec`), the shape of a sweep spec it needs (`SpecLike`) and one store's data
(`StoreData`). `bench` parses specs into these and opens stores into `StoreData`
(`bench.store.open_store_data`); nothing in `analysis` imports `bench` (a test parses the
imports), so data flows one way: bench -> analysis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd


@dataclass(frozen=True)
class FitSpec:
    """A fit declared in the spec (README, the protocol, item 7: windows fixed before the run)."""

    name: str
    view: str
    x: str
    y: str
    window: tuple[float, float]
    mode: str = "tuned"
    where: dict[str, Any] = field(default_factory=dict)


class SpecLike(Protocol):
    """The parts of a parsed sweep spec (`bench.config.SweepSpec`) the analysis reads."""

    name: str
    seed: int
    repetitions: int
    calibration: str
    grid: dict[str, list]
    problems: list[dict[str, Any]]
    algorithms: list[dict[str, Any]]
    fits: list[FitSpec]
    description: str
    source: str


#: kind ("samples_to_accuracy" or "trajectory"), keys (None: all) -> key -> decoded curve
CurveLoader = Callable[[str, Iterable[str] | None], dict[str, Any]]


@dataclass
class StoreData:
    """One store: the spec it was run from, its cells (`bench.store.load`), where it lives and
    how to read its curves."""

    spec: SpecLike
    cells: pd.DataFrame
    path: str
    load_curves: CurveLoader
    #: eps = inf cells lent by the stores of the spec's `controls_from` (ok target cells; a
    #: column `control_store` names each one's store), None where it lends none
    controls: pd.DataFrame | None = None
    #: why a store named by `controls_from` lent nothing (missing, another seed, ...), one line each
    controls_refused: tuple[str, ...] = ()
