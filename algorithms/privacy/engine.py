"""The release engine: the one place where a run's per-record gradients become noised releases.

`ReleaseDesk` is configured once per run from public values (the plan's sampling, number of
releases, clip and batch; eps and delta; an optional larger noise multiplier) and then hands out
releases only. For each release it draws the batch itself (the full sample, a Poisson subsample
at rate q = b / n, or the next b records of a stream), has the suite compute the clipped sum
(`algorithms.counts_maps`: each record clipped to C, from records or exactly from counts),
divides by the public divisor, adds Gaussian noise calibrated by the one accountant module
(T GDP-composed full-batch releases: `composed_gaussian_multiplier`; T Poisson-subsampled
releases: dp-accounting's PLD, `poisson_gaussian_calibration`; disjoint batches: parallel
composition, `gdp_mu`), reports the release to the privacy probe and keeps the ledger. Every
release's noise is z times its own sensitivity (2 clip / divisor, replace-one), so the
composition holds whatever clip a release uses.

Who uses it (issue 71, "one privacy engine"): the release API's plugins
(`algorithms.release_api`) and the built-in DP-GD, DP-SGD and one-pass noisy SGD
(`algorithms.first_order.noisy_gd`), bit for bit with the numbers of their own loops before
(tests/test_release_engine.py). The planted faults the privacy tests need (a third of the noise,
no clipping) are the engine's, so no algorithm keeps a noise or clip switch of its own. The
tree mechanism's families (the Spiders, private SpiderBoost, recursive regularization) still
clip and noise in their own loops: moving them onto a tree engine is issue 71's next step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms.base import Privacy
from algorithms.counts_maps import clipped_grad_diff_sum, clipped_grad_sum
from algorithms.privacy.accounting.gdp import composed_gaussian_multiplier, gdp_mu
from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_none, ledger_pld
from algorithms.privacy.accounting.pld import poisson_gaussian_calibration, with_noise_factor
from algorithms.privacy.poisson_gaps import SAMPLERS, poisson_gap_subsample
from problems.base import Problem
from problems.counts.dataset import poisson_subsample

#: The planted faults the engine carries (the privacy tests' broken mechanisms).
ENGINE_FAULTS = ("noise_third", "no_clipping")


class RealizedCounts:
    """A Poisson-sampled loop's realized batch sizes, kept out of what the run releases.

    The subsampled accountant (replace-one, dp-accounting's PoissonSampledDpEvent) treats each
    step's size |B_t| as hidden: with the sizes public, the eps of what is released is larger
    (a Binomial(n, q) mixture of (k/n)-subsampled Gaussians: +1.2% at n 2000, eps 0.3). So the
    step log and `grad_evals` carry the expected batch q n, and these realized counts reach
    the store only under `Trajectory.evaluation_only` (cost studies; never a run fact).
    """

    def __init__(self) -> None:
        self.first: int | None = None
        self.grad_evals = 0

    def add(self, size: int, evals_per_record: int = 1) -> None:
        if self.first is None:
            self.first = int(size)
        self.grad_evals += evals_per_record * int(size)

    def add_many(self, first: int | None, total: int) -> None:
        """Several one-oracle releases at once: the first one's size and their sizes' sum."""
        if self.first is None and first is not None:
            self.first = int(first)
        self.grad_evals += int(total)

    def record(self) -> dict[str, int | None]:
        return {"realized_first_batch": self.first, "realized_grad_evals": self.grad_evals}

SAMPLINGS = ("full", "poisson", "one_pass")


@dataclass(frozen=True)
class ReleasePlan:
    """The releases a run will ask for, declared before it starts.

    sampling: "full" (every release reads the n records: T releases, GDP composition),
    "poisson" (each release a Poisson subsample at rate q = b / n: PLD composition) or
    "one_pass" (each release the next b records of the stream: parallel composition, T up to
    the budget's n // b). clip: the per-record L2 clip C. b: the (expected) batch. sampler: how
    a Poisson plan draws its records in record mode, "mask" (n uniforms, the default) or "gaps"
    (the same law from ~q n uniforms: `algorithms.privacy.poisson_gaps`); a counts sample is
    thinned exactly either way."""

    sampling: str
    releases: int
    clip: float
    b: int | None = None
    sampler: str = "mask"

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
        if self.sampler not in SAMPLERS or (self.sampler != "mask" and self.sampling != "poisson"):
            raise ValueError(f"release plan sampler={self.sampler!r} is invalid: must be one of "
                             f"{', '.join(SAMPLERS)}, and other than 'mask' only for a poisson plan")
        if self.sampling != "one_pass" and n is None:
            raise ValueError(f"a {self.sampling} release plan needs a finite sample (give n)")


class ReleaseDesk:
    """Holds the sample, the run's generator and the accountant's noise; hands out released
    values only (module docstring)."""

    def __init__(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
                 rng: np.random.Generator, plan: ReleasePlan, probe: Any = None, *,
                 noise_multiplier: float | None = None, faults: Iterable[str] = ()) -> None:
        """`noise_multiplier`: a larger z than the budget needs (a public choice; the ledger
        then says what the run really spends); less is refused. `faults`: the planted broken
        mechanisms of `ENGINE_FAULTS` (the privacy tests')."""
        plan.check(n)
        self._problem, self._stream, self._rng, self._probe = problem, stream, rng, probe
        self.plan, self.n, self.privacy = plan, n, privacy
        self._sample = stream.take(n) if plan.sampling != "one_pass" else None
        # a probe holding a recorded transcript (`forced`) has every release return it
        # (algorithms.privacy.audit.transcript_replay); the desk still draws what it draws
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
        needed = self.multiplier
        if noise_multiplier is not None:
            if float(noise_multiplier) < needed:
                raise ValueError(f"parameter noise_multiplier={noise_multiplier!r} is invalid: "
                                 f"must be >= {needed:.6g}, the noise (eps, delta) needs")
            self.multiplier = float(noise_multiplier)
        #: the noise over what the budget needs (>= 1): the ledger's correction
        self.noise_factor = self.multiplier / needed if needed > 0 else 1.0
        faults = tuple(faults)
        self._noise_scale = 1 / 3 if "noise_third" in faults else 1.0  # planted fault
        self._unclipped = "no_clipping" in faults  # planted fault: the clip not applied

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
            noise_std = z * (2 * C / denom)  # z x the sensitivity (this order: the same floats
            # as the built-in loops' before they moved here)
        elif self.plan.sampling == "poisson":
            if self.plan.sampler == "gaps" and isinstance(self._sample, np.ndarray):
                batch = poisson_gap_subsample(self._sample, self.plan.b / self.n, self._rng)
            else:  # the mask, or a counts sample's exact thinning
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
            noise_std = z * (2 * C / denom)
        sens = 2 * C / denom
        used = math.inf if self._unclipped else C
        total = clipped_grad_sum(self._problem, x, batch, used) if y is None else \
            clipped_grad_diff_sum(self._problem, x, y, batch, used)
        read = int(batch.k) if hasattr(batch, "k") else len(batch)
        if self.hidden is not None:  # the realized |B_t| stays with the suite
            self.hidden.add(read)
            read = self.public_batch
        self.last_batch = read
        self.grad_evals += read * (1 if y is None else 2)
        leaf = total / denom
        released = leaf + self._noise_scale * noise_std * self._rng.standard_normal(d) \
            if z > 0 else leaf
        if self._forced is not None:  # the transcript replay: every draw made, value forced
            if self.made >= len(self._forced):
                raise TranscriptExhausted(self.made + 1)
            released = np.array(self._forced[self.made], dtype=float, copy=True)
        self.made += 1
        self.last_noise_std, self.last_released = noise_std, released
        if self._probe is not None:
            self._probe.release(t=self.made, oracle=oracle, x=x.copy(),
                                x_prev=(x if y is None else y).copy(), batch=batch, clip=used,
                                leaf=leaf, told=sens, noise_std=noise_std,
                                nabla=released.copy(), released=released.copy(),
                                restart=oracle == 1, escape=False, denom=denom)
        return released

    def kernel_view(self) -> tuple[Any, float | None, int, float] | None:
        """For a built-in family's compiled steps (`algorithms.first_order.compiled_sgd`), which
        make this desk's full-batch or Poisson releases with its arithmetic: (the sample, the
        rate q or None for the full batch, the public divisor, the noise std); None where only
        this desk may release: a one-pass plan, a probe or a forced transcript, a planted
        fault."""
        if self.plan.sampling == "one_pass" \
                or self._probe is not None or self._forced is not None \
                or self._noise_scale != 1.0 or self._unclipped:
            return None
        C, z = self.plan.clip, self.multiplier
        if self.plan.sampling == "full":
            denom = int(self.n)
            return self._sample, None, denom, z * (2 * C / denom)
        denom = int(self.plan.b)
        return self._sample, self.plan.b / self.n, denom, z * C / denom

    def kernel_generator(self) -> np.random.Generator:
        """The run's generator, for the compiled steps of `kernel_view` only."""
        return self._rng

    def note_kernel_releases(self, count: int, realized: tuple[int | None, int],
                             noise_std: float) -> None:
        """Account `count` releases the compiled steps made (`kernel_view`): the release count,
        the evaluations said, the realized batch sizes (first, sum) kept hidden."""
        if count <= 0:
            return
        self.made += count
        read = self.public_batch
        self.grad_evals += read * count
        self.last_batch, self.last_noise_std = read, noise_std
        if self.hidden is not None:
            self.hidden.add_many(*realized)

    def ledger(self) -> dict:
        """What the plan spends (the horizon declared: a run that stops early spends less)."""
        if not self.privacy.private:
            return ledger_none(self.privacy.delta)
        if self._cal is not None:  # PLD: every family's multiplier times the factor
            return ledger_pld(with_noise_factor(self._cal, self.noise_factor))
        # full batch (T releases of z 2C/n compose to sqrt(T)/z = mu-GDP) and disjoint batches
        # (parallel composition): mu of the budget over the extra noise
        return ledger_gdp(gdp_mu(self.privacy.eps, self.privacy.delta) / self.noise_factor,
                          self.privacy.delta)


class TranscriptExhausted(RuntimeError):
    """A forced replay asked for a release beyond the recorded transcript (the recorded run
    stopped there: its time limit, or a decision the replay does not repeat)."""

    def __init__(self, release: int) -> None:
        super().__init__(f"release {release} asked for beyond the forced transcript")
        self.release = release

    def __reduce__(self) -> tuple:  # sent back from a replay's fresh process
        return (TranscriptExhausted, (self.release,))


__all__ = ["ENGINE_FAULTS", "SAMPLINGS", "RealizedCounts", "ReleaseDesk", "ReleasePlan",
           "TranscriptExhausted"]
