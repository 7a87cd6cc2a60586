"""The noise engine: where the built-in families' per-record gradients become clipped sums and
noised releases, beside the release desk (`algorithms.privacy.engine`) that DP-GD, DP-SGD,
noisy SGD and the plugins use (issue 71, item 1: one privacy engine, the Opacus shape: the
engine, not the algorithm, owns privacy).

A run makes one `NoiseEngine` from public values: the problem (whose per-record gradients the
suite clips, `algorithms.counts_maps`), the run's generator (kept here: an algorithm asks for
noise, it never draws it), whether the run is private, the noise rule its accountant chose
(`use_gaussian`: a multiplier and the sensitivity form; `use_tree`: the streaming tree
mechanism of seed 000's Algorithm 1 with its leaves clipped to the calibrated sensitivity) and
the planted faults. From then on an algorithm asks for releases:

- `gaussian_release(x, batch, clip, divisor)`: the sum over the batch of each record's gradient
  (or gradient difference at (x, y)) clipped to `clip`, over the divisor, plus Gaussian noise
  whose std the engine computes from the configured multiplier and *this* clip and divisor, so
  the noise always matches the clip the engine applied (a release whose clip and noise
  disagree cannot be asked for);
- `tree_leaf` then `tree_noise`: a leaf clipped to at most the tree's sensitivity times the
  divisor over 2 (so every leaf has the sensitivity the tree was calibrated for), and the next
  prefix of tree noise;
- `perturbation`: the non-private noise of a saddle escape (seed 000's Algorithm 2, line 10),
  from the same generator so the run's draws keep their order;
- `kernel_generator`: the generator, for the compiled kernels of the built-in families only,
  which draw through the engine's compiled arithmetic (`algorithms.privacy.compiled_noise`).

The std rules (`STD_RULES`) are the accountants' z x sensitivity, written in the order of
operations each family's loop used before it moved here, so every stored number stays bit for
bit (tests/test_noise_engine.py against the old loops' fingerprints, tests/engine_digests.json):
the rules are equal in exact arithmetic and differ in the last bit, which changes every later
draw's effect on the path. Poisson-subsampled sums follow dp-accounting's convention (std z C
on a sum whose add/remove sensitivity is C).

The planted faults the privacy tests plant are the engine's (`ENGINE_FAULTS`): a third of the
noise, no clipping, the O2 bound from the previous step, a tree calibrated for one node or one
leaf, a batch that re-uses a record, records outside the domain. No built-in keeps a noise, clip
or fault switch of its own (an AST test checks each module).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms.counts_maps import clipped_grad_diff_sum, clipped_grad_sum, mapped_grad_sum
from algorithms.privacy.accounting.gdp import calibrate
from algorithms.privacy.faults import FAULTS
from algorithms.privacy.mechanisms import TreeMechanism, clip_rows
from problems.counts.dataset import poisson_subsample
from problems.counts.layouts import CountsBatch

#: The planted faults the noise engine carries (each a broken mechanism the audits must flag).
ENGINE_FAULTS = tuple(FAULTS)  # every planted fault of `faults.FAULTS` is the engine's

#: std of a release from (multiplier z, clip C, divisor n, told sensitivity s): the accountant's
#: z x sensitivity in each family's own order of operations (module docstring).
STD_RULES: dict[str, Callable[[float, float, float, float], float]] = {
    "z*s": lambda z, C, n, s: z * s,          # s = 2 C / n (or 2 C x scale)
    "z*2*C/n": lambda z, C, n, s: z * 2 * C / n,  # the Spiders' Gaussian leaves
    "z*C/n": lambda z, C, n, s: z * C / n,    # Poisson sums (dp-accounting's convention)
    "s/mu": lambda z, C, n, s: s / z,         # z holds mu: the empirical Spider's GDP split
}


@dataclass(frozen=True)
class Release:
    """One Gaussian release: `leaf` the clipped sum over its divisor, `value` leaf + noise,
    `std` the calibrated noise std (the planted third not shown), `told` the replace-one
    sensitivity the noise was calibrated to, `clip` the clip applied."""

    leaf: np.ndarray
    value: np.ndarray
    std: float
    told: float
    clip: float


class ReusingStream:
    """Planted fault "reuse_sample": each batch's first record is the previous batch's last."""

    def __init__(self, inner: Any) -> None:
        self._inner, self._last = inner, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def take(self, k: int) -> np.ndarray:
        out = np.array(self._inner.take(k))
        if self._last is not None and len(out):
            out[0] = self._last
        if len(out):
            self._last = out[-1].copy()
        return out


def batch_size(batch: Any) -> int:
    """The records in a batch (records, or a counts batch's k)."""
    return int(batch.k) if isinstance(batch, CountsBatch) else len(batch)


def o1_leaf(problem: Any, x: np.ndarray, batch: Any, clip: float) -> np.ndarray:
    """A Spider's O1 pre-noise answer: the mean of per-record gradients clipped to `clip`, the
    suite's clipped sum (`algorithms.counts_maps`) over the batch size. The privacy audit
    recomputes a release's leaf with it. From counts: clipped per atom on an atoms layout
    (exact at any clip); on a product layout only while the clip is the identity on the whole
    support at this public iterate (checked at every call)."""
    return clipped_grad_sum(problem, x, batch, clip, "O1") / batch_size(batch)


def o2_leaf(problem: Any, x: np.ndarray, x_prev: np.ndarray, batch: Any,
            clip: float) -> np.ndarray:
    """A Spider's O2 pre-noise answer: the mean of per-record gradient differences clipped to
    `clip` (from counts as in `o1_leaf`)."""
    return clipped_grad_diff_sum(problem, x, x_prev, batch, clip, "O2") / batch_size(batch)


class NoiseEngine:
    """Clips, noises and keeps the generator for one run of a built-in family (module
    docstring)."""

    def __init__(self, problem: Any, rng: np.random.Generator, *, private: bool,
                 faults: Iterable[str] = ()) -> None:
        self._problem, self._rng, self.private = problem, rng, bool(private)
        self.d = int(problem.d)
        self.faults = frozenset(faults)
        unknown = sorted(self.faults - set(ENGINE_FAULTS))
        if unknown:
            raise ValueError(f"planted_faults={unknown!r} is invalid: must be among "
                             f"{', '.join(ENGINE_FAULTS)}")
        self._third = 1 / 3 if "noise_third" in self.faults else 1.0  # planted fault
        self._unclipped = "no_clipping" in self.faults  # planted fault
        self._multipliers: dict[str, tuple[float, str]] = {}
        self.tree: TreeMechanism | None = None
        self.leaf_sensitivity = math.nan

    # -- configuration (public values only) ---------------------------------------------------

    def use_gaussian(self, multiplier: float, rule: str, name: str = "z",
                     draw_at_zero: bool = False) -> None:
        """Gaussian releases named `name`: std = STD_RULES[rule](multiplier, clip, divisor,
        told sensitivity); multiplier 0 (a non-private run) adds no noise. `draw_at_zero`: a
        private release whose std is 0 (a zero step's O2) still draws its normals, as the
        loops of the empirical Spider, private SpiderBoost and recursive regularization did
        (the draws that follow stay in step); otherwise nothing is drawn for it."""
        if rule not in STD_RULES:
            raise ValueError(f"rule={rule!r} is invalid: must be one of {', '.join(STD_RULES)}")
        if not (multiplier >= 0 and not math.isnan(multiplier)):
            raise ValueError(f"multiplier={multiplier!r} is invalid: must be >= 0")
        self._multipliers[name] = (float(multiplier), rule, bool(draw_at_zero))

    def tree_calibration(self, privacy: Any, leaf_sensitivity: float, steps: int, scope: str,
                         rule: Callable[..., Any]) -> Any:
        """The tree's calibration from the accountant's `rule` (`sosp.noise_rules`), with the
        planted faults that miscount the nodes a record touches."""
        if "tree_one_leaf" in self.faults:  # planted fault: one leaf per record in global scope
            return rule(privacy, leaf_sensitivity, "tree", steps, "epoch")
        if "tree_depth_1" in self.faults:  # planted fault: one node per record
            return calibrate(privacy.eps, privacy.delta, leaf_sensitivity, nodes=1,
                             method=privacy.calibration)
        return rule(privacy, leaf_sensitivity, "tree", steps, scope)

    def use_tree(self, sigma: float, leaf_sensitivity: float) -> TreeMechanism:
        """The streaming tree mechanism: nodes of std sigma, leaves clipped to
        `leaf_sensitivity` (replace-one, after the divisor)."""
        self.tree = TreeMechanism(self.d, sigma * self._third, self._rng)
        self.leaf_sensitivity = float(leaf_sensitivity)
        return self.tree

    def stream(self, stream: Any) -> Any:
        """The stream the run takes its batches from (the planted re-used record, or as is)."""
        return ReusingStream(stream) if "reuse_sample" in self.faults else stream

    def domain(self, records: np.ndarray) -> np.ndarray:
        """Records mapped into the domain where the problem's stated smoothness holds (the
        identity on its own records; the planted fault skips it)."""
        if "no_domain" in self.faults:
            return records
        return self._problem.enforce_domain(records)

    @property
    def wrong_step(self) -> bool:
        """The planted fault "o2_wrong_step": the O2 bound a release is told comes from the
        previous step (the algorithm computes it; the engine uses it, unclipped)."""
        return "o2_wrong_step" in self.faults

    # -- the clip -------------------------------------------------------------------------------

    def applied(self, clip: float) -> float:
        """The clip the engine applies for a requested one (inf under the planted fault)."""
        return math.inf if self._unclipped else clip

    def clipped_sum(self, x: np.ndarray, batch: Any, clip: float, y: np.ndarray | None = None,
                    oracle: str | None = None) -> np.ndarray:
        """The sum over the batch of per-record gradients (or differences at (x, y)), each
        clipped to the applied clip (records, or exactly from counts: `counts_maps`)."""
        used = self.applied(clip)
        if y is None:
            return clipped_grad_sum(self._problem, x, batch, used, *(() if oracle is None
                                                                     else (oracle,)))
        return clipped_grad_diff_sum(self._problem, x, y, batch, used,
                                     *(() if oracle is None else (oracle,)))

    def clipped_rows(self, rows: np.ndarray, clip: float) -> np.ndarray:
        """Per-record rows clipped to the applied clip (a per-record loop's, e.g. the phased
        SGD of recursive regularization)."""
        return clip_rows(rows, self.applied(clip))

    def mapped_sum(self, x: np.ndarray, batch: Any, rowmap: Callable[[np.ndarray], np.ndarray],
                   what: str) -> np.ndarray:
        """The sum over the batch of rowmap(per-record gradient) (a projection that bounds each
        record: the ellipsoid's)."""
        return mapped_grad_sum(self._problem, x, batch, rowmap, what)

    # -- the noise ------------------------------------------------------------------------------

    def noised(self, value: np.ndarray, std: float, draw_at_zero: bool = False) -> np.ndarray:
        """value + N(0, std^2 I) (value itself, nothing drawn, when std is 0, unless
        `draw_at_zero`: `use_gaussian`)."""
        if std > 0 or (draw_at_zero and self.private):
            return value + self._third * std * self._rng.standard_normal(self.d)
        return value

    def gaussian_release(self, x: np.ndarray, batch: Any, clip: float, divisor: float, *,
                         y: np.ndarray | None = None, oracle: str | None = None,
                         name: str = "z", scale: float | None = None,
                         told_clip: float | None = None) -> Release:
        """One release (module docstring): the clipped sum over `divisor` (or times `scale`,
        the tree private Spider's 2^j / b), plus noise calibrated to this clip and divisor.
        `told_clip`: the bound the noise is calibrated to when it is not the clip (the planted
        faults only: no clipping keeps the requested clip's noise; a wrong O2 step tells its
        own bound)."""
        z, rule, draw_at_zero = self._multipliers[name]
        if told_clip is not None and not (self.wrong_step or self._unclipped):
            raise ValueError("told_clip is for the planted faults only: a release's noise is "
                             "calibrated to its own clip")
        total = self.clipped_sum(x, batch, clip, y, oracle)
        C = clip if told_clip is None else told_clip
        if scale is None:
            leaf, told = total / divisor, 2 * C / divisor
        else:
            leaf, told = total * scale, 2 * C * scale
        noised = self.private and z > 0
        std = STD_RULES[rule](z, C, divisor, told) if noised else 0.0
        if rule == "z*2*C/n":  # the Spiders tell the sensitivity read back off the noise
            told = std / z if noised else 2 * self.applied(clip) / divisor
        return Release(leaf, self.noised(leaf, std, draw_at_zero and noised), std, told,
                       self.applied(clip))

    def output_release(self, value: np.ndarray, told: float, name: str = "z"
                       ) -> tuple[np.ndarray, float]:
        """Output perturbation: `value` (an SGD phase's average, whose replace-one sensitivity
        `told` follows from the clip the engine applied: 2 C eta for recursive
        regularization's phases) plus noise calibrated to it; (released, std)."""
        z, rule, draw_at_zero = self._multipliers[name]
        noised = self.private and z > 0
        std = STD_RULES[rule](z, math.nan, math.nan, told) if noised else 0.0
        return self.noised(value, std, draw_at_zero and noised), std

    def use_shaped(self, multiplier: float, a: np.ndarray,
                   project: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
        """Seed 002's ellipsoid releases (Pasan, Pagan): each record's gradient projected onto
        E_A = {g : sum_j a_j g_j^2 <= 1} by `project(rows, a)` (replace-one sensitivity 2 in
        the A-norm), noise N(0, z^2 A^-1) on the sum. The planted faults: no projection (a
        zero A), isotropic noise at the stiffest coordinate's scale, a third of the noise."""
        a = np.asarray(a, dtype=float)
        self._shape_z = float(multiplier)
        self.projection = np.zeros(self.d) if self._unclipped else a  # planted: no projection
        self._project = project
        if "noise_isotropic" in self.faults:  # planted: right where A is stiffest, too little
            sd = np.full(self.d, multiplier / math.sqrt(a.max()))  # elsewhere
        else:
            sd = multiplier / np.sqrt(a)
        self._shape_sd = sd / 3 if "noise_third" in self.faults else sd  # planted fault

    def shaped_release(self, x: np.ndarray, batch: Any, divisor: float) -> Release:
        """One ellipsoid release: (the sum of projected per-record gradients + N(0, z^2 A^-1))
        / divisor; its std z / divisor in the A-norm, told 2 / divisor."""
        a_proj, project = self.projection, self._project
        total = self.mapped_sum(x, batch, lambda g: project(g, a_proj), "ellipsoid projection")
        z = self._shape_z
        if z > 0:  # (a non-private run given a noise multiplier is noised too)
            value = (total + self._shape_sd * self._rng.standard_normal(self.d)) / divisor
        else:
            value = total / divisor
        return Release(total / divisor, value, z / divisor, 2.0 / divisor, math.inf)

    def moment_release(self, mean: np.ndarray, std: float) -> np.ndarray:
        """A second-moment estimate's release (seed 002's Algorithm 3, the private scales):
        mean + N(0, std^2 I). Its normals are drawn whatever the std (the loop it came from
        did: a non-private run's later draws keep their order)."""
        return mean + self._third * std * self._rng.standard_normal(len(mean))

    def child_generator(self) -> np.random.Generator:
        """A generator for data-independent draws (public records), seeded by one draw of the
        run's generator (taken first: the later draws keep their order)."""
        return np.random.default_rng(self._rng.integers(2**63))

    def tree_clip(self, clip: float, divisor: float, cap: bool = True) -> float:
        """The clip of a tree leaf over `divisor` records: at most the tree's sensitivity x
        divisor / 2, so every leaf has the sensitivity the tree was calibrated for (`cap`
        False: the planted wrong O2 step, whose clip is not capped)."""
        if self.private and cap:
            return min(clip, self.leaf_sensitivity * divisor / 2)
        return clip

    def tree_noise(self) -> np.ndarray:
        """TREE(t) for the next t (`TreeMechanism.next`)."""
        return self.tree.next()

    def perturbation(self, std: float, loc_form: bool = False) -> np.ndarray:
        """N(0, std^2 I): a saddle escape's perturbation (not a privacy noise). `loc_form`:
        drawn as `Generator.normal(0, std, d)` (0 + std z), the empirical Spider's form."""
        if loc_form:
            return self._rng.normal(0.0, std, self.d)
        if std == 0:
            return np.zeros(self.d)
        return std * self._rng.standard_normal(self.d)

    def poisson(self, sample: Any, q: float) -> Any:
        """A Poisson subsample of `sample` at rate q (records, or counts thinned exactly)."""
        return poisson_subsample(sample, q, self._rng)

    def kernel_generator(self) -> np.random.Generator:
        """The run's generator, for a built-in family's compiled kernel only: it draws through
        `algorithms.privacy.compiled_noise`, the engine's arithmetic in numba."""
        return self._rng


__all__ = ["ENGINE_FAULTS", "STD_RULES", "NoiseEngine", "Release", "ReusingStream", "batch_size",
           "o1_leaf", "o2_leaf"]
