"""`dprates status` and `dprates export`: what a store holds (counts by status, slowest
cells, failures) and its cells table as CSV or Parquet."""

from __future__ import annotations

import argparse
import json
from typing import Any


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
    lines = failure_lines(df, cols)
    if lines:
        print(f"failures ({len(lines)}):")
        print("\n".join(lines))
    return 0


def failure_lines(df, cols: list[str] | None = None) -> list[str]:
    """One line per failed cell (status error or timeout) of a cells table: its key, algorithm,
    problem, the grid values that vary, its seed, and the first line of its error."""
    cols = varying_columns(df) if cols is None else cols
    failed = df[df["status"].isin(["error", "timeout"])]
    out = []
    for _, r in failed.iterrows():
        msg = r["error_message"]
        first = msg.strip().splitlines() if isinstance(msg, str) else []  # NaN read back: none
        kind = r["error_type"] if isinstance(r["error_type"], str) else ""
        out.append(f"  {r['key'][:12]} {_cell_label(r, cols)} [{r['status']}]: {kind}: "
                   f"{first[0] if first else ''}")
    return out


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
    from bench.disclosure import EVALUATION_ONLY_COLUMNS

    df = load(args.store, current=not args.all)
    if not getattr(args, "with_evaluation_only", False):  # hidden by the accountant: not a fact
        df = df.drop(columns=[c for c in EVALUATION_ONLY_COLUMNS if c in df])
    for col in ("problem_params", "params", "knobs", "params_used", "warnings",
                *(c for c in EVALUATION_ONLY_COLUMNS if c in df)):
        df[col] = [json.dumps(v, default=str) for v in df[col]]
    if args.csv:
        df.to_csv(args.csv, index=False)
        print(f"wrote {len(df)} rows to {args.csv}")
    else:
        df.to_parquet(args.parquet, index=False)
        print(f"wrote {len(df)} rows to {args.parquet}")
    return 0
