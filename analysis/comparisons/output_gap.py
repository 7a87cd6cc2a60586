"""Samples to the algorithm's own output against the oracle's n* (issue 70, item 5).

The practitioners' atlas and the headline count n* as the oracle's: the first n at which the
best iterate, judged by the exact population metric, reaches the target. A user gets the point
the algorithm returns. `output_gap` pairs two stores of the same cells, one searched with
`reach = "best"` (the oracle's n*) and one with `reach = "output"` (the algorithm's own output:
DP-GD's and DP-SGD's last iterate, `bench.n_search.OUTPUT_COLUMN`), seed by seed (the stores
share their spec seed, so the data seeds pair), and gives per algorithm, instance, d, eps and
target the two medians and their ratio n*_output / n*_best with a percentile CI from resampling
the paired seeds. A censored search (no n up to the cap reached) counts as n* = inf: a median
is inf when at least half the seeds are censored, and the ratio is then not finite (said).

Where the paper behind an algorithm states its output differently, what is measured is what the
code returns (`output_rule` on the class says which and why); the Spiders' output rules are not
implemented and a spec asking for them is refused (`bench.config`): the adaptive tree Spider's
paper outputs the whole set of iterates with "at least one" an SOSP, which is the oracle's n*
itself; Ganesh et al.'s private AboveThreshold selection cannot be reconstructed from the
sources this repository cites.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: The columns that make two cells the same measurement but for `reach`.
KEYS = ("algorithm", "problem", "d", "eps", "target_alpha")
N_BOOT = 2000
LEVEL = 0.95


def _n_star(cells: pd.DataFrame) -> pd.DataFrame:
    """(KEYS..., rep, n_star) of the ok target cells; a censored search as inf."""
    ok = cells[(cells["status"] == "ok") & cells["target_alpha"].notna()].copy()
    ok["problem"] = ok["problem"].astype(str) + ok["problem_params"].map(
        lambda p: "" if not p else " " + ",".join(f"{k}={v}" for k, v in sorted(dict(p).items())))
    ok["n_star"] = ok["samples_to_target"].astype(float).fillna(math.inf)
    return ok[[*KEYS, "rep", "n_star"]]


def _median(v: np.ndarray) -> float:
    return float(np.median(v))


def output_gap(best: pd.DataFrame, output: pd.DataFrame, rng: np.random.Generator,
               n_boot: int = N_BOOT) -> pd.DataFrame:
    """The table of the module docstring from two stores' cells tables (`best`: reach "best",
    `output`: reach "output"); one row per (KEYS) measured in both, seeds paired by rep."""
    a, b = _n_star(best), _n_star(output)
    both = a.merge(b, on=[*KEYS, "rep"], suffixes=("_best", "_output"))
    rows = []
    q = (1 - LEVEL) / 2
    for key, g in both.groupby(list(KEYS), sort=True):
        nb, no = g["n_star_best"].to_numpy(float), g["n_star_output"].to_numpy(float)
        mb, mo = _median(nb), _median(no)
        ratio = mo / mb if math.isfinite(mb) and math.isfinite(mo) and mb > 0 else math.nan
        lo = hi = math.nan
        if math.isfinite(ratio) and len(g) >= 3:
            idx = rng.integers(0, len(g), size=(n_boot, len(g)))
            with np.errstate(invalid="ignore", divide="ignore"):
                r = np.median(no[idx], axis=1) / np.median(nb[idx], axis=1)
            r = r[np.isfinite(r)]
            if len(r) >= n_boot // 2:
                lo, hi = float(np.quantile(r, q)), float(np.quantile(r, 1 - q))
        rows.append({**dict(zip(KEYS, key, strict=True)), "seeds": len(g),
                     "n_best_median": mb, "n_output_median": mo, "ratio": ratio,
                     "ratio_low": lo, "ratio_high": hi,
                     "censored_best": int(np.isinf(nb).sum()),
                     "censored_output": int(np.isinf(no).sum())})
    return pd.DataFrame(rows)


def output_gap_lines(table: pd.DataFrame) -> list[str]:
    """One sentence per algorithm: the range of its ratio over the table's settings."""
    out = []
    for alg, g in table.groupby("algorithm", sort=True):
        fin = g[np.isfinite(g["ratio"].astype(float))]
        cens = int((~np.isfinite(g["ratio"].astype(float))).sum())
        if len(fin):
            out.append(f"{alg}: samples to its own output (last iterate) are "
                       f"{fin['ratio'].min():.3g}-{fin['ratio'].max():.3g}x the oracle's n* at "
                       f"{len(fin)} of {len(g)} settings"
                       + (f"; at {cens} a median is censored" if cens else ""))
        else:
            out.append(f"{alg}: no setting with both medians finite ({cens} censored)")
    return out


__all__ = ["KEYS", "output_gap", "output_gap_lines"]
