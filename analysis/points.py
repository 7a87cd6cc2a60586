"""The points of a declared fit (`fit_points_table`), the groups a fit is made per
(`group_columns`, `FOLDED`) and which cells count as theory mode (`theory_mask`).

Points of a fit (`fit_points_table`):
- error view: one point per cell, y = the fit's metric column (alpha_best by default);
- sample-complexity view: target-alpha cells give (alpha = target_alpha, n* = samples_to_target);
  fixed-budget cells give one point per threshold of the samples-to-accuracy curve inside the
  window (alpha = threshold, n* = samples, NaN when never reached: censored).
Only cells with status ok are used; the others are counted. eps = inf cells are never fitted
(x = 0 on the privacy scale); they are the floor reference.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from algorithms import get_algorithm
from algorithms.sosp.spider import KNOB_DEFAULTS
from analysis.declarations import FitSpec, StoreData
from analysis.verdict_engine import rates

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


def combo_label(params: dict, knobs: list) -> str:
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
    df = df.assign(combo=[combo_label(p or {}, kn) for p, kn in zip(df["params"], df["knobs"],
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
