"""`dprates fit`: the declared fits' exponent table (text or an export format), or one
exploratory fit; and the claims-table printout the report and demo commands share."""

from __future__ import annotations

import argparse
import sys

from bench.cli.stores import varying_columns

#: The verdict of a fit row whose algorithm declares no claim on the fit's metric (an ablation
#: such as tree_spider): there is nothing to be inconclusive about.
NO_CLAIM = "no claim"
#: What each mode of a fit row is (printed under `dprates fit`'s table).
MODE_NOTE = ("mode: theory = the parameter rules as written (every knob at its theory default); "
             "tuned = per x the knob setting of the spec's grid that does best (the envelope); "
             "fixed = the spec's fixed parameters. The row marked \"decides\" in column "
             "\"page 1\" is the one the report's page 1 (claims summary) reads the claim's "
             "verdict from: the fit's declared mode first, then a row in regime")


def mark_no_claim(table):
    """`verdict` "no claim" (not "inconclusive") on rows with no predicted exponent whose
    algorithm declares no claim on the row's metric (`NO_CLAIM`)."""
    from algorithms import get_algorithm

    if table is None or not len(table) or "predicted" not in table:
        return table
    def claimless(alg: str, metric: str) -> bool:
        try:
            claims = getattr(get_algorithm(alg), "claims", ())
        except ValueError:  # a plugin not loaded
            return False
        return not any(c.metric == metric for c in claims)

    out = table.copy()
    metric = out["metric"] if "metric" in out else [""] * len(out)
    no = [v == "inconclusive" and not (isinstance(p, (int, float)) and p == p) and claimless(a, m)
          for v, p, a, m in zip(out["verdict"], out["predicted"], out["algorithm"], metric,
                                strict=True)]
    out.loc[no, "verdict"] = NO_CLAIM
    if "verdict_kind" in out:  # the typed kind follows (analysis.verdict_engine.typed)
        out.loc[no, "verdict_kind"] = "no_claim"
    return out


def deciding_rows(claims) -> list[bool]:
    """Per fit row, True for the row page 1 of the report reads its claim's verdict from
    (`analysis.report.tables.claims_summary`'s ranking: measured, in regime, the fit's declared
    mode, hard problem first)."""
    import pandas as pd

    from analysis.report.tables import summary_rank

    marks = [False] * len(claims)
    if "metric" not in claims:
        return marks
    pos = {ix: i for i, ix in enumerate(claims.index)}
    for (_alg, _metric), hits in claims.groupby(["algorithm", "metric"], sort=False):
        if (hits["verdict"] == NO_CLAIM).all():
            continue
        ranked = sorted(((summary_rank(pd.Series({**r, "_order": k})), ix)
                         for k, (ix, r) in enumerate(hits.to_dict("index").items())),
                        key=lambda t: t[0])
        marks[pos[ranked[0][1]]] = True
    return marks


def print_claims(claims) -> None:
    import pandas as pd

    from analysis.report.tables import claims_display, direction_lines

    if claims is None or not len(claims):
        print("no declared fit has data (is the sweep finished? does the spec declare [[fit]]?)")
        return
    claims = mark_no_claim(claims)
    disp = claims_display(claims)
    at = list(disp.columns).index("mode") + 1 if "mode" in disp else len(disp.columns)
    disp.insert(at, "page 1", ["decides" if m else "" for m in deciding_rows(claims)])
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
    print_forecast_counts(claims)
    print(MODE_NOTE + ".")
    for line in direction_lines(list(zip(claims["view"], claims["x"], strict=True))):
        print(f"what faster / slower mean: {line}")


def print_forecast_counts(claims) -> None:
    """The regime forecast of the fits (`algorithms.regime_forecast`), counted per verdict and
    source: "in regime" included, so a reader sees how many fits the forecast passes."""
    if "forecast" not in claims:
        return
    counts: dict[tuple[str, str], int] = {}
    for f, src in zip(claims["forecast"], claims.get("forecast_source", [""] * len(claims)), strict=True):
        if isinstance(f, str) and f:
            counts[f, src if isinstance(src, str) else ""] = counts.get((f, src), 0) + 1
    if counts:
        print("regime forecast from the claims' bounds before the run (number of fits):")
        for (f, src), k in counts.items():
            print(f"  [{k}] {f}" + (f" ({src})" if src else ""))


def exploratory_groups(df, x: str, by: str | None) -> list[str]:
    """The grouping of an exploratory fit: `by` (comma- or space-separated column names), or
    algorithm, problem and every other grid column that varies (never pooled silently)."""
    from analysis.points import FOLDED

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
    from analysis.claims import claims_table
    from analysis.verdict_engine import rates
    from bench.store import load, open_store_data

    if args.boot < 100:
        raise ValueError(f"--boot={args.boot} is invalid: must be >= 100")
    if args.standalone and args.format != "latex":
        raise ValueError("--standalone is only used with --format latex")
    if args.format and (args.x or args.metric):
        raise ValueError("--format exports the declared fits' table; an exploratory fit prints text "
                         "(use --csv FILE for its rows)")
    if args.n_star is not None:
        return _print_n_star(args)
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
        table = mark_no_claim(claims_table(open_store_data(args.store), n_boot=args.boot))
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
            print_claims(table)
    if args.csv:
        out = table.drop(columns=[c for c in ("x_design", "y_design", "chosen") if c in table])
        out.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    return 0


def _print_n_star(args: argparse.Namespace) -> int:
    """`dprates fit STORE --n-star T1,T2 --metric COL`: n* per target and curve (every grid
    column that varies except n), from the error against n (`analysis.empirical_n_star`)."""
    import numpy as np
    import pandas as pd

    from analysis.empirical_n_star import empirical_n_star
    from bench.store import load

    try:
        targets = [float(v) for v in args.n_star.replace(" ", "").split(",") if v]
    except ValueError:
        raise ValueError(f"--n-star={args.n_star!r} is invalid: must be comma-separated error "
                         "levels, e.g. 0.05,0.02") from None
    if not targets or not all(t > 0 for t in targets):
        raise ValueError(f"--n-star={args.n_star!r} is invalid: must be error levels > 0")
    if not args.metric:
        raise ValueError("--n-star needs --metric COLUMN (the error the target is on, e.g. "
                         "emp_grad_best)")
    df = load(args.store)
    df = df[df["status"] == "ok"]
    if args.metric not in df:
        raise ValueError(f"--metric={args.metric!r} is invalid: not a stored column")
    by = ["algorithm", "problem", *[c for c in varying_columns(df) if c not in ("n", "target_alpha")]]
    rows = []
    for k, (key, g) in enumerate(df.groupby(by, dropna=False, sort=True)):
        if g["n"].nunique() < 2:
            continue
        for t in targets:
            r = empirical_n_star(g["n"].to_numpy(float), g["rep"].to_numpy(), g[args.metric].to_numpy(float),
                                 t, n_boot=args.boot, rng=np.random.default_rng([0, k]))
            rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
                         "target": t, "n_star": r.n_star, "ci_low": r.ci_low, "ci_high": r.ci_high,
                         "status": r.status, "n_design": r.n_design})
    if not rows:
        raise ValueError(f"--n-star: no curve of {args.store} has two or more design sizes n")
    table = pd.DataFrame(rows)
    print(f"empirical sample complexity: the smallest n whose {args.metric} (median over "
          "repetitions) reaches each target, log-log interpolated between design sizes; 95% "
          "stratified-bootstrap CI (inf: not reached by the largest n)")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    return 0

