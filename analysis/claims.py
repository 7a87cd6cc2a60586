"""From a store to the claims table: the fits declared in the sweep's spec, their exponents with
CIs, the predictions from the algorithms' own metadata, verdicts and contamination flags.

Points of a fit (`fit_points_table`):
- error view: one point per cell, y = the fit's metric column (alpha_best by default);
- sample-complexity view: target-alpha cells give (alpha = target_alpha, n* = samples_to_target);
  fixed-budget cells give one point per threshold of the samples-to-accuracy curve inside the
  window (alpha = threshold, n* = samples, NaN when never reached: censored).
Only cells with status ok are used; the others are counted. eps = inf cells are never fitted
(x = 0 on the privacy scale); they are the floor reference.

Flags (the window is never moved, only flagged; Scientific protocol items 6 and 7):
- ceiling: a point in the window whose run never left the start saddle, or a window whose top
  is within 10x of the start saddle's alpha_SOSP;
- floor (error view): a design point whose median is within 3x of the eps = inf median of the
  same (algorithm, problem, n, d);
- censored: points that never reached their threshold (counted; see analysis.rates).

Sample-complexity fits run on medians (Harrell-Davis, or the sample median where runs are
censored, counting a censored run as n* = inf), in both modes: censoring is intrinsic to that
view (the rules' own horizon T or the budget can end a run first), and dropping every design
point with one censored seed would throw away the hard end of the window. A design point whose
median is censored is dropped and counted.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from algorithms import get_algorithm
from algorithms.spider import KNOB_DEFAULTS
from analysis import rates
from analysis.declarations import FitSpec, StoreData
from analysis.empirical_route import reading_for_fit
from analysis.privacy_ledger import UNVERIFIED_MARK, unverified_algorithms
from problems import character as problem_character

#: Which dimensions are folded into each x scale (the others split the fit into groups).
FOLDED = {"privacy": {"n", "eps", "d"}, "n": {"n"}, "eps": {"eps"}, "d": {"d"},
          "alpha": {"target_alpha"}, "rank": {"problem_params"}}
#: Fits against rank fold the problem parameters (one instance per rank) but still split by
#: every other parameter of the instance (link, atoms, ...): this column holds those.
EXCEPT_RANK = "problem_params_except_rank"


def at_defaults(row_params: dict, knobs: list, algorithm: str | None = None) -> bool:
    """True when every knob from the spec's grid sits at its theory default (all 1, ...; the
    algorithm's own defaults where it has them, e.g. reset_drift_on_escape)."""
    cls = get_algorithm(algorithm) if algorithm else None
    defaults = {**KNOB_DEFAULTS, **(cls.knob_defaults if cls else {})}
    strict = getattr(cls, "family", "") == "first_order"  # a grid over T, eta, b replaces a rule
    for k in knobs or []:
        if k in defaults:
            if row_params.get(k) != defaults[k]:
                return False
        elif strict:
            return False
    if strict:  # a fixed override in the spec's params (T = 51) replaces a rule as well
        for k, v in row_params.items():
            if k not in (knobs or []) and (k not in defaults or v != defaults[k]):
                return False
    return True


def theory_mask(df: pd.DataFrame) -> np.ndarray:
    """Rows whose knobs all sit at their theory defaults (a boolean array, also when empty)."""
    return np.array([at_defaults(p or {}, kn, a) for p, kn, a in
                     zip(df["params"], df["knobs"], df["algorithm"], strict=True)], dtype=bool)


def _combo_label(params: dict, knobs: list) -> str:
    """The knob setting of a cell; an entry without a grid is named by its fixed params."""
    keys = sorted(knobs or []) or sorted(params or {})
    return ", ".join(f"{k}={params.get(k)}" for k in keys) or "defaults"


def _instance_ranks(df: pd.DataFrame) -> list[float]:
    """The `rank` of each row's problem instance (built once per distinct instance; NaN for a
    problem without one)."""
    from problems import get_problem

    cache: dict[str, float] = {}
    out = []
    for prob, d, params in zip(df["problem"], df["d"], df["instance_params"], strict=True):
        key = f"{prob}|{d}|{params}"
        if key not in cache:
            inst = get_problem(prob, d=int(d), **json.loads(params))
            cache[key] = float(getattr(inst, "rank", math.nan))
        out.append(cache[key])
    return out


def fit_points_table(data: StoreData, fit: FitSpec, mode: str | None = None) -> pd.DataFrame:
    """Points of a declared fit: columns algorithm, problem, d, n, eps, delta, rep, combo, x,
    y, left_saddle, alpha_x0, key (see the module docstring)."""
    df = data.cells
    df = df[df["status"] == "ok"].copy()
    for k, v in fit.where.items():
        if k in ("problem", "algorithm"):
            df = df[df[k] == v]
        else:
            df = df[np.isclose(df[k].astype(float), float(v) if v != "inf" else math.inf)]
    mode = mode or fit.mode
    if mode == "theory":
        df = df[theory_mask(df)]
    if not (fit.where.get("eps") is not None and math.isinf(float(fit.where["eps"]))):
        df = df[np.isfinite(df["eps"])]  # non-private cells only where a fit asks for them
    df = df.assign(combo=[_combo_label(p or {}, kn) for p, kn in zip(df["params"], df["knobs"],
                                                                       strict=True)],
                   problem_params=[json.dumps(_shared_params(pr, p), sort_keys=True)
                                   for pr, p in zip(df["problem"], df["problem_params"], strict=True)],
                   instance_params=[json.dumps(p or {}, sort_keys=True) for p in df["problem_params"]])
    df = df.assign(**{EXCEPT_RANK: [json.dumps({k: v for k, v in json.loads(p).items() if k != "rank"},
                                                sort_keys=True) for p in df["problem_params"]]})
    if fit.x == "rank":  # each instance's rank, its default included (glm: min(d, 5))
        df = df.assign(rank=_instance_ranks(df))
    keep = ["key", "algorithm", "problem", "problem_params", "instance_params", "d", "n", "eps", "delta",
            "target_alpha", "rep", "combo", "left_saddle", "alpha_x0", "grad_x0", "samples_used",
            "first_o1_batch", "n_steps", EXCEPT_RANK, *(["rank"] if fit.x == "rank" else [])]
    if fit.view == "sample_complexity":
        target = df[df["target_alpha"].notna()]
        pts = target[keep].assign(alpha=target["target_alpha"], y=target["samples_to_target"])
        budget = df[df["target_alpha"].isna()]
        if len(budget):
            curves = data.load_curves("samples_to_accuracy", budget["key"])
            extra = []
            for _, r in budget.iterrows():
                c = curves.get(r["key"])
                if c is None:
                    continue
                th = np.array(c["threshold"], float)
                sm = np.array([math.nan if v is None else v for v in c["samples"]], float)
                inside = (th >= fit.window[0] * (1 - 1e-9)) & (th <= fit.window[1] * (1 + 1e-9))
                for a, s in zip(th[inside], sm[inside], strict=True):
                    extra.append({**{k: r[k] for k in keep}, "alpha": a, "y": s})
            pts = pd.concat([pts, pd.DataFrame(extra)], ignore_index=True) if extra else pts
    else:
        if fit.y not in df:
            raise ValueError(f"fit {fit.name}: y={fit.y!r} is not a stored column")
        pts = df[keep].assign(alpha=df["alpha_best"], y=df[fit.y].astype(float))
    pts = pts.assign(x=rates.scale(pts, fit.x).to_numpy() if len(pts) else [])
    return pts.reset_index(drop=True)


def _shared_params(problem: str, params: dict | None) -> dict:
    """A cell's problem parameters without the per-target one (hard_ramp's alpha): instances
    built per accuracy belong to one curve, so they group together."""
    from problems import get_problem_class

    key = get_problem_class(problem).per_target_param
    return {k: v for k, v in (params or {}).items() if k != key}


def group_columns(fit: FitSpec) -> list[str]:
    folded = FOLDED[fit.x]
    cols = ["algorithm", "problem", *[c for c in ("problem_params", "d", "n", "eps", "delta",
                                                   "target_alpha") if c not in folded
                                      and not (fit.view == "sample_complexity" and c == "target_alpha")]]
    return [*cols, EXCEPT_RANK] if fit.x == "rank" else cols


def _excess_at_x0(data: StoreData, sub: pd.DataFrame) -> pd.Series:
    """F(x0) - min F for each cell's instance (exact: the problem's own `excess_risk` at its
    start), the excess-risk metric's counterpart of grad_x0."""
    from problems import get_problem

    cache: dict[str, float] = {}
    out = []
    for name, d, params in zip(sub["problem"], sub["d"], sub["instance_params"], strict=True):
        key = f"{name}|{int(d)}|{params}"
        if key not in cache:
            prob = get_problem(name, **{**json.loads(params), "d": int(d)})
            cache[key] = float(prob.excess_risk(prob.x0))
        out.append(cache[key])
    return pd.Series(out, index=sub.index)


def _floor_flag(data: StoreData, sub: pd.DataFrame, fit: FitSpec) -> bool:
    if fit.view != "error":
        return False
    if not np.isfinite(sub["eps"].to_numpy(float)).any():  # a non-private fit IS the floor:
        return False  # comparing its points with themselves flagged every one (issue 29)
    cells = data.cells
    inf = cells[(cells["status"] == "ok") & ~np.isfinite(cells["eps"])]
    if inf.empty:
        return False
    ref = inf.groupby(["algorithm", "problem", "n", "d"])[fit.y].median()
    med = sub.groupby(["algorithm", "problem", "n", "d", "x"])["y"].median()
    for (alg, prob, n, d, _x), value in med.items():
        floor = ref.get((alg, prob, n, d))
        if floor is not None and np.isfinite(floor) and value <= 3 * floor:
            return True
    return False


#: The verdict when the O~ exponent is outside the CI but the implemented rules' own slope is
#: inside it: the claim holds up to the polylog factors its O~ hides.
UP_TO_LOGS = "consistent up to the rules' log factors"
#: The verdict of a fit that fails the regime gate (a ceiling or floor flag): its slope says
#: nothing about the claim, whatever its CI (issue 28, point 1). Its reason is in `regime`.
NOT_IN_REGIME = "not in regime"
#: The verdict of a claim no window can test (its bound binds only past the budget).
OUT_OF_REACH = "out of reach"
#: The verdict of a declared claim that no fit measures.
NOT_MEASURED = "not measured"
#: The flags that fail the regime gate: where the window touches the start (ceiling) or the
#: non-private floor, the measured slope is the saturation's, not the claim's. "censored" is
#: not among them: censoring is intrinsic to the sample-complexity view and is counted.
GATE_FLAGS = ("ceiling", "floor")


def regime_reason(flags: str | float | None) -> str:
    """The reason a fit fails the regime gate ("" when it passes): its ceiling / floor flags,
    from the "; "-joined `flags` text a fit row (or a claims CSV) carries."""
    if not isinstance(flags, str):
        return ""
    parts = [p.strip() for p in flags.split("; ") if p.strip()]
    return "; ".join(p for p in parts if p.split(":")[0].strip() in GATE_FLAGS)


def gate_verdict(verdict: str, flags: str | float | None) -> str:
    """The verdict after the regime gate: "not in regime" when the flags fail it, else the
    verdict as read from the CI."""
    return NOT_IN_REGIME if regime_reason(flags) else verdict


def apply_gate(table: pd.DataFrame) -> pd.DataFrame:
    """A fit table (from `run_fit`, or a claims CSV read back) with the regime gate applied
    from its own `flags` column: `regime` holds "in regime" or the reason, and every verdict
    read from a CI on that window (verdict, rules_verdict, two_term_verdict) becomes "not in
    regime" where the gate fails. Idempotent: a gated table comes back unchanged."""
    if table.empty or "flags" not in table:
        return table
    out = table.copy()
    reasons = [regime_reason(f) for f in out["flags"]]
    out["regime"] = [r or "in regime" for r in reasons]
    failed = np.array([bool(r) for r in reasons], dtype=bool)
    # The two-term fit models the floor (b n^-q), so only a ceiling fails it.
    ceiling = np.array(["ceiling" in r for r in reasons], dtype=bool)
    for col, mask in (("verdict", failed), ("rules_verdict", failed), ("two_term_verdict", ceiling)):
        if col in out:
            col_vals = out[col].astype(object)
            has = (col_vals.notna() & (col_vals.astype(str) != "")).to_numpy()
            out[col] = np.where(mask & has, NOT_IN_REGIME, col_vals)
    return out


def rules_prediction(sub: pd.DataFrame, fit: FitSpec, calibration: str) -> float:
    """The slope the algorithm's own implemented rules predict over the fit's design points:
    log theory_budget (the rules' sample budget, with the log factors they contain: the tree
    depth log T, log 1/delta, log 1/alpha in the escape window) against log x, computed from
    `theory_params` at each design point with the knobs at 1 (not fitted to measurements).
    Sample-complexity view only (NaN otherwise, or with fewer than two design points)."""
    from algorithms import Privacy
    from problems import get_problem

    if fit.view != "sample_complexity" or sub["x"].nunique() < 2:
        return math.nan
    cls = get_algorithm(sub["algorithm"].iloc[0])
    if getattr(cls, "family", "") != "sosp_spider":  # only the Spiders' rules state a budget
        return math.nan
    xs, budgets = [], []
    for xv, g in sub.groupby("x"):
        r = g.iloc[0]
        constants = get_problem(r["problem"], d=int(r["d"]), **json.loads(r["instance_params"])).constants
        privacy = Privacy(float(r["eps"]), float(r["delta"]), calibration)
        try:
            p = cls.theory_params(constants, None, int(r["d"]), privacy,
                                  target_alpha=float(r["alpha"]), **KNOB_DEFAULTS)
        except ValueError:
            return math.nan
        xs.append(float(xv))
        budgets.append(float(p["theory_budget"]))
    return float(np.polyfit(np.log(xs), np.log(budgets), 1)[0])


def run_fit(data: StoreData, fit: FitSpec, mode: str | None = None, n_boot: int = rates.N_BOOT,
            seed: int = 0) -> pd.DataFrame:
    """One declared fit, per group: exponent, CI, prediction, verdict and flags."""
    mode = mode or fit.mode
    pts = fit_points_table(data, fit, mode)
    if pts.empty:
        return pd.DataFrame()
    pts = pts[(pts["x"] >= fit.window[0] * (1 - 1e-9)) & (pts["x"] <= fit.window[1] * (1 + 1e-9))]
    by = group_columns(fit)
    rows = []
    for k, (key, sub) in enumerate(pts.groupby(by, dropna=False, sort=True)):
        group = dict(zip(by, key, strict=True))
        rng = np.random.default_rng([seed, k])
        # Sample complexity: median-based fits (censored runs count as n* = inf, so a design
        # point is lost only when its median is censored); error view: all repetitions.
        if (mode == "tuned" and sub["combo"].nunique() > 1) or fit.view == "sample_complexity":
            labels = sorted(sub["combo"].unique())
            res = rates.envelope_fit(sub["x"].to_numpy(), sub["combo"].map(labels.index).to_numpy(),
                                     sub["rep"].to_numpy(), sub["y"].to_numpy(), group=group,
                                     x=fit.x, y=fit.y, window=fit.window, n_boot=n_boot, rng=rng,
                                     combo_labels=labels)
        else:
            res = rates.fit_points(sub["x"].to_numpy(), sub["y"].to_numpy(), group=group, x=fit.x,
                                   y=fit.y, window=fit.window, n_boot=n_boot, rng=rng)
        cls = get_algorithm(group["algorithm"])
        metric = fit_metric(fit, group["algorithm"])
        predicted = predicted_slope(cls, fit, metric, private=bool(np.isfinite(sub["eps"]).any()))
        flags = []
        first_order = metric not in ("alpha_sosp", "emp_alpha_sosp")  # SOSP metrics: alpha_x0
        excess = metric == "excess_risk"
        start = (_excess_at_x0(data, sub) if excess else sub["grad_x0"] if first_order
                 else sub["alpha_x0"]).to_numpy(float)
        start_name = "F(x0) - min F" if excess else "||grad F(x0)||"
        x0 = float(start.min())
        point = start_point(sub)
        if first_order and fit.view == "error":  # stuck: never halved the start's value
            stuck = int((sub["y"].to_numpy(float) >= 0.5 * start).sum())
        else:
            stuck = int((~sub["left_saddle"].astype(bool)).sum())
        if stuck:
            flags.append(f"ceiling: runs in the window never halved {start_name}" if first_order
                         else f"ceiling: runs in the window never left {point} "
                         f"(alpha_SOSP {x0:.3g}: never halved)")
        # The largest alpha the fit involves: targets / thresholds (sample complexity) or the
        # achieved alpha (error view).
        top = float(sub["alpha"].max()) if fit.view == "sample_complexity" else float(sub["y"].max())
        if x0 < 10 * top:
            flags.append(f"ceiling: the window reaches within 10x of the start's {start_name} "
                         f"({top:.3g} against {x0:.3g})" if first_order else
                         f"ceiling: the window reaches within 10x of {point}'s alpha_SOSP "
                         f"({top:.3g} against {x0:.3g})")
        if _floor_flag(data, sub, fit):
            flags.append("floor: a design point within 3x of its eps = inf median")
        if res.n_censored:
            flags.append("censored: some runs never reached their threshold")
        row = res.row()
        row.update(n_stuck=stuck, alpha_x0=x0, alpha_top=top)
        if fit.view == "error" and fit.x == "privacy":
            row.update(_two_term(data, sub, fit, mode, res, rng))
        verdict = rates.verdict(res, predicted, fit.view, fit.x)
        # which statistical exponent of n the runs follow (issue 29: printed vs Theorem A.2)
        row["reading"] = reading_for_fit(cls, fit.x, fit.view, bool(np.isfinite(sub["eps"]).any()),
                                         row.get("ci_low", math.nan), row.get("ci_high", math.nan),
                                         data.cells.set_index("key").reindex(sub["key"]).assign(
                                             x=sub["x"].to_numpy()))
        rules = rules_prediction(sub, fit, data.spec.calibration)
        rules_verdict = rates.verdict(res, rules, fit.view, fit.x) if math.isfinite(rules) else ""
        if verdict.endswith("than claimed") and rules_verdict == "consistent":
            verdict = UP_TO_LOGS
        # The regime gate (issue 28, point 1) is applied to the whole table below, from the
        # flags: one code path for fresh fits and for a claims CSV read back.
        row.update(fit=fit.name, metric=metric, where=", ".join(f"{k}={v}" for k, v in fit.where.items()),
                   view=fit.view, mode=mode, predicted=predicted,
                   rules_predicted=rules, rules_verdict=rules_verdict,
                   character=problem_character(group["problem"]), spec=data.spec.name,
                   verdict=verdict,
                   flags="; ".join(flags), claimed_rate=cls.claimed_rate,
                   median_steps=float(sub["n_steps"].median()),
                   median_first_o1=float(sub["first_o1_batch"].median()))
        rows.append(row)
    return apply_gate(pd.DataFrame(rows))


def start_point(sub: pd.DataFrame) -> str:
    """How the ceiling flag names the start x0 of the fit's instance: "the start saddle" where
    x0 is one (grad F(x0) = 0, lambda_min < 0), else "the start x0" with its gradient norm."""
    from analysis.metrics import sosp_alpha
    from problems import get_problem

    r = sub.iloc[0]
    prob = get_problem(r["problem"], d=int(r["d"]), **json.loads(r["instance_params"]))
    s = sosp_alpha(prob, prob.x0)
    if s["grad_norm"] <= 1e-9 * max(1.0, s["alpha"]) and s["lambda_min"] < 0:
        return "the start saddle"
    return f"the start x0 (||grad F(x0)|| = {s['grad_norm']:.3g}, not a saddle)"


def matching_claim(cls: Any, metric: str) -> Any:
    """The algorithm's claim on `metric` (its first claim if none matches; None if it has none)."""
    claims = getattr(cls, "claims", ())
    return next((c for c in claims if c.metric == metric), claims[0] if claims else None)


def predicted_slope(cls: Any, fit: FitSpec, metric: str, private: bool = True) -> float | None:
    """The exponent the algorithm's claim on `metric` predicts for the fit: its privacy term's
    where the cells are private, its statistical term's (the one in n alone) where every cell
    is non-private (eps = inf); None where the claim predicts nothing for this x."""
    claim = matching_claim(cls, metric)
    if claim is None:
        return cls.predicted_exponent(fit.view, fit.x) if hasattr(cls, "predicted_exponent") else None
    if not private:
        if fit.view != "error" or fit.x not in ("n", "d", "rank"):
            return None
        stat = claim.statistical_term
        return stat.exponent(fit.x) if stat is not None else None
    try:
        return claim.predicted_slope(fit.view, fit.x)
    except ValueError:
        return None


def _two_term(data: StoreData, sub: pd.DataFrame, fit: FitSpec, mode: str, res: Any,
              rng: np.random.Generator) -> dict[str, float]:
    """The power law plus the non-private floor, y = a x^p + b n^{-1/3} (README, the protocol,
    item 3), on the fit's points (tuned: the envelope's chosen knob setting) plus the eps = inf
    runs of the same algorithm and problem (their x is 0: they pin the floor b)."""
    pts = sub
    if mode == "tuned" and res.chosen:
        pts = pd.concat([g[g["combo"] == res.chosen.get(f"{xv:g}")] for xv, g in sub.groupby("x")])
    cells = data.cells
    shared = sub["instance_params"].iloc[0]  # the same instance, not only the same problem name
    inf = cells[(cells["status"] == "ok") & ~np.isfinite(cells["eps"])
                & (cells["algorithm"] == sub["algorithm"].iloc[0])
                & (cells["problem"] == sub["problem"].iloc[0])
                & (cells["problem_params"].map(lambda p: json.dumps(p or {}, sort_keys=True)) == shared)]
    if mode == "theory":
        inf = inf[theory_mask(inf)]
    x = np.concatenate([pts["x"].to_numpy(float), np.full(len(inf), pts["x"].min() * 1e-6)])
    n = np.concatenate([pts["n"].to_numpy(float), inf["n"].to_numpy(float)])
    y = np.concatenate([pts["y"].to_numpy(float), inf[fit.y].to_numpy(float)])
    if len(np.unique(n)) < 2 or len(pts) < 6:
        return {}
    cls = get_algorithm(sub["algorithm"].iloc[0])
    claim = matching_claim(cls, fit_metric(fit, cls.name))
    stat = claim.statistical_term if claim is not None else None
    q = -stat.exponent("n") if stat is not None else 1 / 3
    tt = rates.two_term_fit(x, n, y, n_boot=200, rng=rng, floor_exponent=q)
    predicted = predicted_slope(cls, fit, fit_metric(fit, cls.name))
    verdict = rates.verdict({"ci_low": tt.ci_low, "ci_high": tt.ci_high, "x": "privacy"},
                            predicted, "error")
    return {"two_term_p": tt.p, "two_term_ci_low": tt.ci_low, "two_term_ci_high": tt.ci_high,
            "two_term_b": tt.b, "two_term_verdict": verdict, "two_term_q": q}


def claims_table(data: StoreData, n_boot: int = rates.N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Every declared fit of the spec, per algorithm and group one row per mode that says
    something of its own:

    - a fit declared `mode = "theory"` gives theory rows only;
    - a fit declared tuned gives its tuned rows and, beside them, theory rows (the check of
      the parameter rules as written); an algorithm without a knob grid has one knob setting,
      so its tuned row would repeat its theory row: it gets the theory row only (or, where its
      fixed params are not the theory defaults, the tuned row only, named "fixed");
    - an algorithm whose knob grid lacks a theory default gets a theory row that says so
      (verdict "not measured", `regime` naming the missing value) instead of no row.

    `declared` is True on the rows of the fit's declared mode (the rows a claim's verdict
    is decided from, `claims_summary`)."""
    frames = []
    grids = {a["name"]: a["grid"] for a in data.spec.algorithms}
    for fit in data.spec.fits:
        modes = ["theory"] if fit.mode == "theory" else ["tuned", "theory"]
        parts = {m: run_fit(data, fit, m, n_boot=n_boot, seed=seed) for m in modes}
        if "tuned" in parts and len(parts["tuned"]):
            tuned, theory = parts["tuned"], parts["theory"]
            no_grid = tuned["algorithm"].map(lambda a: not grids.get(a))
            has_theory = set(theory["algorithm"]) if len(theory) else set()
            drop = no_grid & tuned["algorithm"].isin(has_theory)
            fixed = no_grid & ~drop
            tuned = tuned[~drop].copy()
            tuned.loc[fixed[~drop], "mode"] = "fixed"
            parts["tuned"] = tuned
            parts["theory"] = pd.concat([theory, _missing_theory_rows(fit, tuned, theory, grids)],
                                        ignore_index=True)
        for m in modes:
            part = parts[m]
            if len(part):
                part = part.assign(declared=(part["mode"] == fit.mode) | (part["mode"] == "fixed")
                                   | part["algorithm"].map(lambda a: not grids.get(a)))
                frames.append(part)
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    # Every fit table marks the algorithms whose privacy is not verified (plugins whose check
    # failed or could not run: analysis.plugin_privacy); "" for the others.
    unverified = unverified_algorithms(data.cells)
    table["privacy"] = [f"{UNVERIFIED_MARK}: {unverified[a]}" if a in unverified else ""
                        for a in table["algorithm"]]
    return table


def _missing_theory_rows(fit: FitSpec, tuned: pd.DataFrame, theory: pd.DataFrame,
                         grids: dict[str, dict]) -> pd.DataFrame:
    """A theory row per tuned row whose algorithm has a knob grid but no theory row: the
    grid lacks a knob's theory default, so theory mode has no cell to fit (said, not dropped)."""
    have = set(theory["algorithm"]) if len(theory) else set()
    rows = []
    for _, r in tuned.iterrows():
        alg = r["algorithm"]
        grid = grids.get(alg) or {}
        if not grid or alg in have:
            continue
        cls = get_algorithm(alg)
        defaults = {**KNOB_DEFAULTS, **getattr(cls, "knob_defaults", {})}
        missing = [f"{k}={defaults[k]}" for k, v in grid.items()
                   if k in defaults and defaults[k] not in v]
        why = (f"no theory cell: the knob grid lacks the theory default {', '.join(missing)}"
               if missing else "no theory cell: the knob grid replaces a parameter rule")
        keep = {k: r[k] for k in ("algorithm", "problem", "problem_params", "d", "n", "eps",
                                  "delta", "fit", "metric", "where", "view", "x", "y", "spec",
                                  "character", "claimed_rate", "window", "predicted") if k in r}
        rows.append({**keep, "mode": "theory", "exponent": math.nan, "ci_low": math.nan,
                     "ci_high": math.nan, "verdict": NOT_MEASURED, "regime": why, "flags": "",
                     "rules_predicted": math.nan, "rules_verdict": "", "n_design": 0,
                     "n_points": 0})
    return pd.DataFrame(rows)


#: The claim metric each stored column measures (error view).
Y_METRIC = {"alpha_best": "alpha_sosp", "alpha_last": "alpha_sosp", "alpha_selected": "alpha_sosp",
            "grad_norm_best": "grad_norm", "pop_grad_best": "grad_norm", "pop_grad_last": "grad_norm",
            "emp_grad_best": "emp_grad_norm", "emp_grad_last": "emp_grad_norm",
            "emp_grad_selected": "emp_grad_norm", "excess_best": "excess_risk",
            "excess_last": "excess_risk", "alpha_at_emp_best": "alpha_sosp",
            "emp_alpha_best": "emp_alpha_sosp", "emp_alpha_last": "emp_alpha_sosp",
            "emp_alpha_selected": "emp_alpha_sosp"}


def fit_metric(fit: FitSpec, algorithm: str) -> str:
    """The metric a fit measures: its y column's (error view) or, for samples-to-target, the
    metric the algorithm's cells are targeted on (its first claim's)."""
    if fit.view == "sample_complexity":
        return claim_metric(algorithm)
    return Y_METRIC.get(fit.y, "other")


def declared_claims(claims: pd.DataFrame) -> pd.DataFrame:
    """Every claim of every registered algorithm (claims as data) with what the fits measured
    for it: one row per (claim, fit, mode, problem) that measures the claim's metric for its
    algorithm, or one row marked "not measured"."""
    from algorithms import all_claims

    rows = []
    for c in all_claims():
        base = {"algorithm": c.algorithm, "setting": c.setting, "metric": c.metric,
                "claimed": c.rate, "source": f"{c.paper}, {c.where}"}
        hits = pd.DataFrame()
        if len(claims) and "metric" in claims:
            hits = claims[(claims["algorithm"] == c.algorithm) & (claims["metric"] == c.metric)]
        if hits.empty:
            rows.append({**base, "measured": "not measured"})
            continue
        for r in hits.itertuples():
            ci = f"[{r.ci_low:.3g}, {r.ci_high:.3g}]" if np.isfinite(r.ci_low) else "[-, -]"
            pred = r.predicted
            pred = f"{pred:.3g}" if pred is not None and np.isfinite(pred) else "-"
            eps = getattr(r, "eps", None)
            at = f", eps {eps:g}" if isinstance(eps, (int, float)) and np.isfinite(eps) else ""
            rows.append({**base, "measured": f"{r.exponent:.3g} {ci} vs {pred}: "
                         f"{r.verdict} ({r.fit}, {r.mode}, {r.problem}{at})"})
    from algorithms.claims import LOWER_BOUNDS

    for lb in LOWER_BOUNDS:
        rows.append({"algorithm": "(any DP algorithm)", "setting": lb.setting, "metric": lb.metric,
                     "claimed": "Omega(" + lb.term.text + ")", "source": f"{lb.paper}, {lb.where}",
                     "measured": "lower bound: drawn on the x = privacy plots"})
    return pd.DataFrame(rows)


def claim_metric(algorithm: str) -> str:
    """The metric of the algorithm's first claim (alpha_sosp when it claims nothing)."""
    cls = get_algorithm(algorithm)
    return cls.claims[0].metric if cls.claims else "alpha_sosp"


def paired_table(data: StoreData, n_boot: int = rates.N_BOOT, seed: int = 0) -> list[dict[str, Any]]:
    """Paired differences log y_A - log y_B (theory mode, same data seeds) for every declared fit
    and every pair of algorithms that claim a rate; prediction = difference of the exponents."""
    out = []
    for fit in data.spec.fits:
        pts = fit_points_table(data, fit, "theory")
        if pts.empty:
            continue
        pts = pts[(pts["x"] >= fit.window[0] * (1 - 1e-9)) & (pts["x"] <= fit.window[1] * (1 + 1e-9))]
        algs = [a for a in sorted(pts["algorithm"].unique())
                if get_algorithm(a).claimed_exponent is not None]
        by = [c for c in group_columns(fit) if c != "algorithm"]
        for i, a in enumerate(algs):
            for b in algs[i + 1:]:
                if claim_metric(a) != claim_metric(b):  # claims about different metrics
                    continue
                pa = pts[pts["algorithm"] == a]
                pb = pts[pts["algorithm"] == b]
                on = [*by, "x", "rep"]
                merged = pa.merge(pb, on=on, suffixes=("_a", "_b"))
                for k, (key, sub) in enumerate(merged.groupby(by, dropna=False, sort=True)):
                    both = np.isfinite(sub["y_a"].to_numpy(float)) & np.isfinite(sub["y_b"].to_numpy(float))
                    if sub["x"][both].nunique() < 2:  # e.g. a metric one side does not compute
                        continue
                    res = rates.paired_difference(sub["x"].to_numpy(), sub["rep"].to_numpy(),
                                                  sub["y_a"].to_numpy(), sub["y_b"].to_numpy(),
                                                  n_boot=n_boot, rng=np.random.default_rng([seed, k]))
                    metric = fit_metric(fit, a)
                    pa_, pb_ = (predicted_slope(get_algorithm(c), fit, metric) for c in (a, b))
                    pred = pa_ - pb_ if pa_ is not None and pb_ is not None else math.nan
                    out.append({"fit": fit.name, "view": fit.view, "x": fit.x, "a": a, "b": b,
                                "group": dict(zip(by, key, strict=True)), "result": res,
                                "predicted_slope": pred})
    return out


def path_table(data: StoreData) -> pd.DataFrame:
    """For target-alpha cells: per (problem, algorithm, d, eps, target), the median n* beside
    the first O1 batch and the rules' own budget (theory_budget), the median number of steps
    and the horizon T, and the privacy share of the rules' budget, 1 - budget(eps = inf) /
    budget(eps) (Scientific protocol item 2: do the rules or the optimization set n*?).
    Also the slope of log(steps) against log(alpha) per (problem, algorithm, d, eps): about -2
    when the instance is hard for the algorithm; and the slopes of the rules' budget and of the
    first O1 batch against log(alpha) (the rules' own prediction, log factors included)."""
    from algorithms import Privacy
    from problems import get_problem

    df = data.cells
    df = df[(df["status"] == "ok") & df["target_alpha"].notna()]
    df = df[np.array([getattr(get_algorithm(a), "family", "") == "sosp_spider"
                      for a in df["algorithm"]], dtype=bool)]
    df = df[theory_mask(df)]
    if df.empty:
        return pd.DataFrame()
    rows = []
    keys = ["problem", "algorithm", "d", "eps", "delta", "target_alpha"]
    for key, g in df.groupby(keys, sort=True):
        prob, alg, d, eps, delta, ta = key
        first = g["params_used"].iloc[0]
        cls = get_algorithm(alg)
        constants = get_problem(prob, d=int(d), **(g["problem_params"].iloc[0] or {})).constants
        try:
            inf_budget = cls.theory_params(constants, None, int(d), Privacy(math.inf, delta),
                                           target_alpha=float(ta), **KNOB_DEFAULTS)["theory_budget"]
            share = 1.0 - inf_budget / first["theory_budget"]
        except (ValueError, KeyError, ZeroDivisionError):
            share = math.nan
        n_star = g["samples_to_target"]
        rows.append({
            "problem": prob, "algorithm": alg, "d": int(d), "eps": eps, "target_alpha": ta,
            "runs": len(g), "censored": int(g["censored"].sum()),
            "n_star": float(g["n_star"].median()),  # the store's n_star: censored = inf
            "first_o1_batch": float(g["first_o1_batch"].median()),
            "n_star_over_b": float((n_star / g["first_o1_batch"]).median()),
            "theory_budget": float(first["theory_budget"]),
            "steps": float(g["n_steps"].median()), "T": float(first["T"]),
            "privacy_share": share,
        })
    out = pd.DataFrame(rows)
    slopes = {}
    for key, g in df.groupby(["problem", "algorithm", "d", "eps"], sort=True):
        if g["target_alpha"].nunique() >= 2:
            ok = g[g["samples_to_target"].notna()]
            if ok["target_alpha"].nunique() >= 2:
                f = rates.fit_points(ok["target_alpha"].to_numpy(), ok["n_steps"].to_numpy().astype(float),
                                     n_boot=500)
                slopes[key] = (f.exponent, f.ci_low, f.ci_high)
    out["steps_slope"] = [slopes.get((r.problem, r.algorithm, r.d, r.eps), (math.nan,) * 3)[0]
                          for r in out.itertuples()]
    # What the rules themselves predict over this window, log factors (tree depth ~ log T,
    # log 1/delta inside eps_eff) included: slopes of the rules' budget and first batch.
    for col, src in (("rules_budget_slope", "theory_budget"), ("first_batch_slope", "first_o1_batch")):
        vals = {}
        for key, g in out.groupby(["problem", "algorithm", "d", "eps"]):
            if g["target_alpha"].nunique() >= 2:
                vals[key] = float(np.polyfit(np.log(g["target_alpha"]), np.log(g[src]), 1)[0])
        out[col] = [vals.get((r.problem, r.algorithm, r.d, r.eps), math.nan) for r in out.itertuples()]
    return out
