"""`dprates sweep`: a sweep spec into its resumable store (or, with --dry-run, the plan and its
cost estimate)."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any


def describe_cost(plan, jobs: int) -> str:
    """The dry-run's cost line: the estimate, its spread and what it rests on."""
    from bench.plan import format_seconds

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
                f"no stored or shipped rates of their algorithm yet) ({plan.cost_basis})")
    return (f"estimated cost: {format_seconds(max(est.mid, 1.0))} of CPU or more, {wall} at the "
            f"default rates ({plan.cost_basis}: each cell priced at its budget or horizon T plus "
            "0.3 s; algorithms that loop in Python can take far longer; a rerun after some cells "
            "are stored learns the real rates)")


#: The exit status of a sweep that ran a plugin whose privacy check said FAILED
#: (--allow-unverified): not 0, so a script or CI that runs it notices.
EXIT_PRIVACY_FAILED = 3


def default_store(spec_name: str) -> str:
    return f"results/{spec_name}.sqlite"


def sweep_command(args: argparse.Namespace, retry_failed: bool = False) -> str:
    """The sweep command as the user gave it (its options that change what runs or where it is
    stored), for the resume hint: rerunning it resumes the same store. Shell-quoted, so a path
    with a space pastes as one word; `retry_failed`: with --retry-failed (the hint after failed
    cells) whether or not it was given."""
    import shlex

    words = ["dprates", "sweep"]
    for p in getattr(args, "plugin", []) or []:
        words += ["--plugin", str(p)]
    words.append(str(args.spec))
    for flag, value in (("--out", args.out), ("--jobs", args.jobs),
                        ("--scheduler", args.scheduler)):
        if value is not None:
            words += [flag, str(value)]
    if args.backend != "loky":
        words += ["--backend", args.backend]
    if args.blas_threads != 1:
        words += ["--blas-threads", str(args.blas_threads)]
    for flag in ("retry_failed", "allow_unverified", "quiet"):
        if getattr(args, flag, False) or (flag == "retry_failed" and retry_failed):
            words.append("--" + flag.replace("_", "-"))
    return shlex.join(words)


def cmd_sweep(args: argparse.Namespace) -> int:
    from bench.config import load_spec
    from bench.plan import format_seconds
    from bench.runner import plan_sweep, run_sweep

    spec = load_spec(args.spec)
    out = args.out or default_store(spec.name)
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs={args.jobs} is invalid: must be an integer >= 1")
    if args.backend == "dask" and not args.scheduler:
        raise ValueError("--backend dask needs --scheduler ADDRESS (e.g. tcp://127.0.0.1:8786)")
    if args.scheduler and args.backend != "dask":
        raise ValueError(f"--scheduler={args.scheduler!r} is only used with --backend dask")
    if args.dry_run:
        from bench.runner import compute_cell

        plan = plan_sweep(spec, out, args.retry_failed,
                          probe=None if args.no_probe else compute_cell)
        print(f"spec {spec.name} ({spec.source}): {len(plan.cells)} cells, {plan.done} already in "
              f"{out}, {len(plan.pending)} to run"
              + (f" ({plan.failed_to_retry} failed cells to retry)" if args.retry_failed else ""))
        if plan.status_counts:
            print("  stored: " + ", ".join(f"{k} {v}" for k, v in sorted(plan.status_counts.items())))
        jobs = args.jobs or __import__("bench.runner").runner.default_jobs()
        print("  " + describe_cost(plan, jobs))
        if plan.limit_warning:
            print("  warning: " + plan.limit_warning)
            for cell, seconds in plan.over_limit:
                print(f"    {cell.label()}: ~{format_seconds(seconds)}")
        print_forecast(spec, plan.cells)
        return 0
    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # SIGTERM ends like Ctrl-C: workers stopped, store consistent

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        res = run_sweep(spec, out, jobs=args.jobs, backend=args.backend, scheduler=args.scheduler,
                        retry_failed=args.retry_failed, progress=not args.quiet,
                        blas_threads=None if args.blas_threads == 0 else args.blas_threads,
                        allow_unverified=getattr(args, "allow_unverified", False))
    except KeyboardInterrupt:
        from bench.store import load

        stored = len(load(out)) if Path(out).is_file() else 0
        print(f"\ninterrupted: {stored} of {len(spec.cells())} cells are stored in {out}; "
              f"rerun `{sweep_command(args)}` to resume", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(res.counts.items())) or "nothing to run"
    print(f"{spec.name}: {res.ran} cells run ({counts}), {res.skipped} already stored, "
          f"{res.wall:.1f} s; store {res.store}")
    print_failures(res.store, sweep_command(args, retry_failed=True))
    if res.privacy_failed:  # run with --allow-unverified: the cells are there, marked FAILED
        for alg, label in res.privacy_failed.items():
            print(f"dprates: privacy {label.split(':')[0]}: {alg}:{label.partition(':')[2]} "
                  "(its cells ran with --allow-unverified and are stored marked FAILED)",
                  file=sys.stderr)
        return EXIT_PRIVACY_FAILED
    return 0


def print_failures(store: Any, rerun: str) -> int:
    """Every failed cell of the store's current spec, named (issue 73, item 6): its algorithm,
    problem, grid point, status and error, then `rerun` (the command that reruns them, as the
    user gave it); nothing when none failed. Returns how many failed."""
    from bench.cli.stores import failure_lines
    from bench.store import load

    lines = failure_lines(load(store))
    if lines:
        print(f"{len(lines)} cells failed (stored with their error):")
        print("\n".join(lines))
        print(f"rerun them with `{rerun}`")
    return len(lines)


def print_forecast(spec: Any, cells: list) -> None:
    """The regime gate before the run (issue 28, point 1): per declared fit and curve, whether
    the window is in its claim's regime by the claim's own bound (`algorithms.regime_forecast`),
    the n where the claim first binds and where its two terms cross."""
    import math

    from algorithms.regime_forecast import describe_n, forecast_fit, who_decides
    from analysis.verdict_engine.predictions import fit_metric

    for fit in spec.fits:
        # eps = inf controls (issue 55, item 6) are not the fit's points unless its `where`
        # asks for them (fit_points_table keeps them out the same way): no forecast line each
        eps_where = fit.where.get("eps")
        wants_inf = eps_where is not None and math.isinf(float(eps_where))
        rows = forecast_fit(fit, [c for c in cells if wants_inf or math.isfinite(c.eps)], fit_metric)
        print(f"  fit {fit.name} ({fit.view}, x = {fit.x}, window {fit.window[0]:g}-{fit.window[1]:g}): "
              "regime forecast")
        for r in rows:
            setting = ", ".join(f"{k} {r[k]:g}" for k in ("d", "eps") if r[k] is not None)
            extra = ""
            if r["points"]:
                extra = f"; binds from n = {describe_n(r['binding_n'])}"
                rules = r["source"].from_rules
                if not rules and not math.isnan(r["crossover_n"]) and r["crossover_n"] >= 1:
                    extra += f", terms cross at n = {describe_n(r['crossover_n'])}"
                # the source; "advisory" only where the forecast does not already say who decides
                said = bool(who_decides(r["flags"], r["source"]))
                extra += f" [{r['source']}" + ("" if rules or said else "; advisory") + "]"
            print(f"    {r['algorithm']} / {r['problem']}" + (f" ({setting})" if setting else "")
                  + f": {r['forecast']}{extra}")


def cmd_cost_rates(args: argparse.Namespace) -> int:
    """Write the shipped cost rates (`bench/measured_rates.json`) from finished stores."""
    import json
    from pathlib import Path

    from bench.cost import SHIPPED_RATES, shipped_rates_table

    missing = [s for s in args.stores if not Path(s).is_file()]
    if missing:
        raise ValueError(f"store {missing[0]!r} is invalid: no such file")
    table = shipped_rates_table(args.stores)
    args.output = args.output or str(SHIPPED_RATES)
    Path(args.output).write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {args.output}: {len(table['rates'])} rates from "
          f"{sum(r['cells'] for r in table['rates'] if r['problem'] != '*')} cells of "
          f"{len(table['specs'])} stores")
    return 0
