"""The release API: a plugin algorithm that is private by construction.

A `PrivateByConstruction` algorithm never touches the data, the run's generator or the
accountant. It declares its releases up front (`release_plan`: how many, the per-record clip,
full batch, Poisson batches or one pass), and its `steps` method receives a `ReleaseWindow` onto
a `ReleaseDesk` holding the sample. The desk is the suite's release engine
(`algorithms.privacy.engine`), the one the built-in DP-GD, DP-SGD and noisy SGD release
through too; it does the private part:

- it draws each batch itself (Poisson subsampling at rate q = b / n, or the next b records of
  the stream, or the full sample);
- it computes the per-record gradients, clips each to the declared C (the sensitivity the
  accountant is told: 2C over the divisor, replace-one), and averages them;
- it adds Gaussian noise from the run's generator, scaled by the one accountant module:
  T GDP-composed full-batch releases (`composed_gaussian_multiplier`), T Poisson-subsampled
  releases (dp-accounting's PLD, `poisson_gaussian_calibration`), or one release per disjoint
  batch (parallel composition, `gdp_mu`);
- it refuses a release beyond the declared number, logs each step with public values only (the
  expected batch, the noise, the released norm), reports every release to the privacy probe,
  and writes the ledger.

`steps` sees released values, the iterate and public inputs (d, x0, the parameters, a public
generator for data-independent draws, derived one way from the run's generator so that the
desk's noise cannot be rebuilt from it: `algorithms.privacy.public_stream`). It yields each
new iterate; it may stop early, a
decision that can then depend on released values only. So what the run releases is a
post-processing of the desk's Gaussian releases: (eps, delta)-DP by the accountant's
composition, whatever `steps` computes. The desk's draws follow the built-in loops' order
(batch, then noise), so DP-GD and DP-SGD written on it reproduce `dp_gd` and `dp_sgd` bit for
bit on the same seed (tests/test_release_api.py).

What it cannot rule out is Python itself: a plugin that digs the desk out of its window,
imports the problem module and reads a data file, or keeps state across runs, is outside the
API. So the label "private by construction" also needs the forced-transcript replay of
`algorithms.privacy.audit.transcript_replay` (the run on neighbouring data sets with the recorded
releases forced must give the same trajectory, field for field) and the black-box checks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from algorithms.base import Privacy, Trajectory
from algorithms.first_order.base import FirstOrderAlgorithm, TrajectoryBuilder
from algorithms.privacy.engine import SAMPLINGS, ReleaseDesk, ReleasePlan, TranscriptExhausted
from algorithms.privacy.public_stream import public_generator
from problems.base import Problem


class ReleaseWindow:
    """What `steps` holds of the desk: the plan, the public counts and the two release calls.
    The sample, the run's generator and the probe stay on the desk. (Python cannot seal an
    object: a plugin that digs the desk out of this window reads the data outside the API,
    which the forced-transcript replay of `algorithms.privacy.audit` then finds.)"""

    __slots__ = ("_ReleaseWindow__desk",)

    def __init__(self, desk: ReleaseDesk) -> None:
        self.__desk = desk

    @property
    def plan(self) -> ReleasePlan:
        return self.__desk.plan

    @property
    def n(self) -> int | None:
        return self.__desk.n

    @property
    def privacy(self) -> Privacy:
        return self.__desk.privacy

    @property
    def remaining(self) -> int:
        """Releases the plan still allows."""
        return self.__desk.remaining

    @property
    def public_batch(self) -> int:
        return self.__desk.public_batch

    @property
    def last_noise_std(self) -> float:
        return self.__desk.last_noise_std

    def data_left(self, b: int | None = None) -> bool:
        return self.__desk.data_left(b)

    def mean_gradient(self, x: np.ndarray, clip: float | None = None,
                      b: int | None = None) -> np.ndarray:
        """`ReleaseDesk.mean_gradient`: one noised release of the clipped mean gradient."""
        return self.__desk.mean_gradient(x, clip, b)

    def mean_gradient_difference(self, x: np.ndarray, y: np.ndarray, clip: float,
                                 b: int | None = None) -> np.ndarray:
        """`ReleaseDesk.mean_gradient_difference`: one noised release of the clipped mean
        gradient difference."""
        return self.__desk.mean_gradient_difference(x, y, clip, b)


@dataclass(frozen=True)
class PublicInputs:
    """What `steps` may read besides released values: the dimension, the start, the problem's
    stated constants, the parameters used, and a generator for data-independent draws."""

    d: int
    x0: np.ndarray
    constants: Any
    params: dict
    rng: np.random.Generator


class PrivateByConstruction(FirstOrderAlgorithm):
    """Base class of a plugin algorithm on the release API (module docstring): implement
    `theory_params`, `release_plan(p, n, privacy) -> ReleasePlan` and `steps(desk, public)`,
    a generator of iterates. The suite's `_run` is final."""

    #: The privacy label of a run on the release API (bench.runner.privacy_checks).
    by_construction: ClassVar[bool] = True

    def release_plan(self, p: dict[str, Any], n: int | None, privacy: Privacy) -> ReleasePlan:
        raise NotImplementedError

    def steps(self, desk: ReleaseWindow, public: PublicInputs) -> Iterator[np.ndarray]:
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_run" in cls.__dict__:
            raise TypeError(f"{cls.__name__} overrides _run: an algorithm on the release API "
                            "implements steps(desk, public); the suite runs it")

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        plan = self.release_plan(p, n, privacy)
        desk = ReleaseDesk(problem, stream, n, privacy, rng, plan, probe)
        p.update(noise_multiplier=desk.multiplier, sampling=plan.sampling, C=plan.clip,
                 releases=plan.releases)
        # data-independent draws of `steps`: derived one way from the run's generator (its
        # seed sequence is read, its stream not advanced: the desk's draws are unchanged), so
        # the desk's noise cannot be rebuilt from it. A replay that re-seeds the desk keeps the
        # recording's public draws (`public_from` on its probe).
        public_rng = public_generator(getattr(probe, "public_from", None) or rng)
        x = np.array(problem.x0, dtype=float)
        public = PublicInputs(problem.d, x.copy(), problem.constants, dict(p), public_rng)
        traj = TrajectoryBuilder(x, plan.releases, p["max_iterate_floats"])
        used = n if n is not None else 0
        stop, t = "T_reached", 0
        for x_new in self.steps(ReleaseWindow(desk), public):
            x = np.asarray(x_new, dtype=float)
            t += 1
            used = n if plan.sampling != "one_pass" else stream.used
            if not np.all(np.isfinite(x)):
                stop = "diverged"
                break
            norm = float(np.linalg.norm(desk.last_released)) if desk.last_released is not None \
                else math.nan
            if traj.step(x, t, used, desk.last_batch, desk.last_noise_std, norm) \
                    and monitor is not None and monitor(x):
                stop = "target_reached"
                break
            if time.perf_counter() > deadline:
                stop = "timeout"
                break
        else:
            if desk.remaining > 0:
                stop = "data_exhausted" if not desk.data_left() else "stopped_by_algorithm"
        spent = desk.ledger()
        p["privacy_mu"] = math.nan if spent["mu"] is None else spent["mu"]
        sample = desk.sample if self.setting == "empirical" else None
        return traj.build(x, t, used, desk.grad_evals, stop, spent, p, sample, [],
                          desk.hidden.record() if desk.hidden is not None else None)


__all__ = ["SAMPLINGS", "PrivateByConstruction", "PublicInputs", "ReleaseDesk", "ReleasePlan",
           "ReleaseWindow", "TranscriptExhausted"]
