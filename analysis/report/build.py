"""The PDF report of one or several stores (matplotlib PdfPages): `write_report` assembles it and
writes the claims CSV beside it (`CSV_COLUMNS`).

Pages, in order, each drawn by its own module of `analysis.report`: the claims summary
(`summary_page`) and the headline figure (`headline_page`); title (spec, date, provenance, counts
by status; `title_pages`); claims table, forest plots, every declared claim (`claims_pages`); the
local slopes of each fit still "than claimed" (`local_slopes_page`); the claim link on data of
every fit over two decades (`claim_link_page`; the headline's in the main report); budget use against the
rules (`budget_use_page`); path length (`claims_pages`); privacy (`privacy_page`); the share of eps
the noise spends (`eps_spent_page`); the atlas
(`atlas_page`); per store: its section divider (`title_pages`), one scaling page per declared
fit and mode (`scaling_pages`), paired differences (`claims_pages`), seed 002's loss curves
(`loss_curve_pages`) and private moments (`moment_pages`), trajectories of a median cell per
algorithm and problem (`cell_pages`); methods (`methods_text`); failures (only when a cell
failed; `cell_pages`). The appendix's order is `appendix.appendix_sections`' (with the claims
table's other half and a page per store cited only through the CSVs). The page primitives and
the layout check (text off a page, out of its cell, cut short or on other text) are in
`layout`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from algorithms.privacy.audit.ledger import privacy_note, unverified_algorithms
from analysis.claims import claims_table, paired_table
from analysis.declarations import StoreData
from analysis.report.answers_page import answers_page, practitioner_answer, spider_answer
from analysis.report.appendix import Appendix, appendix_sections, cited_stores
from analysis.report.atlas_page import atlas_maps, atlas_of
from analysis.report.claim_link_page import claim_link_pages
from analysis.report.equal_privacy_panel import atlas_caption
from analysis.report.headline_page import headline_page
from analysis.report.html_report import APPENDIX_DPI, MAIN_DPI, CapturedPdf, sections_of, write_html
from analysis.report.layout import LayoutCheckedPdf
from analysis.report.outline import Sections, finish
from analysis.report.privacy_page import privacy_summary_page
from analysis.report.summary_page import SUMMARY_TABLE, summary_table_pages
from analysis.report.tables import claims_summary
from analysis.verdict_engine import rates

#: The main report's first page where the reference's CSVs are given (issue 73, item 1).
ANSWERS_SECTION = "The two answers: 3/7 or 1/2 at equal privacy; which optimizer to use"
#: The main report's sections, in order (their titles are the PDF's bookmarks).
MAIN_SECTIONS = ("Claims: measured against claimed rates",
                 "Headline: samples to reach alpha on the hard instances",
                 "Atlas: which algorithm wins where (maps)",
                 "Privacy: spent / declared eps and verification")
#: The metrics whose atlas maps the main report draws (`split_atlas`).
MAIN_ATLAS_METRICS = ("alpha_sosp",)
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
               "chain",
               # the sixth edition (issue 70): the typed verdict, the band of pure power-law slopes
               # that receive it (the kind before the regime gate: test_verdict_kind), the bound
               # check, and the row's group within its fit (the key of its points in
               # reports/reference_fit_points.csv)
               "verdict_kind", "test_verdict_kind", "verdict_band_low", "verdict_band_high",
               "bound_exceed_low", "bound_exceed_ratio", "bound_exceed_x", "group_index",
               # the claim link on data (issue 70, item 3; `measured_link`): on a design of two
               # decades or more, the deepest and first decades' slopes with CIs, their trend,
               # the rules' slope there, the local slopes with CIs and the rules' profile
               "claim_link", "link_deep", "link_deep_low", "link_deep_high", "link_deep_from",
               "link_deep_to", "link_first", "link_trend", "link_trend_low", "link_trend_high",
               "link_rules_deep", "link_reached", "link_excludes_rival", "link_local",
               "rules_profile",
               # typed records between layers (issue 75, item 2): the regime gate's kinds (the
               # enum values of its ceiling / floor flags, what the gate reads back) and whose
               # private share the gate read
               "gate_kinds", "private_share_measured"]


def write_report(stores: StoreData | list[StoreData], out: str | Path, n_boot: int = rates.N_BOOT,
                 csv: str | Path | None = None, figures: str | Path | None = None,
                 privacy: dict | None = None,
                 layout_problems: list[str] | None = None,
                 crossovers: pd.DataFrame | None = None,
                 laws: pd.DataFrame | None = None,
                 html: str | Path | None = None,
                 practitioners: pd.DataFrame | None = None,
                 output_gap: pd.DataFrame | None = None) -> dict[str, Any]:
    """Write the PDF report of one or several stores (opened by `bench.store.open_store_data`):
    the main report to `out` (page 1 the claims summary, `analysis.report.tables.claims_summary`,
    with the verdicts' glossary; `privacy`: its optional per-row privacy notes; then the headline
    on one page, the atlas maps and the privacy summary) and the appendix to
    `appendix_path_for(out)` (a contents page, then the headline in detail, the claims and forest
    pages, and per store its scaling, paired, loss-curve, trajectory and failure pages; one PDF
    bookmark per section). `csv`: also write the claims table; `figures`: a directory for PNGs of
    each declared fit and the forest plot.
    `layout_problems`: a list that receives every text running off a page or out of its
    table cell (see `overflowing_text`). `crossovers` / `laws`: the measured crossovers and their
    laws (reports/crossovers.csv, reports/crossover_laws.csv) for the headline page. Returns the
    claims, paired rows, summary, both paths and both page counts. `html`: also write both as
    one self-contained HTML file (`analysis.report.html_report`; its path under "html").
    `practitioners`: the practitioners' atlas (reports/practitioners.csv); with it or the
    crossovers, page 1 answers the two questions (`analysis.report.answers_page`);
    `output_gap`: reports/output_gap.csv (samples to the algorithm's own output against the
    oracle's n*), said beside the practitioner's answer."""
    out = Path(out)
    _check_paths(out, html)
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
    appendix_path = appendix_path_for(out)
    atlas = atlas_of(datas, n_boot=n_boot)
    main_atlas, other_atlas = split_atlas(atlas)
    names = ", ".join(d.spec.name for d in datas)
    captured: list[CapturedPdf] = []

    def wrap(raw_pdf: Any, dpi: int) -> Any:
        pdf = raw_pdf if layout_problems is None else LayoutCheckedPdf(raw_pdf, layout_problems)
        if html is not None:
            captured.append(CapturedPdf(pdf, dpi))
            return captured[-1]
        return pdf

    with PdfPages(out) as raw_pdf:  # the main report (issue 59): at most ~15 pages
        main_marks = _main_report(wrap(raw_pdf, MAIN_DPI), datas, claims, paired, summary,
                                  main_atlas, names, crossovers, laws, practitioners, output_gap)
    with PdfPages(appendix_path) as raw_pdf:  # everything else, with contents and bookmarks
        pdf = wrap(raw_pdf, APPENDIX_DPI)
        app = Sections(pdf)
        appendix_sections(pdf, app, Appendix(datas, claims, claims_parts, paired, summary, atlas,
                                             other_atlas, crossovers, laws, figdir))
        _info(pdf, "dprates report, appendix: " + names)
        app_marks = app.drawn()
    pages = finish(out, main_marks, subtitle="")
    appendix_pages = finish(appendix_path, app_marks, contents="Appendix: contents",
                            subtitle=f"The appendix of {out.name} ({names[:200]}): every page the "
                            "main report leaves out, by section; the PDF's bookmarks list the same.")
    html_pages = 0
    if html is not None:
        tables = html_tables(summary, claims, crossovers, atlas)
        html_pages = write_html(html, "dprates report: " + names, [
            (f"Main report ({out.name})", sections_of(captured[0].pages, main_marks, tables)),
            (f"Appendix ({appendix_path.name})", sections_of(captured[1].pages, app_marks, tables))])
    if csv is not None and len(claims):
        claims_csv_table(claims).to_csv(csv, index=False, float_format="%.4g")
    return {"claims": claims, "paired": [p for part in paired for p in part], "pages": pages,
            "path": out, "summary": summary, "appendix": appendix_path,
            "appendix_pages": appendix_pages, "html": Path(html) if html is not None else None,
            "html_pages": html_pages}


def _check_paths(out: Path, html: str | Path | None) -> None:
    """The report is a .pdf file and its HTML twin a .html one (else a ValueError naming the flag)."""
    if out.suffix.lower() != ".pdf":
        raise ValueError(f"-o {str(out)!r} is invalid: the report is a .pdf file")
    if html is not None and Path(html).suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--html {str(html)!r} is invalid: the HTML report is a .html file")


def _main_report(pdf: Any, datas: list[StoreData], claims: pd.DataFrame, paired: list,
                 summary: pd.DataFrame, main_atlas: pd.DataFrame, names: str,
                 crossovers: pd.DataFrame | None, laws: pd.DataFrame | None,
                 practitioners: pd.DataFrame | None, output_gap: pd.DataFrame | None
                 ) -> list[tuple[str, int]]:
    """Draw the main report's sections (MAIN_SECTIONS, after ANSWERS_SECTION when the crossovers
    or the practitioners' atlas answer it) into `pdf`; returns their bookmarks."""
    main = Sections(pdf)
    if spider_answer(crossovers) or practitioner_answer(practitioners):
        main.start(ANSWERS_SECTION)
        answers_page(pdf, crossovers, practitioners, claims, output_gap)
    main.start(MAIN_SECTIONS[0])
    summary_table_pages(pdf, summary, "Claims: measured against claimed rates, " + (
        names if len(names) <= 70 else f"{len(datas)} stores (listed in the appendix)"))
    main.start(MAIN_SECTIONS[1])
    headline_page(pdf, datas, claims, paired, crossovers, laws)
    claim_link_pages(pdf, claims, alpha_only=True,
                     calibrations={d.spec.name: d.spec.calibration for d in datas})
    main.start(MAIN_SECTIONS[2])
    atlas_maps(pdf, main_atlas, caption=atlas_caption(datas, main_atlas))
    main.start(MAIN_SECTIONS[3])
    privacy_summary_page(pdf, datas, cited_stores(crossovers, laws))
    _info(pdf, "dprates report: " + names)
    return main.drawn()


def split_atlas(atlas: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The atlas's rows for the main report's maps and the appendix's: the headline metric's
    (MAIN_ATLAS_METRICS: alpha_sosp, both views, every instance) in the main report when it is
    measured, else every map there; the other metrics' maps go to the appendix (the reference
    has two dozen of them, one per GLM rank and link)."""
    if atlas.empty or "metric" not in atlas:
        return atlas, atlas.iloc[0:0]
    main = atlas["metric"].isin(MAIN_ATLAS_METRICS)
    if not main.any():
        return atlas, atlas.iloc[0:0]
    return atlas[main], atlas[~main]


def html_tables(summary: pd.DataFrame, claims: pd.DataFrame, crossovers: pd.DataFrame | None,
                atlas: pd.DataFrame) -> dict[str, list[tuple[str, pd.DataFrame]]]:
    """The sortable tables of the HTML report, by the section title they open: the claims
    summary (page 1's columns), the Spiders' headline rows, the crossovers, the atlas's long
    table and every declared fit (the CSV's columns, as stored)."""
    from analysis.report.readme_results import SPIDER_HEADER, SPIDERS, spider_rows

    shown = summary[[c for c, *_ in SUMMARY_TABLE if c in summary]
                    + (["privacy"] if "privacy" in summary else [])]
    stored = _as_stored(claims) if len(claims) else pd.DataFrame()
    out: dict[str, list[tuple[str, pd.DataFrame]]] = {
        MAIN_SECTIONS[0]: [("Every declared claim (click a header to sort)", shown)]}
    head = []
    if len(stored) and {"algorithm", "rules_verdict"} <= set(stored.columns):
        spiders = stored[stored["algorithm"].isin(SPIDERS)]
        if len(spiders):
            rows = pd.DataFrame(spider_rows(spiders), columns=SPIDER_HEADER)
            rows.insert(1, "problem", list(spiders["problem"]))
            rows.insert(2, "mode", list(spiders["mode"]))
            rows.insert(3, "spec / fit", [f"{s} / {f}" for s, f in
                                          zip(spiders["spec"], spiders["fit"], strict=True)])
            head.append(("The Spiders' fits: measured, against their rules, what each test "
                         "accepts", rows))
    if crossovers is not None and len(crossovers):
        head.append(("Crossovers (reports/crossovers.csv)", crossovers))
    out[MAIN_SECTIONS[1]] = head
    if len(atlas):
        out[MAIN_SECTIONS[2]] = [("The atlas's long table", atlas)]
    if len(claims):
        out["Declared fits: exponents, CIs and verdicts"] = [
            ("Every declared fit (the claims CSV's columns)", claims_csv_table(claims))]
    return out


def claims_csv_table(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims table as the CSV holds it: CSV_COLUMNS, the window as "lo..hi"."""
    table = claims.copy()
    table["window"] = [f"{w[0]:g}..{w[1]:g}" if isinstance(w, (tuple, list)) else "" for w in
                       table["window"]]
    return table[[c for c in CSV_COLUMNS if c in table]]


def appendix_path_for(out: str | Path) -> Path:
    """The appendix PDF beside a main report: reports/reference.pdf -> reference_appendix.pdf."""
    out = Path(out)
    return out.with_name(f"{out.stem}_appendix{out.suffix}")


def _info(pdf: Any, title: str) -> None:
    info = pdf.infodict()
    info["Title"] = title
    info["Subject"] = "Measured convergence exponents of private optimizers"


def _as_stored(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims table with every float rounded as the CSV writes it (`%.4g`)."""
    if claims.empty:
        return claims
    out = claims.copy()
    for col in out.columns:
        if out[col].dtype.kind == "f":
            out[col] = [float(f"{v:.4g}") if v == v else v for v in out[col]]
    return out
