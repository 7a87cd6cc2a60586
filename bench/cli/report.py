"""`dprates report` and `dprates plot`: the PDF report of stores, and one figure of a store."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli.fit import print_claims


def cmd_report(args: argparse.Namespace) -> int:
    from analysis.report.build import write_report
    from analysis.report.summary_page import all_claims_on_page_one
    from bench.store import open_store_data

    crossovers = None
    if getattr(args, "crossovers", None):
        from analysis.comparisons.crossover_files import read_crossovers

        crossovers = read_crossovers(args.crossovers, "--crossovers")
    laws = None
    if getattr(args, "laws", None) and not getattr(args, "crossovers", None):
        raise ValueError(f"--laws={args.laws!r} is invalid without --crossovers: page 2 prints "
                         "each law beside its family's crossovers (reports/crossovers.csv)")
    if getattr(args, "laws", None):
        from analysis.comparisons.crossover_files import read_laws

        laws = read_laws(args.laws, "--laws")
    practitioners = None
    if getattr(args, "practitioners", None):
        from bench.cli.practitioners import practitioners_rows

        if not Path(args.practitioners).is_file():
            raise ValueError(f"--practitioners={args.practitioners!r} is invalid: no such file (a "
                             "CSV of `dprates practitioners -o`, e.g. reports/practitioners.csv)")
        practitioners = practitioners_rows([args.practitioners], 2000, None)
    gap = None
    if getattr(args, "output_gap", None):
        import pandas as pd

        if not Path(args.output_gap).is_file():
            raise ValueError(f"--output-gap={args.output_gap!r} is invalid: no such file (a CSV "
                             "of `dprates output-gap -o`, e.g. reports/output_gap.csv)")
        gap = pd.read_csv(args.output_gap)
    html = getattr(args, "html", None)
    if html == "":  # --html without a path: beside the PDF
        html = str(Path(args.output).with_suffix(".html"))
    if html is not None and Path(html).suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--html={html!r} is invalid: the HTML report is a .html file")
    with all_claims_on_page_one(getattr(args, "all_claims", False)):
        res = write_report([open_store_data(p) for p in args.store], args.output,
                           n_boot=args.boot, csv=args.csv, figures=args.figures,
                           crossovers=crossovers, laws=laws, html=html,
                           practitioners=practitioners, output_gap=gap)
    print(f"wrote {res['path']} ({res['pages']} pages) and its appendix {res['appendix']} "
          f"({res['appendix_pages']} pages)" + (f", {args.csv}" if args.csv else "")
          + (f", figures in {args.figures}" if args.figures else "")
          + (f", {res['html']} ({res['html_pages']} pages, sortable tables)" if html else ""))
    if args.print:
        print_claims(res["claims"])
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from analysis.claims import claims_table, paired_table
    from analysis.points import fit_points_table
    from analysis.report import plots
    from analysis.report.scaling_pages import chosen_rows
    from bench.store import load_curves, open_store_data

    suffix = args.output.rsplit(".", 1)[-1].lower() if "." in args.output else ""
    if f".{suffix}" not in plots.SAVE_FORMATS:
        raise ValueError(f"-o {args.output!r} is invalid: the extension must be one of "
                         f"{', '.join(plots.SAVE_FORMATS)}")
    data = open_store_data(args.store)
    fits = {f.name: f for f in data.spec.fits}
    if args.fit and args.fit not in fits:
        raise ValueError(f"--fit={args.fit!r} is invalid: declared fits are {', '.join(fits) or 'none'}")
    if args.kind == "trajectory":
        if not args.cell:
            raise ValueError("--kind trajectory needs --cell KEY (a key prefix from `dprates status`)")
        prof = load_curves(args.store, "trajectory")
        match = [k for k in prof if k.startswith(args.cell)]
        if len(match) != 1:
            raise ValueError(f"--cell={args.cell!r} is invalid: matches {len(match)} stored cells")
        fig, axes = plots.new_figure(11, 3.6, ncols=2)
        plots.trajectory_plot(axes, prof[match[0]], title=match[0])
    elif args.kind in ("scaling", "forest"):
        claims = claims_table(data, n_boot=args.boot)
        if args.kind == "forest":
            views = sorted(claims["view"].unique())
            fig, axes = plots.new_figure(10, 2.5 + 0.3 * len(claims), nrows=len(views), squeeze=False)
            for ax, v in zip(axes.ravel(), views, strict=True):
                plots.forest_plot(ax, claims, v)
        else:
            fit = fits[args.fit] if args.fit else data.spec.fits[0]
            mode = args.mode or fit.mode
            pts = fit_points_table(data, fit, mode)
            probs = sorted(pts["problem"].unique())
            fig, axes = plots.new_figure(5.5 * len(probs), 4.4, ncols=len(probs), squeeze=False)
            for ax, prob in zip(axes.ravel(), probs, strict=True):
                f = claims[(claims["fit"] == fit.name) & (claims["mode"] == mode)
                           & (claims["problem"] == prob)]
                sub = pts[pts["problem"] == prob]
                if mode == "tuned":
                    sub = chosen_rows(sub, f)
                plots.scaling_plot(ax, sub, f, x=fit.x, y=fit.y, window=fit.window,
                                   title=f"{prob} ({fit.name}, {mode})")
    else:
        paired = paired_table(data, n_boot=args.boot)
        if args.fit:
            paired = [p for p in paired if p["fit"] == args.fit]
        if not paired:
            raise ValueError("no paired comparison: needs two algorithms with claimed rates")
        fig, axes = plots.new_figure(5.5 * len(paired), 4.2, ncols=len(paired), squeeze=False)
        for ax, p in zip(axes.ravel(), paired, strict=True):
            plots.paired_plot(ax, p, p["x"])
    fig.tight_layout()
    path = plots.save(fig, args.output)
    print(f"wrote {path}")
    return 0
