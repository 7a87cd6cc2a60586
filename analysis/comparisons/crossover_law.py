"""The SOSP crossover as a law in eps and d (issue 43, item 4).

At each (eps, d) the two Spiders run on the same targets and data seeds; the paired difference
log n*_A - log n*_B (A: the adaptive tree Spider, B: the Gaussian one) is fitted by a line in
log alpha through the design points' means, and alpha*, where it crosses 0, is where A starts to
need fewer samples (`Condition.crossover`, the same line as `analysis.verdict_engine.paired`).
The law is the least-squares plane

    log alpha* = c + a log eps + b log d

through the conditions' crossovers (a column enters only where it varies), with percentile CIs
from one bootstrap that resamples the seeds' pairs within every design point of every condition
and refits everything (`law_fit`).

Beside it, the law the rules predict once scaled by what each Spider measurably uses of its
rules' sample budget: u_X = the median over the bracket of n*_X / budget_X(alpha), and alpha*
the root of u_A budget_A(alpha) = u_B budget_B(alpha) (`predicted_crossover`); the same plane
through those roots gives the exponents the rules predict (derived by the code, not typed). With
u = 1 (the rules alone) the budgets of the two Spiders on hard_valley do not cross above 1e-6 at
all; the measured crossover is made by the budget use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from analysis.verdict_engine.rates import LEVEL, N_BOOT, percentile_ci, resample_indices, row_slopes
from analysis.verdict_engine.rules_curve import PRIVATE_SHARE_MIN

ADAPTIVE, GAUSSIAN = "adaptive_tree_spider", "gaussian_spider"
#: Where the predicted crossover is searched: alpha in [ALPHA_MIN, ALPHA_MAX].
ALPHA_MIN, ALPHA_MAX = 1e-7, 0.5

Budget = Callable[[float], float]


@dataclass(frozen=True)
class Condition:
    """One (eps, d): design targets x (ascending), per x the paired log differences (one per
    shared seed) and the medians of n* of each side; the rules' budgets of each side."""

    eps: float
    d: int
    x: np.ndarray
    diffs: tuple[np.ndarray, ...]
    n_star_a: np.ndarray
    n_star_b: np.ndarray
    budget_a: Budget | None = None
    budget_b: Budget | None = None
    problem: str = ""
    source: str = ""  # the spec and its calibration, e.g. "headline4_law_eps (tight)"
    # per x the pairs' log n* of each side (logs_a - logs_b = diffs), for each side's own slope
    logs_a: tuple[np.ndarray, ...] | None = None
    logs_b: tuple[np.ndarray, ...] | None = None
    # each side's measured private share over the bracket (the median over its targets of
    # 1 - n*_inf / n*_eps against eps = inf controls, `measured_private_share`; NaN: no control)
    share_a: float = math.nan
    share_b: float = math.nan

    def means(self) -> np.ndarray:
        return np.array([g.mean() for g in self.diffs])

    def crossover(self, means: np.ndarray | None = None) -> float:
        """alpha where the OLS line of the mean differences on log x is 0 (NaN: flat line)."""
        m = self.means() if means is None else means
        lx = np.log(self.x)
        s = float(np.polyfit(lx, m, 1)[0])
        if s == 0 or not math.isfinite(s):
            return math.nan
        return float(math.exp(lx.mean() - m.mean() / s))

    def budget_use(self) -> tuple[float, float]:
        """(u_A, u_B): the median over the bracket of measured n* / the rules' budget."""
        if self.budget_a is None or self.budget_b is None:
            return math.nan, math.nan
        ua = np.median(self.n_star_a / np.array([self.budget_a(a) for a in self.x]))
        ub = np.median(self.n_star_b / np.array([self.budget_b(a) for a in self.x]))
        return float(ua), float(ub)


def predicted_crossover(cond: Condition, use: tuple[float, float] | None = None) -> float:
    """The alpha where u_A budget_A = u_B budget_B (u: `Condition.budget_use`, or `use`; (1, 1)
    for the rules alone): the sign change of their log ratio nearest the measured bracket on a
    geometric grid, refined by brentq. NaN where they do not cross in [ALPHA_MIN, ALPHA_MAX]."""
    if cond.budget_a is None or cond.budget_b is None:
        return math.nan
    ua, ub = cond.budget_use() if use is None else use
    if not (ua > 0 and ub > 0):
        return math.nan

    def g(la: float) -> float:
        a = math.exp(la)
        return math.log(ua * cond.budget_a(a)) - math.log(ub * cond.budget_b(a))

    grid = np.linspace(math.log(ALPHA_MIN), math.log(ALPHA_MAX), 121)
    vals = np.array([g(v) for v in grid])
    roots = [brentq(g, grid[i], grid[i + 1]) for i in range(len(grid) - 1)
             if np.isfinite(vals[i]) and np.isfinite(vals[i + 1]) and vals[i] * vals[i + 1] < 0]
    if not roots:
        return math.nan
    center = float(np.log(cond.x).mean())
    return float(math.exp(min(roots, key=lambda r: abs(r - center))))


@dataclass(frozen=True)
class Law:
    """log alpha* = c + a log eps + b log d: a and b with CIs (NaN where the column does not
    vary), the per-condition crossovers with CIs, and the same plane through the predicted
    crossovers."""

    table: pd.DataFrame
    eps_exp: float
    eps_ci: tuple[float, float]
    d_exp: float
    d_ci: tuple[float, float]
    pred_eps_exp: float
    pred_d_exp: float

    @property
    def fitted(self) -> int:
        """How many crossovers the plane runs through: those inside their brackets."""
        return int((self.table["where"] == "inside").sum())


def _plane(eps: np.ndarray, d: np.ndarray, la: np.ndarray) -> tuple[float, float]:
    """(a, b) of the least-squares plane log alpha* = c + a log eps + b log d; a column that
    does not vary is left out (NaN). NaN rows are dropped."""
    ok = np.isfinite(la)
    if not ok.any():
        return math.nan, math.nan
    cols, names = [np.ones(int(ok.sum()))], []
    for name, v in (("eps", eps), ("d", d)):
        lv = np.log(v[ok])
        if np.ptp(lv) > 0:
            cols.append(lv)
            names.append(name)
    out = {"eps": math.nan, "d": math.nan}
    if ok.sum() < len(cols) or len(cols) == 1:
        return out["eps"], out["d"]
    coef = np.linalg.lstsq(np.stack(cols, axis=1), la[ok], rcond=None)[0]
    out.update(dict(zip(names, coef[1:].tolist(), strict=True)))
    return out["eps"], out["d"]


def law_fit(conds: list[Condition], n_boot: int = N_BOOT, level: float = LEVEL,
            rng: np.random.Generator | None = None) -> Law:
    """The plane through the measured crossovers with one joint bootstrap, and the plane through
    the predicted ones (module docstring)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    eps = np.array([c.eps for c in conds], float)
    d = np.array([c.d for c in conds], float)
    cross = np.array([c.crossover() for c in conds])
    boot = np.empty((n_boot, len(conds)))
    slopes = []
    for j, c in enumerate(conds):
        idx = resample_indices([len(g) for g in c.diffs], n_boot, rng)
        means = np.stack([g[i].mean(axis=1) for g, i in zip(c.diffs, idx, strict=True)], axis=1)
        boot[:, j] = [c.crossover(m) for m in means]
        slopes.append(_condition_slopes(c, means, idx, level))
    a_q = (1 - level) / 2
    where = ["inside" if c.x.min() <= v <= c.x.max() else "below" if v < c.x.min() else "above"
             if math.isfinite(v) else "none" for c, v in zip(conds, cross, strict=True)]
    # the plane runs through measured crossovers only: one extrapolated out of its bracket
    # (where the paired line does not cross inside it) is reported, not fitted
    inside = np.array(where) == "inside"
    with np.errstate(invalid="ignore", divide="ignore"):
        lb = np.where(inside, np.log(boot), math.nan)
    lo, hi = np.nanquantile(boot, [a_q, 1 - a_q], axis=0)
    planes = np.array([_plane(eps, d, lb[i]) for i in range(n_boot)])
    with np.errstate(invalid="ignore", divide="ignore"):
        a_est, b_est = _plane(eps, d, np.where(inside, np.log(cross), math.nan))
    ci = [tuple(np.nanquantile(planes[:, k], [a_q, 1 - a_q]).tolist())
          if np.isfinite(planes[:, k]).any() else (math.nan, math.nan) for k in range(2)]
    uses = [c.budget_use() for c in conds]
    pred = np.array([predicted_crossover(c) for c in conds])
    rules_alone = np.array([predicted_crossover(c, (1.0, 1.0)) for c in conds])
    with np.errstate(invalid="ignore", divide="ignore"):
        pa, pb = _plane(eps, d, np.where(inside, np.log(pred), math.nan))
    table = pd.DataFrame({
        "eps": eps, "d": d.astype(int), "alpha_star": cross, "ci_low": lo, "ci_high": hi,
        "where": where, "pairs": [sum(len(g) for g in c.diffs) for c in conds],
        "seeds": [min(len(g) for g in c.diffs) for c in conds],
        "use_adaptive": [u[0] for u in uses], "use_gaussian": [u[1] for u in uses],
        "predicted": pred, "rules_alone": rules_alone,
        **{k: [v[k] for v in slopes] for k in SLOPE_COLUMNS},
        "rules_paired_slope": [rules_paired_slope(c) for c in conds],
        "share_adaptive": [c.share_a for c in conds], "share_gaussian": [c.share_b for c in conds],
        "paired_gate": [paired_gate(c) for c in conds],
        "problem": [c.problem for c in conds], "source": [c.source for c in conds],
        "bracket": [f"{len(c.x)} paired targets {c.x.min():.3g}..{c.x.max():.3g}, "
                    f"{max(len(g) for g in c.diffs)} seeds" for c in conds]})
    return Law(table, a_est, ci[0], b_est, ci[1], pa, pb)


def conditions_from_points(pts: pd.DataFrame, budgets: Callable[[str, float, int], Budget] | None = None,
                           a: str = ADAPTIVE, b: str = GAUSSIAN,
                           shares: dict[tuple, float] | None = None) -> list[Condition]:
    """Conditions from sample-complexity fit points (`analysis.points.fit_points_table` rows:
    algorithm, eps, d, x, rep, y = n*; censored runs as NaN / inf are left out of the pairs).
    `budgets(algorithm, eps, d)` gives the rules' budget as a function of alpha; `shares`
    maps (problem, eps, d, algorithm) to that side's measured private share over the bracket."""
    out = []
    # a condition is one family at one (eps, d): two families' points never pair
    keys = ["problem", "eps", "d"] if "problem" in pts else ["eps", "d"]
    for key, g in pts.groupby(keys, sort=True):
        eps, d = key[-2:]
        pa, pb = g[g["algorithm"] == a], g[g["algorithm"] == b]
        m = pa.merge(pb, on=["x", "rep"], suffixes=("_a", "_b"))
        ya, yb = m["y_a"].to_numpy(float), m["y_b"].to_numpy(float)
        m = m[np.isfinite(ya) & np.isfinite(yb) & (ya > 0) & (yb > 0)]
        xs = np.array(sorted(m["x"].unique()), float)
        if len(xs) < 2:
            continue
        logs_a = tuple(np.log(m.loc[m["x"] == x, "y_a"].to_numpy(float)) for x in xs)
        logs_b = tuple(np.log(m.loc[m["x"] == x, "y_b"].to_numpy(float)) for x in xs)
        groups = tuple(la - lb for la, lb in zip(logs_a, logs_b, strict=True))
        med_a = np.array([pa.loc[pa["x"] == x, "y"].median() for x in xs], float)
        med_b = np.array([pb.loc[pb["x"] == x, "y"].median() for x in xs], float)
        out.append(Condition(float(eps), int(d), xs, groups, med_a, med_b,
                             budgets(a, float(eps), int(d)) if budgets else None,
                             budgets(b, float(eps), int(d)) if budgets else None,
                             str(g["problem"].iloc[0]) if "problem" in g else "",
                             str(g["source"].iloc[0]) if "source" in g else "", logs_a, logs_b,
                             *[(shares or {}).get((str(g["problem"].iloc[0]) if "problem" in g
                                                   else "", float(eps), int(d), alg), math.nan)
                               for alg in (a, b)]))
    return out


#: Per condition: the paired slope (d log(n*_A / n*_B) / d log alpha over the bracket) and each
#: side's own slope of log n* on log alpha, each with its percentile CI.
SLOPE_COLUMNS = ["paired_slope", "paired_ci_low", "paired_ci_high", "slope_adaptive",
                 "slope_adaptive_ci_low", "slope_adaptive_ci_high", "slope_gaussian",
                 "slope_gaussian_ci_low", "slope_gaussian_ci_high"]


def _condition_slopes(c: Condition, boot_means: np.ndarray, idx: list[np.ndarray],
                      level: float) -> dict[str, float]:
    """The slopes of SLOPE_COLUMNS for one condition; the sides' slopes are resampled with the
    same pair indices as the differences (`boot_means`), NaN without `logs_a` / `logs_b`."""
    lx = np.log(c.x)
    out = dict.fromkeys(SLOPE_COLUMNS, math.nan)
    out["paired_slope"] = float(row_slopes(lx, c.means()[None, :])[0])
    out["paired_ci_low"], out["paired_ci_high"] = percentile_ci(row_slopes(lx, boot_means), level)
    for name, logs in (("slope_adaptive", c.logs_a), ("slope_gaussian", c.logs_b)):
        if logs is None:
            continue
        mean = np.array([g.mean() for g in logs])
        boot = np.stack([g[i].mean(axis=1) for g, i in zip(logs, idx, strict=True)], axis=1)
        out[name] = float(row_slopes(lx, mean[None, :])[0])
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = percentile_ci(row_slopes(lx, boot), level)
    return out


def rules_paired_slope(c: Condition) -> float:
    """The rules' own paired slope over the condition's bracket: the OLS slope of log budget_A
    - log budget_B on log alpha at its targets (knobs at 1); NaN without both budgets."""
    if c.budget_a is None or c.budget_b is None:
        return math.nan
    gap = np.log([c.budget_a(a) for a in c.x]) - np.log([c.budget_b(a) for a in c.x])
    if not np.isfinite(gap).all():
        return math.nan
    return float(row_slopes(np.log(c.x), gap[None, :])[0])


def paired_gate(c: Condition) -> str:
    """Whether the bracket's paired slope measures the claims' privacy terms (issue 55, item 6):
    "in regime" where both sides' measured private shares reach PRIVATE_SHARE_MIN (the claims
    table's gate), "not in regime: ..." naming the side below it (then the slope carries part of
    the shared statistical term, n^-1/3 for both Spiders), "no control" where a side has none.
    The crossover alpha* itself is a measured fact at any share and is not gated."""
    shares = {"adaptive": c.share_a, "Gaussian": c.share_b}
    if not all(math.isfinite(v) for v in shares.values()):
        return "no control (no eps = inf runs at this bracket)"
    low = [f"{k} {v:.2f}" for k, v in shares.items() if v < PRIVATE_SHARE_MIN]
    if low:
        return (f"not in regime: measured private share {', '.join(low)} < {PRIVATE_SHARE_MIN:g}"
                "; the paired slope carries part of the shared statistical term")
    return "in regime"


def _fmt(v: float, f: str = ".3g") -> str:
    return format(v, f) if isinstance(v, (int, float)) and math.isfinite(v) else "-"


def _ci(v: float, lo: float, hi: float) -> str:
    return f"{_fmt(v)} [{_fmt(lo)}, {_fmt(hi)}]"


def law_markdown(law: Law) -> str:
    """The per-condition table and the law, in markdown."""
    t = law.table
    lines = ["| eps | d | alpha* [95% CI] | where | pairs | n*/budget adaptive | n*/budget Gaussian "
             "| predicted alpha* (budget use) | rules alone |", "|" + "---|" * 9]
    for r in t.itertuples():
        alone = _fmt(r.rules_alone) if math.isfinite(r.rules_alone) else "no crossing"
        lines.append(f"| {r.eps:g} | {r.d} | {_fmt(r.alpha_star)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}] "
                     f"| {r.where} | {r.pairs} | {_fmt(r.use_adaptive)} | {_fmt(r.use_gaussian)} "
                     f"| {_fmt(r.predicted)} | {alone} |")
    lines += ["", "Slopes over each bracket (log n* on log alpha; the claims: adaptive -2, Gaussian "
              "-7/3, paired 1/3), beside the rules' own paired slope (their budgets, knobs at 1):",
              *([f"(With {t['seeds'].min()} seeds at a target the percentile bootstrap "
                 "understates the spread, about sqrt(2/3) of the width for 3: read these CIs, "
                 "and the crossovers', as lower bounds.)"] if t["seeds"].min() < 5 else []),
              "", "| eps | d | paired slope [95% CI] | rules' own paired slope | adaptive slope "
              "[95% CI] | Gaussian slope [95% CI] | private share adaptive / Gaussian | paired "
              "slope gate |", "|" + "---|" * 8]
    for r in t.itertuples():
        lines.append(f"| {r.eps:g} | {r.d} | {_ci(r.paired_slope, r.paired_ci_low, r.paired_ci_high)} "
                     f"| {_fmt(r.rules_paired_slope)} "
                     f"| {_ci(r.slope_adaptive, r.slope_adaptive_ci_low, r.slope_adaptive_ci_high)} "
                     f"| {_ci(r.slope_gaussian, r.slope_gaussian_ci_low, r.slope_gaussian_ci_high)} "
                     f"| {_fmt(r.share_adaptive, '.2f')} / {_fmt(r.share_gaussian, '.2f')} "
                     f"| {r.paired_gate} |")
    lines += ["", "Private share: the median over the bracket's targets of 1 - n*(eps = inf) / "
              "n*(eps), against eps = inf controls of the same Spider, instance, d, target and "
              f"budget; below {PRIVATE_SHARE_MIN:g} the paired slope is not read as the claims' "
              "difference (the claims table's gate). alpha* is not gated: which Spider needs "
              "fewer samples is a measurement at any share."]
    if len(t) < 2:
        return "\n".join(lines) + "\n"
    lines.append("")
    terms = [(k, name, v, ci, p) for k, name, v, ci, p in
             (("a", "eps", law.eps_exp, law.eps_ci, law.pred_eps_exp),
              ("b", "d", law.d_exp, law.d_ci, law.pred_d_exp)) if math.isfinite(v)]
    if not terms:
        lines.append("No law: fewer than two crossovers inside their brackets.")
        return "\n".join(lines) + "\n"
    plane = "log alpha* = c" + "".join(f" + {k} log {name}" for k, name, *_ in terms)
    fixed = [name for name in ("eps", "d") if name not in {t[1] for t in terms}]
    outside = len(t) - law.fitted
    lines.append(f"Law (through the {law.fitted} of {len(t)} crossovers inside their brackets"
                 + (f"; {outside} not inside, listed above, not fitted" if outside else "")
                 + f"): {plane}" + (f" ({', '.join(fixed)} fixed)" if fixed else "") + " with "
                 + ", ".join(f"{k} = {_ci(v, *ci)}" for k, _, v, ci, _ in terms)
                 + " (measured); the rules scaled by the measured budget use predict "
                 + ", ".join(f"{k} = {_fmt(p)}" for k, *_, p in terms) + ".")
    return "\n".join(lines) + "\n"


def conditions_from_stores(stores: list) -> list[Condition]:
    """Conditions from stores (`analysis.declarations.StoreData`): the theory-mode points of
    every declared samples-to-target fit in its window, the rules' budgets from each Spider's
    `theory_params` (knobs at 1) under the store's calibration on the store's instance."""
    from algorithms import get_algorithm
    from algorithms.regime_forecast import spider_split
    from analysis.points import fit_points_table
    from analysis.verdict_engine.flags import measured_private_share
    from problems import get_problem

    frames, cals, probs, shares = [], {}, {}, {}
    for data in stores:
        for fit in data.spec.fits:
            if fit.view != "sample_complexity" or fit.x != "alpha":
                continue
            pts = fit_points_table(data, fit, "theory")
            if pts.empty:
                continue
            pts = pts[(pts["x"] >= fit.window[0] * (1 - 1e-9)) & (pts["x"] <= fit.window[1] * (1 + 1e-9))]
            for (prob, eps, d, alg), g in pts.groupby(["problem", "eps", "d", "algorithm"]):
                share = measured_private_share(data, g, fit)
                if share is not None and np.isfinite(share).any():
                    shares[(prob, float(eps), int(d), alg)] = float(np.nanmedian(share))
            frames.append(pts.assign(source=f"{data.spec.name} ({data.spec.calibration})"))
            for (prob, eps, d), g in pts.groupby(["problem", "eps", "d"]):
                cals[(prob, float(eps), int(d))] = (data.spec.calibration, float(g["delta"].iloc[0]))
                probs[(prob, float(eps), int(d))] = (str(g["instance_params"].iloc[0]),
                                                     g["instance_params"].nunique() > 1)
    if not frames:
        return []

    pts = pd.concat(frames, ignore_index=True)
    families = sorted(pts["problem"].unique())
    if len(families) > 1:
        raise ValueError(f"STORES are invalid: they hold the families {families} (a law is one "
                         "family's; run `dprates crossover-law` once per family)")

    def budgets(alg: str, eps: float, d: int) -> Budget:
        import json

        cls = get_algorithm(alg)
        cal, delta = cals[(families[0], eps, d)]
        first, varies = probs[(families[0], eps, d)]
        params = json.loads(first)
        problem = get_problem(families[0], d=d, **params)
        # one instance per target (hard_ramp) where the cells' instances differ
        per_target = getattr(problem, "per_target_param", None) if varies else None
        if per_target is None:
            return lambda alpha: sum(spider_split(cls, problem, d, eps, delta, cal, alpha))

        def budget(alpha: float) -> float:  # hard_ramp: the rules' budget on alpha's own instance
            try:
                inst = get_problem(families[0], d=d, **{**params, per_target: alpha})
            except ValueError:  # no instance at this alpha (the ramp too short): no budget
                return math.nan
            return sum(spider_split(cls, inst, d, eps, delta, cal, alpha))

        return budget

    return conditions_from_points(pts, budgets, shares=shares)
