"""Commands that chain sweep, fit and report: `dprates demo` (the quick sweep, its fit and
reports/quick.pdf) and `dprates reference-quick` (reduced reference specs, their verdicts
against the committed full reference)."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from bench.cli.fit import print_claims
from bench.cli.sweep import default_store

#: The demo's spec (bench/configs/quick.toml) and `dprates demo --report`'s default.
DEMO_SPEC = Path(__file__).resolve().parent.parent / "configs" / "quick.toml"
DEMO_REPORT = "reports/quick.pdf"


def demo_command(args: argparse.Namespace, retry_failed: bool = False) -> str:
    """`dprates demo` as the user gave it (every flag), shell-quoted, for the resume hint;
    `retry_failed`: with --retry-failed (the hint after failed cells)."""
    import shlex

    words = ["dprates", "demo"]
    for flag, value in (("--jobs", args.jobs), ("--out", args.out)):
        if value is not None:
            words += [flag, str(value)]
    if args.report != DEMO_REPORT:
        words += ["--report", str(args.report)]
    if getattr(args, "retry_failed", False) or retry_failed:
        words.append("--retry-failed")
    if args.quiet:
        words.append("--quiet")
    return shlex.join(words)


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends like Ctrl-C (as `dprates sweep`): store consistent


def add_demo_parser(sub: argparse._SubParsersAction) -> None:
    """The `demo` verb (registered as every other verb's module does)."""
    p = sub.add_parser("demo", help="the quick sweep, its fit and reports/quick.pdf (`make demo`)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--out", default=None, help="store path (default results/quick.sqlite)")
    p.add_argument("--report", default="reports/quick.pdf", help="report path (default reports/quick.pdf)")
    p.add_argument("--retry-failed", action="store_true",
                   help="rerun the stored cells that failed (error or timeout)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    """The quick sweep (bench/configs/quick.toml) through the runner into results/quick.sqlite,
    its table of medians, its report."""
    from bench.cli.sweep import print_failures
    from bench.config import load_spec
    from bench.runner import run_sweep
    from bench.store import load

    spec = load_spec(DEMO_SPEC)
    out = Path(args.out or default_store(spec.name))
    print(f"Sweep {spec.name}: {len(spec.cells())} cells ({spec.description}) -> {out}")
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:  # warm: numba compiles outside the cells' time limit (issue 73, item 6)
        res = run_sweep(spec, out, jobs=args.jobs, progress=not args.quiet,
                        retry_failed=getattr(args, "retry_failed", False), warm=True)
    except KeyboardInterrupt:
        stored = len(load(out)) if out.is_file() else 0
        print(f"\ninterrupted: {stored} of {len(spec.cells())} cells are stored in {out}; "
              f"rerun `{demo_command(args)}` to resume", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"{res.ran} cells run, {res.skipped} already stored, {res.wall:.1f} s")
    # named, so a demo on a loaded machine never hides a lost cell (issue 73, item 6)
    print_failures(out, demo_command(args, retry_failed=True))
    from analysis.points import combo_label, theory_mask
    from problems.evaluation.metrics import median_n_star

    cells = load(out)
    # one row per knob setting, theory first ("(" sorts before letters): pooling the tuned
    # grid's alpha_mult settings gave medians that `dprates compare` and the report (one
    # setting each) never print
    theory = theory_mask(cells)
    cells["setting"] = [("(theory) " + combo_label(p, k)) if t else combo_label(p, k)
                        for p, k, t in zip(cells["params"], cells["knobs"], theory, strict=True)]
    med = median_n_star(cells, ["problem", "algorithm", "setting", "target_alpha"])
    print("\nMedian samples to reach the target alpha (n*; a censored run, which never reached "
          "its target, counts as n* = inf), one row per knob setting (theory: the papers' "
          "values, what `dprates compare` and the report's theory mode read):")
    table = med["median_n_star"].unstack("target_alpha")
    with __import__("pandas").option_context("display.width", 160, "display.max_columns", None,
                                             "display.float_format",
                                             "{:.3g}".format):
        print(table.sort_index(axis=1, ascending=False))
    if med["censored"].sum():
        print(f"censored runs: {int(med['censored'].sum())} of {int(med['runs'].sum())}")
    from analysis.report.build import write_report
    from bench.store import open_store_data

    report = Path(args.report)
    res = write_report(open_store_data(out), report)
    print("\nDeclared fit (log n* against log target alpha; 95% bootstrap CIs):")
    print_claims(res["claims"])
    print(f"\nwrote {report} ({res['pages']} pages) and its appendix {res['appendix']} "
          f"({res['appendix_pages']} pages). The demo is small (4 seeds, one eps, half a "
          "decade of alpha, in the claims' regime): the reference sweep is the result to quote.")
    return 0


def cmd_reference_quick(args: argparse.Namespace) -> int:
    """Reduced reference specs, their verdicts per claim against the committed full CSV."""
    import time

    import pandas as pd

    from bench import quick_reference as qr

    t0 = time.perf_counter()
    args.manifest = args.manifest or qr.MANIFEST
    args.full = args.full or qr.FULL_CSV
    specs = qr.reduced_specs(args.manifest)
    print(f"quick reference: {len(specs)} reduced specs ({sum(len(s.cells()) for s in specs)} "
          f"cells) into {args.out}; verdicts against {args.full}")
    res = qr.run(args.manifest, args.out, jobs=args.jobs, full_csv=args.full, n_boot=args.boot)
    table = res["table"]
    with pd.option_context("display.width", 220, "display.max_colwidth", 60,
                           "display.max_columns", 20):
        print(table[["algorithm", "full", "quick", "agree", "same fit", "full measured",
                     "quick measured", "full decided by"]].to_string(index=False))
    covered = table[table["agree"] != "not covered"]
    agree = int((covered["agree"] == "yes").sum())
    print(f"\n{agree} of {len(covered)} covered claims agree with the full reference "
          f"({len(table) - len(covered)} not covered by the reduced specs)")
    for r in covered[covered["agree"] == "no"].to_dict("records"):
        print(f"  differs: {r['algorithm']}: full {r['full']} ({r['full measured']}), quick "
              f"{r['quick']} ({r['quick measured']})")
    if args.report:
        from analysis.report.build import write_report
        from bench.store import open_store_data

        rep = write_report([open_store_data(s) for s in res["stores"]], args.report, n_boot=args.boot)
        print(f"wrote {args.report} ({rep['pages']} pages) and {rep['appendix']} "
              f"({rep['appendix_pages']} pages)")
    print(f"total {time.perf_counter() - t0:.0f} s (sweeps "
          + ", ".join(f"{k} {v:.0f} s" for k, v in res["timings"].items()) + ")")
    return 0 if agree == len(covered) else 1
