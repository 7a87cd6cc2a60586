"""The `Problem` interface: a distribution of smooth losses with exact population oracles.

A problem is a distribution P over records z and a loss f(x; z) on R^d. It states the
constants of seed 000's Assumption 3.1 (every f(.; z) is G-Lipschitz, M-smooth and
rho-Hessian-Lipschitz on `constants.domain`, and F(x0) - inf F <= B0), a public start x0,
vectorized per-sample gradients, and the *exact* population loss, gradient and Hessian
(closed forms, or full averages over a finite support; never Monte Carlo).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from problems.counts.coordinates import counts_stream
from problems.counts.layouts import CountsBatch, CountsLayout
from problems.counts.stream import STREAM_VERSION, CountsStream
from problems.streams import ArrayStream, DataStream, StreamBase

#: How a stream hands out data: "records" (rows) or "counts" (exact batch statistics).
DATA_MODES = ("records", "counts")


@dataclass(frozen=True)
class Constants:
    """Constants of seed 000 Assumption 3.1 for every per-sample loss f(.; z).

    G: Lipschitz constant (bound on ||grad f(x; z)||), M: smoothness (bound on
    ||hess f(x; z)||), rho: Hessian-Lipschitz constant, B0: F(x0) - inf F, and
    `domain`: where the bounds hold ("R^d" or a ball).
    """

    G: float
    M: float
    rho: float
    B0: float
    domain: str = "R^d"
    domain_radius: float = math.inf

    def __post_init__(self) -> None:
        for name in ("G", "M", "rho", "B0", "domain_radius"):
            value = getattr(self, name)
            if not (value >= 0):  # also rejects NaN
                raise ValueError(f"constants.{name}={value!r} is invalid: must be >= 0")


def check_positive_int(name: str, value: object) -> int:
    """Return `value` as int or raise ValueError naming the parameter and the allowed range."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}={value!r} is invalid: must be an integer >= 1")
    return int(value)


def check_nonneg(name: str, value: object) -> float:
    """Return `value` as float or raise ValueError unless it is a finite number >= 0."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is invalid: must be a finite number >= 0") from None
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name}={value!r} is invalid: must be a finite number >= 0")
    return v


def check_positive(name: str, value: object) -> float:
    """Return `value` as float or raise ValueError unless it is a finite number > 0."""
    v = check_nonneg(name, value)
    if v <= 0:
        raise ValueError(f"{name}={value!r} is invalid: must be a finite number > 0")
    return v


class Problem(ABC):
    """A stochastic non-convex objective F(x) = E_{z~P} f(x; z) with exact population oracles.

    Records are rows of a float array (shape (n, record_dim)); `data[idx]` selects samples.
    Subclasses implement `_draw`, the per-sample oracles and the population oracles.
    """

    name: str = ""
    description: str = ""
    #: "hard" (reaching alpha-stationarity takes ~alpha^-2 steps: the claims should bind),
    #: "benign" (short paths: faster than claimed is expected) or "calibration".
    character: str = "benign"
    #: A parameter that makes one instance per accuracy (e.g. hard_ramp's "alpha"): sweeps set
    #: it to each cell's target_alpha unless the spec fixes it. None: one instance for all.
    per_target_param: str | None = None
    #: Every per-sample loss f(.; z) is convex (algorithms whose privacy or rate needs convexity
    #: refuse problems that do not declare it).
    convex: bool = False

    def enforce_domain(self, batch: np.ndarray) -> np.ndarray | None:
        """Records mapped, by a fixed data-independent map that is the identity on every record
        P can draw, into the domain where the stated constants (G, M) hold for f(.; z) whatever
        the record was; None when the problem has no such map. Output perturbation by
        stability (PhasedSGD) needs every record's loss M-smooth, which clipping cannot give."""
        return None

    def __init__(self, d: int) -> None:
        self.d = check_positive_int("d", d)

    # ----- parameters -------------------------------------------------------------------
    @property
    @abstractmethod
    def constants(self) -> Constants:
        """Constants of Assumption 3.1 (see `Constants`)."""

    @property
    @abstractmethod
    def x0(self) -> np.ndarray:
        """The public start point, shape (d,)."""

    def params(self) -> dict:
        """The parameters that define this problem instance (used to key data seeds)."""
        return {"d": self.d}

    # ----- data -------------------------------------------------------------------------
    @abstractmethod
    def _draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw n i.i.d. records as an array of shape (n, record_dim)."""

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw a data set of n i.i.d. records from P."""
        n = check_positive_int("n", n)
        return self._draw(n, rng)

    #: Magnitude of the adversarial records (privacy verification, layer 1).
    ADVERSARY_SCALE = 1e6

    def adversarial_records(self) -> np.ndarray:
        """Replacement records, in this problem's record layout, that push per-sample gradients
        and gradient differences to extremes: each of the first five columns at +-1e6 alone,
        every column at +1e6 and at -1e6, and four dense random rows of that scale (fixed
        seed). Any real record is one an adversary could insert, so clipping must hold for
        these whether or not P can draw them; problems with a structured layout may add their
        own (override and extend)."""
        width = self._draw(1, np.random.default_rng(0)).shape[1]
        big = self.ADVERSARY_SCALE
        rows = []
        for j in range(min(width, 5)):
            for sign in (1.0, -1.0):
                r = np.zeros(width)
                r[j] = sign * big
                rows.append(r)
        rows += [np.full(width, big), np.full(width, -big)]
        rows += list(big * np.random.default_rng(20261130).standard_normal((4, width)))
        return np.array(rows)

    def stream(self, seed: int | np.random.SeedSequence, budget: int | None = None,
               data: str = "records", counts_version: int = STREAM_VERSION) -> DataStream | CountsStream:
        """A lazy, prefix-consistent stream of i.i.d. records (`problems.streams`), or with
        data="counts" of their value counts (`problems.counts.stream`; problems that opt in),
        drawn by counts stream `counts_version` (default the latest)."""
        if data == "counts":
            return counts_stream(self.counts_layout(data), seed, budget, version=counts_version)
        if data == "records":
            return DataStream(self._draw, seed, budget=budget)
        raise ValueError(f"data={data!r} is invalid: must be one of {', '.join(DATA_MODES)}")

    def as_stream(self, data: np.ndarray | StreamBase) -> StreamBase:
        """Wrap an array from `sample` in the stream interface; pass streams through."""
        if isinstance(data, StreamBase):
            return data
        return ArrayStream(np.asarray(data))

    # ----- counts mode (exact batch statistics; see problems.counts.stream) ---------------------
    #: The layout of a record's values, or None: records only (the problem does not opt in).
    layout: CountsLayout | None = None
    #: Class-level: instances have a counts mode (the opt-in mixins of problems.finite_support).
    counts_capable: bool = False

    @property
    def supports_counts(self) -> bool:
        return self.layout is not None

    def default_data_mode(self) -> str:
        """"counts" where the problem opts in (samples are then free), else "records"."""
        return "counts" if self.supports_counts else "records"

    def counts_layout(self, data: str = "counts") -> CountsLayout:
        """The layout, or ValueError naming the problem if it has no counts mode."""
        if self.layout is None:
            raise ValueError(f"data={data!r} is invalid for problem {self.name!r}: its records "
                             "have no finite support, so it runs with data='records' only")
        return self.layout

    def batch_mean_grad(self, x: np.ndarray, batch: CountsBatch) -> np.ndarray:
        """Mean of grad f(x; z_i) over the batch, from its counts (counts-mode O1)."""
        raise NotImplementedError(f"{self.name} has no counts mode")

    def batch_mean_grad_diff(self, x: np.ndarray, y: np.ndarray, batch: CountsBatch) -> np.ndarray:
        """Mean of grad f(x; z_i) - grad f(y; z_i) over the batch, from its counts (O2)."""
        raise NotImplementedError(f"{self.name} has no counts mode")

    def counts_grad(self, x: np.ndarray, batch: CountsBatch) -> tuple[np.ndarray, float]:
        """Counts-mode O1: the batch mean of grad f(x; z_i) and an upper bound on the largest
        per-record norm in the batch. Default: the mean from `batch_mean_grad`, the bound over
        the whole support. The engines' clips do not read this bound (it may be a statistic of
        the batch): `algorithms.counts_maps` clips per atom, or guards on the whole-support
        bound of `guarded_counts_grad`."""
        return self.batch_mean_grad(x, batch), self.record_grad_bound(x)

    def counts_grad_diff(self, x: np.ndarray, y: np.ndarray,
                         batch: CountsBatch) -> tuple[np.ndarray, float]:
        """Counts-mode O2: as `counts_grad` for grad f(x; z) - grad f(y; z)."""
        return self.batch_mean_grad_diff(x, y, batch), self.record_grad_diff_bound(x, y)

    def guarded_counts_grad(self, x: np.ndarray, batch: CountsBatch) -> tuple[np.ndarray, float]:
        """Product layouts' counts-mode O1 with its guard: (batch mean of grad f(x; z_i),
        `record_grad_bound(x)`), the bound over the whole support at x, a public value
        (`algorithms.counts_maps`). A problem may compute the two in one pass."""
        return self.batch_mean_grad(x, batch), self.record_grad_bound(x)

    def guarded_counts_grad_diff(self, x: np.ndarray, y: np.ndarray,
                                 batch: CountsBatch) -> tuple[np.ndarray, float]:
        """As `guarded_counts_grad` for differences: the bound is `record_grad_diff_bound`."""
        return self.batch_mean_grad_diff(x, y, batch), self.record_grad_diff_bound(x, y)

    def record_grad_bound(self, x: np.ndarray) -> float:
        """max over the support of ||grad f(x; z)|| (counts mode's clip guard)."""
        raise NotImplementedError(f"{self.name} has no counts mode")

    def record_grad_diff_bound(self, x: np.ndarray, y: np.ndarray) -> float:
        """max over the support of ||grad f(x; z) - grad f(y; z)|| (counts mode's clip guard)."""
        raise NotImplementedError(f"{self.name} has no counts mode")

    def materialize(self, batch: CountsBatch) -> np.ndarray:
        """Records (k, record_dim) whose value counts are `batch.counts` (tests, audits)."""
        raise NotImplementedError(f"{self.name} has no counts mode")

    # ----- per-sample oracles -------------------------------------------------------------
    @abstractmethod
    def per_sample_losses(self, x: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """f(x; z_i) for each record, shape (b,)."""

    @abstractmethod
    def per_sample_grads(self, x: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """grad f(x; z_i) for each record, shape (b, d); vectorized over the batch."""

    def sum_grads(self, x: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """sum_i grad f(x; z_i) over the batch (unclipped; the metrics' exact grad F_S).
        Problems with structure override it to avoid the (b, d) array."""
        return self.per_sample_grads(x, batch).sum(axis=0)

    def per_sample_grad_diffs(self, x: np.ndarray, y: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """grad f(x; z_i) - grad f(y; z_i), shape (b, d) (Spider's O2 summands)."""
        return self.per_sample_grads(x, batch) - self.per_sample_grads(y, batch)

    # ----- exact population oracles -------------------------------------------------------
    @abstractmethod
    def population_loss(self, x: np.ndarray) -> float:
        """F(x), exact."""

    @abstractmethod
    def population_grad(self, x: np.ndarray) -> np.ndarray:
        """grad F(x), exact, shape (d,)."""

    @abstractmethod
    def population_hessian(self, x: np.ndarray) -> np.ndarray:
        """hess F(x), exact, shape (d, d)."""

    def population_hvp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """hess F(x) @ v; subclasses override where a matrix-free form is cheaper."""
        return self.population_hessian(x) @ v

    def population_lambda_min(self, x: np.ndarray) -> float:
        """Smallest eigenvalue of hess F(x); subclasses with structure override."""
        return float(np.linalg.eigvalsh(self.population_hessian(x))[0])

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"
