"""From a store to the claims table: the fits declared in the sweep's spec, their exponents with
CIs, the predictions from the algorithms' own metadata, verdicts and contamination flags
(`run_fit` per declared fit and mode, `claims_table` for all of them), the paired comparisons
(`paired_table`) and every declared claim with its measurements (`declared_claims`).

The parts: the points of a fit and theory mode in `analysis.points`; the verdict engine in
`analysis.verdict_engine` (the predictions in `predictions`, the flags' measurements in `flags`,
the verdicts and the regime gate in `verdicts`, the fourth edition's model comparison in
`decide`); the path-length table in `analysis.path_length`.

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

from algorithms import get_algorithm, regime_forecast
from algorithms.privacy.audit.eps_spent import spent_fraction_column
from algorithms.privacy.audit.ledger import privacy_note, unverified_algorithms
from algorithms.regime_flags import FlagKind, RegimeFlag
from algorithms.sosp.spider import KNOB_DEFAULTS
from analysis.declarations import FitSpec, StoreData
from analysis.empirical_route import reading_for_fit
from analysis.points import fit_points_table, group_columns, theory_mask
from analysis.verdict_engine import envelope, paired, rates, two_term, verdicts
from analysis.verdict_engine.decide import decide
from analysis.verdict_engine.design import design_from_points
from analysis.verdict_engine.flags import (
    excess_at_x0,
    floor_check,
    measured_private_share,
    start_point,
)
from analysis.verdict_engine.margins import RIVALS
from analysis.verdict_engine.one_model import claim_verdicts
from analysis.verdict_engine.predictions import (
    claim_metric,
    fit_metric,
    matching_claim,
    predicted_slope,
)
from analysis.verdict_engine.rules_curve import rules_curve
from analysis.verdict_engine.verdicts import NO_CLAIM, NOT_MEASURED, apply_gate
from problems import character as problem_character


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
        res = fit_group(sub, fit.view, mode, group, fit.x, fit.y, fit.window, n_boot, rng)
        cls = get_algorithm(group["algorithm"])
        metric = fit_metric(fit, group["algorithm"])
        predicted = predicted_slope(cls, fit, metric, private=bool(np.isfinite(sub["eps"]).any()))
        flags: list[RegimeFlag] = []
        first_order = metric not in ("alpha_sosp", "emp_alpha_sosp")  # SOSP metrics: alpha_x0
        excess = metric == "excess_risk"
        start = (excess_at_x0(data, sub) if excess else sub["grad_x0"] if first_order
                 else sub["alpha_x0"]).to_numpy(float)
        start_name = "F(x0) - min F" if excess else "||grad F(x0)||"
        x0 = float(start.min())
        point = start_point(sub)
        if first_order and fit.view == "error":  # stuck: never halved the start's value
            stuck = int((sub["y"].to_numpy(float) >= 0.5 * start).sum())
        else:
            stuck = int((~sub["left_saddle"].astype(bool)).sum())
        if stuck:
            flags.append(RegimeFlag(FlagKind.CEILING,
                                    f"runs in the window never halved {start_name}" if first_order
                                    else f"runs in the window never left {point} "
                                    f"(alpha_SOSP {x0:.3g}: never halved)"))
        # The largest alpha the fit involves: targets / thresholds (sample complexity) or the
        # achieved alpha (error view).
        top = float(sub["alpha"].max()) if fit.view == "sample_complexity" else float(sub["y"].max())
        if x0 < 10 * top:
            flags.append(RegimeFlag(FlagKind.CEILING,
                                    f"the window reaches within 10x of the start's {start_name} "
                                    f"({top:.3g} against {x0:.3g})" if first_order else
                                    f"the window reaches within 10x of {point}'s alpha_SOSP "
                                    f"({top:.3g} against {x0:.3g})"))
        floor_hit, unchecked, points = floor_check(data, sub, fit)
        if floor_hit:
            flags.append(RegimeFlag(FlagKind.FLOOR, "a design point within 3x of its eps = inf median"))
        # Not a regime flag (the forecast gates these fits): its own column, so that "floor" in
        # `flags` always means a fit outside its regime.
        advisory = (f"floor unchecked: {unchecked} of {points} design points have no eps = inf "
                    "run of their (n, d) to compare with" if unchecked else "")
        if res.n_censored:
            flags.append(RegimeFlag(FlagKind.CENSORED, "some runs never reached their threshold"))
        forecast = regime_forecast.forecast_group(fit, sub, data.spec.calibration, fit_metric)
        flags.extend(regime_forecast.gate_flags(forecast))
        forecast = forecast.columns
        row = res.row()
        row.update(n_stuck=stuck, alpha_x0=x0, alpha_top=top, group_index=k)
        if fit.view == "error" and fit.x == "privacy":
            row.update(_two_term(data, sub, fit, mode, res, rng))
        verdict = verdicts.verdict(res, predicted, fit.view, fit.x)
        # which statistical exponent of n the runs follow (issue 29: printed vs Theorem A.2)
        row["reading"] = reading_for_fit(cls, fit.x, fit.view, bool(np.isfinite(sub["eps"]).any()),
                                         row.get("ci_low", math.nan), row.get("ci_high", math.nan),
                                         data.cells.set_index("key").reindex(sub["key"]).assign(
                                             x=sub["x"].to_numpy()))
        if predicted is None and matching_claim(cls, metric) is None:
            verdict = NO_CLAIM
        # The regime gate (issue 28, point 1) is applied to the whole table below, from the
        # flags' kinds (`gate_kinds`): one code path for fresh fits and for a claims CSV read back.
        row.update(fit=fit.name, metric=metric, where=", ".join(f"{k}={v}" for k, v in fit.where.items()),
                   view=fit.view, mode=mode, predicted=predicted,
                   character=problem_character(group["problem"]), spec=data.spec.name,
                   verdict=verdict,
                   advisory=advisory, claimed_rate=cls.claimed_rate,
                   median_steps=float(sub["n_steps"].median()),
                   median_first_o1=float(sub["first_o1_batch"].median()), **forecast)
        # the share of eps the run's noise really spends (exact replace-one accounting; issue 43)
        spent = spent_fraction_column(data.cells.set_index("key").reindex(sub["key"].unique()))
        row.update(spent_fraction=float(spent.median()), spent_fraction_min=float(spent.min()),
                   spent_fraction_max=float(spent.max()))
        # The verdict engine (issue 42): logs, rules, envelope, window spread, privacy share.
        design = design_from_points(sub, res.chosen if fit.view == "sample_complexity" or
                                    mode == "tuned" else None, fit.x)
        rules = rules_curve(design, fit.view, data.spec.calibration) if len(design) else None
        # the rival claim whose difference the row must resolve (the two SOSP Spiders')
        rival = RIVALS.get(group["algorithm"])
        if rival is not None and predicted is not None:
            rp = predicted_slope(get_algorithm(rival), fit, fit_metric(fit, rival))
            row["rival_predicted"] = float(rp) if rp is not None else math.nan
        # The verdict engine (fifth edition, issue 55): the rules test, the asymptote, the O~
        # test, margins and resolutions; rules_verdict is the rules test's decision.
        decided = decide(row, design, matching_claim(cls, metric), rules, rng,
                         data.spec.calibration, measured_private_share(data, sub, fit))
        flags.extend(decided.pop("share_gate", ()))  # the privacy-share gate: a floor flag
        row.update(decided)
        row.update(verdicts.flag_columns(flags))
        row.update(_lent_controls_note(data, row))
        rows.append(row)
    return apply_gate(pd.DataFrame(rows))


def fit_group(sub: pd.DataFrame, view: str, mode: str, group: dict[str, Any], x: str, y: str,
              window: tuple[float, float] | None, n_boot: int, rng: np.random.Generator) -> Any:
    """One group's slope fit (`run_fit`, and a replant from its points): sample complexity and
    a tuned grid on medians through the envelope (censored runs count as n* = inf, so a design
    point is lost only when its median is censored); the error view on all repetitions."""
    if (mode == "tuned" and sub["combo"].nunique() > 1) or view == "sample_complexity":
        labels = sorted(sub["combo"].unique())
        return envelope.envelope_fit(sub["x"].to_numpy(), sub["combo"].map(labels.index).to_numpy(),
                                     sub["rep"].to_numpy(), sub["y"].to_numpy(), group=group,
                                     x=x, y=y, window=window, n_boot=n_boot, rng=rng,
                                     combo_labels=labels)
    return rates.fit_points(sub["x"].to_numpy(), sub["y"].to_numpy(), group=group, x=x,
                            y=y, window=window, n_boot=n_boot, rng=rng)


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
    tt = two_term.two_term_fit(x, n, y, n_boot=200, rng=rng, floor_exponent=q)
    predicted = predicted_slope(cls, fit, fit_metric(fit, cls.name))
    verdict = verdicts.verdict({"ci_low": tt.ci_low, "ci_high": tt.ci_high, "x": "privacy"},
                               predicted, "error")
    return {"two_term_p": tt.p, "two_term_ci_low": tt.ci_low, "two_term_ci_high": tt.ci_high,
            "two_term_b": tt.b, "two_term_verdict": verdict, "two_term_q": q}


def _lent_controls_note(data: StoreData, row: dict) -> dict:
    """Where the measured share's controls came from another store (`controls_from`), the
    source says which; a lender that lent nothing is said in the advisory column."""
    out: dict[str, str] = {}
    own = bool((~np.isfinite(data.cells["eps"].to_numpy(float))).any()) if len(data.cells) else False
    if data.controls is not None and not own \
            and row.get("private_share_measured", False):
        names = ", ".join(sorted(data.controls["control_store"].unique()))
        out["private_share_source"] = f"{row['private_share_source']} (controls from {names})"
    if data.controls_refused:
        out["advisory"] = "; ".join(a for a in (row.get("advisory", ""), *data.controls_refused) if a)
    return out


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
        if "theory" in parts:  # an algorithm with no row in any mode (a tuned fit's "fixed"
            # row already says its params are not the theory defaults)
            shown = {a for p in parts.values() if len(p) for a in p["algorithm"]}
            fixed = _fixed_params_rows(data, fit, shown)
            if len(fixed):
                parts["theory"] = pd.concat([parts["theory"], fixed], ignore_index=True)
        for m in modes:
            part = parts[m]
            if len(part):
                part = part.assign(declared=(part["mode"] == fit.mode) | (part["mode"] == "fixed")
                                   | part["algorithm"].map(lambda a: not grids.get(a)))
                frames.append(part)
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    table = claim_verdicts(pd.concat(frames, ignore_index=True))
    # Every fit table marks the algorithms whose privacy is not verified (plugins whose check
    # failed or could not run: algorithms.privacy.audit.plugin_checks); "" for the others.
    unverified = unverified_algorithms(data.cells)
    table["privacy"] = [privacy_note(unverified[a]) if a in unverified else ""
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
        rows.append(_not_measured_theory_row(keep, why))
    return pd.DataFrame(rows)


def _not_measured_theory_row(base: dict[str, Any], why: str) -> dict[str, Any]:
    """A theory row with no fit: `base` (algorithm, problem, fit, ...) plus verdict "not
    measured" and `why` as its regime."""
    return {**base, "mode": "theory", "exponent": math.nan, "ci_low": math.nan,
            "ci_high": math.nan, "verdict": NOT_MEASURED, "regime": why, "flags": "",
            "rules_predicted": math.nan, "rules_verdict": "", "n_design": 0, "n_points": 0}


def _fixed_params_rows(data: StoreData, fit: FitSpec, have: set[str]) -> pd.DataFrame:
    """A theory row per algorithm absent from the fit's rows (`have`: the algorithms shown)
    whose cells in the fit's scope all fix a parameter its theory rules would set (e.g. PDP-SGD
    run with k = 5 under a theory fit: a fixed override replaces a rule, so no cell is a theory
    cell): theory mode has nothing to fit, and the table says so instead of dropping the
    algorithm."""
    if not {a["name"] for a in data.spec.algorithms} - have:  # every algorithm has a row
        return pd.DataFrame()
    pts = fit_points_table(data, fit, mode="tuned")
    rows = []
    for alg, g in pts.groupby("algorithm"):
        if alg in have:
            continue
        cells = data.cells[data.cells["key"].isin(g["key"])]
        if theory_mask(cells).any():  # it has theory cells; they fall outside the fit (e.g. window)
            continue
        fixed = sorted({k for p in cells["params"] for k in (p or {})} - {"target_alpha"})
        why = (f"no theory cell: every cell fixes {', '.join(fixed)}, which the theory rules set"
               if fixed else "no theory cell: no cell runs at the theory defaults")
        r, metric = g.iloc[0], fit_metric(fit, alg)
        rows.append(_not_measured_theory_row(
            {"algorithm": alg, "problem": r["problem"], "problem_params": r["problem_params"],
             "d": r["d"], "n": r["n"], "eps": math.nan, "delta": r["delta"], "fit": fit.name,
             "metric": metric, "view": fit.view, "x": fit.x, "y": fit.y, "spec": data.spec.name,
             "character": problem_character(r["problem"]), "window": fit.window,
             "predicted": predicted_slope(get_algorithm(alg), fit, metric)}, why))
    return pd.DataFrame(rows)


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
                    res = paired.paired_difference(sub["x"].to_numpy(), sub["rep"].to_numpy(),
                                                   sub["y_a"].to_numpy(), sub["y_b"].to_numpy(),
                                                   n_boot=n_boot, rng=np.random.default_rng([seed, k]))
                    metric = fit_metric(fit, a)
                    pa_, pb_ = (predicted_slope(get_algorithm(c), fit, metric) for c in (a, b))
                    pred = pa_ - pb_ if pa_ is not None and pb_ is not None else math.nan
                    group = dict(zip(by, key, strict=True))
                    out.append({"fit": fit.name, "view": fit.view, "x": fit.x, "a": a, "b": b,
                                "group": group, "result": res, "predicted_slope": pred,
                                "rules_paired_slope": _rules_paired_slope(
                                    pa, pb, group, fit.view, data.spec.calibration, fit.x)})
    return out


def _rules_paired_slope(pa: pd.DataFrame, pb: pd.DataFrame, group: dict[str, Any], view: str,
                        calibration: str, x_name: str = "alpha") -> float:
    """The paired slope the two algorithms' own rules predict over the group's design points:
    slope of log(rules A / rules B) (issue 43: the claims' difference is not the reference a
    paired slope should be read against when the rules' own paired slope differs). NaN where a
    family states no rules bound."""
    slopes = []
    for pts in (pa, pb):
        sub = pts
        for k, v in group.items():
            if k in sub:
                sub = sub[(sub[k] == v) | (sub[k].isna() & pd.isna(v))] if not isinstance(v, float) \
                    else sub[np.isclose(sub[k].astype(float), v, equal_nan=True)]
        design = design_from_points(sub, x_name=x_name)
        if len(design) < 2:
            return math.nan
        slopes.append(rules_curve(design, view, calibration).slope(design.x))
    return slopes[0] - slopes[1]
