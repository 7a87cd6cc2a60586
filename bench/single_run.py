"""Run one cell (problem, algorithm, n, eps, delta, seed): the code path of `dprates run`
and of every sweep cell (`bench.runner.compute_cell`)."""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

import numpy as np

from algorithms import Privacy, check_calibration, claim_metric, get_algorithm
from problems import get_problem, instance_params
from problems.base import DATA_MODES
from problems.counts.dataset import counts_exact
from problems.counts.stream import STREAM_VERSION, require_supported_version
from problems.evaluation.metrics import evaluate, target_monitor
from problems.streams import DataStream

#: Records hashed per cell to check pairing: cells with the same data seed must agree.
DIGEST_RECORDS = 64


class DigestingStream(DataStream):
    """A DataStream that hashes the first DIGEST_RECORDS records it hands out."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hash = hashlib.sha256()
        self._hashed = 0

    def take(self, k: int) -> np.ndarray:
        out = super().take(k)
        if self._hashed < DIGEST_RECORDS and len(out):
            head = np.ascontiguousarray(out[: DIGEST_RECORDS - self._hashed], dtype=np.float64)
            self._hash.update(head.tobytes())
            self._hashed += len(head)
        return out

    @property
    def digest(self) -> str:
        return self._hash.hexdigest()[:16] if self._hashed else ""


def cell_seeds(seed: int) -> tuple[np.random.SeedSequence, np.random.Generator]:
    """Data seed and algorithm Generator for a single run with integer `seed`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed={seed!r} is invalid: must be an integer >= 0")
    return (np.random.SeedSequence([seed, 0]),
            np.random.default_rng(np.random.SeedSequence([seed, 1])))


def check_target(algorithm: str, problem: str, d: int, problem_params: dict[str, Any] | None,
                 target: float | None, name: str = "target_alpha", metric: str | None = None) -> None:
    """Refuse, before any work, a target at or above the start's value of the algorithm's
    claim metric (met at step 0: samples_to_target 0 measures nothing), with the spec check's
    line (`bench.config_grid_checks.target_at_start`); `name` is the parameter as given."""
    if target is None:
        return
    from bench.config_grid_checks import target_at_start
    from problems import instance_params

    params = instance_params(problem, problem_params, float(target))
    why = target_at_start(problem, d, params, float(target), metric or claim_metric(algorithm),
                          algorithm)
    if why:
        raise ValueError(f"{name}={float(target):g} is invalid: {why}")


def run_cell(algorithm: str, problem: str, n: int | None, d: int, eps: float,
             delta: float = 1e-6, seed: int = 0, params: dict[str, Any] | None = None,
             problem_params: dict[str, Any] | None = None, calibration: str = "tight",
             data_seed: np.random.SeedSequence | None = None,
             rng: np.random.Generator | None = None,
             time_limit: float | None = None, stop_at_target: bool = False,
             data: str | None = None, counts_version: int | None = None,
             metric: str | None = None) -> dict[str, Any]:
    """Validate everything, run, evaluate. Returns params, metrics, curve, timings.

    `metric`: the metric a target is on (the monitor's and samples_to_target's; None: the
    algorithm's claim metric, `analysis.verdict_engine.predictions.claim_metric`).
    `data`: "records", "counts" (exact batch statistics, `problems.counts.stream`) or None for the
    problem's default (counts where it opts in); `counts_version`: the counts stream version
    counts mode draws (`problems.counts.stream.SUPPORTED_STREAM_VERSIONS`; None: the latest).
    """
    if counts_version is None:
        counts_version = STREAM_VERSION
    require_supported_version(counts_version)
    cls = get_algorithm(algorithm)
    prob = get_problem(problem, d=d, **instance_params(problem, problem_params,
                                                       (params or {}).get("target_alpha")))
    if data is None:  # counts where exact for this pair (problems.counts.dataset.counts_exact)
        data = "counts" if prob.supports_counts and counts_exact(type(prob), cls) else "records"
    if data not in DATA_MODES:
        raise ValueError(f"data={data!r} is invalid: must be one of {', '.join(DATA_MODES)}")
    if data not in cls.data_modes:
        raise ValueError(f"data={data!r} is invalid for {algorithm}: it runs on "
                         f"{', '.join(cls.data_modes)} only")
    if data == "counts":
        prob.counts_layout()  # ValueError naming the problem if it has no counts mode
    privacy = Privacy(eps=eps, delta=delta, calibration=calibration)
    check_calibration(algorithm, calibration)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"n={n!r} is invalid: must be an integer >= 1")
    alg = cls(**(params or {}))
    metric = metric or claim_metric(algorithm)
    check_target(algorithm, problem, d, problem_params, alg.overrides.get("target_alpha"),
                 metric=metric)
    if data_seed is None or rng is None:
        data_seed, rng = cell_seeds(seed)
    if data == "counts":
        stream = prob.stream(data_seed, budget=n, data="counts", counts_version=counts_version)
        digest = stream.digest(DIGEST_RECORDS)
    else:
        stream = DigestingStream(prob._draw, data_seed, budget=n)
    t0, c0 = time.perf_counter(), time.process_time()
    monitor = None
    if stop_at_target:
        target = alg.overrides.get("target_alpha")
        if target is None:
            raise ValueError("stop_at_target=True is invalid without target_alpha: it ends a run "
                             "when alpha_SOSP first falls to the target")
        monitor = target_monitor(prob, float(target), metric)
    traj = alg.run(prob, stream, privacy, rng, time_limit=time_limit, monitor=monitor)
    t1, c1 = time.perf_counter(), time.process_time()
    ev = evaluate(prob, traj, target=alg.overrides.get("target_alpha"), metric=metric)
    t2 = time.perf_counter()
    params_used = {k: v for k, v in traj.params.items()}
    return {
        "algorithm": algorithm, "problem": problem, "n": n, "d": d, "eps": eps, "delta": delta,
        "seed": seed, "params": params_used, "metrics": ev["metrics"], "curve": ev["curve"],
        "warnings": traj.warnings, "trajectory": traj, "problem_obj": prob,
        # hidden by the accountant (realized Poisson sizes): never a run fact (bench.disclosure)
        "evaluation_only": dict(traj.evaluation_only) or None,
        "data": data, "data_digest": digest if data == "counts" else stream.digest,
        "counts_stream": counts_version if data == "counts" else None,
        "timing": {"run_wall": t1 - t0, "run_cpu": c1 - c0, "eval_wall": t2 - t1},
        "diverged": traj.stop_reason == "diverged" or not math.isfinite(ev["metrics"]["alpha_best"]),
    }
