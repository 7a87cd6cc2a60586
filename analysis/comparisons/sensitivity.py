"""How far the SOSP answer moves with the constants the O~ hides (issue 43, item 3).

A store of both Spiders on paired targets where each Spider also runs at other settings of its
rules' knobs (bench/configs/headline4_sensitivity.toml): its defaults, each knob at other values
one at a time, and points of a Latin hypercube that set all of its knobs at once. Two runs at one
(target, seed) read the same data whatever their knobs, so any setting of the adaptive Spider
pairs with any setting of the Gaussian one (`comparisons`):

- central: both at their defaults;
- one at a time: one Spider's knob moved, the other at its defaults;
- joint: every hypercube point of one Spider against every hypercube point of the other.

Each comparison gives the crossover alpha* of the paired line of log n*_adaptive - log
n*_Gaussian and its slope, with bootstrap CIs (`analysis.verdict_engine.paired`). A knob
"moves" the answer when a setting puts alpha* outside [1/MOVE_FACTOR, MOVE_FACTOR] times the
central alpha*, or the paired slope further than MOVE_SLOPE from the central slope (declared
thresholds); else the answer is "robust" to it over the values run.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.verdict_engine.paired import paired_difference
from analysis.verdict_engine.rates import N_BOOT

ADAPTIVE, GAUSSIAN = "adaptive_tree_spider", "gaussian_spider"
#: The knobs of the Spiders' rules that multiply a constant the O~ hides.
KNOBS = ("alpha_mult", "budget_mult", "horizon_mult", "c_escape", "c_zeta", "c_Gamma")
#: A setting whose crossover moves by more than this factor (either way) moves the answer.
MOVE_FACTOR = 1.5
#: ... or whose paired slope moves by more than this.
MOVE_SLOPE = 0.1


@dataclass(frozen=True)
class Setting:
    algorithm: str
    params: str  # the knobs set, as sorted JSON ("{}": the defaults)

    @property
    def kind(self) -> str:
        p = json.loads(self.params)
        knobs = [k for k in p if k in KNOBS]
        if not knobs:
            return "default"
        return "joint" if len(knobs) == len(KNOBS) else "one"

    def label(self) -> str:
        p = json.loads(self.params)
        return ", ".join(f"{k}={p[k]:g}" for k in sorted(p)) or "defaults"


def comparisons(settings: list[Setting]) -> list[tuple[str, Setting, Setting]]:
    """(kind, adaptive setting, Gaussian setting) per comparison (module docstring)."""
    a_set = [s for s in settings if s.algorithm == ADAPTIVE]
    g_set = [s for s in settings if s.algorithm == GAUSSIAN]
    a0 = next((s for s in a_set if s.kind == "default"), None)
    g0 = next((s for s in g_set if s.kind == "default"), None)
    out: list[tuple[str, Setting, Setting]] = []
    if a0 is None or g0 is None:
        return out
    out.append(("central", a0, g0))
    out += [("one at a time", a, g0) for a in a_set if a.kind == "one"]
    out += [("one at a time", a0, g) for g in g_set if g.kind == "one"]
    out += [("joint", a, g) for a in a_set if a.kind == "joint" for g in g_set if g.kind == "joint"]
    return out


def sensitivity_table(cells: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """One row per comparison: which knob moved (or "joint" / "central"), alpha* with CI and
    where it lies, the paired slope with CI, and both against the central comparison. `cells`:
    `bench.store.load` rows (ok sample-complexity cells; censored runs have NaN n*)."""
    ok = cells[(cells["status"] == "ok") & cells["target_alpha"].notna()
               & cells["algorithm"].isin([ADAPTIVE, GAUSSIAN])].copy()
    ok["setting"] = [json.dumps({k: v for k, v in (p or {}).items() if k in KNOBS}, sort_keys=True)
                     for p in ok["params"]]
    settings = [Setting(a, p) for a, p in
                ok[["algorithm", "setting"]].drop_duplicates().itertuples(index=False)]
    rows = []
    for k, (kind, sa, sg) in enumerate(comparisons(settings)):
        ca = ok[(ok["algorithm"] == ADAPTIVE) & (ok["setting"] == sa.params)]
        cg = ok[(ok["algorithm"] == GAUSSIAN) & (ok["setting"] == sg.params)]
        m = ca.merge(cg, on=["target_alpha", "rep", "d", "eps"], suffixes=("_a", "_g"))
        if m["target_alpha"].nunique() < 2:
            continue
        moved = sa if sa.kind != "default" else sg
        ya, yg = m["samples_to_target_a"].to_numpy(float), m["samples_to_target_g"].to_numpy(float)
        both = np.isfinite(ya) & np.isfinite(yg) & (ya > 0) & (yg > 0)
        if m.loc[both, "target_alpha"].nunique() < 2:  # censored on all but one target: no line
            rows.append({**_labels(kind, sa, sg, moved), "alpha_star": math.nan,
                         "ci_low": math.nan, "ci_high": math.nan, "where": "none",
                         "slope": math.nan, "slope_ci_low": math.nan, "slope_ci_high": math.nan,
                         "pairs": int(both.sum()), "censored": int(len(m) - both.sum())})
            continue
        res = paired_difference(m["target_alpha"].to_numpy(float), m["rep"].to_numpy(),
                                m["samples_to_target_a"].to_numpy(float),
                                m["samples_to_target_g"].to_numpy(float), n_boot=n_boot,
                                rng=np.random.default_rng([seed, k]))
        rows.append({**_labels(kind, sa, sg, moved),
                     "alpha_star": res.crossover, "ci_low": res.crossover_ci_low,
                     "ci_high": res.crossover_ci_high, "where": res.crossover_where,
                     "slope": res.slope, "slope_ci_low": res.slope_ci_low,
                     "slope_ci_high": res.slope_ci_high, "pairs": int(sum(res.n_pairs)),
                     "censored": int(len(m) - sum(res.n_pairs))})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    central = table[table["kind"] == "central"]
    c_alpha = float(central["alpha_star"].iloc[0]) if len(central) else math.nan
    c_slope = float(central["slope"].iloc[0]) if len(central) else math.nan
    table["alpha_ratio"] = table["alpha_star"] / c_alpha
    table["slope_change"] = table["slope"] - c_slope
    return table


def _labels(kind: str, sa: Setting, sg: Setting, moved: Setting) -> dict[str, str]:
    """A comparison's kind, moved Spider, setting label and knob."""
    return {"kind": kind, "spider": "" if kind in ("central", "joint") else moved.algorithm,
            "setting": ("defaults" if kind == "central" else moved.label() if kind != "joint"
                        else f"adaptive {sa.label()}; Gaussian {sg.label()}"),
            "knob": next(iter(json.loads(moved.params)), "") if kind == "one at a time" else kind}


def knob_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per (spider, knob) of the one-at-a-time rows, and once for the joint rows: the range of
    alpha* / central and of the paired slope's change, and "moves" / "robust" (module
    docstring). A setting with no crossing (flat or censored) counts as moving."""
    if table.empty:
        return pd.DataFrame()
    rows = []
    groups = [((s, k), g) for (s, k), g in
              table[table["kind"] == "one at a time"].groupby(["spider", "knob"], sort=True)]
    joint = table[table["kind"] == "joint"]
    if len(joint):
        groups.append((("both", "joint"), joint))
    for (spider, knob), g in groups:
        r = g["alpha_ratio"].to_numpy(float)
        dz = g["slope_change"].to_numpy(float)
        none = ~np.isfinite(r)
        # a crossing of the paired line outside the targets is an extrapolation: it counts as
        # moving the answer (out of the bracket), its value is not a measured range
        outside = np.isfinite(r) & (g["where"] != "inside").to_numpy()
        moves = bool(none.any() or outside.any() or (r > MOVE_FACTOR).any()
                     or (r < 1 / MOVE_FACTOR).any() or (np.abs(dz) > MOVE_SLOPE).any())
        fin = r[np.isfinite(r) & ~outside]
        rows.append({"spider": spider, "knob": knob, "settings": len(g),
                     "alpha_ratio_min": float(fin.min()) if len(fin) else math.nan,
                     "alpha_ratio_max": float(fin.max()) if len(fin) else math.nan,
                     "outside": int(outside.sum()),
                     "no_crossing": int(none.sum()),
                     "slope_change_min": float(np.nanmin(dz)) if np.isfinite(dz).any() else math.nan,
                     "slope_change_max": float(np.nanmax(dz)) if np.isfinite(dz).any() else math.nan,
                     "answer": "moves" if moves else "robust"})
    return pd.DataFrame(rows)


def crossover_rows(table: pd.DataFrame, source: str, problem: str = "hard_valley",
                   eps: float = math.nan, d: float = math.nan, bracket: str = "") -> pd.DataFrame:
    """The comparisons as rows of reports/crossovers.csv (`analysis.comparisons.crossover_law`): constants
    = the setting (defaults, one knob, or both Spiders' hypercube points)."""
    from analysis.comparisons.crossover_files import CROSSOVER_COLUMNS

    out = pd.DataFrame({
        "problem": problem, "source": source, "eps": eps, "d": d,
        "constants": [f"{r.spider} {r.setting}".strip() if r.kind == "one at a time"
                      else r.setting for r in table.itertuples()],
        "alpha_star": table["alpha_star"], "ci_low": table["ci_low"],
        "ci_high": table["ci_high"], "where": table["where"], "bracket": bracket,
        "use_adaptive": math.nan, "use_gaussian": math.nan, "predicted": math.nan,
        "rules_alone": math.nan, "paired_slope": table["slope"],
        "paired_ci_low": table["slope_ci_low"], "paired_ci_high": table["slope_ci_high"]})
    # each side's own slope and the rules' paired slope are the law's (`dprates crossover-law`)
    return out.reindex(columns=CROSSOVER_COLUMNS)


def _f(v: float) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float)) and math.isfinite(v) else "-"


def sensitivity_markdown(table: pd.DataFrame, summary: pd.DataFrame) -> str:
    if table.empty:
        return "No comparison: the store needs both Spiders at their defaults on >= 2 targets.\n"
    c = table[table["kind"] == "central"].iloc[0]
    lines = [f"Central (both Spiders at their defaults): alpha* = {_f(c.alpha_star)} "
             f"[{_f(c.ci_low)}, {_f(c.ci_high)}] ({c['where']} the targets), paired slope "
             f"{_f(c.slope)} [{_f(c.slope_ci_low)}, {_f(c.slope_ci_high)}].", "",
             "| spider | knob | settings | alpha* / central (inside the targets) | crossing outside "
             "the targets | no crossing | paired slope change | answer |",
             "|---|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        lines.append(f"| {r.spider} | {r.knob} | {r.settings} | {_f(r.alpha_ratio_min)} .. "
                     f"{_f(r.alpha_ratio_max)} | {r.outside} | {r.no_crossing} | "
                     f"{_f(r.slope_change_min)} .. {_f(r.slope_change_max)} | {r.answer} |")
    lines += ["", f"moves: some setting puts alpha* outside [1/{MOVE_FACTOR:g}, {MOVE_FACTOR:g}] x "
              "the central one or outside the targets, has no crossing, or moves the paired slope "
              f"by more than {MOVE_SLOPE:g}.", "", "| kind | spider | setting | alpha* [95% CI] | where | "
              "paired slope [95% CI] | pairs | censored |", "|---|---|---|---|---|---|---|---|"]
    for r in table.itertuples():
        lines.append(f"| {r.kind} | {r.spider} | {r.setting} | {_f(r.alpha_star)} [{_f(r.ci_low)}, "
                     f"{_f(r.ci_high)}] | {r.where} | {_f(r.slope)} [{_f(r.slope_ci_low)}, "
                     f"{_f(r.slope_ci_high)}] | {r.pairs} | {r.censored} |")
    return "\n".join(lines) + "\n"
