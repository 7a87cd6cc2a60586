"""The release API: a plugin algorithm that is private by construction.

A `PrivateByConstruction` algorithm never touches the data, the run's generator or the
accountant. It declares its releases up front (`release_plan`: how many, the per-record clip,
full batch, Poisson batches or one pass), and its `steps` method receives a `ReleaseWindow` onto
a `ReleaseDesk` holding the sample. The desk does the private part:

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
generator for data-independent draws). It yields each new iterate; it may stop early, a
decision that can then depend on released values only. So what the run releases is a
post-processing of the desk's Gaussian releases: (eps, delta)-DP by the accountant's
composition, whatever `steps` computes. The desk's draws follow the built-in loops' order
(batch, then noise), so DP-GD and DP-SGD written on it reproduce `dp_gd` and `dp_sgd` bit for
bit on the same seed (tests/test_release_api.py).

What it cannot rule out is Python itself: a plugin that digs the desk out of its window,
imports the problem module and reads a data file, or keeps state across runs, is outside the
API. So the label "private by construction" also needs the forced-transcript replay of
`analysis.privacy_checks.transcript_replay` (the run on neighbouring data sets with the recorded
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
from algorithms.counts_maps import clipped_grad_diff_sum, clipped_grad_sum
from algorithms.first_order.base import FirstOrderAlgorithm, RealizedCounts, TrajectoryBuilder
from algorithms.privacy.accounting.gdp import composed_gaussian_multiplier, gdp_mu
from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_none, ledger_pld
from algorithms.privacy.accounting.pld import poisson_gaussian_calibration
from problems.base import Problem
from problems.counts.dataset import poisson_subsample

SAMPLINGS = ("full", "poisson", "one_pass")


@dataclass(frozen=True)
class ReleasePlan:
    """The releases a run will ask for, declared before it starts.

    sampling: "full" (every release reads the n records: T releases, GDP composition),
    "poisson" (each release a Poisson subsample at rate q = b / n: PLD composition) or
    "one_pass" (each release the next b records of the stream: parallel composition, T up to
    the budget's n // b). clip: the per-record L2 clip C. b: the (expected) batch."""

    sampling: str
    releases: int
    clip: float
    b: int | None = None

    def check(self, n: int | None) -> None:
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"release plan sampling={self.sampling!r} is invalid: must be one "
                             f"of {', '.join(SAMPLINGS)}")
        if not (isinstance(self.releases, int) and self.releases >= 1):
            raise ValueError(f"release plan releases={self.releases!r} is invalid: must be an "
                             "integer >= 1")
        if not (math.isfinite(self.clip) and self.clip > 0):
            raise ValueError(f"release plan clip={self.clip!r} is invalid: must be finite and > 0")
        if self.sampling != "full" and not (isinstance(self.b, int) and self.b >= 1):
            raise ValueError(f"release plan b={self.b!r} is invalid: a {self.sampling} plan "
                             "needs an integer batch >= 1")
        if self.sampling != "one_pass" and n is None:
            raise ValueError(f"a {self.sampling} release plan needs a finite sample (give n)")


class ReleaseDesk:
    """Holds the sample, the run's generator and the accountant's noise; hands out released
    values only (module docstring)."""

    def __init__(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
                 rng: np.random.Generator, plan: ReleasePlan, probe: Any = None) -> None:
        plan.check(n)
        self._problem, self._stream, self._rng, self._probe = problem, stream, rng, probe
        self.plan, self.n, self.privacy = plan, n, privacy
        self._sample = stream.take(n) if plan.sampling != "one_pass" else None
        # a probe holding a recorded transcript (`forced`) has every release return it
        # (analysis.privacy_checks.transcript_replay); the desk still draws what it draws
        self._forced = getattr(probe, "forced", None)
        self.made = 0
        self.last_noise_std = 0.0
        self.last_released: np.ndarray | None = None
        self.last_batch = 0
        self.hidden = RealizedCounts() if plan.sampling == "poisson" else None
        self.grad_evals = 0
        self._cal = None
        T, C = plan.releases, plan.clip
        if not privacy.private:
            self.multiplier = 0.0
        elif plan.sampling == "full":
            self.multiplier = composed_gaussian_multiplier(privacy.eps, privacy.delta, T)
        elif plan.sampling == "poisson":
            self._cal = poisson_gaussian_calibration(privacy.eps, privacy.delta,
                                                     min(1.0, plan.b / n), T)
            self.multiplier = self._cal.scale
        else:  # disjoint batches: each record enters one release
            self.multiplier = 1.0 / gdp_mu(privacy.eps, privacy.delta)
        self._clip = C

    @property
    def sample(self) -> Any:
        """The records the run optimized, for the suite's evaluation (never for `steps`)."""
        return self._sample

    @property
    def remaining(self) -> int:
        return self.plan.releases - self.made

    @property
    def public_batch(self) -> int:
        """The batch a release is said to read: n, the expected q n, or b."""
        if self.plan.sampling == "full":
            return int(self.n)
        return min(int(self.plan.b), int(self.n)) if self.n is not None else int(self.plan.b)

    def data_left(self, b: int | None = None) -> bool:
        """For a one-pass plan: whether the stream holds another batch of b records (default
        the plan's; a public count)."""
        return self.plan.sampling != "one_pass" or \
            self._stream.remaining >= int(self.plan.b if b is None else b)

    def mean_gradient(self, x: np.ndarray, clip: float | None = None,
                      b: int | None = None) -> np.ndarray:
        """One release: the mean over a batch (per the plan) of per-record gradients at x,
        each clipped to `clip` (default the plan's C), plus Gaussian noise the accountant
        calibrated. `b`: this release's batch (one-pass plans only; default the plan's)."""
        return self._release(np.asarray(x, dtype=float), None, clip, b, oracle=1)

    def mean_gradient_difference(self, x: np.ndarray, y: np.ndarray, clip: float,
                                 b: int | None = None) -> np.ndarray:
        """One release: the mean of per-record grad f(x; z) - grad f(y; z), each clipped to
        `clip` (a Spider's O2: e.g. M ||x - y||, a public value), plus calibrated noise."""
        return self._release(np.asarray(x, dtype=float), np.asarray(y, dtype=float), clip, b,
                             oracle=2)

    def _release(self, x: np.ndarray, y: np.ndarray | None, clip: float | None, b: int | None,
                 oracle: int) -> np.ndarray:
        if self.made >= self.plan.releases:
            raise RuntimeError(f"release {self.made + 1} asked for, but the plan declared "
                               f"{self.plan.releases}: declare every release up front")
        C = self.plan.clip if clip is None else float(clip)
        if not (math.isfinite(C) and C > 0):
            raise ValueError(f"clip={clip!r} is invalid: must be finite and > 0")
        if b is not None and self.plan.sampling != "one_pass":
            raise ValueError(f"b={b!r} is invalid for a {self.plan.sampling} plan: only a "
                             "one-pass plan reads batches of chosen sizes")
        d, z = self._problem.d, self.multiplier
        # every release's noise is z x its own sensitivity (2 clip / divisor, replace-one), so
        # each is the same Gaussian mechanism whatever clip it uses: the composition holds
        if self.plan.sampling == "full":
            batch, denom = self._sample, int(self.n)
            noise_std = z * 2 * C / denom
        elif self.plan.sampling == "poisson":
            batch = poisson_subsample(self._sample, self.plan.b / self.n, self._rng)
            denom = int(self.plan.b)
            noise_std = z * C / denom  # N(0, (z C)^2) on the sum (dp-accounting's convention)
        else:
            size = int(self.plan.b if b is None else b)
            if size < 1 or self._stream.remaining < size:
                raise RuntimeError(f"a one-pass release of b={size} asked for with "
                                   f"{self._stream.remaining} records left: check "
                                   "desk.data_left(b) first")
            batch, denom = self._stream.take(size), size
            noise_std = z * 2 * C / denom
        sens = 2 * C / denom
        total = clipped_grad_sum(self._problem, x, batch, C) if y is None else \
            clipped_grad_diff_sum(self._problem, x, y, batch, C)
        read = int(batch.k) if hasattr(batch, "k") else len(batch)
        if self.hidden is not None:  # the realized |B_t| stays with the suite
            self.hidden.add(read)
            read = self.public_batch
        self.last_batch = read
        self.grad_evals += read * (1 if y is None else 2)
        leaf = total / denom
        released = leaf + noise_std * self._rng.standard_normal(d) if z > 0 else leaf
        if self._forced is not None:  # the transcript replay: every draw made, value forced
            if self.made >= len(self._forced):
                raise TranscriptExhausted(self.made + 1)
            released = np.array(self._forced[self.made], dtype=float, copy=True)
        self.made += 1
        self.last_noise_std, self.last_released = noise_std, released
        if self._probe is not None:
            self._probe.release(t=self.made, oracle=oracle, x=x.copy(),
                                x_prev=(x if y is None else y).copy(), batch=batch, clip=C,
                                leaf=leaf, told=sens, noise_std=noise_std,
                                nabla=released.copy(), released=released.copy(),
                                restart=oracle == 1, escape=False, denom=denom)
        return released

    def ledger(self) -> dict:
        """What the plan spends (the horizon declared: a run that stops early spends less)."""
        if not self.privacy.private:
            return ledger_none(self.privacy.delta)
        if self._cal is not None:
            return ledger_pld(self._cal)
        if self.plan.sampling == "full":
            return ledger_gdp(math.sqrt(self.plan.releases) / self.multiplier, self.privacy.delta)
        return ledger_gdp(gdp_mu(self.privacy.eps, self.privacy.delta), self.privacy.delta)


class TranscriptExhausted(RuntimeError):
    """A forced replay asked for a release beyond the recorded transcript (the recorded run
    stopped there: its time limit, or a decision the replay does not repeat)."""

    def __init__(self, release: int) -> None:
        super().__init__(f"release {release} asked for beyond the forced transcript")
        self.release = release


class ReleaseWindow:
    """What `steps` holds of the desk: the plan, the public counts and the two release calls.
    The sample, the run's generator and the probe stay on the desk. (Python cannot seal an
    object: a plugin that digs the desk out of this window reads the data outside the API,
    which the forced-transcript replay of `analysis.privacy_checks` then finds.)"""

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
        # data-independent draws of `steps`: a spawned child of the run's generator (spawning
        # reads its seed sequence, not its stream: the desk's draws are unchanged)
        public_rng = rng.spawn(1)[0]
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
