"""The dry-run's cost estimate, learned per (algorithm, problem, data mode) from stored cells.

Issue 57, item 4 (the current model): every cell's seconds are a per-cell overhead plus a rate
times its `work_scale` (d / alpha^2 for a cell with a target; a multi-pass cell's steps x
gradients plus its evaluation's iterates x n, times d plus a per-record overhead, for a search
over n one run's at the n it likely stops at; otherwise d times its horizon or its n records),
fitted per key (`fit_rate`) on the store being swept (its cells rebuilt from the spec it
records, so a stored cell and a pending one share the unit), else on the rates shipped in
`bench/measured_rates.json` (the reference stores', by algorithm and problem, then pooled over
problems), else the defaults below. The shipped fits price all 23 reference specs and the 3
practitioners' specs within 2x of their measured seconds (tested; 0.56-1.19x, the 23 on the
clean-clone reference of cb2f937, whose cores were shared, where the median rate per unit
without an overhead read 0.82-3.49x, 8 specs past 2x: since the Spiders' steps are compiled, a
cell's fixed cost, building the problem and evaluating its iterates, is a large share of a
small cell, so a median over small cells overprices the large ones that make a spec's time). A
cell whose estimate passes `limits.time` is warned about before the sweep. The paragraphs below
describe the defaults, which a new algorithm still meets.

A record-mode cell costs about (seconds per sample x dimension) x samples used; a counts-mode
cell (samples are free) about (seconds per step) x steps; a multi-pass (empirical-risk) cell,
which reads its n records again at every step, about (seconds per gradient x dimension) x
steps x gradients per step (b, plus n/q for SpiderBoost's anchors). Neither samples nor steps
are known before the cell runs, hence the scale above. An algorithm with neither stored nor
shipped rates gets the defaults below with its upper bound (budget or T; for a counts-mode
sample-complexity cell DEFAULT_STEPS_TIMES_ALPHA2 / alpha^2 steps) plus a per-cell overhead,
labelled a default-rate guess (an algorithm that loops in Python can be far slower). The
interquartile range of the measured / fitted seconds gives the estimate's spread.
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
#: Where a search over n likely stops (`searched_n_guess`): N_STAR_FACTOR x max(1, d^
#: N_STAR_D_POWER / eps) / alpha^2. Fitted on the practitioners' stores (DP-SGD on hard_valley
#: and strict_saddle, d 10 and 100, eps 0.1 and 1): the measured n* are 2-12x sqrt(d) / (eps
#: alpha^2) and grow about as d^0.7-1.0 between d 10 and 100; with (4, 0.75) and
#: RECORD_OVERHEAD_DIMS the shipped rates price the four specs at 0.56-0.98x of their measured
#: seconds (three of them at 0.88-0.98x; the fourth, d 100 eps 1 to 0.021, at 0.56x: its runs at
#: n* 2.1e5-2.5e5 cost more per unit than the smaller runs the rate is fitted on; with sqrt(d)
#: and no overhead the first three read 0.47-0.94x, 0.49x with the cap's work / 4 runs before).
N_STAR_FACTOR = 4.0
N_STAR_D_POWER = 0.75
#: A record costs about d + this many coordinates' work in records mode: numpy's per-row costs
#: at small d (the empirical evaluation over n records took 10 s of a d-10 search and 34 s of a
#: d-100 one at the same n* 1.05e5, 3.4x for 10x the coordinates).
RECORD_OVERHEAD_DIMS = 40.0
#: The spread of an estimate: these quantiles of a key's measured / fitted seconds.
SPREAD_QUANTILES = (0.25, 0.75)
#: Fewer cells than this under one key fit no overhead (the rate is sum(wall) / sum(scale)).
MIN_CELLS_FOR_OVERHEAD = 3


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


def multi_pass_work(cell: Cell, at_n: float | None = None) -> float | None:
    """Upper bound on a multi-pass cell's work from its algorithm's resolved rules: steps x
    gradients per step x d (records), or steps (counts mode, priced per step); None when the
    algorithm reads each record once. `at_n`: one run's work at that n (a search's runs);
    else a search's runs at its cap (four of them), or the cell's one run at n."""
    from algorithms import Privacy, get_algorithm
    from problems import get_problem

    cls = get_algorithm(cell.algorithm)
    multi = getattr(cls, "setting", "population") == "empirical" or getattr(cls, "multi_pass", False)
    if not multi or not cell.n:
        return None
    prob = get_problem(cell.problem, d=cell.d, **dict(cell.problem_params))
    n = int(at_n) if at_n else (getattr(cell, "search_cap", None) or cell.n)  # a search's largest n
    p = cls(**cell.run_params()).resolve_params(prob, n, Privacy(cell.eps, cell.delta,
                                                                 cell.calibration))
    if "abar" in p:
        p["anchors"] = math.ceil(p["T"] / max(1, p["q"]))
    if "K_t" in p:  # stages of full-chunk steps (recursive regularization)
        steps, per_step = float(sum(p["K_t"])), float(p["m"])
    else:
        steps, per_step = float(p["T"]), gradients_per_step(p, n)
    # a cell that searches n (bench.n_search): the doubling's runs sum to at most twice a run
    # at the cap, the bisection's (about two) to at most two more (a target reached well below
    # the cap costs far less)
    from bench.n_search import searches_n

    runs = 4.0 if searches_n(cell) and not at_n else 1.0
    if cell.data == "counts":  # counts cells are priced per step
        return runs * steps
    dim = float(p.get("k", cell.d))  # the JL method's base works in k dimensions
    if per_step is None:
        return None
    # the evaluation reads all n records at up to EMP_EVAL_POINTS + 2 stored iterates (the
    # empirical gradient, problems.evaluation.metrics.emp_eval_indices): on DP-SGD's searches at d 100,
    # where T x b << T x n, it was 20-27 s of a 30 s run
    from problems.evaluation.metrics import EMP_EVAL_POINTS

    return runs * (steps * per_step + min(steps, EMP_EVAL_POINTS + 2.0) * n) \
        * (dim + RECORD_OVERHEAD_DIMS)


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


def cell_horizon(cell: Cell) -> float:
    """The cell's horizon T from its algorithm's rules (the most steps it can run)."""
    from algorithms import Privacy, get_algorithm
    from problems import get_problem

    prob = get_problem(cell.problem, d=cell.d, **dict(cell.problem_params))
    alg = get_algorithm(cell.algorithm)(**cell.run_params())
    return float(alg.resolve_params(prob, cell.n, Privacy(cell.eps, cell.delta, cell.calibration))["T"])


def searched_n_guess(cell: Cell) -> float:
    """Where a search over n (`bench.n_search`) will likely stop, before it runs: N_STAR_FACTOR
    x max(1, d^N_STAR_D_POWER / eps) / alpha^2, the inverse of the first-order DP-ERM rate
    alpha ~ (sqrt(d) / (n eps))^(1/2) with the d power the practitioners' searches measured (the
    statistical 1 / alpha^2 at eps = inf), inside [the search's first n, its cap]. A search
    costs what its runs near n* cost (the doubling's runs sum to about 4/3 of its last, the
    bisection's two sit at n*), so a searched cell is priced by one run's work at this n, the
    per-key rate absorbing the constant."""
    from bench.n_search import MIN_START, START_DOUBLINGS

    cap = float(getattr(cell, "search_cap", None) or cell.n or 0)
    privacy = float(cell.d) ** N_STAR_D_POWER / cell.eps if math.isfinite(cell.eps) and cell.eps > 0 else 0.0
    guess = N_STAR_FACTOR * max(1.0, privacy) / float(cell.target_alpha or 1.0) ** 2
    return min(cap, max(guess, cap / 2 ** START_DOUBLINGS, MIN_START))


def work_scale(cell: Cell, horizon: Callable[[Cell], float]) -> float:
    """The unit a cell's seconds are learned and priced in, computed the same way for a stored
    cell and a pending one: a multi-pass cell's work (`multi_pass_work`); a sample-complexity
    cell's d / alpha^2 (on the hard instances its path has ~alpha^-2 steps whatever the knobs
    do to the horizon, and a step works on vectors of d); otherwise d times the upper bound,
    the horizon T (counts mode) or the n records (record mode)."""
    multi = multi_pass_work(cell)
    if multi is not None:
        from bench.n_search import searches_n

        if searches_n(cell) and cell.target_alpha is not None:
            return multi_pass_work(cell, at_n=searched_n_guess(cell)) or multi
        return multi
    bound = float(cell.d) * (horizon(cell) if cell.data == "counts" else float(cell.n or 0))
    if cell.target_alpha is not None:  # a step costs O(d) in either mode (vectors of d)
        # never beyond what the cell can run: its horizon T or its budget of samples
        return min(float(cell.d) / cell.target_alpha ** 2, bound) if bound > 0 else \
            float(cell.d) / cell.target_alpha ** 2
    return bound


def rate_key(cell: Cell, problem: str | None = None) -> tuple[str, str, str, bool, bool]:
    """(algorithm, problem, data, targeted, private): what a rate is learned per. Private and
    eps = inf cells of one algorithm differ 2-3x per unit (the noise's steps and escapes)."""
    return (cell.algorithm, cell.problem if problem is None else problem, cell.data,
            cell.target_alpha is not None, math.isfinite(cell.eps))


def stored_timings(path: str | Path, horizon: Callable[[Cell], float]
                   ) -> dict[tuple[str, str, str, bool, bool], list[tuple[float, float]]]:
    """(wall seconds, `work_scale`) of every finished cell of a store, by `rate_key`: the
    cells are rebuilt from the spec the store records, so a stored cell is measured in exactly
    the unit a pending one is priced in. A store whose spec
    cannot be rebuilt here (a plugin not loaded) gives nothing."""
    from bench.config import parse_spec
    from bench.store import Store

    if not Path(path).is_file():
        return {}
    with Store(path, create=False) as st:
        meta = dict(st.conn.execute("SELECT key, value FROM meta").fetchall())
        rows = st.conn.execute("SELECT key, wall FROM cells WHERE status = 'ok' AND wall > 0"
                               ).fetchall()
    try:
        cells = {c.key: c for c in parse_spec(meta.get("spec_text", ""),
                                               source=meta.get("spec_source") or "<spec>").cells()}
    except Exception:  # an old spec or a plugin not loaded: nothing to learn from
        return {}
    out: dict[tuple[str, str, str, bool, bool], list[tuple[float, float]]] = {}
    for key, wall in rows:
        cell = cells.get(key)
        if cell is None:
            continue
        try:
            scale = work_scale(cell, horizon)
        except Exception:  # a cell whose rules no longer resolve: not a rate
            continue
        if scale > 0 and math.isfinite(scale):
            out.setdefault(rate_key(cell), []).append((float(wall), float(scale)))
    return out


#: The rates shipped with the package (`bench/measured_rates.json`, written by `dprates
#: cost-rates` from the reference stores): they price a spec before its own store has cells.
SHIPPED_RATES = Path(__file__).resolve().parent / "measured_rates.json"
#: The key of an algorithm's rates pooled over problems (its fallback on a new problem).
ANY_PROBLEM = "*"


@dataclass(frozen=True)
class RateFit:
    """A key's cost law: `overhead` seconds per cell plus `rate` seconds per unit of
    `work_scale`, with `spread`, quantiles of the measured / fitted seconds of its cells."""

    overhead: float
    rate: float
    spread: tuple[float, float] = (1.0, 1.0)
    cells: int = 0

    def seconds(self, scale: float) -> tuple[float, float, float]:
        """(low, mid, high) seconds of a cell of this `scale`."""
        mid = self.overhead + self.rate * scale
        return mid * min(1.0, self.spread[0]), mid, mid * max(1.0, self.spread[1])


def fit_rate(timings: list[tuple[float, float]]) -> RateFit:
    """The cost law of a key from its cells' (wall, work_scale): non-negative least squares of
    wall = overhead + rate x scale, each cell weighted by 1 / sqrt(wall). Why that weight: wall
    times scatter more the longer a cell runs (machine load), so unweighted squares let the one
    largest cell decide, while relative errors (1 / wall) let the many small cells decide the
    rate and overprice the large cells that make a spec's time; measured on the reference stores
    (clean clone of cb2f937) the three price the 23 specs at 0.64-1.24x (this weight),
    0.34-1.49x (a pooled ratio, no overhead) and 0.46-1.27x (relative errors). Fewer than
    MIN_CELLS_FOR_OVERHEAD cells: no overhead, the rate sum(wall) / sum(scale)."""
    from scipy.optimize import nnls

    wall = np.array([w for w, _ in timings], dtype=float)
    scale = np.array([x for _, x in timings], dtype=float)
    if len(wall) < MIN_CELLS_FOR_OVERHEAD:
        overhead, rate = 0.0, float(wall.sum() / scale.sum())
    else:
        weight = 1.0 / np.sqrt(wall)
        (overhead, rate), _ = nnls(np.column_stack([weight, scale * weight]), wall * weight)
        overhead, rate = float(overhead), float(rate)
    fitted = overhead + rate * scale
    ratio = wall / np.where(fitted > 0, fitted, np.inf)
    spread = tuple(float(np.quantile(ratio, q)) for q in SPREAD_QUANTILES) \
        if np.all(fitted > 0) else (1.0, 1.0)
    return RateFit(overhead, rate, spread, len(wall))  # type: ignore[arg-type]


@dataclass
class CostModel:
    """Per `rate_key` (algorithm, problem, data, targeted, private): its `RateFit`, learned
    from the store being swept, else from the shipped rates."""

    rates: dict[tuple[str, str, str, bool, bool], RateFit] = field(default_factory=dict)
    shipped: dict[tuple[str, str, str, bool, bool], RateFit] = field(default_factory=dict)
    #: rates from a dry run's one-seed probes (`probe_rates`): keys nothing stored or shipped fits
    probed: dict[tuple[str, str, str, bool, bool], RateFit] = field(default_factory=dict)
    stored: int = 0
    shipped_cells: int = 0
    probe_seconds: float = 0.0

    @classmethod
    def from_store(cls, path: str | Path, horizon: Callable[[Cell], float] | None = None,
                   shipped: str | Path | None = SHIPPED_RATES) -> CostModel:
        model = cls()
        for key, r in stored_timings(path, horizon or cell_horizon).items():
            model.rates[key] = fit_rate(r)
            model.stored += len(r)
        if shipped is not None and Path(shipped).is_file():
            data = json.loads(Path(shipped).read_text())
            for r in data["rates"]:
                model.shipped[(r["algorithm"], r["problem"], r["data"], bool(r["targeted"]),
                               bool(r["private"]))] = \
                    RateFit(float(r["overhead_s"]), float(r["rate"]),
                            tuple(r["spread"]), int(r["cells"]))  # type: ignore[arg-type]
                model.shipped_cells += int(r["cells"]) if r["problem"] != ANY_PROBLEM else 0
        return model

    def _rate(self, cell: Cell) -> tuple[RateFit | None, str]:
        key = rate_key(cell)
        for table, k, what in ((self.rates, key, "store"), (self.shipped, key, "shipped"),
                               (self.probed, key, "probe"),
                               (self.shipped, rate_key(cell, ANY_PROBLEM),
                                "shipped")):
            if k in table:
                return table[k], what
        return None, "default"

    def cell(self, cell: Cell, horizon: Callable[[Cell], float],
             limit: float = math.inf) -> tuple[tuple[float, float, float], bool]:
        """(low, mid, high) seconds for `cell` (each at most `limit`) and whether they were
        learned (from the store or the shipped rates) rather than the default guess."""
        vals = self.unclipped(cell, horizon)
        learned = self._rate(cell)[0] is not None
        return tuple(min(limit, v) for v in vals), learned  # type: ignore[return-value]

    def unclipped(self, cell: Cell, horizon: Callable[[Cell], float]
                  ) -> tuple[float, float, float]:
        """(low, mid, high) seconds for `cell` without the time limit (the limit warning)."""
        rate, _where = self._rate(cell)
        if rate is not None:
            return rate.seconds(work_scale(cell, horizon))
        multi = multi_pass_work(cell)
        if multi is not None:
            bound = multi
        else:
            bound = horizon(cell) if cell.data == "counts" else float((cell.n or 0) * cell.d)
        default = DEFAULT_COST_PER_STEP if cell.data == "counts" else DEFAULT_COST_PER_SAMPLE_DIM
        if cell.target_alpha is not None and multi is None and cell.data == "counts":
            bound = min(bound, DEFAULT_STEPS_TIMES_ALPHA2 / cell.target_alpha**2)
        v = DEFAULT_CELL_OVERHEAD + default * bound
        return v, v, v


#: A probe cell's time limit (seconds): a dry run never waits long on one cell.
PROBE_TIME = 60.0


def unpriced_keys(cells: list[Cell], model: CostModel, horizon: Callable[[Cell], float]
                  ) -> dict[tuple[str, str, str, bool, bool], Cell]:
    """Per rate key that no stored cell and no shipped rate of its own (algorithm, problem)
    prices (a plugin's algorithm or problem: the rates pooled over problems do not know its
    loss), the key's smallest cell (by `work_scale`): what a dry run probes."""
    out: dict[tuple[str, str, str, bool, bool], tuple[float, Cell]] = {}
    for c in cells:
        key = rate_key(c)
        if key in model.rates or key in model.shipped:
            continue
        try:
            scale = work_scale(c, horizon)
        except Exception:  # the cell's rules do not resolve: the sweep will say why
            continue
        if key not in out or scale < out[key][0]:
            out[key] = (scale, c)
    return {k: c for k, (_, c) in out.items()}


def probe_rates(cells: list[Cell], model: CostModel, horizon: Callable[[Cell], float],
                compute: Callable[[Cell, float], dict], limit: float = math.inf) -> int:
    """Price the keys `unpriced_keys` finds from one-seed probes (issue 72, item 6): each key's
    smallest cell is run twice in this process (the first run pays the compilation and loading
    a worker pays once; the second is timed), nothing stored, each run under min(limit,
    PROBE_TIME); its rate is (wall - the default overhead) / work_scale, so larger cells of the
    key scale from it. A probe that times out prices its key from its limit (a lower bound).
    Returns how many keys were probed; `model.probe_seconds` the seconds it took."""
    import time

    probes = unpriced_keys(cells, model, horizon)
    for key, cell in probes.items():
        cap = min(limit, PROBE_TIME)
        t0 = time.perf_counter()
        compute(cell, cap)
        t1 = time.perf_counter()
        compute(cell, cap)
        end = time.perf_counter()
        wall = end - t1
        model.probe_seconds += end - t0
        scale = work_scale(cell, horizon)
        rate = max(wall - DEFAULT_CELL_OVERHEAD, 0.5 * wall) / scale if scale > 0 else 0.0
        model.probed[key] = RateFit(min(wall, DEFAULT_CELL_OVERHEAD), rate, (1.0, 1.0), 1)
    return len(probes)


def shipped_rates_table(stores: list[str | Path]) -> dict:
    """The content of `bench/measured_rates.json` from `stores` (the reference's): the
    `RateFit` per (algorithm, problem, data, targeted, private) and pooled over problems, and per
    store its spec's measured seconds (the sum of its finished cells' wall) beside its cell
    count, the figures the estimate is tested against."""
    from bench.store import Store

    pooled: dict[tuple[str, str, str, bool, bool], list[tuple[float, float]]] = {}
    specs = []
    for path in stores:  # every store's cells of one key pooled: one entry per key
        for (alg, prob, data, tgt, priv), r in stored_timings(path, cell_horizon).items():
            pooled.setdefault((alg, prob, data, tgt, priv), []).extend(r)
            pooled.setdefault((alg, ANY_PROBLEM, data, tgt, priv), []).extend(r)
        with Store(path, create=False) as st:
            name = dict(st.conn.execute("SELECT key, value FROM meta").fetchall()).get(
                "spec_name", Path(path).stem)
            wall, n = st.conn.execute(
                "SELECT SUM(wall), COUNT(*) FROM cells WHERE key IN (SELECT key FROM spec_cells)"
            ).fetchone()
        specs.append({"spec": name, "cells": int(n), "measured_wall_s": float(wall or 0.0)})
    rates = []
    for (a, p, d, t, v), r in sorted(pooled.items()):
        fit = fit_rate(r)
        rates.append({"algorithm": a, "problem": p, "data": d, "targeted": t, "private": v,
                      "cells": len(r), "overhead_s": fit.overhead, "rate": fit.rate,
                      "spread": list(fit.spread)})
    return {"about": "a cell's seconds = overhead_s + rate x bench.cost.work_scale, fitted "
                     "(bench.cost.fit_rate) on the reference stores' finished cells (wall); "
                     "spread: quantiles 0.25 / 0.75 of measured / fitted; written by `dprates "
                     "cost-rates`", "rates": rates, "specs": specs}
