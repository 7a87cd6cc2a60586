"""The atlas's maps (issue 45, point 2) and its crossovers, from the long table of
`analysis.comparisons.atlas`.

One figure per (view, metric, problem, instance): x = the target (samples to target) or
n eps / sqrt(d) (error at n), y = eps at the d with the most measured points, and a second
panel with y = d at the eps with the most, where the data vary d. Each grid point is a square
coloured by the algorithm with the best median, full colour where it wins (interval of the
margin excludes 1), light where it does not, grey where fewer than two algorithms measured it;
a dot marks a measured point (a ring: one only one algorithm measured). Crossovers
(`crossovers`: the best median changes between adjacent measured x) are drawn as lines at the
log-log interpolated crossing of the two algorithms' ratio, with a bar from the same
interpolation of its interval bounds; a change between adjacent measured eps (or d) is drawn
as a boundary half-way, without an interval.

The sensitivity study's ranges (issue 43): `ranges`, off by default, is a table with the point
key columns (`analysis.comparisons.atlas.KEY`) and a boolean `winner_changes`: whether the winner changes
when the constants move within their ranges. Points where it is true are hatched.
`ranges_from_crossovers` makes it from reports/crossovers.csv: at an (problem, eps, d) that a
constants study covers, a target between the smallest and the largest crossover over its
settings (or anywhere in its bracket, where some setting has no crossing) is hatched.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from analysis.comparisons.atlas import BEST, KEY, SAMPLES, WINNER, num3, points_table

LIGHT = 0.3
A4_LANDSCAPE = (11.69, 8.27)


def _root(f0: float, f1: float) -> float:
    """Where a line from f0 (at 0) to f1 (at 1) crosses 0, clipped to [0, 1]."""
    if not (math.isfinite(f0) and math.isfinite(f1)) or f0 == f1 == 0:
        return 0.5
    if f0 > 0 and f1 > 0:  # above 0 at both ends: it crosses beyond the right one
        return 1.0
    if f0 < 0 and f1 < 0:
        return 0.0
    return f0 / (f0 - f1)


def _ratio(rows: pd.DataFrame, a: str, b: str) -> tuple[float, float, float]:
    """Value of a over value of b at one point with its interval, from the ratios to the best
    median (a or b is the best there); NaN when one of them did not measure it."""
    ra, rb = rows[rows["algorithm"] == a], rows[rows["algorithm"] == b]
    if not len(ra) or not len(rb):
        return math.nan, math.nan, math.nan
    ra, rb = ra.iloc[0], rb.iloc[0]
    if rb["pairing"] == BEST:
        return float(ra["ratio"]), float(ra["ratio_low"]), float(ra["ratio_high"])
    if ra["pairing"] == BEST:
        with np.errstate(divide="ignore"):
            return 1 / float(rb["ratio"]), 1 / float(rb["ratio_high"]), 1 / float(rb["ratio_low"])
    return float(ra["value"] / rb["value"]), math.nan, math.nan


def crossovers(table: pd.DataFrame) -> pd.DataFrame:
    """Every change of the best median between adjacent measured x at one (view, metric,
    problem, instance, d, eps), neither end a tie of medians: from / to algorithm, the two x,
    the crossing x (log-log interpolation of to/from's ratio between them) and its interval."""
    pts = points_table(table)
    pts = pts[pts["runner_up"] != ""]
    out = []
    for key, g in pts.groupby(KEY[:6], sort=True):
        g = g.sort_values("x")
        for (_, p0), (_, p1) in zip(g.iloc[:-1].iterrows(), g.iloc[1:].iterrows(), strict=True):
            a, b = p0["best"], p1["best"]
            if a == b or p0["margin"] == 1 or p1["margin"] == 1:  # a tie of medians: no best
                continue
            at0 = table[(table[KEY[:6]] == pd.Series(key, index=KEY[:6])).all(axis=1)]
            r0, r1 = at0[np.isclose(at0["x"], p0["x"])], at0[np.isclose(at0["x"], p1["x"])]
            # log(value_b / value_a): > 0 at p0 (a best), < 0 at p1 (b best)
            f0, l0, h0 = (np.log(v) if v > 0 else math.nan for v in _ratio(r0, b, a))
            f1, l1, h1 = (np.log(v) if v > 0 else math.nan for v in _ratio(r1, b, a))
            u0, u1 = math.log(p0["x"]), math.log(p1["x"])
            base = {**dict(zip(KEY[:6], key, strict=True)), "from": a, "to": b,
                    "x0": p0["x"], "x1": p1["x"]}
            if any(math.isinf(v) for v in (f0, f1)):
                # a censored median at either end (issue 57, item 2): its ratio is infinite, and
                # interpolating it would put the crossing on the grid point; only the bracket
                # of measured x is known
                out.append({**base, "x_cross": math.nan, "x_low": min(p0["x"], p1["x"]),
                            "x_high": max(p0["x"], p1["x"]), "significant": False,
                            "censored": True})
                continue
            at = [math.exp(u0 + _root(f, h) * (u1 - u0)) for f, h in ((f0, f1), (l0, l1), (h0, h1))]
            out.append({**base, "x_cross": at[0], "x_low": min(at[1], at[2]),
                        "x_high": max(at[1], at[2]),
                        "significant": p0["reading"] == WINNER and p1["reading"] == WINNER,
                        "censored": False})
    return pd.DataFrame(out, columns=[*KEY[:6], "from", "to", "x0", "x1", "x_cross", "x_low",
                                      "x_high", "significant", "censored"])


def crossover_lines(cx: pd.DataFrame) -> list[str]:
    """One line per crossover."""
    lines = []
    for _, c in cx.iterrows():
        x = "target" if c["view"] == SAMPLES else "n"
        head = (f"crossover: {c['metric']} on {c['problem']} d={c['d']:g} eps={c['eps']:g}: "
                f"{c['from']} best at {x}={c['x0']:g}, {c['to']} at {x}={c['x1']:g}; ")
        if c.get("censored", False):
            lines.append(head + f"crossing somewhere in {x} [{c['x_low']:g}, {c['x_high']:g}] "
                         "(a censored median at one end: not interpolated)")
            continue
        lines.append(head + f"crossing near {x}={num3(c['x_cross'])} [{num3(c['x_low'])}, "
                     f"{num3(c['x_high'])}]"
                     + ("" if c["significant"] else " (not significant at both ends)"))
    return lines


def _x(view: str, x: np.ndarray, d: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """The map's x: the target, or n eps / sqrt(d) in the error view."""
    return np.asarray(x, float) if view == SAMPLES else np.asarray(x, float) * eps / np.sqrt(d)


def ranges_from_crossovers(table: pd.DataFrame, crossovers: pd.DataFrame) -> pd.DataFrame:
    """`ranges` (module docstring) for the samples-to-target points of `table` (the atlas's
    long table) from the rows of reports/crossovers.csv that vary the constants (a source with
    more than one `constants` value, e.g. headline4_sensitivity)."""
    pts = table[table["view"] == SAMPLES][KEY].drop_duplicates()
    changes = np.zeros(len(pts), bool)
    for _source, g in crossovers.groupby("source"):
        if g["constants"].nunique() < 2:
            continue  # a source at one setting of the constants says nothing about ranges
        for (problem, eps, d), gg in g.groupby(["problem", "eps", "d"]):
            star = gg["alpha_star"].to_numpy(float)
            here = ((pts["problem"] == problem) & np.isclose(pts["eps"], float(eps))
                    & np.isclose(pts["d"], float(d))).to_numpy()
            x = pts["x"].to_numpy(float)
            if not np.isfinite(star).all():  # a setting with no crossing: the whole bracket
                lo, hi = _bracket(gg["bracket"].iloc[0])
            else:
                lo, hi = float(star.min()), float(star.max())
            changes |= here & (x >= lo * (1 - 1e-9)) & (x <= hi * (1 + 1e-9))
    return pts.assign(winner_changes=changes)


def _bracket(text: str) -> tuple[float, float]:
    """(low, high) of "6 paired targets 0.0014..0.008, 5 seeds"; (0, inf) when unreadable."""
    import re

    m = re.search(r"([\d.eE+-]+)\.\.([\d.eE+-]+)", str(text))
    return (float(m.group(1)), float(m.group(2))) if m else (0.0, math.inf)


def _hatched(pts: pd.DataFrame, ranges: pd.DataFrame | None) -> np.ndarray:
    if ranges is None or not len(pts):
        return np.zeros(len(pts), bool)
    keys = {tuple(r[k] for k in KEY) for _, r in ranges[ranges["winner_changes"].astype(bool)].iterrows()}
    return np.array([tuple(r[k] for k in KEY) in keys for _, r in pts.iterrows()], bool)


def _y_crossings(ax: plt.Axes, pts: pd.DataFrame, xs: np.ndarray, ys: np.ndarray,
                 measured: np.ndarray) -> None:
    """Boundaries where the best median changes between adjacent measured y at one design x
    (the panel's eps or d; drawn half-way in log y, dashed unless both ends are winners). No
    interval: the atlas interpolates ratios along x only."""
    pts = pts.assign(_mx=xs, _my=ys)[measured]
    for _, g in pts.groupby("x", sort=True):
        g = g.sort_values("_my")
        for (_, p0), (_, p1) in zip(g.iloc[:-1].iterrows(), g.iloc[1:].iterrows(), strict=True):
            if p0["best"] == p1["best"] or 1 in (p0["margin"], p1["margin"]):
                continue
            y = math.sqrt(p0["_my"] * p1["_my"])
            x0, x1 = sorted((p0["_mx"], p1["_mx"]))
            ax.plot([x0 / 1.12, x1 * 1.12], [y, y], color="k", lw=1.5,
                    ls="-" if p0["reading"] == p1["reading"] == WINNER else "--")


def _panel(ax: plt.Axes, pts: pd.DataFrame, cx: pd.DataFrame, yname: str, colours: dict,
           ranges: pd.DataFrame | None) -> None:
    view = pts["view"].iloc[0]
    xs = _x(view, pts["x"].to_numpy(), pts["d"].to_numpy(float), pts["eps"].to_numpy(float))
    ys = pts[yname].to_numpy(float)
    measured = (pts["runner_up"] != "").to_numpy()
    for i, (_, p) in enumerate(pts.iterrows()):
        if measured[i] and p["best"]:
            colour, alpha = colours[p["best"]], 1.0 if p["reading"] == WINNER else LIGHT
        else:
            colour, alpha = "lightgrey", 0.6
        ax.scatter([xs[i]], [ys[i]], s=420, marker="s", color=colour, alpha=alpha, lw=0)
    hatch = _hatched(pts, ranges)
    if hatch.any():
        ax.scatter(xs[hatch], ys[hatch], s=420, marker="s", facecolor="none", edgecolor="k",
                   hatch="///", lw=0)
    ax.scatter(xs[measured], ys[measured], s=8, color="k", zorder=3)
    alone = (pts["measured_by"] != "").to_numpy() & ~measured  # one algorithm only
    ax.scatter(xs[alone], ys[alone], s=12, facecolor="none", edgecolor="k", lw=0.7, zorder=3)
    _y_crossings(ax, pts, xs, ys, measured)
    for _, c in cx[~cx["censored"].astype(bool)].iterrows():  # a censored one: no position
        y = float(c[yname])
        conv = (1.0 if view == SAMPLES else float(c["eps"]) / math.sqrt(float(c["d"])))
        xc = c["x_cross"] * conv
        ax.plot([xc] * 2, [y / 1.3, y * 1.3], color="k", lw=1.5, ls="-" if c["significant"] else "--")
        ax.errorbar([xc], [y], xerr=[[xc - c["x_low"] * conv], [c["x_high"] * conv - xc]],
                    fmt="none", ecolor="k", elinewidth=0.8, capsize=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_yticks(sorted(set(ys)))
    # 1-2-5 ticks over a few decades; over more, one a decade (labels would overlap)
    finite = xs[np.isfinite(xs) & (xs > 0)]
    span = math.log10(finite.max() / finite.min()) if len(finite) > 1 else 0.0
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if span <= 3.5 else (1.0,),
                                          numticks=12))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_formatter(NullFormatter())
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.set_xlabel("target " + pts["metric"].iloc[0] if view == SAMPLES else "n eps / sqrt(d)")
    ax.set_ylabel(yname)
    ax.margins(0.15)


@dataclass(frozen=True)
class _Map:
    """One map's data: its key, points, crossovers, colours, the panels' fixed values and its
    file name."""

    view: str
    metric: str
    problem: str
    instance: str
    pts: pd.DataFrame
    cx: pd.DataFrame
    algs: list
    colours: dict
    d_ref: float
    eps_ref: float
    two: bool
    name: str

    @property
    def one_row(self) -> bool:
        """A single finite eps at a single d (eps = inf controls are not drawn): its map is
        one row of squares."""
        eps = self.pts["eps"].to_numpy(float)
        return not self.two and len(np.unique(eps[np.isfinite(eps)])) == 1

    @property
    def title(self) -> str:
        inst = f" {self.instance}" if self.instance else ""
        return f"Atlas: {self.metric} on {self.problem}{inst}, {self.view}"


#: The maps' reading, under each page's title.
READING = ("full colour: winner (margin's 95% CI excludes 1); light: best median, not "
           "significant; grey: not measured; lines: crossovers (dashed: not significant), bars: "
           "their interval")


def _maps(table: pd.DataFrame) -> Iterator[_Map]:
    """Every (view, metric, problem, instance) of the long table as a `_Map`."""
    pts_all, cx_all = points_table(table), crossovers(table)
    for (view, metric, problem, instance), pts in pts_all.groupby(KEY[:4], sort=True):
        cx = cx_all[(cx_all["view"] == view) & (cx_all["metric"] == metric)
                    & (cx_all["problem"] == problem) & (cx_all["instance"] == instance)]
        algs = sorted({a for a in pts["best"] if a} | set(
            table[(table["view"] == view) & (table["metric"] == metric)
                  & (table["problem"] == problem)]["algorithm"]))
        cmap = plt.get_cmap("tab10")
        colours = {a: cmap(i % 10) for i, a in enumerate(algs)}
        measured = pts[pts["runner_up"] != ""]
        count = measured if len(measured) else pts
        # each panel's fixed value: where the other axis varies most (then the most points), so
        # the eps panel is drawn at a d with several eps and the d panel at an eps with several d
        name = f"atlas_{metric}_{problem}" + ("_error" if view != SAMPLES else "") + \
            (f"_{hashlib.sha1(instance.encode()).hexdigest()[:6]}" if instance else "")
        yield _Map(view, metric, problem, instance, pts, cx, algs, colours,
                   _richest(count, "d", "eps"), _richest(count, "eps", "d"),
                   pts["d"].nunique() > 1, name)


def _handles(mp: _Map, ranges: pd.DataFrame | None) -> list:
    from matplotlib.patches import Patch

    handles = [Patch(color=mp.colours[a], label=a) for a in mp.algs]
    handles.append(Patch(color="lightgrey", label="not measured"))
    if ranges is not None:
        handles.append(Patch(facecolor="none", edgecolor="k", hatch="///",
                             label="winner changes within the constant ranges"))
    return handles


def _eps_panel(ax: plt.Axes, mp: _Map, ranges: pd.DataFrame | None) -> None:
    _panel(ax, mp.pts[np.isclose(mp.pts["d"], mp.d_ref)], mp.cx[np.isclose(mp.cx["d"], mp.d_ref)],
           "eps", mp.colours, ranges)


def _figure(mp: _Map, ranges: pd.DataFrame | None) -> plt.Figure:
    """One map on its own page: the eps panel, and the d panel where the data vary d."""
    fig, axes = plt.subplots(1, 2 if mp.two else 1, figsize=A4_LANDSCAPE, squeeze=False)
    fig.suptitle(f"{mp.title}\n{READING}", fontsize=9)
    a0 = axes[0][0]
    _eps_panel(a0, mp, ranges)
    a0.set_title(f"y = eps at d={mp.d_ref:g}", fontsize=9)
    if mp.two:
        a1 = axes[0][1]
        _panel(a1, mp.pts[np.isclose(mp.pts["eps"], mp.eps_ref)],
               mp.cx[np.isclose(mp.cx["eps"], mp.eps_ref)], "d", mp.colours, ranges)
        a1.set_title(f"y = d at eps={mp.eps_ref:g}", fontsize=9)
    handles = _handles(mp, ranges)
    fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), fontsize=8)
    fig.subplots_adjust(bottom=0.2, top=0.86)
    return fig


def atlas_figures(table: pd.DataFrame, ranges: pd.DataFrame | None = None
                  ) -> Iterator[tuple[str, plt.Figure]]:
    """(name, figure) per (view, metric, problem, instance) of the long table, one at a time
    (the caller saves and closes each: the reference has dozens); `ranges`: the sensitivity
    hook of the module docstring (None: nothing hatched)."""
    for mp in _maps(table):
        yield mp.name, _figure(mp, ranges)


def atlas_page_figures(table: pd.DataFrame, ranges: pd.DataFrame | None = None,
                       per_page: int = 4) -> Iterator[plt.Figure]:
    """The report's pages of the atlas (issue 73, item 4): each map with more than one row of
    squares on its own page, as `atlas_figures` draws it; then the one-row maps (one eps at one
    d) stacked `per_page` to a page, each with its own title, colours and legend."""
    pending: list[_Map] = []

    def stacked(maps: list[_Map]) -> plt.Figure:
        fig, axes = plt.subplots(len(maps), 1, figsize=A4_LANDSCAPE, squeeze=False)
        fig.suptitle(f"Atlas: one-row maps (one eps at one d)\n{READING}", fontsize=9)
        for ax, mp in zip(axes[:, 0], maps, strict=True):
            _eps_panel(ax, mp, ranges)
            eps = mp.pts["eps"].to_numpy(float)
            ax.set_title(f"{mp.title.removeprefix('Atlas: ')}: eps {eps[np.isfinite(eps)][0]:g}, "
                         f"d {mp.d_ref:g}", fontsize=8)
            ax.legend(handles=_handles(mp, ranges), fontsize=6, loc="center left",
                      bbox_to_anchor=(1.01, 0.5))
        fig.subplots_adjust(top=0.88, bottom=0.08, left=0.08, right=0.8, hspace=0.9)
        return fig

    for mp in _maps(table):  # the maps with rows first, in order; then the one-row maps
        if mp.one_row:
            pending.append(mp)
        else:
            yield _figure(mp, ranges)
    for start in range(0, len(pending), per_page):
        yield stacked(pending[start:start + per_page])


def _richest(pts: pd.DataFrame, fixed: str, varying: str) -> float:
    """The value of `fixed` with the most distinct values of `varying` among `pts` (ties: the
    most points, then the smallest value)."""
    g = pts.groupby(fixed)
    score = pd.DataFrame({"n": g[varying].nunique(), "k": g.size()})
    score = score.sort_values(["n", "k"], ascending=False, kind="stable")
    return float(score.index[0])


def save_maps(table: pd.DataFrame, directory: str | Path, ranges: pd.DataFrame | None = None
              ) -> list[Path]:
    """Write every map of the atlas as a PNG in `directory`; the paths written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in atlas_figures(table, ranges):
        path = directory / f"{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
