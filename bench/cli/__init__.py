"""The `dprates` command line."""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np


def parse_value(text: str) -> Any:
    """'3' -> 3, '0.5' -> 0.5, 'inf' -> inf, 'true'/'false' -> bool, else the string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_assignments(items: list[str] | None, flag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"{flag} {item!r} is invalid: must be key=value")
        key, value = item.split("=", 1)
        out[key.strip()] = parse_value(value)
    return out


def parse_count(text: str, flag: str) -> int:
    """An integer >= 1 written as 200000, 2e5 or 2E5 (a float is accepted only if integral)."""
    v = parse_value(text)
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{flag}={text} is invalid: must be a whole number >= 1 "
                         "(e.g. 200000 or 2e5)")
    return v


def _positive_float(text: str) -> float:
    v = parse_value(text)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a number > 0 (or inf)")
    return float(v)


def cmd_list(args: argparse.Namespace) -> int:
    import algorithms
    import problems

    if args.params:
        return _list_params(args.params)
    print("problems (data modes, default first):")
    for name, desc in problems.describe().items():
        modes = "|".join(problems.data_modes(name))
        print(f"  {name:24s} {desc}  [data: {modes}]")
    print("algorithms (data modes: counts where the problem's layout makes it exact):")
    for name in algorithms.available():
        cls = algorithms.get_algorithm(name)
        print(f"  {name:24s} {cls.description}  [claimed: {cls.claimed_rate}] "
              f"[data: {algorithms.data_modes_note(cls)}]")
    return 0


def _list_params(name: str) -> int:
    """A problem's parameters (with defaults) or an algorithm's knobs and overrides."""
    import algorithms
    import problems
    from bench.config import algorithm_parameters, problem_parameters

    if name in problems.available():
        cls = problems.get_problem_class(name)
        print(f"problem {name} ({problems.character(name)}): parameters (--problem-param KEY=VALUE, "
              "or [[problem]] params in a spec), defaults:")
        print(f"  {'d':14s} (the grid's d)")
        for k, v in problem_parameters(name).items():
            note = "  (set per target alpha unless fixed)" if k == cls.per_target_param else ""
            print(f"  {k:14s} {v!r}{note}")
        return 0
    if name in algorithms.available():
        from algorithms.sosp.spider import KNOB_DEFAULTS

        cls = algorithms.get_algorithm(name)
        defaults = {**(KNOB_DEFAULTS if getattr(cls, "family", "") == "sosp_spider" else {}),
                    **getattr(cls, "knob_defaults", {})}
        keys = algorithm_parameters(name)
        print(f"algorithm {name}: knobs and overrides (--param KEY=VALUE, or [[algorithm]] params / "
              "grid in a spec); a knob's theory default in brackets, an override replaces a rule:")
        for k in keys:
            print(f"  {k:24s} " + (f"[{defaults[k]!r}]" if k in defaults else "override"))
        return 0
    raise ValueError(f"--params={name!r} is invalid: must be a problem ({', '.join(problems.available())}) "
                     f"or an algorithm ({', '.join(algorithms.available())})")


def cmd_claims(args: argparse.Namespace) -> int:
    """Every claim of every registered algorithm (claims as data, `algorithms.claims`); with
    --measured, the measured claims table (a report's page 1) from stores or a claims CSV."""
    import algorithms
    from algorithms.claims import LOWER_BOUNDS

    if args.measured:
        return _measured_claims(args)
    if args.format or args.update_readme or args.standalone:
        raise ValueError("--format, --standalone and --update-readme need --measured SOURCE")

    rows = [c.as_row() for c in algorithms.all_claims()] + [lb.as_row() for lb in LOWER_BOUNDS]
    claimless = [a for a in algorithms.available() if not algorithms.get_algorithm(a).claims]
    if args.csv:
        import pandas as pd

        pd.DataFrame(rows).to_csv(sys.stdout, index=False)
        return 0
    print(f"{len(rows) - len(LOWER_BOUNDS)} claims of {len(algorithms.available())} registered "
          f"algorithms and {len(LOWER_BOUNDS)} lower bound (privacy = sqrt(d)/(n eps); rates up to "
          "constants and logs):")
    for r in rows:
        print(f"  {r['algorithm']:27s} {r['setting']:10s} {r['metric']:13s} {r['rate']}")
        print(f"  {'':27s} {r['paper']}, {r['where']}" + (f"; {r['note']}" if r["note"] else ""))
    if claimless:
        print(f"no claim (ablations, references): {', '.join(claimless)}")
    return 0


#: The README block `make readme-claims` rewrites (between these two lines).
README_BEGIN = ("<!-- claims-table: generated by `make readme-claims` from "
                "reports/reference_exponents.csv; do not edit -->")
README_END = "<!-- claims-table: end -->"


def readme_claims_block(sources: list[str]) -> str:
    """The README's generated claims table (markdown, with its notes) from `sources`."""
    from analysis.report.tables import claims_summary, export, summary_for_export, summary_notes
    from bench.measured import read_fits

    summary = claims_summary(read_fits(sources))
    return export(summary_for_export(summary), "markdown", notes=summary_notes(summary)).strip()


def replace_readme_block(text: str, block: str) -> str:
    """`text` with the part between README_BEGIN and README_END replaced by `block`."""
    if README_BEGIN not in text or README_END not in text:
        raise ValueError(f"--update-readme: the file has no generated block (the lines "
                         f"{README_BEGIN!r} ... {README_END!r})")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_BEGIN}\n{block}\n{README_END}{tail}"


def _measured_claims(args: argparse.Namespace) -> int:
    from analysis.report.tables import claims_summary, export, summary_for_export, summary_notes
    from bench.measured import read_fits

    if args.update_readme:
        path = Path(args.update_readme)
        if not path.is_file():
            raise ValueError(f"--update-readme={args.update_readme!r} is invalid: no such file")
        text = path.read_text(encoding="utf-8")
        path.write_text(replace_readme_block(text, readme_claims_block(args.measured)),
                        encoding="utf-8")
        print(f"rewrote the claims table in {path} from {', '.join(args.measured)}")
        return 0
    summary = claims_summary(read_fits(args.measured, n_boot=args.boot))
    fmt = args.format or "markdown"
    if args.standalone and fmt != "latex":
        raise ValueError("--standalone is only used with --format latex")
    notes = summary_notes(summary) if fmt != "csv" else ()
    text = export(summary_for_export(summary, numeric=fmt == "csv"), fmt, notes=notes,
                  caption="Measured convergence exponents against the claimed rates (dprates).",
                  label="tab:dprates-claims", wide=("claim", "source", "regime", "decided by"),
                  standalone=args.standalone)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output} ({len(summary)} claims, {fmt})")
    else:
        sys.stdout.write(text)
    return 0


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        if math.isnan(f):  # missing (e.g. samples_to_target of a censored run): JSON null
            return None
        return f if math.isfinite(f) else str(f)  # +-inf (eps of a non-private run): "inf"
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def cmd_run(args: argparse.Namespace) -> int:
    from bench.single_run import run_cell

    params = parse_assignments(args.param, "--param")
    if args.target_alpha is not None:
        if "target_alpha" in params:
            raise ValueError(f"--target-alpha={args.target_alpha:g} is invalid together with "
                             f"--param target_alpha={params['target_alpha']}: give one")
        params["target_alpha"] = args.target_alpha
    n = parse_count(args.n, "--n")
    import problems
    from bench.config import check_problem_params

    problems.get_problem_class(args.problem)  # an unknown name: one line with the allowed ones
    check_problem_params(args.problem, parse_assignments(args.problem_param, "--problem-param"),
                         "--problem-param")
    res = run_cell(args.algorithm, args.problem, n, args.d, args.eps, delta=args.delta,
                   seed=args.seed, params=params,
                   problem_params=parse_assignments(args.problem_param, "--problem-param"),
                   calibration=args.calibration, data=args.data,
                   stop_at_target=args.stop_at_target)
    res.pop("trajectory")
    res.pop("problem_obj")
    if args.json:
        print(json.dumps(_jsonable(res)))
        return 0
    print(f"{args.algorithm} on {args.problem} (d={args.d}, n={n}, eps={args.eps}, "
          f"delta={args.delta}, seed={args.seed}, data={res['data']})")
    print("parameters used:")
    for k, v in res["params"].items():
        print(f"  {k:24s} {_fmt(v)}")
    print("result:")
    for k, v in res["metrics"].items():
        print(f"  {k:24s} {_fmt(v)}")
    for w in res["warnings"]:
        print(f"warning: {w}")
    print(f"run time {res['timing']['run_wall']:.3f} s, evaluation {res['timing']['eval_wall']:.3f} s")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The quick sweep (bench/configs/quick.toml) through the runner into results/quick.sqlite."""

    from bench.config import load_spec
    from bench.runner import run_sweep
    from bench.store import load

    spec_path = Path(__file__).resolve().parent.parent / "configs" / "quick.toml"
    spec = load_spec(spec_path)
    out = Path(args.out or _default_store(spec.name))
    print(f"Sweep {spec.name}: {len(spec.cells())} cells ({spec.description}) -> {out}")
    res = run_sweep(spec, out, jobs=args.jobs, progress=not args.quiet)
    print(f"{res.ran} cells run, {res.skipped} already stored, {res.wall:.1f} s")
    from analysis.metrics import median_n_star

    med = median_n_star(load(out), ["problem", "algorithm", "target_alpha"])
    print("\nMedian samples to reach the target alpha (n*; a censored run, which never reached "
          "its target, counts as n* = inf):")
    table = med["median_n_star"].unstack("target_alpha")
    with __import__("pandas").option_context("display.width", 120, "display.float_format",
                                             "{:.3g}".format):
        print(table.sort_index(axis=1, ascending=False))
    if med["censored"].sum():
        print(f"censored runs: {int(med['censored'].sum())} of {int(med['runs'].sum())}")
    from analysis.report.build import write_report
    from bench.store import open_store_data

    report = Path(args.report)
    res = write_report(open_store_data(out), report)
    print("\nDeclared fit (log n* against log target alpha; 95% bootstrap CIs):")
    _print_claims(res["claims"])
    print(f"\nwrote {report} ({res['pages']} pages). The demo is small (4 seeds, one eps, a window "
          "only 2.3-3x below the start saddle): the reference sweep is the result to quote.")
    return 0


def _print_claims(claims) -> None:
    import pandas as pd

    from analysis.report.tables import claims_display, direction_lines

    if claims is None or not len(claims):
        print("no declared fit has data (is the sweep finished? does the spec declare [[fit]]?)")
        return
    disp = claims_display(claims)
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.max_colwidth", 40):
        print(disp.to_string(index=False))
    counts: dict[str, int] = {}
    for flags in claims["flags"]:
        for part in filter(None, (flags or "").split("; ")):
            counts[part] = counts.get(part, 0) + 1
    if counts:
        print("flags (number of fits):")
        for part, k in counts.items():
            print(f"  [{k}] {part}")
    for line in direction_lines(list(zip(claims["view"], claims["x"], strict=True))):
        print(f"what faster / slower mean: {line}")


def exploratory_groups(df, x: str, by: str | None) -> list[str]:
    """The grouping of an exploratory fit: `by` (comma- or space-separated column names), or
    algorithm, problem and every other grid column that varies (never pooled silently)."""
    from analysis.claims import FOLDED

    if by:
        cols = [c for c in by.replace(",", " ").split() if c]
        unknown = [c for c in cols if c not in df.columns]
        if unknown:
            allowed = ["algorithm", "problem", *varying_columns(df)]
            raise ValueError(f"--by={by!r} is invalid: no column {', '.join(map(repr, unknown))} "
                             f"(group by any of {', '.join(allowed)} or another stored column)")
        return cols
    return ["algorithm", "problem", *[c for c in varying_columns(df) if c not in FOLDED[x]]]


def cmd_fit(args: argparse.Namespace) -> int:
    """The declared fits (claims table), or one exploratory fit with --x and --metric."""
    from analysis import rates
    from analysis.claims import claims_table
    from bench.store import load, open_store_data

    if args.boot < 100:
        raise ValueError(f"--boot={args.boot} is invalid: must be >= 100")
    if args.standalone and args.format != "latex":
        raise ValueError("--standalone is only used with --format latex")
    if args.format and (args.x or args.metric):
        raise ValueError("--format exports the declared fits' table; an exploratory fit prints text "
                         "(use --csv FILE for its rows)")
    if args.x or args.metric:
        if not (args.x and args.metric):
            raise ValueError("an exploratory fit needs both --x SCALE and --metric COLUMN")
        df = load(args.store)
        df = df[(df["status"] == "ok") & (df["eps"] < float("inf"))]
        window = tuple(args.window) if args.window else None
        if window and not 0 < window[0] < window[1]:
            raise ValueError(f"--window={list(window)} is invalid: must be LOW HIGH with 0 < LOW < HIGH")
        by = exploratory_groups(df, args.x, args.by)
        table = rates.fit_exponent(df, args.x, args.metric, by=by, window=window,
                                   n_boot=args.boot)
        print(f"exploratory fit (not declared in the spec): log {args.metric} vs log {args.x}, "
              f"one fit per {', '.join(by)}"
              + ("" if args.by else " (every grid column that varies; --by to choose)"))
        cols = [*by, "exponent", "ci_low", "ci_high", "se_ols", "r2", "n_points",
                "n_design", "dropped_design"]
        print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    else:
        table = claims_table(open_store_data(args.store), n_boot=args.boot)
        if args.format:
            from analysis.report.tables import claims_display, direction_lines, export

            if not len(table):
                raise ValueError(f"--format {args.format}: no declared fit of {args.store} has data")
            keys = list(zip(table["view"], table["x"], strict=True))
            sys.stdout.write(export(
                claims_display(table), args.format, notes=direction_lines(keys),
                caption=f"Declared fits of {args.store}: measured exponents with 95% CIs.",
                label="tab:dprates-fits", standalone=args.standalone))
        else:
            _print_claims(table)
    if args.csv:
        out = table.drop(columns=[c for c in ("x_design", "y_design", "chosen") if c in table])
        out.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    return 0


def cmd_regate(args: argparse.Namespace) -> int:
    """A claims CSV with its verdicts re-derived by `analysis.claims.apply_gate` from its own
    flags (and `declared` from the committed specs), the rest of every row unchanged."""
    import pandas as pd

    from analysis.claims import apply_gate
    from analysis.report.build import CSV_COLUMNS
    from bench.measured import declared_from_specs

    path = Path(args.csv)
    if not path.is_file():
        raise ValueError(f"csv={args.csv!r} is invalid: no such file")
    table = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=str)
    if not {"verdict", "flags", "spec", "fit", "mode", "algorithm"} <= set(table.columns):
        raise ValueError(f"csv={args.csv!r} is invalid: not a claims CSV (dprates report --csv)")
    before = table["verdict"].value_counts().to_dict()
    if "declared" not in table:
        table["declared"] = declared_from_specs(table)
    gated = apply_gate(table.fillna({"rules_verdict": "", "two_term_verdict": ""}))
    cols = [c for c in CSV_COLUMNS if c in gated] + [c for c in gated if c not in CSV_COLUMNS]
    out = Path(args.output or path)
    gated[cols].to_csv(out, index=False)
    after = gated["verdict"].value_counts().to_dict()
    print(f"wrote {out}: {len(gated)} rows; verdicts before "
          + ", ".join(f"{k} {v}" for k, v in sorted(before.items()))
          + "; after " + ", ".join(f"{k} {v}" for k, v in sorted(after.items())))
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
        print(f"wrote {args.report} ({rep['pages']} pages)")
    print(f"total {time.perf_counter() - t0:.0f} s (sweeps "
          + ", ".join(f"{k} {v:.0f} s" for k, v in res["timings"].items()) + ")")
    return 0 if agree == len(covered) else 1


def cmd_report(args: argparse.Namespace) -> int:
    from analysis.report.build import write_report
    from bench.store import open_store_data

    res = write_report([open_store_data(p) for p in args.store], args.output, n_boot=args.boot,
                       csv=args.csv, figures=args.figures)
    print(f"wrote {res['path']} ({res['pages']} pages)" + (f", {args.csv}" if args.csv else "")
          + (f", figures in {args.figures}" if args.figures else ""))
    if args.print:
        _print_claims(res["claims"])
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from analysis.claims import claims_table, fit_points_table, paired_table
    from analysis.report import plots
    from analysis.report.build import _chosen_rows
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
                    sub = _chosen_rows(sub, f)
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


def cmd_audit(args: argparse.Namespace) -> int:
    """Black-box audit table (and, with --faults, the planted-bug table over three layers)."""
    import functools
    import time

    import algorithms
    from algorithms.privacy.faults import FAULTS
    from analysis.privacy_checks.audit import NOT_AUDITED, audit, audit_instance_name
    from analysis.privacy_checks.fault_table import fault_table
    from bench.plugins import load_plugins, loaded

    algs = algorithms.available() if args.algorithm == "all" else [args.algorithm]
    for a in algs:
        algorithms.get_algorithm(a)
        if a in NOT_AUDITED and args.algorithm != "all":
            raise ValueError(f"algorithm={a!r} has no one-release audit instance: {NOT_AUDITED[a]}")
    outside = [a for a in algs if a not in algorithms.BUILTIN]
    params = parse_assignments(args.param, "--param")
    skipped = [a for a in algs if a in NOT_AUDITED or (a in outside and audit_instance_name(a) is None)]
    algs = [a for a in algs if a not in skipped]
    # Workers (loky) start without the plugins this process loaded: each loads them first.
    setup = functools.partial(load_plugins, loaded()) if loaded() else None
    eps_list = args.eps or [0.5, 1.0, 2.0]
    for e in eps_list:
        if not 0 < e < float("inf"):
            raise ValueError(f"--eps={e} is invalid: must be a finite number > 0")
    if args.runs < 100:
        raise ValueError(f"--runs={args.runs} is invalid: must be >= 100")
    faults = None
    if args.faults:
        faults = tuple(FAULTS) if args.faults == "all" else tuple(args.faults.split(","))
        bad = [f for f in faults if f not in FAULTS]
        if bad:
            raise ValueError(f"--faults={args.faults!r} is invalid: must be 'all' or among "
                             f"{', '.join(FAULTS)}")
    t0 = time.perf_counter()
    if outside:
        from analysis.privacy_checks.plugin_checks import check_plugin

        e = eps_list[0]
        print(f"Sensitivity check of outside algorithms (layer 1 on the releases reported to the "
              f"probe, and a same-seed replay of the algorithm's own code with one record "
              f"replaced; problem {args.problem}, d {args.d}, eps {e:g}, record mode):")
        for a in outside:
            r = check_plugin(a, problem=args.problem, d=args.d, eps=e, delta=args.delta,
                             params=params, seed=args.seed)
            print(f"  {a:22s} {r.label}  ({r.releases} releases, largest move "
                  f"{r.max_ratio:.3g} x the told sensitivity)")
        print()
    print(f"Black-box audit: {args.runs} runs on D and on D' (one canary), delta {args.delta:g}; "
          "eps_lb: 95% lower confidence bound (Clopper-Pearson, test chosen on a held-out half);")
    print("mu: empirical Gaussian-DP mu (95% CI) against the accountant's. Pass: eps_lb <= eps and "
          "mu's 99.9% lower bound <= the accountant's mu.")
    print(f"  {'algorithm':22s} {'eps':>5s} {'eps_lb':>7s} {'mu (95% CI)':>22s} "
          f"{'accountant mu':>13s}  result")
    for a in skipped:
        why = NOT_AUDITED.get(a, "it derives from no audited built-in algorithm, so no "
                                 "one-release instance fits it")
        print(f"  {a:22s} not audited here: {why}")
    for a in algs:
        for e in eps_list:
            r = audit(a, e, delta=args.delta, runs=args.runs, seed=args.seed, n_jobs=args.jobs or -1,
                      setup=setup)
            print(f"  {a:22s} {e:5g} {r.eps_lb:7.3f} {r.mu_empirical:8.3f} [{r.mu_low:5.3f}, "
                  f"{r.mu_high:5.3f}] {r.mu_accountant:13.3f}  {'FLAGGED' if r.flagged else 'pass'}")
    if args.multi:
        from analysis.privacy_checks.multi_release_audit import MULTI_RELEASE_ROWS, multi_release_audit

        print(f"\nMulti-release audit ({args.runs} runs on D and on D', eps 8, delta {args.delta:g}): mu of "
              "the whole released sequence (linear test fitted on a held-out half, 95% CI), the")
        print("exact mu of that sequence from the noise used, and the accountant's. Flagged: 99.9% "
              "lower bound above the accountant's mu.")
        print(f"  {'scenario':15s} {'planted bug':14s} {'mu (95% CI)':>22s} {'exact':>6s} "
              f"{'accountant':>10s}  result")
        for sc, fl in MULTI_RELEASE_ROWS:
            r = multi_release_audit(sc, delta=args.delta, runs=max(args.runs, 200), faults=fl,
                                    seed=args.seed, n_jobs=args.jobs or -1)
            print(f"  {sc:15s} {','.join(fl) or '-':14s} {r.mu_empirical:8.3f} [{r.mu_low:5.3f}, "
                  f"{r.mu_high:5.3f}] {r.mu_exact:6.3f} {r.mu_accountant:10.3f}  "
                  f"{'FLAGGED' if r.flagged else 'pass'}")
    if faults:
        e = args.fault_eps
        print(f"\nPlanted bugs (eps {e:g}; layer 1 sensitivity, layer 2 noise KS, layer 3 audit with "
              f"{args.fault_runs} runs):")
        print(f"  {'bug':15s} {'algorithm':22s} {'eps_lb':>7s}  caught by")
        for row in fault_table(eps=e, runs=args.fault_runs, seed=args.seed, n_jobs=args.jobs or -1,
                               faults=faults):
            print(f"  {row['fault']:15s} {row['algorithm']:22s} {row['eps_lb']:7.3f}  {row['caught_by']}")
    print(f"\n{time.perf_counter() - t0:.1f} s")
    return 0


def describe_cost(plan, jobs: int) -> str:
    """The dry-run's cost line: the estimate, its spread and what it rests on."""
    from bench.runner import format_seconds

    est = plan.cost
    if not plan.pending:
        return "estimated cost: nothing to run"
    wall = f"{format_seconds(est.mid / jobs)} of wall time on {jobs} jobs"
    if est.learned and not est.bounded:
        return (f"estimated cost: {format_seconds(est.mid)} of CPU (interquartile range "
                f"{format_seconds(est.low)} to {format_seconds(est.high)}), about {wall} "
                f"({plan.cost_basis})")
    if est.learned:
        return (f"estimated cost: {format_seconds(est.mid)} of CPU, about {wall}; {est.bounded} "
                f"of {len(plan.pending)} cells priced at their upper bound (budget or horizon T: "
                f"no stored cells of their algorithm and problem yet) ({plan.cost_basis})")
    return (f"estimated cost: {format_seconds(max(est.mid, 1.0))} of CPU or more, {wall} at the "
            f"default rates ({plan.cost_basis}: each cell priced at its budget or horizon T plus "
            "0.3 s; algorithms that loop in Python can take far longer; a rerun after some cells "
            "are stored learns the real rates)")


def _default_store(spec_name: str) -> str:
    return f"results/{spec_name}.sqlite"


def cmd_sweep(args: argparse.Namespace) -> int:
    from bench.config import load_spec
    from bench.runner import plan_sweep, run_sweep

    spec = load_spec(args.spec)
    out = args.out or _default_store(spec.name)
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs={args.jobs} is invalid: must be an integer >= 1")
    if args.backend == "dask" and not args.scheduler:
        raise ValueError("--backend dask needs --scheduler ADDRESS (e.g. tcp://127.0.0.1:8786)")
    if args.scheduler and args.backend != "dask":
        raise ValueError(f"--scheduler={args.scheduler!r} is only used with --backend dask")
    if args.dry_run:
        plan = plan_sweep(spec, out, args.retry_failed)
        print(f"spec {spec.name} ({spec.source}): {len(plan.cells)} cells, {plan.done} already in "
              f"{out}, {len(plan.pending)} to run"
              + (f" ({plan.failed_to_retry} failed cells to retry)" if args.retry_failed else ""))
        if plan.status_counts:
            print("  stored: " + ", ".join(f"{k} {v}" for k, v in sorted(plan.status_counts.items())))
        jobs = args.jobs or __import__("bench.runner").runner.default_jobs()
        print("  " + describe_cost(plan, jobs))
        return 0
    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # SIGTERM ends like Ctrl-C: workers stopped, store consistent

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        res = run_sweep(spec, out, jobs=args.jobs, backend=args.backend, scheduler=args.scheduler,
                        retry_failed=args.retry_failed, progress=not args.quiet,
                        blas_threads=None if args.blas_threads == 0 else args.blas_threads)
    except KeyboardInterrupt:
        from bench.store import load

        stored = len(load(out)) if Path(out).is_file() else 0
        print(f"\ninterrupted: {stored} of {len(spec.cells())} cells are stored in {out}; "
              f"rerun `dprates sweep {args.spec}` to resume", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(res.counts.items())) or "nothing to run"
    print(f"{spec.name}: {res.ran} cells run ({counts}), {res.skipped} already stored, "
          f"{res.wall:.1f} s; store {res.store}")
    return 0


def varying_columns(df) -> list[str]:
    """The grid columns (and knob columns param_*) that take more than one value in `df`."""
    cands = ["d", "n", "target_alpha", "eps", "delta", "data",
             *sorted(c for c in df.columns if c.startswith("param_"))]
    return [c for c in cands if c in df and df[c].nunique(dropna=False) > 1]


def _cell_label(r, cols: list[str]) -> str:
    def show(v: Any) -> str:
        return f"{v:g}" if isinstance(v, float) else str(v)

    parts = [f"{c.removeprefix('param_')}={show(r[c])}" for c in cols]
    return f"{r['algorithm']}/{r['problem']} " + " ".join([*parts, f"rep={r['rep']}"])


def cmd_status(args: argparse.Namespace) -> int:
    from bench.store import load, load_meta

    meta = load_meta(args.store)
    df = load(args.store, current=not args.all)
    print(f"store {args.store}: spec {meta.get('spec_name', '?')} ({meta.get('spec_source', '?')}), "
          f"updated {meta.get('updated', '?')}")
    print(f"{len(df)} cells" + ("" if args.all else " of the current spec"))
    for status, count in df["status"].value_counts().sort_index().items():
        print(f"  {status:9s} {count}")
    cols = varying_columns(df)
    if cols:
        print("grid columns that vary: " + ", ".join(c.removeprefix("param_") for c in cols))
    ok = df[df["wall"].notna()].sort_values("wall", ascending=False).head(args.slowest)
    if len(ok):
        print(f"slowest {len(ok)} cells (wall s):")
        for _, r in ok.iterrows():
            print(f"  {r['wall']:8.2f}  {_cell_label(r, cols)} [{r['status']}]")
    failed = df[df["status"].isin(["error", "timeout"])]
    if len(failed):
        print(f"failures ({len(failed)}):")
        for _, r in failed.iterrows():
            first = (r["error_message"] or "").strip().splitlines()
            print(f"  {r['key'][:12]} {_cell_label(r, cols)}: {r['error_type']}: "
                  f"{first[0] if first else ''}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from bench.store import load

    if bool(args.csv) == bool(args.parquet):
        raise ValueError("export needs exactly one of --csv FILE or --parquet FILE")
    if args.parquet:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ValueError("--parquet needs pyarrow, which is not installed: pip install pyarrow "
                             "(or use --csv FILE)") from None
    df = load(args.store, current=not args.all)
    for col in ("problem_params", "params", "knobs", "params_used", "warnings"):
        df[col] = [json.dumps(v, default=str) for v in df[col]]
    if args.csv:
        df.to_csv(args.csv, index=False)
        print(f"wrote {len(df)} rows to {args.csv}")
    else:
        df.to_parquet(args.parquet, index=False)
        print(f"wrote {len(df)} rows to {args.parquet}")
    return 0


RUN_EPILOG = """\
what the result means:
  alpha_best        alpha_SOSP = max(||grad F||, max(0, -lambda_min(hess F))^2 / rho)
                    of the best iterate (by the population oracle): the accuracy the sweeps
                    and fits use. alpha_last: of the final iterate. alpha_selected: of the
                    iterate with the smallest private gradient estimate (a choice the
                    algorithm could make itself, without the population oracle).
  samples_used      samples consumed; less than --n when the run ends at its own horizon
                    (stop_reason T_reached: the rules' step count T = B0 M / gamma^2 was
                    walked before the data ran out), data_exhausted, target_reached (with
                    --stop-at-target), diverged or timeout.
  samples_to_target samples consumed when alpha_SOSP first fell to --target-alpha
                    (null if it never did: a censored run).
  eps_eff           (parameters) the eps the rules budget each release with after composing
                    the run's releases; eps_spent: the whole run's eps (at the given delta).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dprates",
        description="Benchmark the convergence rates of differentially private non-convex optimizers.")
    sub = parser.add_subparsers(dest="command", required=True)
    # Every command resolves names, so every command takes --plugin (bench.plugins).
    plugin_opt = argparse.ArgumentParser(add_help=False)
    plugin_opt.add_argument("--plugin", action="append", default=[], metavar="PATH_OR_MODULE",
                            help="import an outside algorithm / problem module first (repeatable)")
    _add_parser = sub.add_parser
    sub.add_parser = lambda *a, **kw: _add_parser(*a, parents=[plugin_opt], **kw)  # type: ignore[method-assign]
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
    p.add_argument("--boot", type=int, default=2000, help="bootstrap resamples for stores")
    p.set_defaults(func=cmd_claims)
    p = sub.add_parser("list", help="registered problems and algorithms")
    p.add_argument("--params", default=None, metavar="NAME",
                   help="list a problem's parameters or an algorithm's knobs instead")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("run", help="run one algorithm on one problem and print its metrics",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=RUN_EPILOG)
    p.add_argument("algorithm")
    p.add_argument("--problem", required=True)
    p.add_argument("--n", required=True, help="sample budget (200000 or 2e5)")
    p.add_argument("--target-alpha", type=_positive_float, default=None,
                   help="configure the algorithm for this accuracy (its batch sizes, thresholds "
                        "and horizon follow from it) and report samples_to_target")
    p.add_argument("--stop-at-target", action="store_true",
                   help="end the run when alpha_SOSP first falls to --target-alpha")
    p.add_argument("--d", type=int, required=True, help="dimension")
    p.add_argument("--eps", type=_positive_float, required=True, help="privacy eps (inf: non-private)")
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calibration", default="tight", help="tight (default) or theory")
    p.add_argument("--data", choices=["records", "counts"], default=None,
                   help="records, or counts (exact batch statistics); default: counts where the "
                        "problem supports it")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="algorithm knob or parameter override (repeatable)")
    p.add_argument("--problem-param", action="append", metavar="KEY=VALUE",
                   help="problem parameter (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("sweep", help="run a sweep spec (TOML) into a resumable SQLite store")
    p.add_argument("spec", help="path of a sweep spec, e.g. bench/configs/quick.toml")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--backend", choices=["loky", "dask", "sequential"], default="loky")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address (with --backend dask)")
    p.add_argument("--out", default=None, help="store path (default results/<spec name>.sqlite)")
    p.add_argument("--retry-failed", action="store_true", help="rerun cells stored as error/timeout")
    p.add_argument("--dry-run", action="store_true", help="print the plan and cost; run nothing")
    p.add_argument("--blas-threads", type=int, default=1,
                   help="BLAS threads per worker (default 1; 0 leaves the library default)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)
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
    p.set_defaults(func=cmd_export)
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
    p.set_defaults(func=cmd_fit)
    p = sub.add_parser("regate", help="re-derive a claims CSV's verdicts under the regime gate "
                       "(from its own flags: ceiling / floor -> not in regime)")
    p.add_argument("csv", help="a claims CSV (dprates report --csv), e.g. reports/reference_exponents.csv")
    p.add_argument("-o", "--output", default=None, help="write here (default: rewrite the CSV)")
    p.set_defaults(func=cmd_regate)
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
    p = sub.add_parser("demo", help="the quick sweep, its fit and reports/quick.pdf (`make demo`)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--out", default=None, help="store path (default results/quick.sqlite)")
    p.add_argument("--report", default="reports/quick.pdf", help="report path (default reports/quick.pdf)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_demo)
    return parser


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

