"""`dprates sensitivity STORE [-o FILE]`: how far the SOSP crossover and the paired slope move
when each Spider's knobs move, one at a time and jointly (`analysis.comparisons.sensitivity`; the store of
bench/configs/headline4_sensitivity.toml)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli.output import write_output


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from analysis.comparisons.sensitivity import knob_summary, sensitivity_markdown, sensitivity_table
    from bench.store import load

    if not Path(args.store).is_file():
        raise ValueError(f"STORE={args.store!r} is invalid: no such file (a store of `dprates sweep`)")
    if args.boot < 100:
        raise ValueError(f"--boot={args.boot} is invalid: at least 100 resamples are needed")
    cells = load(args.store)
    table = sensitivity_table(cells, n_boot=args.boot, seed=args.seed)
    text = ("# The SOSP crossover under the Spiders' constants\n\n"
            + sensitivity_markdown(table, knob_summary(table)))
    write_output(text, args.output)
    if args.csv and not table.empty:
        from analysis.comparisons.crossover_files import merge_crossovers
        from analysis.comparisons.sensitivity import crossover_rows
        from bench.store import open_store_data

        spec = open_store_data(args.store).spec
        targets = sorted(cells["target_alpha"].dropna().unique())
        seeds = int(cells["rep"].nunique())
        source = f"{spec.name} ({spec.calibration})"
        rows = crossover_rows(table, source, str(cells["problem"].iloc[0]),
                              float(cells["eps"].iloc[0]), float(cells["d"].iloc[0]),
                              f"{len(targets)} paired targets {targets[0]:.3g}..{targets[-1]:.3g}, "
                              f"{seeds} seeds")
        merged = merge_crossovers(args.csv, rows)
        print(f"wrote {args.csv} ({len(rows)} crossovers of {len(merged)})")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sensitivity", help="the SOSP crossover and paired slope as each Spider's "
                       "knobs move (one at a time and a Latin hypercube)")
    p.add_argument("store", metavar="STORE", help="e.g. results/headline4_sensitivity.sqlite")
    p.add_argument("-o", "--output", default=None, help="write markdown here (default: stdout)")
    p.add_argument("--csv", default=None, help="also merge one row per comparison into this "
                   "crossovers CSV (reports/crossovers.csv; rows of other stores are kept)")
    p.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.set_defaults(func=cmd_sensitivity)
