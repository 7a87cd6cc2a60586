"""The `dprates` command line: the argument parser and `main` (entry point `bench.cli:main`).

One module per command group, each holding its `cmd_*` functions: `listing` (list),
`claims` (claims, regate), `compare` (compare), `run` (run), `sweep` (sweep), `stores` (status, export), `fit`
(fit), `report` (report, plot), `pipelines` (demo, reference-quick) and `audit` (audit);
`values` parses command-line values."""

from __future__ import annotations

import argparse
import sys

from bench.cli.atlas import add_parser as add_atlas_parser
from bench.cli.audit import cmd_audit
from bench.cli.claims import cmd_claims, cmd_regate
from bench.cli.compare import cmd_compare
from bench.cli.crossover_law import add_parser as add_crossover_law_parser
from bench.cli.fit import cmd_fit
from bench.cli.fit_points import add_parser as add_fit_points_parser
from bench.cli.listing import cmd_list
from bench.cli.output_gap import add_parser as add_output_gap_parser
from bench.cli.pipelines import add_demo_parser, cmd_reference_quick
from bench.cli.practitioners import add_parser as add_practitioners_parser
from bench.cli.report import cmd_plot, cmd_report
from bench.cli.run import RUN_EPILOG, cmd_run
from bench.cli.sensitivity import add_parser as add_sensitivity_parser
from bench.cli.stores import cmd_export, cmd_status
from bench.cli.sweep import cmd_cost_rates, cmd_sweep
from bench.cli.values import positive_float
from bench.cli.verdict_changes import add_parser as add_verdict_changes_parser


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command, in the order `dprates --help` lists them: the commands
    defined here, by group (`_add_*_parsers`), then those whose modules add their own."""
    parser = argparse.ArgumentParser(
        prog="dprates",
        description="Benchmark the convergence rates of differentially private non-convex optimizers.")
    sub = parser.add_subparsers(dest="command", required=True)
    # Every command resolves names, so every command takes --plugin (bench.plugins).
    plugin_opt = argparse.ArgumentParser(add_help=False)
    plugin_opt.add_argument("--plugin", action="append", default=[], metavar="PATH_OR_MODULE",
                            help="import an outside algorithm / problem module first (repeatable)")
    _add_parser = sub.add_parser  # every command's parser gets plugin_opt as a parent
    sub.add_parser = lambda *a, **kw: _add_parser(*a, parents=[plugin_opt], **kw)  # type: ignore[method-assign]
    _add_catalogue_parsers(sub)
    _add_run_parsers(sub)
    _add_store_parsers(sub)
    _add_analysis_parsers(sub)
    _add_report_parsers(sub)
    _add_audit_parser(sub)
    add_demo_parser(sub)
    add_atlas_parser(sub)
    add_practitioners_parser(sub)
    add_crossover_law_parser(sub)
    add_sensitivity_parser(sub)
    add_verdict_changes_parser(sub)
    add_fit_points_parser(sub)
    add_output_gap_parser(sub)
    return parser


def _add_catalogue_parsers(sub: argparse._SubParsersAction) -> None:
    """`claims` (every rate claim; with --measured, the measured claims table) and `list` (what
    is registered)."""
    p = sub.add_parser("claims", help="every rate claim of every registered algorithm; with "
                       "--measured, the measured claims table (a report's page 1)")
    p.add_argument("--csv", action="store_true", help="print CSV instead of the table")
    p.add_argument("--measured", nargs="+", default=None, metavar="SOURCE",
                   help="stores (.sqlite) and / or claims CSVs (e.g. reports/reference_exponents.csv)"
                        ": one row per declared claim with its measured exponent and verdict")
    p.add_argument("--format", choices=["markdown", "latex", "csv"], default=None,
                   help="with --measured: the export format (default markdown)")
    p.add_argument("--standalone", action="store_true",
                   help="with --format latex: a complete document (else a table to \\input)")
    p.add_argument("-o", "--output", default=None, help="with --measured: write to this file")
    p.add_argument("--update-readme", default=None, metavar="README",
                   help="with --measured: rewrite the generated claims block of this README")
    for flag, what in (("--crossovers", "reports/crossovers.csv"),
                       ("--laws", "reports/crossover_laws.csv"),
                       ("--atlas", "reports/atlas_fair.csv")):
        p.add_argument(flag, default=None, metavar="CSV",
                       help=f"with --update-readme: {what}; given all three, the README's "
                            "generated Results tables are rewritten too")
    p.add_argument("--all-claims", action="store_true",
                   help="with --measured: list every declared claim in the markdown / LaTeX "
                        "table, the not measured ones too (default: the measured ones; the CSV "
                        "has every claim)")
    p.add_argument("--paper", action="store_true",
                   help="with --measured: a table for a paper: the same claims in every format "
                        "(the measured ones, or all with --all-claims), no 'decided by' "
                        "provenance column, no shell commands in the notes")
    p.add_argument("--boot", type=int, default=2000, help="bootstrap resamples for stores")
    p.set_defaults(func=cmd_claims)
    p = sub.add_parser("list", help="registered problems and algorithms")
    p.add_argument("--params", default=None, metavar="NAME",
                   help="list a problem's parameters or an algorithm's knobs instead")
    p.set_defaults(func=cmd_list)


def _add_run_parsers(sub: argparse._SubParsersAction) -> None:
    """`run` (one run), `cost-rates` (the cost estimate's shipped rates) and `sweep` (a spec
    into a store)."""
    p = sub.add_parser("run", help="run one algorithm on one problem and print its metrics",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=RUN_EPILOG)
    p.add_argument("algorithm")
    p.add_argument("--problem", required=True)
    p.add_argument("--n", required=True, help="sample budget (200000 or 2e5)")
    p.add_argument("--target-alpha", type=positive_float, default=None,
                   help="configure the algorithm for this accuracy (its batch sizes, thresholds "
                        "and horizon follow from it) and report samples_to_target")
    p.add_argument("--stop-at-target", action="store_true",
                   help="end the run when alpha_SOSP first falls to --target-alpha")
    p.add_argument("--d", type=int, required=True, help="dimension")
    p.add_argument("--eps", type=positive_float, required=True, help="privacy eps (inf: non-private)")
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calibration", default="tight", help="tight (default) or theory")
    p.add_argument("--data", choices=["records", "counts"], default=None,
                   help="records, or counts (exact batch statistics); default: counts where the "
                        "problem supports it")
    p.add_argument("--counts-stream", type=int, default=None, metavar="VERSION",
                   help="the counts stream version counts mode draws (default: the latest, 4; 3 "
                        "draws the data of stores and reference runs made with it)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="algorithm knob or parameter override (repeatable)")
    p.add_argument("--problem-param", action="append", metavar="KEY=VALUE",
                   help="problem parameter (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("cost-rates", help="the cost estimate's shipped rates from finished stores "
                       "(bench/measured_rates.json; make reference writes them)")
    p.add_argument("stores", nargs="+")
    p.add_argument("-o", "--output", default=None,
                   help="default: the package's bench/measured_rates.json, which the estimate reads")
    p.set_defaults(func=cmd_cost_rates)
    p = sub.add_parser("sweep", help="run a sweep spec (TOML) into a resumable SQLite store")
    p.add_argument("spec", help="path of a sweep spec, e.g. bench/configs/quick.toml")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--backend", choices=["loky", "dask", "sequential"], default="loky")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address (with --backend dask)")
    p.add_argument("--out", default=None, help="store path (default results/<spec name>.sqlite)")
    p.add_argument("--retry-failed", action="store_true", help="rerun cells stored as error/timeout")
    p.add_argument("--dry-run", action="store_true", help="print the plan and cost; run nothing "
                   "(pairs no stored or shipped rate prices are probed: --no-probe skips that)")
    p.add_argument("--no-probe", action="store_true",
                   help="--dry-run without probes: unpriced pairs at the default rates")
    p.add_argument("--blas-threads", type=int, default=1,
                   help="BLAS threads per worker (default 1; 0 leaves the library default)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--allow-unverified", action="store_true",
                   help="run the cells of a plugin whose privacy check says FAILED (else the sweep "
                        "stops before any cell); its cells, tables and exports then say FAILED and "
                        "the command exits with status 3")
    p.set_defaults(func=cmd_sweep)


def _add_store_parsers(sub: argparse._SubParsersAction) -> None:
    """`status` and `export`: what a store holds."""
    p = sub.add_parser("status", help="counts by status, slowest cells and failures of a store")
    p.add_argument("store")
    p.add_argument("--slowest", type=int, default=5)
    p.add_argument("--all", action="store_true", help="include cells no longer in the spec")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("export", help="export a store's cells table to CSV or Parquet")
    p.add_argument("store")
    p.add_argument("--csv", default=None)
    p.add_argument("--parquet", default=None)
    p.add_argument("--all", action="store_true", help="include cells no longer in the spec")
    p.add_argument("--with-evaluation-only", action="store_true",
                   help="also write the evaluation-only column (a Poisson family's realized batch "
                        "sizes, which its accountant keeps hidden: never a run fact; "
                        "bench/README.md, 'What a store reveals')")
    p.set_defaults(func=cmd_export)


def _add_analysis_parsers(sub: argparse._SubParsersAction) -> None:
    """`fit` (exponents and verdicts), `compare` (algorithms on one axis) and `regate` (a
    claims CSV's verdicts under the regime gate)."""
    p = sub.add_parser("fit", help="exponent table with 95%% CIs and verdicts (declared fits)")
    p.add_argument("store")
    p.add_argument("--x", default=None, choices=["privacy", "n", "d", "eps", "alpha"],
                   help="exploratory fit: the x scale (with --metric)")
    p.add_argument("--metric", default=None, help="exploratory fit: the y column, e.g. alpha_best")
    p.add_argument("--by", default=None,
                   help="grouping columns of an exploratory fit, e.g. 'algorithm,target_alpha' "
                        "(default: algorithm, problem and every grid column that varies)")
    p.add_argument("--window", type=float, nargs=2, default=None, metavar=("LOW", "HIGH"))
    p.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--csv", default=None, help="also write the table to this CSV file")
    p.add_argument("--format", choices=["markdown", "latex", "csv"], default=None,
                   help="print the declared fits' table in this format (booktabs LaTeX for latex)")
    p.add_argument("--standalone", action="store_true",
                   help="with --format latex: a complete document (else a table to \\input)")
    p.add_argument("--n-star", default=None, metavar="TARGETS",
                   help="empirical sample complexity: for each target error (comma-separated), the "
                        "smallest n whose output reaches it, from --metric against n with a "
                        "bootstrap CI (the samples-to-target view of methods that run on n records)")
    p.set_defaults(func=cmd_fit)
    p = sub.add_parser("compare", help="every algorithm of the stores on one axis: samples to a "
                       "target error, passes, selection rule, paired ratios with CIs, flags")
    p.add_argument("stores", nargs="+", metavar="STORE", help="stores (.sqlite) to compare")
    p.add_argument("--target", type=positive_float, required=True,
                   help="the target error (one-pass methods: the target_alpha their cells were "
                        "configured for; methods on n records: the level their error must reach)")
    p.add_argument("--metric", default=None,
                   help="error column of the on-n-records view (default: the column of the "
                        "one-pass rows' target metric, e.g. alpha_best, so both views share one "
                        "axis; else each algorithm's claim metric)")
    p.add_argument("--problem", default=None, help="only this problem")
    p.add_argument("--d", type=int, default=None, help="only this dimension")
    p.add_argument("--eps", type=positive_float, default=None, help="only this eps")
    p.add_argument("--baseline", default=None, metavar="ALGORITHM",
                   help="ratios to this algorithm (default: the row needing the fewest samples)")
    p.add_argument("--knobs", choices=["theory", "all"], default="theory",
                   help="theory: cells at the theory knob defaults (default); all: a row per setting")
    p.add_argument("--format", choices=["markdown", "latex", "csv"], default="markdown",
                   help="markdown (default), latex (booktabs) or csv (one number per cell)")
    p.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("regate", help="re-derive a claims CSV's verdicts under the regime gate "
                       "(from its own flags: ceiling / floor -> not in regime)")
    p.add_argument("csv", help="a claims CSV (dprates report --csv), e.g. reports/reference_exponents.csv")
    p.add_argument("-o", "--output", default=None, help="write here (default: rewrite the CSV)")
    p.set_defaults(func=cmd_regate)


def _add_report_parsers(sub: argparse._SubParsersAction) -> None:
    """`reference-quick` (reduced reference and its agreement), `report` (the PDF) and `plot`
    (one figure)."""
    p = sub.add_parser("reference-quick", help="reduced reference specs and, per claim, whether "
                       "the verdict agrees with the committed full reference (make reference-quick)")
    p.add_argument("--manifest", default=None,
                   help="the reduced specs (default: bench/reference_quick.toml of this checkout)")
    p.add_argument("--out", default="results/quick_reference", help="directory of the stores")
    p.add_argument("--full", default=None, help="the full reference's claims CSV (default: "
                   "reports/reference_exponents.csv of this checkout)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--report", default=None, help="also write a PDF report of the stores")
    p.set_defaults(func=cmd_reference_quick)
    p = sub.add_parser("report", help="PDF report of one or several stores")
    p.add_argument("store", nargs="+")
    p.add_argument("-o", "--output", required=True, help="the .pdf to write")
    p.add_argument("--boot", type=int, default=2000)
    p.add_argument("--csv", default=None, help="also write the claims table (exponents) as CSV")
    p.add_argument("--figures", default=None, help="also write PNGs of the key figures here")
    p.add_argument("--print", action="store_true", help="print the claims table")
    p.add_argument("--crossovers", default=None, metavar="CSV",
                   help="measured crossovers for the headline page (reports/crossovers.csv, "
                        "from `dprates crossover-law --csv`)")
    p.add_argument("--practitioners", default=None, metavar="CSV",
                   help="the practitioners' atlas (reports/practitioners.csv): with it (or "
                        "--crossovers) page 1 answers which optimizer to use")
    p.add_argument("--output-gap", default=None, metavar="CSV",
                   help="samples to the algorithm's own output against the oracle's n* "
                        "(reports/output_gap.csv, from `dprates output-gap`), said beside "
                        "page 1's practitioner answer")
    p.add_argument("--laws", default=None, metavar="CSV",
                   help="the crossover laws for the headline page (reports/crossover_laws.csv, "
                        "from `dprates crossover-law --law-csv`)")
    p.add_argument("--all-claims", action="store_true",
                   help="page 1 lists every declared claim, the not measured ones too (default: "
                        "the measured ones and a line saying how many are left out)")
    p.add_argument("--html", nargs="?", const="", default=None, metavar="HTML",
                   help="also write the report (main and appendix) as one self-contained HTML "
                        "file with sortable tables (default path: the PDF's, ending .html)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("plot", help="one figure of a store (png, svg or pdf)")
    p.add_argument("store")
    p.add_argument("--kind", required=True, choices=["scaling", "forest", "paired", "trajectory"])
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--fit", default=None, help="declared fit name (default: the first)")
    p.add_argument("--mode", default=None, choices=["theory", "tuned"])
    p.add_argument("--cell", default=None, help="cell key prefix (--kind trajectory)")
    p.add_argument("--boot", type=int, default=1000)
    p.set_defaults(func=cmd_plot)


def _add_audit_parser(sub: argparse._SubParsersAction) -> None:
    """`audit`: the black-box privacy audit and planted bugs."""
    p = sub.add_parser("audit", help="privacy audit: black-box eps lower bounds, planted bugs")
    p.add_argument("algorithm", help="an algorithm name, or 'all'")
    p.add_argument("--eps", type=float, action="append", help="eps to audit (repeatable; default 0.5 1 2)")
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--runs", type=int, default=4000, help="runs on each of D and D' (default 4000)")
    p.add_argument("--faults", default=None, help="'all' or a comma list of planted bugs to check")
    p.add_argument("--multi", action="store_true",
                   help="also audit composed releases (tree restart in global scope, a Gaussian epoch)")
    p.add_argument("--fault-eps", type=float, default=2.0, help="eps of the planted-bug runs (default 2)")
    p.add_argument("--fault-runs", type=int, default=10000, help="audit runs per planted bug")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--problem", default="mean_estimation",
                   help="problem of an outside algorithm's sensitivity check (default mean_estimation)")
    p.add_argument("--d", type=int, default=4, help="its dimension (default 4)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="an outside algorithm's parameter for its sensitivity check (repeatable)")
    p.set_defaults(func=cmd_audit)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        from bench.plugins import load_entry_points, load_plugins

        load_entry_points()
        load_plugins(args.plugin)
        return args.func(args)
    except ValueError as exc:
        print(f"dprates: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
