"""The language-model experiment's outputs (issue 74, item 5): reports/lm_experiment.csv (the
table), lm_experiment_claims.csv (the claim rows), lm_experiment.md (setup, corpus, cost, table,
claims: what README and the appendix quote), lm_experiment.png (validation perplexity against
the step, a panel per eps) and lm_experiment.pdf (the same on landscape pages)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis import lm_results as lr

COLORS = {"sgd": "#999999", "adagrad": "#555555", "dp_sgd": "#1f77b4", "pasan": "#ff7f0e",
          "pagan": "#2ca02c"}


def curves_figure(tuned_df: pd.DataFrame, eps_values=(0.5, 1.0, 3.0)):
    """Figure 2's shape: per eps, each private method's validation perplexity against the step
    (mean over seeds, the band their min..max), the non-private methods on every panel."""
    fig, axes = plt.subplots(1, len(eps_values), figsize=(11.69, 4.6), sharey=True)
    ok = tuned_df[tuned_df["status"] == "ok"]
    for ax, eps in zip(np.atleast_1d(axes), eps_values, strict=True):
        for m in lr.METHOD_ORDER:
            sub = ok[(ok["method"] == m) & ((ok["eps"] == eps) | np.isinf(ok["eps"]))]
            if sub.empty:
                continue
            steps = np.asarray(sub["steps"].iloc[0], dtype=float)
            vals = np.array([c for c in sub["curve"] if len(c) == len(steps)], dtype=float)
            style = "--" if m in ("sgd", "adagrad") else "-"
            ax.plot(steps, vals.mean(axis=0), style, color=COLORS[m], label=lr.LABELS[m])
            ax.fill_between(steps, vals.min(axis=0), vals.max(axis=0), color=COLORS[m], alpha=0.15)
        ax.set_yscale("log")
        ax.set_title(f"eps = {eps:g}", fontsize=10)
        ax.set_xlabel("step")
        ax.grid(True, which="both", alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("validation perplexity")
    np.atleast_1d(axes)[0].legend(fontsize=8, loc="upper right")
    fig.suptitle("Language model (Shakespeare, LSTM 74k parameters): validation perplexity "
                 "against the step; each method at its tuned setting, mean over seeds, band "
                 "min..max", fontsize=9)
    fig.tight_layout()
    return fig


def _fmt_ci(m: float, lo: float, hi: float) -> str:
    if not math.isfinite(m):
        return "-"
    return f"{m:.1f} [{lo:.1f}, {hi:.1f}]" if math.isfinite(lo) else f"{m:.1f}"


def markdown(table: pd.DataFrame, claims: pd.DataFrame, spec: dict, df: pd.DataFrame,
             summary: str) -> str:
    """The experiment as the README and the appendix quote it."""
    s = spec["setup"]
    d = int(df["d"].dropna().iloc[0]) if df["d"].notna().any() else 0
    lines = [
        "# Seed 002's language-model experiment, at workstation scale",
        "",
        f"Corpus: Shakespeare (`shakespeare` 0.6), split by work; vocabulary {s['vocab']:,} words "
        f"counted on the public part; windows of {s['window']} tokens.",
        "",
        *[f"- {line}" for line in summary.splitlines()],
        "",
        f"Model: LSTM, {s['hidden']} units, tied softmax; {d:,} "
        "parameters (the paper's: 2.1e6). Poisson batches of expected size "
        f"{s['b']}, {s['steps']} steps, delta {s['delta']:g}; noise calibrated by PLD "
        "(replace-one), the moments accountant's eps for the same noise beside it.",
        f"Grid: step-size multipliers {spec['lr_mults_private']} (private) and {spec['lr_mults']} "
        f"(non-private), B {spec['B']} (relative to the public "
        f"RMS gradient norm), tuned at eps {spec['tune_eps']:g} on seed 0 by final validation "
        f"perplexity; the tuned settings at eps {spec['eps']} over seeds {spec['seeds']}.",
        f"Cost: {len(df)} runs, {df['cpu'].sum() / 3600:.2f} CPU hours, "
        f"{df['wall'].sum() / 3600:.2f} run-hours of wall.",
        "",
        "| method | eps | lr mult | B | seeds | validation ppl [95% CI] | test ppl [95% CI] "
        "| noise z | moments-accountant eps |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        eps = "inf" if math.isinf(r.eps) else f"{r.eps:g}"
        acc = "-" if not math.isfinite(r.eps_moments_accountant) else f"{r.eps_moments_accountant:.2f}"
        lines.append(f"| {lr.LABELS[r.method]} | {eps} | {r.lr_mult:g} | {r.B:g} | {r.seeds} | "
                     f"{_fmt_ci(r.validation, r.validation_lo, r.validation_hi)} | "
                     f"{_fmt_ci(r.test, r.test_lo, r.test_hi)} | {r.noise_multiplier:.3f} | {acc} |")
    lines += ["", "| claim (seed 002) | verdict | Pagan - DP-SGD [95% CI] | Pagan - Pasan [95% CI] "
              "| resolution |", "|---|---|---|---|---|"]
    for r in claims.itertuples():
        lines.append(f"| {r.claim} | {r.verdict} | "
                     f"{_fmt_ci(r.pagan_minus_dp_sgd, r.pagan_minus_dp_sgd_lo, r.pagan_minus_dp_sgd_hi)} | "
                     f"{_fmt_ci(r.pagan_minus_pasan, r.pagan_minus_pasan_lo, r.pagan_minus_pasan_hi)} | "
                     f"+-{r.resolution:.1f} |")
    lines += ["", "A verdict reads the test perplexity of the last iterate: holds when both "
              "intervals lie below 0, fails when either lies above, undecided otherwise; a "
              "difference below the resolution could not have been seen. What differs from the "
              "paper: the corpus (Shakespeare, not WikiText-2), the model (3.5% of its "
              "parameters), the training length (under one epoch) and the grid (2 multipliers "
              "(private) x 2 B, tuned at one eps)."]
    return "\n".join(lines) + "\n"


def write_outputs(df: pd.DataFrame, spec: dict, out_dir: str | Path = "reports") -> dict[str, Path]:
    """Every output (module docstring) from the runs (`bench.lm.results.read_runs`) and the
    grid's spec; the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tuned = {m: tuple(v) for m, v in spec.get("tuned", {}).items()}
    tdf = lr.tuned_runs(df, tuned)
    table, claims = lr.perplexity_table(tdf), lr.claim_rows(tdf, tuple(spec["eps"]))
    summary = spec.get("corpus_summary", "")
    paths = {"csv": out_dir / "lm_experiment.csv", "claims": out_dir / "lm_experiment_claims.csv",
             "md": out_dir / "lm_experiment.md", "png": out_dir / "lm_experiment.png",
             "pdf": out_dir / "lm_experiment.pdf"}
    table.to_csv(paths["csv"], index=False, float_format="%.6g")
    claims.to_csv(paths["claims"], index=False, float_format="%.6g")
    text = markdown(table, claims, spec, df, summary)
    paths["md"].write_text(text)
    fig = curves_figure(tdf, tuple(spec["eps"]))
    fig.savefig(paths["png"], dpi=110, bbox_inches="tight")
    with PdfPages(paths["pdf"]) as pdf:
        pdf.savefig(fig)
        plt.close(fig)
        page = plt.figure(figsize=(11.69, 8.27))
        page.text(0.04, 0.96, text.replace("|", " "), va="top", ha="left", family="monospace",
                  fontsize=6.2, wrap=True)
        pdf.savefig(page)
        plt.close(page)
    return paths


README_BEGIN = ("<!-- lm-experiment: generated by `make reference-lm` from reports/lm_experiment.csv "
                "and lm_experiment_claims.csv; do not edit -->")
README_END = "<!-- lm-experiment: end -->"


def readme_block(table: pd.DataFrame, claims: pd.DataFrame) -> str:
    """The README's line (from the two CSVs `write_outputs` writes): each method's mean test
    perplexity per eps (the intervals are in reports/lm_experiment.md), then each claim row's
    verdict."""
    eps_values = sorted({e for e in table["eps"] if math.isfinite(e)})
    parts = []
    for m in lr.METHOD_ORDER:
        at = table[table["method"] == m].sort_values("eps")
        if at.empty:
            continue
        vals = "/".join(f"{v:.1f}" for v in at["test"])
        where = "non-private" if not np.isfinite(at["eps"]).any() else \
            "eps " + "/".join(f"{e:g}" for e in at["eps"])
        parts.append(f"{lr.LABELS[m].split(' (')[0]} {vals} ({where})")
    verdicts = ", ".join(f"{r.verdict} at eps {r.eps:g}" for r in claims.itertuples())
    return (f"Test perplexity (mean of the seeds; eps {'/'.join(f'{e:g}' for e in eps_values)}): "
            + "; ".join(parts) + f". Pagan below DP-SGD and Pasan: {verdicts}.")


__all__ = ["README_BEGIN", "README_END", "curves_figure", "markdown", "readme_block",
           "write_outputs"]
