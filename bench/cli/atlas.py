"""`dprates atlas SOURCES...`: which algorithm wins where (issue 45), per metric and instance,
with the margin over the runner-up and its interval (`analysis.comparisons.atlas`); `--at ... [--target T]`
the recommendation line (`analysis.comparisons.atlas_recommend`); `--maps DIR` the maps
(`analysis.comparisons.atlas_map`). A source is a store (.sqlite) or an atlas CSV this command wrote
(`--format csv -o reports/atlas.csv`, or `write_atlas_csv`), so the committed CSV answers
without the stores."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.cli.output import write_output


def _check_args(args: argparse.Namespace) -> None:
    """One line per bad value, before any source is read."""
    if args.boot < 100:
        raise ValueError(f"--boot={args.boot} is invalid: must be >= 100")
    if args.target is not None and args.at is None:
        raise ValueError(f"--target={args.target:g} is used with --at (the recommendation line), "
                         "e.g. --at n=1e8,d=10,eps=0.1 --target 1e-3")
    from analysis.comparisons.compare import METRIC_COLUMN

    if args.metric is not None and args.metric not in METRIC_COLUMN:
        raise ValueError(f"--metric={args.metric!r} is invalid: must be a claim metric, one of "
                         f"{', '.join(sorted(METRIC_COLUMN))}")
    for s in args.sources:
        if not Path(s).is_file():
            raise ValueError(f"source {s!r} is invalid: no such file (a .sqlite store of "
                             "`dprates sweep` or an atlas CSV of `dprates atlas --format csv`)")


def atlas_from_sources(sources: Sequence[str], n_boot: int, knobs: str = "theory",
                       args: argparse.Namespace | None = None):
    """The atlas's long table from stores and / or atlas CSVs (stores' cells first narrowed by
    --problem / --d / --eps when `args` has them, as `dprates compare` does)."""
    import pandas as pd

    from analysis.comparisons.atlas import atlas_table
    from analysis.comparisons.atlas_csv import read_csv
    from bench.cli.compare import filter_cells, load_cells

    csvs = [s for s in sources if str(s).lower().endswith(".csv")]
    stores = [s for s in sources if s not in csvs]
    parts = [read_csv(c) for c in csvs]
    if stores:
        cells = load_cells(list(stores))
        if args is not None:
            cells = filter_cells(cells, args)
        metric = getattr(args, "metric", None)
        parts.append(atlas_table(cells, n_boot=n_boot, knobs=knobs,
                                 metrics=[metric] if metric else None))
    parts = [p for p in parts if len(p)]
    if not parts:
        metric = getattr(args, "metric", None)
        raise ValueError((f"--metric={metric!r}: " if metric else "")
                         + f"sources {', '.join(sources)}: no design point to compare (no ok "
                         "cell measured by an algorithm on " + ("it)" if metric else
                                                                "a metric of the atlas)"))
    from analysis.comparisons.atlas import with_readings

    return with_readings(pd.concat(parts, ignore_index=True)) if len(parts) > 1 else parts[0]


def write_atlas_csv(stores: Sequence[str], path: str | Path, n_boot: int = 2000) -> Path:
    """The atlas CSV of `stores` (the per-point medians, paired ratios and intervals every
    reading of the atlas needs) at `path`: what `make reference` commits as reports/atlas.csv,
    since the stores are not in the repository."""
    from analysis.comparisons.atlas_csv import write_csv

    return write_csv(atlas_from_sources(list(stores), n_boot), path)


def _output(text: str, args: argparse.Namespace, what: str) -> None:
    write_output(text, args.output, what)


def cmd_atlas(args: argparse.Namespace) -> int:
    """Print (or write) the atlas, its recommendation line or its maps."""
    from analysis.comparisons.atlas import READING_NOTE, display, points_table, text_lines
    from analysis.comparisons.atlas_csv import filter_table
    from analysis.comparisons.atlas_map import crossover_lines, crossovers
    from analysis.comparisons.atlas_recommend import parse_at, recommend

    _check_args(args)
    at = parse_at(args.at) if args.at is not None else None
    cx = None
    if args.maps and args.ranges:  # read (and refused) before any work
        from analysis.comparisons.crossover_files import read_crossovers

        cx = read_crossovers(args.ranges, "--ranges")
    table = atlas_from_sources(args.sources, args.boot, args.knobs, args)
    table = filter_table(table, args.metric, args.problem, args.d, args.eps)
    if args.maps:
        from analysis.comparisons.atlas_map import ranges_from_crossovers, save_maps

        ranges = ranges_from_crossovers(table, cx) if cx is not None else None
        for p in save_maps(table, args.maps, ranges):
            print(f"wrote {p}", file=sys.stderr)
    if at is not None:
        recs = recommend(table, at, args.target, n_boot=args.boot)
        _output("".join(line + "\n" for r in recs for line in r.lines()), args,
                f"{len(recs)} recommendation(s)")
        return 0
    if args.format == "csv":
        from analysis.comparisons.atlas import COLUMNS

        if args.output:
            from analysis.comparisons.atlas_csv import write_csv

            write_csv(table, args.output)
            print(f"wrote {args.output} ({len(table)} rows: the atlas CSV)")
        else:
            sys.stdout.write(table[COLUMNS].to_csv(index=False))
        return 0
    points = points_table(table)
    notes = crossover_lines(crossovers(table))
    if args.format == "markdown":
        from analysis.report.tables import to_markdown

        text = READING_NOTE + "\n\n" + to_markdown(display(points)) + "".join(f"\n{n}\n" for n in notes)
    else:
        text = READING_NOTE + "\n\n" + "\n".join(text_lines(points) + notes) + "\n"
    _output(text, args, f"{len(points)} design points, {args.format}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `atlas` subcommand's parser (registered by `bench.cli.build_parser`)."""
    from bench.cli.values import positive_float

    p = sub.add_parser("atlas", help="which algorithm wins where: per metric and instance, the "
                       "winner at each design point with its paired margin and CI; --at: a "
                       "recommendation line; --maps: the maps")
    p.add_argument("sources", nargs="+", metavar="STORE_OR_CSV",
                   help="stores (.sqlite) and / or an atlas CSV (e.g. reports/atlas.csv)")
    p.add_argument("--metric", default=None,
                   help="only this claim metric (alpha_sosp, grad_norm, excess_risk, ...)")
    p.add_argument("--problem", default=None, help="only this problem")
    p.add_argument("--d", type=float, default=None, help="only this dimension")
    p.add_argument("--eps", type=positive_float, default=None, help="only this eps")
    p.add_argument("--format", choices=["text", "markdown", "csv"], default="text",
                   help="text (default), markdown, or csv (the atlas CSV that `dprates atlas` "
                        "reads back: per-point medians, paired ratios and CIs)")
    p.add_argument("-o", "--output", default=None, help="write to this file instead of stdout")
    p.add_argument("--at", default=None, metavar="n=N,d=D,eps=E",
                   help="the recommendation line at this point (keys n, d, eps): the winner, its "
                        "margin with CI, measured or extrapolated, and the cells it rests on")
    p.add_argument("--target", type=positive_float, default=None,
                   help="with --at: the target error (samples-to-target view; without it the "
                        "error at n)")
    p.add_argument("--maps", default=None, metavar="DIR", help="also write the maps (PNG) here")
    p.add_argument("--ranges", default=None, metavar="CSV",
                   help="with --maps: hatch the points whose winner changes within the constants' "
                        "ranges of a crossovers CSV (reports/crossovers.csv)")
    p.add_argument("--knobs", choices=["theory", "all"], default="theory",
                   help="stores: theory knob defaults (default) or a row per knob setting")
    p.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.set_defaults(func=cmd_atlas)
