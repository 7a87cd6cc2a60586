"""One run of the language-model experiment (issue 74): a method, eps, a step-size multiplier,
a threshold B and a seed, trained for `LMSetup.steps` Poisson batches; validation perplexity
every `eval_every` steps (the run's curve), validation and test perplexity of the last iterate.

The methods (seed 002, arXiv 2106.13756, "Training Private Language Models on WikiText-2"):

* `sgd`, `adagrad`: non-private minibatch SGD and diagonal AdaGrad on the same Poisson batches
  (the mean gradient over the expected batch b, no clipping);
* `dp_sgd`: per-window gradients clipped at B G_pub, Gaussian noise, SGD step;
* `pasan`, `pagan`: per-window gradients projected onto the ellipsoid {g : g^T A g <= 1},
  A = C / B^2 with C shaped by the public moments (Pasan: c_j ~ sigma_j^-1, Pagan:
  c_j ~ sigma_j^-4/3, `optimal_diagonal`), noise N(0, z^2 A^-1), then Pasan's AdaGrad-norm or
  Pagan's diagonal AdaGrad step (`algorithms.adaptive_noise.steps`, the code the synthetic
  experiment runs). The domain is R^d (a language model has no box): the gradient projection
  is the method's only projection [CHOICE: the paper's experiment projects gradients, not
  iterates].

Every private release goes through the one engine (`algorithms.privacy.engine.ReleaseDesk`):
Poisson sampling at q = b / n, the clip, PLD-calibrated noise for (eps, delta) over the T steps,
the ledger. Pasan and Pagan hand it their whitened gradients (`WhitenedProblem`): the ellipsoid
projection is the engine's clip at 1 in those coordinates. All methods of a run share its seed's
generator; x0 and the public moments are shared by every run.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from algorithms.adaptive_noise.projections import optimal_diagonal
from algorithms.adaptive_noise.steps import DiagonalAdaGradStep, adaptive_step
from algorithms.base import Privacy
from algorithms.privacy.accounting.rdp import poisson_gaussian_rdp_eps
from algorithms.privacy.engine import ReleaseDesk, ReleasePlan
from algorithms.privacy.whitening import WhitenedProblem
from bench.lm.setup import LMSetup, prepared
from problems.counts.dataset import poisson_subsample
from problems.streams import ArrayStream

METHODS = ("sgd", "adagrad", "dp_sgd", "pasan", "pagan")
PRIVATE = ("dp_sgd", "pasan", "pagan")
#: The step size a multiplier of 1 means, per update rule (a pilot's middle of the working
#: range at eps = inf, LMSetup's scale): SGD's eta, AdaGrad-norm's alpha (a step's length in
#: parameter norm at the first step), diagonal AdaGrad's alpha (a coordinate's first step).
BASE_STEP = {"sgd": 3.0, "dp_sgd": 3.0, "pasan": 3.0, "adagrad": 0.1, "pagan": 0.1}


@dataclass(frozen=True)
class LMCell:
    """One run's public settings."""

    method: str
    eps: float
    lr_mult: float
    B: float
    seed: int

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method={self.method!r} is invalid: must be one of {', '.join(METHODS)}")
        if (self.method in PRIVATE) == math.isinf(self.eps):
            raise ValueError(f"eps={self.eps!r} is invalid for {self.method}: the private methods "
                             "take a finite eps > 0, the non-private ones inf")

    @property
    def key(self) -> str:
        return f"{self.method}|eps={self.eps:g}|lr={self.lr_mult:g}|B={self.B:g}|seed={self.seed}"


def _step_rule(cell: LMCell, d: int):
    alpha = cell.lr_mult * BASE_STEP[cell.method]
    if cell.method in ("sgd", "dp_sgd"):
        return None, alpha
    if cell.method == "adagrad":
        return DiagonalAdaGradStep(alpha, d), alpha
    return adaptive_step(cell.method, alpha, d), alpha


def _releases(cell: LMCell, setup: LMSetup, problem, moments, train, rng):
    """(next(x) -> a released mean gradient, facts): through the engine for the private methods,
    the plain Poisson-batch mean for the non-private ones."""
    n = len(train)
    if cell.method not in PRIVATE:
        q = setup.b / n

        def plain(x):
            batch = poisson_subsample(train, q, rng)
            g = problem.per_sample_grads(x, batch)
            return g.sum(axis=0) / setup.b
        return plain, {"noise_multiplier": 0.0, "clip": math.inf}
    if cell.method == "dp_sgd":
        target, clip, unwhiten = problem, cell.B * moments.g_rms, None
    else:
        c = optimal_diagonal(np.sqrt(moments.sigma2), cell.method)
        target = WhitenedProblem(problem, np.sqrt(c) / cell.B)
        clip, unwhiten = 1.0, target.unwhiten
    desk = ReleaseDesk(target, ArrayStream(train), n, Privacy(cell.eps, setup.delta), rng,
                       ReleasePlan("poisson", setup.steps, clip, setup.b))

    def private(x):
        released = desk.mean_gradient(x)
        return released if unwhiten is None else unwhiten(released)
    ledger = desk.ledger()
    return private, {"noise_multiplier": desk.multiplier, "clip": clip, "ledger": ledger,
                     "eps_rdp_add_remove": poisson_gaussian_rdp_eps(desk.multiplier, setup.b / n,
                                                                    setup.steps, setup.delta)}


def run_cell(cell: LMCell, setup: LMSetup, corpus_dir: str | None = None) -> dict[str, Any]:
    """The run's store record (bench.store columns; the curve under curves["perplexity"])."""
    started, t0, c0 = datetime.now(UTC).isoformat(), time.perf_counter(), time.process_time()
    data, problem, moments = prepared(setup, corpus_dir)
    model = problem.model
    rng = np.random.default_rng([setup.corpus_seed, cell.seed, 74])
    release, facts = _releases(cell, setup, problem, moments, data.train, rng)
    stepper, alpha = _step_rule(cell, problem.d)
    x = problem.x0
    curve_part = data.validation[:setup.curve_windows]
    steps, val = [0], [model.perplexity(x, curve_part)]
    status = "ok"
    for t in range(1, setup.steps + 1):
        g = release(x)
        x = x - alpha * g if stepper is None else stepper.step(x, g)
        if not np.all(np.isfinite(x)):
            status = "diverged"
            break
        if t % setup.eval_every == 0 or t == setup.steps:
            steps.append(t)
            val.append(model.perplexity(x, curve_part))
            if not math.isfinite(val[-1]):
                status = "diverged"
                break
    ok = status == "ok"
    test = model.perplexity(x, data.test) if ok else math.nan
    final_val = model.perplexity(x, data.validation) if ok else math.nan
    ledger = facts.get("ledger") or {}
    return {
        "key": cell.key, "problem": "lstm_language_model", "algorithm": cell.method,
        "problem_params": setup.as_dict(),
        "params": {"lr_mult": cell.lr_mult, "B": cell.B}, "knobs": [],
        "n": len(data.train), "d": problem.d, "eps": cell.eps, "delta": setup.delta,
        "rep": cell.seed, "base_seed": setup.corpus_seed, "data": "records", "calibration": "pld",
        "status": status, "n_steps": steps[-1], "stop_reason": status,
        "params_used": {"lr_mult": cell.lr_mult, "B": cell.B, "step": alpha, "b": setup.b,
                        "T": setup.steps, "clip": facts["clip"],
                        "noise_multiplier": facts["noise_multiplier"], "g_rms": moments.g_rms},
        "eps_spent": ledger.get("eps", 0.0 if cell.method not in PRIVATE else math.nan),
        "delta_spent": ledger.get("delta"), "accountant": "pld" if ledger else "none",
        "privacy_ledger": {**ledger, "eps_rdp_add_remove": facts.get("eps_rdp_add_remove")},
        "grad_evals": setup.b * steps[-1],
        "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
        "started": started, "finished": datetime.now(UTC).isoformat(),
        "curves": {"perplexity": {"step": steps, "validation": val, "final_validation": final_val,
                                  "test": test}},
    }


__all__ = ["BASE_STEP", "METHODS", "PRIVATE", "LMCell", "run_cell"]
