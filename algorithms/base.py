"""Shared types of the optimizers: privacy budget and the run result (`Trajectory`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from algorithms.privacy.accounting.gdp import CALIBRATIONS


@dataclass(frozen=True)
class Privacy:
    """An (eps, delta) budget; eps = math.inf means non-private (no privacy noise).

    calibration: "tight" (exact GDP, default) or "theory" (the papers' formulas, floored at
    tight); see `algorithms.privacy.accounting.gdp`.
    """

    eps: float
    delta: float = 1e-6
    calibration: str = "tight"

    def __post_init__(self) -> None:
        if not isinstance(self.eps, (int, float)) or math.isnan(self.eps) or self.eps <= 0:
            raise ValueError(f"eps={self.eps!r} is invalid: must be > 0 (math.inf for non-private)")
        if not isinstance(self.delta, (int, float)) or not 0 < self.delta < 1:
            raise ValueError(f"delta={self.delta!r} is invalid: must be in (0, 1)")
        if self.calibration not in CALIBRATIONS:
            raise ValueError(
                f"calibration={self.calibration!r} is invalid: must be one of {CALIBRATIONS}")

    @property
    def private(self) -> bool:
        return math.isfinite(self.eps)


@dataclass
class Trajectory:
    """What a run produced.

    iterates (k, d): the stored iterates (x_0 first); `steps` (k,) their step index t;
    `samples_at` (k,) samples consumed when each was made; `est_norm_at` (k,) the norm of the
    private estimate used to make the step out of each iterate (inf if none was made).
    `records`: per-step arrays: oracle (1 = O1, 2 = O2), batch, noise_std, est_norm (the
    released ||nabla~_t||), drift (after the step), escape (saddle noise added), samples.
    Their dtypes are fixed (`algorithms.step_log`, which converts what a loop records): oracle
    int8, escape bool, batch and samples int64, the rest float64; iterates float64, steps and
    samples_at int64.
    `samples_used`, `grad_evals` (per-sample gradient evaluations), `stop_reason`,
    `privacy_spent` (eps, delta, mu), `params` (every parameter used), `n_steps`.
    What a run releases is a function of its public inputs and its noised releases; so are
    these fields, with one exception kept apart: `evaluation_only` holds values the accountant
    treats as hidden (a Poisson-sampled step's realized batch size |B_t|), for cost studies
    only. A Poisson-sampled loop logs the expected batch q n in `records["batch"]` and counts
    q n a step in `grad_evals`; its realized sizes go to `evaluation_only` (`bench.disclosure`).
    Storage rule: every `keep_every`-th iterate, plus each iterate whose private estimate
    norm is a new running minimum, plus the last one. `sample`: the run's finite data set
    (empirical-risk algorithms only), so the metrics can evaluate grad F_S exactly.
    """

    iterates: np.ndarray
    steps: np.ndarray
    samples_at: np.ndarray
    est_norm_at: np.ndarray
    records: dict[str, np.ndarray]
    samples_used: int
    grad_evals: int
    stop_reason: str
    privacy_spent: dict
    params: dict
    n_steps: int
    warnings: list[str] = field(default_factory=list)
    #: The finite sample S an empirical-risk algorithm optimized (metrics: ||grad F_S||).
    sample: np.ndarray | None = None
    #: Values that depend on what the accountant keeps hidden (the realized Poisson batch
    #: sizes): never a run fact, never printed by an export or a report (`bench.disclosure`).
    evaluation_only: dict = field(default_factory=dict)

    #: The fields that are not outputs of the run's releases: the data it optimized and the
    #: hidden values (a replay that compares runs leaves them out).
    NOT_RELEASED: ClassVar[tuple[str, ...]] = ("sample", "evaluation_only")

    @property
    def last(self) -> np.ndarray:
        return self.iterates[-1]
