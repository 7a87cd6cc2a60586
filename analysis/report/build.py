"""The PDF report of one or several stores (matplotlib PdfPages): `write_report` assembles it and
writes the claims CSV beside it (`CSV_COLUMNS`).

Pages, in order, each drawn by its own module of `analysis.report`: the claims summary
(`summary_page`) and the headline figure (`headline_page`); title (spec, date, provenance, counts
by status; `title_pages`); claims table, forest plots, every declared claim (`claims_pages`); the
local slopes of each fit still "than claimed" (`local_slopes_page`); budget use against the
rules (`budget_use_page`); path length (`claims_pages`); privacy (`privacy_page`); the share of eps
the noise spends (`eps_spent_page`); the atlas
(`atlas_page`); per store: its section divider (`title_pages`), one scaling page per declared
fit and mode (`scaling_pages`), paired differences (`claims_pages`), seed 002's loss curves
(`loss_curve_pages`) and private moments (`moment_pages`), trajectories of a median cell per
algorithm and problem (`cell_pages`); methods (`methods_text`); failures (only when a cell
failed; `cell_pages`). The page primitives and the layout check are in `layout`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from analysis.claims import claims_table, paired_table
from analysis.declarations import StoreData
from analysis.path_length import path_table
from analysis.privacy_checks.ledger import privacy_note, unverified_algorithms
from analysis.report.atlas_page import atlas_page
from analysis.report.budget_use_page import budget_use_page
from analysis.report.cell_pages import failures_page, trajectory_pages
from analysis.report.claims_pages import (
    claims_page,
    declared_claims_page,
    forest_page,
    paired_page,
    path_page,
)
from analysis.report.eps_spent_page import eps_spent_page
from analysis.report.headline_page import headline_page
from analysis.report.layout import LayoutCheckedPdf, _text_page, _wrap
from analysis.report.local_slopes_page import local_slopes_pages
from analysis.report.loss_curve_pages import loss_curve_pages
from analysis.report.methods_text import METHODS
from analysis.report.moment_pages import moment_pages
from analysis.report.privacy_page import privacy_page
from analysis.report.scaling_pages import scaling_pages
from analysis.report.summary_page import summary_table_pages
from analysis.report.tables import claims_summary
from analysis.report.title_pages import section_page, title_page
from analysis.verdict_engine import rates

CSV_COLUMNS = ["algorithm", "problem", "character", "view", "metric", "mode", "x", "predicted", "exponent",
               "ci_low", "ci_high", "verdict", "regime", "declared", "rules_predicted",
               "rules_verdict", "fit", "where", "spec", "window", "n_design", "n_points",
               "n_censored", "dropped_design", "se_ols", "r2", "method", "two_term_p",
               "two_term_ci_low", "two_term_ci_high", "two_term_verdict", "median_steps",
               "median_first_o1", "n_stuck", "alpha_x0", "alpha_top", "flags", "advisory", "forecast",
               "forecast_source", "binding_n", "crossover_n", "d", "eps", "n",
               # the verdict engine (issue 42): the CI the verdict reads is ci_low / ci_high
               "seed_ci_low", "seed_ci_high", "window_spread", "verdict_reason", "log_factors",
               "log_power", "log_power_low", "log_power_high", "log_missing", "bound_constant",
               "bound_at", "local_slopes", "approaching", "rules_source", "rules_ratio",
               "rules_ratio_trend", "private_share", "private_share_min", "private_share_source",
               "rules_private_share", "claim_verdict",
               "claim_fits", "claim_ratio", "claim_ratio_low", "claim_ratio_high", "rules_binding_n",
               "steps_per_horizon", "spent_fraction", "spent_fraction_min", "spent_fraction_max",
               # the fifth edition (issue 55): the rules test, the asymptote, the O~ test, the
               # margin, the resolution and the chain
               "margin", "design_points", "design_decades", "rules_residual",
               "rules_residual_low", "rules_residual_high", "rules_residual_spread",
               "rules_accepts_low", "rules_accepts_high", "asymptote", "asymptote_accuracy",
               "asymptote_meets", "asymptote_x_within_m", "asymptote_note", "log_allowance",
               "claim_band_low", "claim_band_high", "claim_test", "accepts_low", "accepts_high",
               "untestable", "rival_predicted", "separates_rival", "local_limit", "resolution",
               "chain"]


def write_report(stores: StoreData | list[StoreData], out: str | Path, n_boot: int = rates.N_BOOT,
                 csv: str | Path | None = None, figures: str | Path | None = None,
                 privacy: dict | None = None,
                 layout_problems: list[str] | None = None,
                 crossovers: pd.DataFrame | None = None,
                 laws: pd.DataFrame | None = None) -> dict[str, Any]:
    """Write the PDF report of one or several stores (opened by `bench.store.open_store_data`)
    to `out` (one claims table and forest plot for all; scaling, paired, trajectory and failure
    pages per store). `csv`: also write the claims table; `figures`: a directory for PNGs of
    each declared fit and the forest plot. Page 1 is the claims summary (`analysis.report.tables.
    claims_summary`; `privacy`: its optional per-row privacy notes), page 2 the headline plots.
    `layout_problems`: a list that receives every text running off a page or out of its
    table cell (see `overflowing_text`). `crossovers` / `laws`: the measured crossovers and their
    laws (reports/crossovers.csv, reports/crossover_laws.csv) for page 2."""
    out = Path(out)
    if out.suffix.lower() != ".pdf":
        raise ValueError(f"-o {str(out)!r} is invalid: the report is a .pdf file")
    datas = [stores] if isinstance(stores, StoreData) else list(stores)
    claims_parts = [claims_table(d, n_boot=n_boot) for d in datas]
    claims = pd.concat([c for c in claims_parts if len(c)], ignore_index=True) if any(
        len(c) for c in claims_parts) else pd.DataFrame()
    paired = [paired_table(d, n_boot=n_boot) for d in datas]
    figdir = Path(figures) if figures else None
    if figdir is not None:
        figdir.mkdir(parents=True, exist_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    if privacy is None:  # the algorithms whose privacy is not verified, marked on page 1
        privacy = {(a, ""): privacy_note(label) for d in datas
                   for a, label in unverified_algorithms(d.cells).items()}
    # page 1 from the numbers as the CSV stores them (4 significant digits), so page 1, the
    # README's table (made from the CSV) and the CSV agree digit for digit
    summary = claims_summary(_as_stored(claims), privacy=privacy)
    with PdfPages(out) as raw_pdf:
        pdf = raw_pdf if layout_problems is None else LayoutCheckedPdf(raw_pdf, layout_problems)
        summary_table_pages(pdf, summary, "Claims: measured against claimed rates, "
                            + ", ".join(d.spec.name for d in datas)[:80])
        headline_page(pdf, datas, claims, paired, crossovers, laws)
        for data in datas:
            title_page(pdf, data)
        if len(claims):
            claims_page(pdf, claims)
            forest_page(pdf, claims, figdir)
        declared_claims_page(pdf, claims)
        local_slopes_pages(pdf, claims, figdir)
        budget_use_page(pdf, claims)
        path_page(pdf, [path_table(d) for d in datas])
        privacy_page(pdf, datas)
        eps_spent_page(pdf, datas)
        atlas_page(pdf, datas, n_boot=n_boot)
        for data, part, pair in zip(datas, claims_parts, paired, strict=True):
            if len(datas) > 1:
                section_page(pdf, data)
            if len(part):
                scaling_pages(pdf, data, part, figdir)
            paired_page(pdf, pair)
            loss_curve_pages(pdf, data, figdir)
            moment_pages(pdf, data)
            trajectory_pages(pdf, data)
        _text_page(pdf, "Methods", _wrap(METHODS), size=8)
        for data in datas:
            failures_page(pdf, data)
        info = pdf.infodict()
        info["Title"] = "dprates report: " + ", ".join(d.spec.name for d in datas)
        info["Subject"] = "Measured convergence exponents of private optimizers"
        pages = pdf.get_pagecount()
    if csv is not None and len(claims):
        table = claims.copy()
        table["window"] = [f"{w[0]:g}..{w[1]:g}" if isinstance(w, (tuple, list)) else "" for w in
                           table["window"]]
        table[[c for c in CSV_COLUMNS if c in table]].to_csv(csv, index=False, float_format="%.4g")
    return {"claims": claims, "paired": [p for part in paired for p in part], "pages": pages,
            "path": out, "summary": summary}


def _as_stored(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims table with every float rounded as the CSV writes it (`%.4g`)."""
    if claims.empty:
        return claims
    out = claims.copy()
    for col in out.columns:
        if out[col].dtype.kind == "f":
            out[col] = [float(f"{v:.4g}") if v == v else v for v in out[col]]
    return out
