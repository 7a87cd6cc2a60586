"""`dprates verdict-changes OLD.csv NEW.csv [-o FILE]`: per declared fit row, the old edition's
verdict beside the new one and why it moved (`analysis.verdict_engine.edition_diff`); `make
reference` writes reports/verdict_changes.md from the committed CSV before and after."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli.output import write_output


def cmd_verdict_changes(args: argparse.Namespace) -> int:
    import pandas as pd

    from analysis.verdict_engine.edition_diff import changes_markdown, verdict_changes

    for name, path in (("OLD", args.old), ("NEW", args.new)):
        if not Path(path).is_file():
            raise ValueError(f"{name}={path!r} is invalid: no such file (a claims CSV of "
                             "`dprates report --csv`)")
    old, new = pd.read_csv(args.old), pd.read_csv(args.new)
    for name, df, path in (("OLD", old, args.old), ("NEW", new, args.new)):
        if "verdict" not in df:
            raise ValueError(f"{name}={path!r} is invalid: it has no verdict column (a claims CSV "
                             "of `dprates report --csv`)")
    text = "# Verdicts: previous edition -> this edition\n\n" + changes_markdown(
        verdict_changes(old, new))
    write_output(text, args.output)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verdict-changes", help="old -> new verdict per fit row of two claims CSVs, "
                       "with why each moved")
    p.add_argument("old", metavar="OLD", help="the previous edition's claims CSV")
    p.add_argument("new", metavar="NEW", help="the new claims CSV")
    p.add_argument("-o", "--output", default=None, help="write markdown here (default: stdout)")
    p.set_defaults(func=cmd_verdict_changes)
