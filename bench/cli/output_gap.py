"""`dprates output-gap BEST OUTPUT -o FILE`: samples to the algorithm's own output against the
oracle's n* from two stores of the same cells searched with reach = "best" and "output"
(issue 70, item 5; `analysis.comparisons.output_gap`); `make reference-output-gap` writes
reports/output_gap.csv."""

from __future__ import annotations

import argparse


def cmd_output_gap(args: argparse.Namespace) -> int:
    import numpy as np

    from analysis.comparisons.output_gap import output_gap, output_gap_lines
    from bench.store import open_store_data

    best, out = open_store_data(args.best), open_store_data(args.output_store)
    reaches = {s: set(d.cells.get("target_reach", []).dropna().astype(str))
               for s, d in ((args.best, best), (args.output_store, out))}
    if reaches[args.best] - {"best"} or reaches[args.output_store] != {"output"}:
        raise ValueError(f"BEST {args.best!r} must hold reach = 'best' cells and OUTPUT "
                         f"{args.output_store!r} reach = 'output' cells (found "
                         f"{sorted(reaches[args.best]) or ['none']} and "
                         f"{sorted(reaches[args.output_store]) or ['none']})")
    table = output_gap(best.cells, out.cells, np.random.default_rng(args.seed))
    if table.empty:
        raise ValueError("the two stores share no target cell (algorithm, problem, d, eps, "
                         "target and seed)")
    table.to_csv(args.csv, index=False, float_format="%.4g")
    for line in output_gap_lines(table):
        print(line)
    print(f"wrote {args.csv} ({len(table)} settings)")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("output-gap", help="samples to the algorithm's own output against the "
                       "oracle's n*: two stores searched with reach = best and reach = output")
    p.add_argument("best", metavar="BEST", help="the store searched with reach = 'best'")
    p.add_argument("output_store", metavar="OUTPUT", help="the store searched with reach = 'output'")
    p.add_argument("-o", "--csv", required=True, help="the CSV to write")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    p.set_defaults(func=cmd_output_gap)
