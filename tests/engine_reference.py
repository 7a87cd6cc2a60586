"""The baselines' loops as they were before they moved onto the release engine (issue 71: DP-GD,
DP-SGD and one-pass noisy SGD at f61288e, their own batch, clip, noise and ledger code), kept
as the second implementation tests/test_release_engine.py checks the engine against, bit for
bit. Each class is the built-in with its old `_run` and the calibration it read."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from algorithms import DPGD, DPSGD, NoisySGD, Privacy
from algorithms.base import Trajectory
from algorithms.counts_maps import clipped_grad_sum
from algorithms.first_order.base import RealizedCounts, TrajectoryBuilder, batch_size
from algorithms.privacy.accounting.gdp import composed_gaussian_multiplier, gdp_mu
from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_none, ledger_pld
from algorithms.privacy.accounting.pld import poisson_gaussian_calibration, with_noise_factor
from problems.base import Problem
from problems.counts.dataset import poisson_subsample


def batch_grad_sum(problem: Problem, x: np.ndarray, batch: Any, clip: float) -> tuple[np.ndarray, int]:
    """The old `algorithms.first_order.base.batch_grad_sum` (the suite's clipped sum and the
    batch's size), as the old loops called it."""
    k = batch_size(batch)
    if k == 0:
        return np.zeros(problem.d), 0
    return clipped_grad_sum(problem, x, batch, clip), k


def _budget_mu(privacy: Privacy) -> float:
    return gdp_mu(privacy.eps, privacy.delta) if privacy.private else math.inf


class _OldLoop:
    """The old `_NoisyGradientMethod._run`, verbatim."""

    def _spent(self, privacy: Privacy, p: dict[str, Any], n: int | None, factor: float) -> dict:
        if not privacy.private:
            return ledger_none(privacy.delta)
        return ledger_gdp(_budget_mu(privacy) / factor, privacy.delta)

    def _run(self, problem: Problem, stream: Any, n: int | None, privacy: Privacy,
             rng: np.random.Generator, p: dict[str, Any], deadline: float, probe: Any,
             monitor: Any) -> Trajectory:
        d = problem.d
        T, eta, C = int(p["T"]), float(p["eta"]), float(p["C"])
        b = int(p.get("b", n or 1))
        z = z_needed = self._multiplier(privacy, p, n) if privacy.private else 0.0
        if "noise_multiplier" in self.overrides:
            if float(self.overrides["noise_multiplier"]) < z:
                raise ValueError(f"parameter noise_multiplier={self.overrides['noise_multiplier']!r} "
                                 f"is invalid: must be >= {z:.6g}, the noise (eps, delta) needs")
            z = float(self.overrides["noise_multiplier"])
        noise_factor = 1 / 3 if "noise_third" in self.planted_faults else 1.0  # planted fault
        clip = math.inf if "no_clipping" in self.planted_faults else C
        p.update(noise_multiplier=z, sampling=self.sampling)
        sample = stream.take(n) if self.sampling != "stream" else None
        x = np.array(problem.x0, dtype=float)
        # A one-pass run ends when its data does: size the storage (and so how often the
        # target monitor looks) by the steps the budget allows, not by an open horizon.
        steps_max = T if sample is not None else min(T, int(min(stream.remaining, 2**50)) // b)
        traj = TrajectoryBuilder(x, steps_max, p["max_iterate_floats"])
        used = n if sample is not None else 0
        grad_evals, stop, t, warnings = 0, "T_reached", 0, []
        hidden = RealizedCounts() if self.sampling == "poisson" else None
        while t < T:
            if self.sampling == "full":
                batch, denom = sample, n
                sens = 2 * C / n
                noise_std = z * sens
            elif self.sampling == "poisson":
                batch = poisson_subsample(sample, b / n, rng)  # records, or counts thinned
                denom = b
                sens = 2 * C / b  # replace-one: the sum moves by up to 2C
                noise_std = z * C / b  # std of the averaged noise N(0, (z C)^2) / b
            else:
                if stream.remaining < b:
                    stop = "data_exhausted"
                    break
                batch, denom = stream.take(b), b
                used += b
                sens = 2 * C / b
                noise_std = z * sens
            grad_sum, read = batch_grad_sum(problem, x, batch, clip)
            if hidden is not None:  # |B_t| is the accountant's secret: log the expected q n
                hidden.add(read)
                read = self.public_batch(p, n)
            grad_evals += read
            released = grad_sum / denom
            if z > 0:
                released = released + noise_factor * noise_std * rng.standard_normal(d)
            if probe is not None:
                probe.release(t=t + 1, oracle=1, x=x.copy(), x_prev=x.copy(), batch=batch,
                              clip=clip, leaf=grad_sum / denom, told=sens,
                              noise_std=noise_std, nabla=released.copy(), released=released.copy(),
                              restart=False, escape=False, denom=denom)
            est_norm = float(np.linalg.norm(released))
            x = x - eta * released
            t += 1
            if not np.all(np.isfinite(x)):
                stop = "diverged"
                break
            if traj.step(x, t, used, read, noise_std, est_norm) and monitor is not None \
                    and monitor(x):
                stop = "target_reached"
                break
            if time.perf_counter() > deadline:
                stop = "timeout"
                break
        spent = self._spent(privacy, p, n, z / z_needed if z_needed > 0 else 1.0)
        p["privacy_mu"] = math.nan if spent["mu"] is None else spent["mu"]
        return traj.build(x, t, used, grad_evals, stop, spent, p, sample, warnings,
                          hidden.record() if hidden is not None else None)


class OldDPGD(_OldLoop, DPGD):
    def _multiplier(self, privacy: Privacy, p: dict[str, Any], n: int | None) -> float:
        return composed_gaussian_multiplier(privacy.eps, privacy.delta, int(p["T"]))


class OldDPSGD(_OldLoop, DPSGD):
    def _calibration(self, privacy: Privacy, p: dict[str, Any], n: int | None):
        return poisson_gaussian_calibration(privacy.eps, privacy.delta, min(1.0, p["b"] / n),
                                            int(p["T"]))

    def _multiplier(self, privacy: Privacy, p: dict[str, Any], n: int | None) -> float:
        return self._calibration(privacy, p, n).scale

    def _spent(self, privacy: Privacy, p: dict[str, Any], n: int | None, factor: float) -> dict:
        if not privacy.private:
            return ledger_none(privacy.delta)
        return ledger_pld(with_noise_factor(self._calibration(privacy, p, n), factor))


class OldNoisySGD(_OldLoop, NoisySGD):
    def _multiplier(self, privacy: Privacy, p: dict[str, Any], n: int | None) -> float:
        return 1.0 / gdp_mu(privacy.eps, privacy.delta)


OLD = {"dp_gd": OldDPGD, "dp_sgd": OldDPSGD, "noisy_sgd": OldNoisySGD}
