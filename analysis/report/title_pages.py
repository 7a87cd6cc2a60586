"""A store's title page (spec, date, provenance, counts by status, grid, problems and their data
modes, the delta convention, the declared fits; `title_page`) and, in a multi-store report, the
section divider before its pages with the design notes its spec opens with (`section_page`).
"""

from __future__ import annotations

import datetime as _dt
import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.declarations import StoreData
from analysis.report.layout import A4, text_page, wrap_paragraphs


def _data_modes(df: pd.DataFrame) -> dict[str, str]:
    """Per problem, the data mode(s) its cells ran in (see METHODS, "Data modes")."""
    if "data" not in df or not len(df):
        return {}
    return {str(k): "/".join(sorted(map(str, v.dropna().unique())))
            for k, v in df.groupby("problem")["data"]}


def _delta_lines(df: pd.DataFrame, spec: Any) -> list[str]:
    """The delta convention and how it compares with the records a run consumed."""
    ok = df[(df["status"] == "ok") & np.isfinite(df["eps"].astype(float))]
    if not len(ok):
        return []
    used = ok["samples_used"].astype(float)
    n_delta = (used * ok["delta"].astype(float)).max()
    deltas = ", ".join(f"{v:.3g}" for v in sorted(ok["delta"].unique()))
    rules = [e for e in spec.grid.get("delta", []) if isinstance(e, str)]
    how = (f"rule {', '.join(rules)}: 1 / budget^p" if rules else "fixed, not a function of n")
    lines = [f"delta       {deltas} per run ({how}); runs consumed up to "
             f"{used.max():.3g} records, so n delta <= {n_delta:.3g}"]
    if n_delta > 1:
        lines.append("            n delta > 1: as a deployed guarantee this would be weak (the "
                     "usual reading wants delta << 1/n);")
        lines.append("            here delta is a parameter of the rules whose rates we measure "
                     "(log(1/delta) enters the noise).")
    return lines


def title_page(pdf: PdfPages, data: StoreData) -> None:
    df = data.cells
    counts = df["status"].value_counts().sort_index()
    prov = df.iloc[0] if len(df) else {}
    spec = data.spec
    lines = [
        f"spec        {spec.name}  ({spec.source})",
        f"            {spec.description}",
        f"store       {data.path}",
        f"report date {_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"cells       {len(df)}: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
        "",
        "provenance (first cell)",
        f"  dprates {prov.get('dprates_version', '?')}, git {prov.get('git_commit', '') or 'n/a'}",
        f"  Python {prov.get('python', '?')}, numpy {prov.get('numpy', '?')}, host {prov.get('host', '?')}",
        f"  first cell started {df['started'].min() if len(df) else '?'}",
        f"  last cell finished {df['finished'].max() if len(df) else '?'}",
        f"  total CPU {df['cpu'].sum():.1f} s, wall of cells {df['wall'].sum():.1f} s",
        "",
        "grid",
        *[f"  {k:12s} {v}" for k, v in spec.grid.items()],
        f"  repetitions  {spec.repetitions} (paired data seeds), base seed {spec.seed}",
        "",
        "problems:   " + ", ".join(p["name"] + (f" {p['params']}" if p["params"] else "")
                                   for p in spec.problems),
        "data mode:  " + ", ".join(f"{name} {mode}" for name, mode in _data_modes(df).items()),
        "algorithms: " + ", ".join(a["name"] + (f" grid {a['grid']}" if a["grid"] else "")
                                   for a in spec.algorithms),
        "",
        *_delta_lines(df, spec),
        "",
        "declared fits (fixed before the run)",
        *[f"  {f.name}: {f.view}, x = {f.x}, y = {f.y}, window {f.window}, mode {f.mode}"
          + (f", where {f.where}" if f.where else "") for f in spec.fits],
    ]
    fig = plt.figure(figsize=A4)
    fig.text(0.08, 0.95, "dprates report", fontsize=20, weight="bold", va="top")
    fig.text(0.08, 0.91, f"{spec.name}: measured convergence exponents of private optimizers",
             fontsize=11, va="top")
    width = int(0.84 * A4[0] * 72 / (0.61 * 8))
    wrapped = []
    for line in lines:
        wrapped += textwrap.wrap(line, width, subsequent_indent=" " * 14, break_long_words=True,
                                 break_on_hyphens=False) or [""]
    fig.text(0.08, 0.86, "\n".join(wrapped[:92]), fontsize=8, va="top", family="monospace")
    pdf.savefig(fig)
    plt.close(fig)


def spec_design_notes(text: str) -> str:
    """The comment block a spec opens with (its design: instance, window, why), unwrapped."""
    lines = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        lines.append(stripped.lstrip("#").strip())
    return "\n".join(lines)


def section_page(pdf: PdfPages, data: StoreData) -> None:
    """A divider before a store's pages in a multi-store report: its description and the design
    notes its spec opens with, so each section's plots come with the reasons for its design."""
    spec = data.spec
    notes = spec_design_notes(getattr(spec, "text", ""))
    body = f"{spec.description}\n\n" + (notes or "(the spec has no design notes)")
    text_page(pdf, f"Section: {spec.name}", wrap_paragraphs(body), size=9)
