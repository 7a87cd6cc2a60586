"""`dprates fit-points STORE... -o FILE`: every declared fit's points in one compact CSV (issue 70,
item 6; `analysis.fit_points_export`), so a row of the claims CSV can be replanted without its
store; `make reference-report` writes reports/reference_fit_points.csv."""

from __future__ import annotations

import argparse


def cmd_fit_points(args: argparse.Namespace) -> int:
    from analysis.fit_points_export import write_fit_points
    from bench.store import open_store_data

    stores = [open_store_data(s) for s in args.stores]
    n = write_fit_points(stores, args.output)
    print(f"wrote {args.output}: {n} runs of the declared fits of {len(stores)} stores")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fit-points", help="every declared fit's points (x, seed, y, context) in one "
                       "CSV, to replant any claims row without its store")
    p.add_argument("stores", nargs="+", metavar="STORE", help="sweep stores (.sqlite)")
    p.add_argument("-o", "--output", required=True, help="the CSV to write")
    p.set_defaults(func=cmd_fit_points)
