"""`dprates crossover-law STORES... [-o FILE]`: the SOSP crossover alpha* of the two Spiders at
every (eps, d) of the stores' samples-to-target fits, the law log alpha* = c + a log eps + b log d
with CIs, and the law the rules predict once scaled by each Spider's measured budget use
(`analysis.comparisons.crossover_law`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli.output import write_output


def cmd_crossover_law(args: argparse.Namespace) -> int:
    import numpy as np

    from analysis.comparisons.crossover_law import conditions_from_stores, law_fit, law_markdown
    from bench.store import open_store_data

    for path in args.stores:
        if not Path(path).is_file():
            raise ValueError(f"STORE={path!r} is invalid: no such file (a store of `dprates sweep`)")
    if args.boot < 100:
        raise ValueError(f"--boot={args.boot} is invalid: at least 100 resamples are needed")
    conds = conditions_from_stores([open_store_data(p) for p in args.stores])
    if not conds:
        raise ValueError(f"STORES={args.stores!r} are invalid: they pair the two Spiders at no "
                         "(eps, d) on two or more targets")
    law = law_fit(conds, n_boot=args.boot, rng=np.random.default_rng(args.seed))
    family = conds[0].problem or "the stores' family"
    text = (f"# The SOSP crossover as a law in eps and d: {family}\n\n"
            + ("One (eps, d): its crossover, no law (a law needs two or more).\n\n"
               if len(conds) < 2 else "")
            + "adaptive tree Spider against Gaussian "
            "Spider, samples to target alpha; alpha*: where the paired line of log n*_adaptive - "
            "log n*_Gaussian crosses 0 (below it the adaptive Spider needs fewer samples); "
            "n*/budget: measured samples over the rules' own budget (knobs at 1), median over the "
            "bracket.\n\n" + law_markdown(law))
    write_output(text, args.output)
    if args.csv:
        from analysis.comparisons.crossover_files import crossovers_csv, merge_crossovers

        merged = merge_crossovers(args.csv, crossovers_csv(law))
        print(f"wrote {args.csv} ({len(law.table)} crossovers of {len(merged)})")
    if args.law_csv:
        from analysis.comparisons.crossover_files import law_row, merge_laws

        row = law_row(law)
        if row.empty:
            print(f"{args.law_csv} unchanged: one (eps, d), no law")
        else:
            merged = merge_laws(args.law_csv, row)
            print(f"wrote {args.law_csv} (the {family} law; {len(merged)} laws)")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("crossover-law", help="the SOSP crossover alpha*(eps, d) of the two Spiders "
                       "and its law, beside the rules scaled by the measured budget use")
    p.add_argument("stores", metavar="STORE", nargs="+", help="stores with both Spiders on "
                   "paired targets (e.g. results/headline4_law_eps.sqlite)")
    p.add_argument("-o", "--output", default=None, help="write markdown here (default: stdout)")
    p.add_argument("--csv", default=None, help="also write one row per crossover here (e.g. "
                   "reports/crossovers.csv, which `dprates report --crossovers` reads)")
    p.add_argument("--law-csv", default=None, help="also write the family's law here, one row "
                   "per family (e.g. reports/crossover_laws.csv, which `dprates report --laws` "
                   "reads)")
    p.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.set_defaults(func=cmd_crossover_law)
