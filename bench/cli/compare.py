"""`dprates compare STORES... --target T`: every algorithm of the stores on one axis, the samples
it needs to reach the target error (`analysis.comparisons.compare` says how each view counts them), with
its passes over the data, the iterate it reads, paired ratios and flags. Markdown and LaTeX:
the table first, its notes after; CSV: the same rows with one number per cell and the iterate
rule as a code (first_hit, best_at_n, best, last, private: `SELECTION_CODES`)."""

from __future__ import annotations

import argparse
import math
import sys

#: The views' natural metrics, for the header line.
VIEW_NOTE = ("One pass: the samples a run read until its error first fell to the target (the "
             "stored samples_to_target of its cells configured for that target; median over "
             "seeds, a censored run counts as more than its budget); on n records: the smallest "
             "n whose output (median over seeds) reaches the target: searched per seed in its "
             "target cells (doubling, then bisection to 19%; passes = gradient evaluations / n "
             "at that n), else log-log interpolated between the design sizes of an n grid")


def _check_args(args: argparse.Namespace) -> None:
    """One line per bad value, before any store is read."""
    if not (args.target > 0 and math.isfinite(args.target)):
        raise ValueError(f"--target={args.target:g} is invalid: must be a finite error level > 0")
    if args.boot < 100:
        raise ValueError(f"--boot={args.boot} is invalid: must be >= 100")
    from pathlib import Path

    for s in args.stores:
        if not Path(s).is_file():
            raise ValueError(f"store {s!r} is invalid: no such file (a .sqlite store of "
                             "`dprates sweep`)")


def load_cells(stores: list[str]):
    """The ok cells of every store, with a `store` column."""
    import pandas as pd

    from bench.store import load

    frames = []
    for s in stores:
        df = load(s)
        frames.append(df.assign(store=s))
    cells = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return cells[cells["status"] == "ok"]


def filter_cells(cells, args: argparse.Namespace):
    """--problem / --d / --eps, each refused with the values the stores hold when it matches
    none."""
    for opt, col in (("problem", "problem"), ("d", "d"), ("eps", "eps")):
        want = getattr(args, opt)
        if want is None:
            continue
        have = sorted(cells[col].unique(), key=str)
        keep = cells[col] == want if col == "problem" else \
            [math.isclose(float(v), float(want), rel_tol=1e-9) for v in cells[col]]
        if not any(keep):
            shown = ", ".join(v if isinstance(v, str) else f"{v:g}" for v in have) or "none"
            raise ValueError(f"--{opt}={want!r} is invalid: the stores hold {col} {shown}")
        cells = cells[keep]
    return cells


def cmd_compare(args: argparse.Namespace) -> int:
    """Print the comparison table (markdown, LaTeX or CSV), the table first and its notes after
    (issue 73, item 5)."""
    from analysis.comparisons.compare import compare_table

    _check_args(args)
    cells = filter_cells(load_cells(args.stores), args)
    if args.metric is not None:
        numeric = [c for c in cells.columns if c.endswith(("_best", "_last", "_selected"))]
        if args.metric not in numeric:
            raise ValueError(f"--metric={args.metric!r} is invalid: must be an error column of "
                             f"the stores, one of {', '.join(sorted(numeric))}")
    if args.baseline is not None and args.baseline not in set(cells["algorithm"]):
        raise ValueError(f"--baseline={args.baseline!r} is invalid: the stores hold "
                         f"{', '.join(sorted(set(cells['algorithm'])))}")
    table, notes = compare_table(cells, args.target, args.metric, args.baseline, args.knobs,
                                 n_boot=args.boot)
    if not len(table):
        raise ValueError(f"--target={args.target:g}: no algorithm of the stores has cells to read "
                         "it from" + ("" if not notes else f" ({notes[0]})"))
    if args.format == "csv":  # one number per cell, no prose (the notes are markdown's)
        from analysis.comparisons.compare_export import csv_rows

        sys.stdout.write(csv_rows(table).to_csv(index=False))
        return 0
    from analysis.comparisons.compare_export import display, selection_notes
    from analysis.report.tables import export

    note_lines = [f"Samples to target {args.target:g}. {VIEW_NOTE}.",
                  "Intervals: 95% bootstrap over seeds; ratios to each group's baseline (default: "
                  "the row needing the fewest samples), paired where the seeds pair (same base "
                  "seed and data mode: the same records). Gradient evaluations: passes x samples.",
                  *(f"Selection, {n}." for n in selection_notes(table)),
                  *(f"Note: {n}" for n in notes)]
    sys.stdout.write(export(display(table), args.format, notes=note_lines,
                            caption=f"Samples to target {args.target:g}", label="tab:compare"))
    return 0
