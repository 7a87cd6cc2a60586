"""The SOSP metric on exact population oracles (seed 000, Definition 1.2).

alpha_SOSP(x) = max(|grad F(x)|, max(0, -lambda_min(hess F(x)))^2 / rho): the smallest alpha
for which x is an alpha-SOSP of F (|grad F| <= alpha and hess F >= -sqrt(rho alpha) I). rho is
the problem's stated Hessian-Lipschitz constant (Assumption 3.1), the one the algorithms use.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy.sparse.linalg import LinearOperator, eigsh

from problems.base import Problem
from problems.counts.layouts import CountsBatch
from problems.empirical_hessian import empirical_alpha, supports_empirical_hessian
from problems.evaluation import batched_oracles, curvature_screen

#: The error column each claim metric is read from in the records view (best stored iterate).
METRIC_COLUMN = {"alpha_sosp": "alpha_best", "grad_norm": "pop_grad_best",
                 "emp_grad_norm": "emp_grad_best", "excess_risk": "excess_best",
                 "emp_alpha_sosp": "emp_alpha_best"}

#: Thresholds of the samples-to-accuracy curve: a fixed log grid (8 per decade, 1e-4 .. 10).
THRESHOLDS = np.logspace(-4, 1, 41)

#: Above this dimension lambda_min comes from Lanczos on Hessian-vector products.
DENSE_MAX_D = 200


def lambda_min(problem: Problem, x: np.ndarray) -> float:
    """Smallest eigenvalue of the population Hessian at x (closed form, dense, or Lanczos)."""
    if type(problem).population_lambda_min is not Problem.population_lambda_min:
        return float(problem.population_lambda_min(x))
    if problem.d <= DENSE_MAX_D:
        return float(np.linalg.eigvalsh(problem.population_hessian(x))[0])
    op = LinearOperator((problem.d, problem.d), matvec=lambda v: problem.population_hvp(x, v),
                        dtype=float)
    return float(eigsh(op, k=1, which="SA", tol=1e-10, return_eigenvectors=False)[0])


def sosp_alpha(problem: Problem, x: np.ndarray) -> dict:
    """alpha_SOSP(x) and its parts: keys alpha, grad_norm, lambda_min, curvature_part."""
    g = float(np.linalg.norm(problem.population_grad(x)))
    lam = lambda_min(problem, x)
    rho = problem.constants.rho
    if not (math.isfinite(g) and math.isfinite(lam)):  # overflowed oracles: no valid alpha
        return {"alpha": math.nan, "grad_norm": g, "lambda_min": lam, "curvature_part": math.nan}
    neg = max(0.0, -lam)
    curv = 0.0 if neg == 0 else (neg**2 / rho if rho > 0 else math.inf)
    return {"alpha": max(g, curv), "grad_norm": g, "lambda_min": lam, "curvature_part": curv}


def running_min_alpha(problem: Problem, iterates: np.ndarray,
                      grads: np.ndarray | None = None) -> np.ndarray:
    """Running minimum of alpha_SOSP along the iterates, exact, with the gradient-norm screen:
    an iterate whose gradient norm is >= the running minimum so far cannot lower it. `grads`:
    `grad_norms(problem, iterates)` where the caller has it (the same floats). Where the problem
    declares `population_lambda_mins` (problems.evaluation.batched_oracles), lambda_min is taken in one
    batched call per chunk at every iterate of it the screen could let through (those below
    the running minimum at the chunk's start), the same floats as one call each; where it also
    declares `hessian_lipschitz`, only at those the Lipschitz screen cannot certify
    (problems.evaluation.curvature_screen), the same floats again."""
    if grads is None:
        grads = grad_norms(problem, iterates)
    screen = curvature_screen
    if not batched_oracles.declares(problem, "population_lambda_mins"):
        lipschitz = screen.lipschitz_of(problem)
        try:
            return screen.running_min_by_point(problem, iterates, grads, lipschitz, lambda_min)
        except screen.ScreenMismatch as err:  # a wrong declared bound: no screen
            screen.disable(problem, str(err))
            return screen.running_min_by_point(problem, iterates, grads, None, lambda_min)
    lams = batched_oracles.batched(problem, "population_lambda_mins")
    lipschitz = screen.lipschitz_of(problem)
    if lipschitz is not None:
        try:
            return screen.running_min_screened(problem, iterates, grads, lams, lipschitz,
                                               batched_oracles.CHUNK)
        except screen.ScreenMismatch as err:  # a wrong declared bound: no screen
            screen.disable(problem, str(err))
    rho = problem.constants.rho
    best = math.inf
    out = np.empty(len(iterates))
    step = batched_oracles.CHUNK
    for start in range(0, len(iterates), step):
        g = grads[start:start + step]
        cand = np.flatnonzero(g < best)
        alpha = dict(zip(cand.tolist(), screen.alphas(g[cand], lams(iterates[start + cand]), rho),
                         strict=True))
        for i, gi in enumerate(g.tolist()):
            if gi < best:
                best = min(best, alpha[i])
            out[start + i] = best
    return out


def samples_to_accuracy(samples_at: np.ndarray, running_min: np.ndarray,
                        thresholds: np.ndarray = THRESHOLDS) -> np.ndarray:
    """For each threshold a: samples consumed when the running minimum first fell to <= a
    (NaN if never)."""
    out = np.full(len(thresholds), np.nan)
    for k, a in enumerate(thresholds):
        hit = np.flatnonzero(running_min <= a)
        if hit.size:
            out[k] = samples_at[hit[0]]
    return out


#: Record mode: the stored iterates at which grad F_S is evaluated (log-spaced, plus the last and
#: the selected), since each evaluation reads all n records. Counts mode evaluates every stored
#: iterate (`emp_eval_indices`).
EMP_EVAL_POINTS = 256


def grad_norms(problem: Problem, iterates: np.ndarray) -> np.ndarray:
    """||grad F(x)|| (population, closed form) at each iterate: batched where the problem
    declares `population_grads` (problems.evaluation.batched_oracles; the same floats as one call each)."""
    if not batched_oracles.declares(problem, "population_grads"):
        return np.array([np.linalg.norm(problem.population_grad(x)) for x in iterates])
    iterates = np.asarray(iterates, dtype=float)
    if len(iterates) == 0:
        return np.zeros(0)
    return batched_oracles.row_norms(batched_oracles.batched(problem, "population_grads")(iterates))


def empirical_grad_norm(problem: Problem, x: np.ndarray, sample: np.ndarray | CountsBatch,
                        chunk: int = 65536) -> float:
    """||grad F_S(x)||: the exact gradient of the empirical loss on `sample` (unclipped mean of
    the per-sample gradients), in chunks so memory stays O(chunk d); a counts-mode sample
    (`CountsBatch`) gives it exactly from its counts."""
    if isinstance(sample, CountsBatch):
        return float(np.linalg.norm(problem.counts_grad(x, sample)[0]))
    total = np.zeros(problem.d)
    for i in range(0, len(sample), chunk):
        total += problem.sum_grads(x, sample[i:i + chunk])
    return float(np.linalg.norm(total / len(sample)))


def empirical_grad_norms(problem: Problem, iterates: np.ndarray, sample: np.ndarray | CountsBatch,
                         chunk: int = 512) -> np.ndarray:
    """||grad F_S(x)|| at each row of `iterates`: from counts in chunks of iterates where the
    problem has a batched exact oracle (`counts_grads`), else one `empirical_grad_norm` each."""
    batched = getattr(problem, "counts_grads", None)
    if isinstance(sample, CountsBatch) and batched is not None:
        parts = [np.linalg.norm(batched(iterates[i:i + chunk], sample), axis=1)
                 for i in range(0, len(iterates), chunk)]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.array([empirical_grad_norm(problem, x, sample) for x in iterates])


#: Stored columns that are non-private functions of a cell's sample: they evaluate a run and are
#: never part of what it releases (the private output of an empirical algorithm is its
#: *_selected iterate, picked by its noised estimates). Said on the report's privacy page.
EVALUATION_ONLY = {
    "emp_grad_best": "the best stored iterate by the exact empirical gradient of the sample; "
                     "private output: emp_grad_selected",
    "emp_alpha_best": "the best stored iterate by the exact empirical alpha_SOSP of the sample; "
                      "private output: emp_alpha_selected",
    "emp_lambda_min_best": "the empirical Hessian's smallest eigenvalue at that iterate",
    "alpha_at_emp_best": "population alpha_SOSP at that iterate",
    "data_digest": "a digest of the sample's records (reproducibility)",
}


def first_order_metrics(problem: Problem, traj, target: float | None, metric: str,
                        pop: np.ndarray | None = None) -> dict:
    """Population and empirical gradient norms of a run (the first-order claims' metrics):
    pop_grad_best / _last over the stored iterates; with the run's sample (empirical
    algorithms) emp_grad_best over the stored iterates `emp_eval_indices` picks, _last and
    _selected (smallest private estimate norm). For metric grad_norm / emp_grad_norm,
    samples_to_target is the samples consumed when that metric first fell to <= target. `pop`:
    `grad_norms(problem, traj.iterates)` where the caller has it (the same floats)."""
    its = traj.iterates
    if pop is None:
        pop = grad_norms(problem, its)
    pop_min = np.minimum.accumulate(pop)
    out = {"pop_grad_best": float(pop_min[-1]), "pop_grad_last": float(pop[-1]),
           "grad_x0": float(np.linalg.norm(problem.population_grad(problem.x0))),
           "emp_grad_best": math.nan, "emp_grad_last": math.nan, "emp_grad_selected": math.nan}
    excess = getattr(problem, "excess_risk", None)  # F(x) - min F where the problem knows it
    if excess is not None:
        ex = np.array([excess(x) for x in its])
        out.update(excess_best=float(ex.min()), excess_last=float(ex[-1]))
    else:
        out.update(excess_best=math.nan, excess_last=math.nan)
    run_min = pop_min
    if traj.sample is not None:
        sel = int(np.argmin(traj.est_norm_at))
        idx = emp_eval_indices(len(its), traj.sample, sel)
        norms = empirical_grad_norms(problem, its[idx], traj.sample)
        emp = dict(zip(idx.tolist(), norms.tolist(), strict=True))
        out.update(emp_grad_best=min(emp.values()), emp_grad_last=emp[len(its) - 1],
                   emp_grad_selected=emp[sel])
        if metric == "emp_grad_norm":
            run_min = np.full(len(its), np.nan)
            run_min[idx] = list(emp.values())
            run_min = np.fmin.accumulate(np.where(np.isnan(run_min), np.inf, run_min))
    return {"metrics": out, "run_min": run_min}


def emp_eval_indices(n_iterates: int, sample: np.ndarray | CountsBatch, selected: int) -> np.ndarray:
    """The stored iterates at which ||grad F_S|| is evaluated. From counts (exact, O(atoms) per
    iterate) every one of them, as pop_grad_best uses: a best-iterate metric taken over fewer
    points than the run stored reads too high on long runs (a 159,000-step private SpiderBoost
    run measured 1.5x its all-iterates minimum at 256 log-spaced points, which flattened its
    slope against DP-GD's). From records (each evaluation reads all n records) up to
    EMP_EVAL_POINTS log-spaced ones plus the selected and the last."""
    if isinstance(sample, CountsBatch):
        return np.arange(n_iterates)
    return np.unique(np.concatenate([_thin(n_iterates, EMP_EVAL_POINTS), [selected, n_iterates - 1]]))


def evaluate(problem: Problem, traj, target: float | None = None,
             metric: str = "alpha_sosp") -> dict:
    """Metrics of one run: alpha_SOSP (with its parts) at the best stored iterate (the theorems'
    "at least one output"), the last iterate, and the iterate with the smallest private
    estimate norm (a selection the algorithm could make itself); the samples-to-accuracy
    curve over `THRESHOLDS`; samples, steps and privacy spent; with `target` (the alpha a
    sample-complexity cell was configured for), `samples_to_target`, the samples consumed when
    the running minimum of `metric` (the algorithm's claim metric: alpha_sosp, grad_norm or
    emp_grad_norm) first fell to <= target (NaN if it never did: a censored cell); the curve
    is over the same metric. The first-order metrics (`first_order_metrics`) are always added."""
    its = traj.iterates
    # ||grad F|| at every stored iterate, once: the alpha screen and the first-order metrics
    # read the same array (it was computed twice: half of a long cell's evaluation)
    pop = grad_norms(problem, its)
    run_min = running_min_alpha(problem, its, pop)
    best_alpha = float(run_min[-1])
    # Locate the best iterate: the first index where the running minimum reaches its final value.
    best_idx = int(np.flatnonzero(run_min <= best_alpha)[0])
    best = sosp_alpha(problem, its[best_idx])
    last = sosp_alpha(problem, its[-1])
    sel_idx = int(np.argmin(traj.est_norm_at))
    sel = sosp_alpha(problem, its[sel_idx])
    x0 = sosp_alpha(problem, problem.x0)
    out = {
        "alpha_best": best["alpha"], "grad_norm_best": best["grad_norm"],
        "lambda_min_best": best["lambda_min"], "samples_at_best": int(traj.samples_at[best_idx]),
        "alpha_last": last["alpha"], "grad_norm_last": last["grad_norm"],
        "lambda_min_last": last["lambda_min"],
        "alpha_selected": sel["alpha"], "grad_norm_selected": sel["grad_norm"],
        "lambda_min_selected": sel["lambda_min"],
        "alpha_x0": x0["alpha"],
        "left_saddle": bool(best["alpha"] < 0.5 * x0["alpha"]) if x0["alpha"] > 0 else True,
        "samples_used": int(traj.samples_used), "n_steps": int(traj.n_steps),
        "stop_reason": traj.stop_reason, "eps_spent": float(traj.privacy_spent["eps"]),
        "n_o1": int((traj.records["oracle"] == 1).sum()),
        "n_escapes": int(traj.records["escape"].sum()),
    }
    fo = first_order_metrics(problem, traj, target, metric, pop)
    out.update(fo["metrics"], target_metric=metric)
    out.update(empirical_sosp_metrics(problem, traj))
    if metric != "alpha_sosp":
        run_min = fo["run_min"]
    # n* at the run's own target (sample-complexity cells): NaN when never reached (censored).
    hit = np.flatnonzero(run_min <= target) if target is not None else np.array([], dtype=int)
    out["samples_to_target"] = float(traj.samples_at[hit[0]]) if hit.size else math.nan
    curve = samples_to_accuracy(traj.samples_at, run_min)
    return {"metrics": out, "curve": {"threshold": THRESHOLDS.copy(), "samples": curve}}


def _thin(n: int, max_points: int) -> np.ndarray:
    """Indices 0..n-1 thinned to about max_points on a log-spaced grid (early steps matter most
    in log-scale plots), always keeping the first and the last."""
    if n <= max_points:
        return np.arange(n)
    idx = np.unique(np.round(np.geomspace(1, n, max_points)).astype(int) - 1)
    return np.unique(np.concatenate([[0], idx, [n - 1]]))


def trajectory_profile(problem: Problem, traj, max_points: int = 120) -> dict:
    """A thinned trajectory for plots: alpha_SOSP and its parts (and the excess risk, where the
    problem knows it) at stored iterates, and the
    per-step records (oracle, batch b_t, released estimate norm, drift, noise, escape), with
    every O1 step's sample count listed (capped at 2000) so plots can mark restarts."""
    its = traj.iterates
    keep = _thin(len(its), max_points)
    parts = [sosp_alpha(problem, its[i]) for i in keep]
    rec = traj.records
    steps = len(rec["oracle"])
    skeep = _thin(steps, 4 * max_points) if steps else np.array([], dtype=int)
    o1 = np.flatnonzero(rec["oracle"] == 1)[:2000]
    excess = getattr(problem, "excess_risk", None)
    return {
        # F(x) - min F at the same iterates where the problem knows it (loss-curve plots)
        "excess": [float(excess(its[i])) for i in keep] if excess is not None else [],
        "iterate_samples": traj.samples_at[keep].tolist(),
        "iterate_step": traj.steps[keep].tolist(),
        "alpha": [p["alpha"] for p in parts],
        "grad_norm": [p["grad_norm"] for p in parts],
        "lambda_min": [p["lambda_min"] for p in parts],
        "curvature_part": [p["curvature_part"] for p in parts],
        "step": (skeep + 1).tolist(),
        "samples": rec["samples"][skeep].tolist(),
        "oracle": rec["oracle"][skeep].astype(int).tolist(),
        "batch": rec["batch"][skeep].tolist(),
        "est_norm": rec["est_norm"][skeep].tolist(),
        "drift": rec["drift"][skeep].tolist(),
        "noise_std": rec["noise_std"][skeep].tolist(),
        "o1_samples": rec["samples"][o1].tolist(),
        "escape_samples": rec["samples"][np.flatnonzero(rec["escape"])[:2000]].tolist(),
    }


def target_monitor(problem: Problem, target: float, metric: str = "alpha_sosp"):
    """A run monitor (see Spider.run) that is True once the metric at x is <= target
    (alpha_SOSP, screened by the gradient norm, or ||grad F||): ends a sample-complexity run as
    soon as its n* is known."""
    if metric == "grad_norm":
        def below(x: np.ndarray) -> bool:
            return bool(np.linalg.norm(problem.population_grad(x)) <= target)
        below.grad_screen = float(target)  # type: ignore[attr-defined]
        return below
    if metric != "alpha_sosp":
        raise ValueError(f"stop_at_target is invalid for metric {metric!r}: it supports "
                         "alpha_sosp and grad_norm (population metrics)")

    def reached(x: np.ndarray) -> bool:
        g = problem.population_grad(x)
        if math.sqrt(g.dot(g)) > target:  # np.linalg.norm's formula, without its dispatch
            return False
        return bool(sosp_alpha(problem, x)["alpha"] <= target)
    # False wherever ||grad F(x)|| > target: a compiled caller may skip the call there
    # (algorithms.sosp.compiled_o2, with a margin for its own float of the norm)
    reached.grad_screen = float(target)  # type: ignore[attr-defined]
    return reached


def median_n_star(cells: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Median samples-to-target per group with censored runs counted as +inf (not dropped).

    `cells`: `bench.store.load` output (its `n_star` column). Columns: median_n_star (inf when
    half or more of the group is censored), runs, censored.
    """
    done = cells[cells["target_alpha"].notna() & (cells["status"] == "ok")]
    g = done.groupby(by, sort=True)
    return pd.DataFrame({"median_n_star": g["n_star"].median(), "runs": g.size(),
                         "censored": g["censored"].sum().astype(int)})


#: The empirical route's metric columns (`empirical_sosp_metrics`; bench.store keeps them).
EMPIRICAL_SOSP_COLUMNS = ("emp_alpha_best", "emp_alpha_last", "emp_alpha_selected",
                          "emp_lambda_min_best", "alpha_at_emp_best")



def empirical_sosp_metrics(problem: Any, traj: Any) -> dict[str, float]:
    """The empirical route's metrics of one run (`analysis.empirical_route` says what each is;
    NaN where the run keeps no sample or the problem has no closed-form empirical Hessian)."""
    out = {k: math.nan for k in EMPIRICAL_SOSP_COLUMNS}
    if getattr(traj, "sample", None) is None or not supports_empirical_hessian(problem):
        return out
    its = traj.iterates
    emp = empirical_alpha(problem, its, traj.sample)
    alpha = emp["alpha"]
    best = int(np.nanargmin(alpha)) if np.isfinite(alpha).any() else len(its) - 1
    sel = int(np.argmin(traj.est_norm_at))
    out.update(emp_alpha_best=float(alpha[best]), emp_alpha_last=float(alpha[-1]),
               emp_alpha_selected=float(alpha[sel]),
               emp_lambda_min_best=float(emp["lambda_min"][best]),
               alpha_at_emp_best=float(sosp_alpha(problem, its[best])["alpha"]))
    return out
