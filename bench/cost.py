"""The dry-run's cost estimate, learned per (algorithm, problem, data mode) from stored cells.

A record-mode cell costs about (seconds per sample x dimension) x samples used; a counts-mode
cell (samples are free) about (seconds per step) x steps; a multi-pass (empirical-risk) cell,
which reads its n records again at every step, about (seconds per gradient x dimension) x
steps x gradients per step (b, plus n/q for SpiderBoost's anchors). Neither is known before the cell
runs, so each is priced from a scale the cell does know, times a factor learned from the
stored cells of the same algorithm, problem, data mode and kind:
* fixed-budget cells: a fraction of the upper bound (the budget n; the rules' horizon T);
* sample-complexity cells: a multiple of 1/alpha^2 (on the hard instances the path to an
  alpha-stationary point has ~alpha^-2 steps, whatever the knobs do to the horizon T).
Without stored cells the defaults below apply with the upper bound (budget or T; for a
counts-mode sample-complexity cell DEFAULT_STEPS_TIMES_ALPHA2 / alpha^2 steps) plus a
per-cell overhead: the estimate is then labelled a default-rate guess (an algorithm that
loops in Python can be far slower than the default rate). The interquartile range of the
stored cells' rates and factors gives the estimate's spread.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.cells import Cell

#: Seconds per (sample x dimension) before any timing is stored (measured: hard_valley /
#: strict_saddle Spiders at d = 10, n = 1e6 take 0.1-1 s).
DEFAULT_COST_PER_SAMPLE_DIM = 3e-8
#: Counts mode: seconds per step (counts stream version 3, CPU per cell / steps, medians of the
#: headline specs' cells: 26-54 us on the hard families at d = 10; 183 us on the benign
#: saddle's short runs, where the evaluation dominates).
DEFAULT_COST_PER_STEP = 5e-5
#: Sample-complexity cells in counts mode before any timing is stored: steps ~ this / alpha^2,
#: never above the horizon (medians of steps x alpha^2: 3.0-3.6 on hard_valley, 6.2-6.5 on
#: hard_ramp; the theory horizon T, the old bound, overpriced a 15-minute ramp spec at 13.5 h).
DEFAULT_STEPS_TIMES_ALPHA2 = 5.0
#: Seconds a cell costs beyond its steps before any timing is stored: building the problem,
#: the stream and the evaluation of the stored iterates (measured: 54 counts-mode cells of
#: a small error-view sweep, n 1e4-1e5, took 9.7 s of wall on 2 jobs, 0.36 s each, while the
#: steps alone were priced at ~0.05 s). Without it a sweep of small cells priced at "0 s".
DEFAULT_CELL_OVERHEAD = 0.3
QUANTILES = (0.25, 0.5, 0.75)


def gradients_per_step(params: dict, n: int | None) -> float | None:
    """Per-sample gradients a multi-pass algorithm's step computes (its params as used), or
    None for single-pass algorithms (`sampling` full / poisson: DP-GD, DP-SGD; `anchors`:
    SpiderBoost's b2 differences, counted twice, plus n / q for the anchors)."""
    if not n:
        return None
    if params.get("sampling") in ("full", "poisson"):
        return float(params.get("b") or n)
    if "anchors" in params or ("q" in params and "abar" in params):
        return 2.0 * float(params.get("b") or 0) + n / max(1.0, float(params.get("q") or 1))
    return None


def multi_pass_work(cell: Cell) -> float | None:
    """Upper bound on a multi-pass cell's work from its algorithm's resolved rules: steps x
    gradients per step x d (records), or steps (counts mode, priced per step); None when the
    algorithm reads each record once."""
    from algorithms import Privacy, get_algorithm
    from problems import get_problem

    cls = get_algorithm(cell.algorithm)
    multi = getattr(cls, "setting", "population") == "empirical" or getattr(cls, "multi_pass", False)
    if not multi or not cell.n:
        return None
    prob = get_problem(cell.problem, d=cell.d, **dict(cell.problem_params))
    p = cls(**cell.run_params()).resolve_params(prob, cell.n, Privacy(cell.eps, cell.delta,
                                                                      cell.calibration))
    if "abar" in p:
        p["anchors"] = math.ceil(p["T"] / max(1, p["q"]))
    if "K_t" in p:  # stages of full-chunk steps (recursive regularization)
        steps, per_step = float(sum(p["K_t"])), float(p["m"])
    else:
        steps, per_step = float(p["T"]), gradients_per_step(p, cell.n)
    if cell.data == "counts":  # counts cells are priced per step
        return steps
    dim = float(p.get("k", cell.d))  # the JL method's base works in k dimensions
    return None if per_step is None else steps * per_step * dim


@dataclass
class Estimate:
    low: float = 0.0
    mid: float = 0.0
    high: float = 0.0
    bounded: int = 0   # cells priced at their upper bound (nothing learned for them)
    learned: int = 0   # cells priced from stored cells of the same algorithm and problem

    def add(self, values: tuple[float, float, float], learned: bool) -> None:
        self.low += values[0]
        self.mid += values[1]
        self.high += values[2]
        self.learned += learned
        self.bounded += not learned


@dataclass
class CostModel:
    """Per (algorithm, problem, data): quantiles of the rate (seconds per unit of work) and of
    the fraction of the upper bound a cell used."""

    rates: dict[tuple[str, str, str, bool], tuple[float, ...]] = field(default_factory=dict)
    fractions: dict[tuple[str, str, str, bool], tuple[float, ...]] = field(default_factory=dict)
    stored: int = 0

    @classmethod
    def from_store(cls, path: str | Path) -> CostModel:
        from bench.store import Store

        model = cls()
        if not Path(path).is_file():
            return model
        with Store(path, create=False) as st:
            rows = st.conn.execute(
                "SELECT algorithm, problem, data, wall, samples_used, n, d, n_steps, target_alpha, "
                "params_used "
                "FROM cells WHERE status = 'ok' AND wall > 0").fetchall()
        work: dict[tuple[str, str, str, bool], tuple[list[float], list[float]]] = {}
        for alg, prob, data, wall, used, n, d, steps, target, params in rows:
            has_target = target is not None
            p = json.loads(params) if params else {}
            per_step = gradients_per_step(p, n)
            if per_step is not None:  # multi-pass: the work is steps x gradients x d
                if not steps:
                    continue
                rate = wall / (steps * per_step * d)
                frac = min(1.0, steps / float(p.get("T") or steps))
            elif data == "counts":
                horizon = p.get("T")
                if not steps or not horizon:
                    continue
                rate = wall / steps
                frac = steps * target**2 if has_target else min(1.0, steps / float(horizon))
            else:
                if not used or not n:
                    continue
                rate = wall / (used * d)
                frac = used * target**2 if has_target else min(1.0, used / n)
            r, f = work.setdefault((alg, prob, data, has_target), ([], []))
            r.append(rate)
            f.append(frac)
        for key, (r, f) in work.items():
            model.rates[key] = tuple(float(np.quantile(r, q)) for q in QUANTILES)
            model.fractions[key] = tuple(float(np.quantile(f, q)) for q in QUANTILES)
            model.stored += len(r)
        return model

    def cell(self, cell: Cell, horizon: Callable[[Cell], float],
             limit: float = math.inf) -> tuple[tuple[float, float, float], bool]:
        """(low, mid, high) seconds for `cell` and whether they were learned."""
        has_target = cell.target_alpha is not None
        key = (cell.algorithm, cell.problem, cell.data, has_target)
        multi = multi_pass_work(cell)
        if multi is not None:
            bound = multi
        else:
            bound = horizon(cell) if cell.data == "counts" else float((cell.n or 0) * cell.d)
        if key in self.rates:
            scale = bound
            if has_target and multi is None:  # steps (or samples) ~ factor / alpha^2, never above the bound
                scale = (1.0 if cell.data == "counts" else cell.d) / cell.target_alpha**2
            vals = tuple(min(limit, r * min(f * scale, bound))
                         for r, f in zip(self.rates[key], self.fractions[key], strict=True))
            return vals, True  # type: ignore[return-value]
        default = DEFAULT_COST_PER_STEP if cell.data == "counts" else DEFAULT_COST_PER_SAMPLE_DIM
        if has_target and multi is None and cell.data == "counts":
            bound = min(bound, DEFAULT_STEPS_TIMES_ALPHA2 / cell.target_alpha**2)
        v = min(limit, DEFAULT_CELL_OVERHEAD + default * bound)
        return (v, v, v), False
