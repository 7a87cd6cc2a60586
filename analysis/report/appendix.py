"""The appendix of the report (`appendix_sections`, drawn by `analysis.report.build.write_report`
after the main report): the headline in detail, per store its spec and provenance, the claims
table's other half (each row's theorem and deciding fit), the fits, privacy, the atlas's text,
per store its scaling, paired, loss-curve, moment and trajectory pages, the methods and the
failures, seed 002's language-model experiment (`lm_pages`, from reports/lm_experiment.*); and,
for every store the main report cites only through its CSVs (the crossovers and
their laws: the headline4 stores), a provenance and privacy page from its spec
(`cited_store_pages`; issue 73, item 4).
"""

from __future__ import annotations

import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.declarations import StoreData
from analysis.path_length import path_table
from analysis.report.atlas_page import atlas_maps, atlas_text
from analysis.report.budget_use_page import budget_use_page
from analysis.report.cell_pages import failures_page, trajectory_pages
from analysis.report.claim_link_page import claim_link_pages, linked_rows
from analysis.report.claims_pages import (
    claims_page,
    declared_claims_page,
    forest_page,
    paired_page,
    path_page,
)
from analysis.report.eps_spent_page import eps_spent_page
from analysis.report.headline_page import headline_detail_page
from analysis.report.layout import A4_LANDSCAPE, text_page, wrap_paragraphs
from analysis.report.lm_pages import lm_pages
from analysis.report.local_slopes_page import local_slopes_pages
from analysis.report.loss_curve_pages import loss_curve_pages
from analysis.report.methods_text import METHODS
from analysis.report.moment_pages import moment_pages
from analysis.report.privacy_page import privacy_page
from analysis.report.scaling_pages import scaling_pages
from analysis.report.summary_page import source_table_pages
from analysis.report.title_pages import section_page, spec_design_notes, title_page

#: Where the specs of the stores a CSV cites live (the repository's bench/configs).
CONFIGS = Path(__file__).resolve().parents[2] / "bench" / "configs"


@dataclass
class Appendix:
    """What the appendix draws from: the stores, their fits (all and per store), paired rows,
    page 1's summary, the atlas (all and its other metrics'), the crossovers and laws CSVs and
    the figures' directory."""

    datas: list[StoreData]
    claims: pd.DataFrame
    claims_parts: list[pd.DataFrame]
    paired: list[list[dict]]
    summary: pd.DataFrame
    atlas: pd.DataFrame
    other_atlas: pd.DataFrame
    crossovers: pd.DataFrame | None
    laws: pd.DataFrame | None
    figdir: Path | None


def appendix_sections(pdf: Any, app: Any, a: Appendix) -> None:
    """The appendix's pages in order, each section opened with `app.start` (its bookmark)."""
    app.start("The headline in detail")
    headline_detail_page(pdf, a.datas, a.claims, a.paired, a.crossovers, a.laws)
    for data in a.datas:
        app.start(f"Store {data.spec.name}: spec, provenance, cells")
        title_page(pdf, data)
    cited = [n for n in cited_stores(a.crossovers, a.laws)
             if n not in {d.spec.name for d in a.datas}]
    if cited:
        app.start("Stores cited through the CSVs: spec, provenance, privacy")
        cited_store_pages(pdf, cited)
    if len(a.claims):
        app.start("Declared fits: exponents, CIs and verdicts")
        claims_page(pdf, a.claims)
        app.start("Forest plot of the exponents")
        forest_page(pdf, a.claims, a.figdir)
    app.start("Every declared claim")
    source_table_pages(pdf, a.summary)
    declared_claims_page(pdf, a.claims)
    app.start("Local slopes of the rows still faster or slower than claimed")
    local_slopes_pages(pdf, a.claims, a.figdir)
    if len(linked_rows(a.claims)):
        app.start("The claim link on data: every fit over two decades or more")
        claim_link_pages(pdf, a.claims, figdir=a.figdir)
    app.start("Budget use against the rules")
    budget_use_page(pdf, a.claims)
    app.start("Path length")
    path_page(pdf, [path_table(d) for d in a.datas])
    app.start("Privacy per store")
    privacy_page(pdf, a.datas)
    app.start("The share of eps the noise spends")
    eps_spent_page(pdf, a.datas)
    app.start("Atlas: readings and margins")
    atlas_text(pdf, a.atlas)
    if len(a.other_atlas):
        app.start("Atlas: the other metrics' maps")
        atlas_maps(pdf, a.other_atlas)
    _store_sections(pdf, app, a)
    lm_pages(pdf, app, a.figdir)  # drawn when `make reference-lm` has written its files
    app.start("Methods")
    text_page(pdf, "Methods", wrap_paragraphs(METHODS), size=8)
    for data in a.datas:
        app.start(f"{data.spec.name}: failures")
        failures_page(pdf, data)


def _store_sections(pdf: Any, app: Any, a: Appendix) -> None:
    for data, part, pair in zip(a.datas, a.claims_parts, a.paired, strict=True):
        if len(a.datas) > 1:
            app.start(f"{data.spec.name}: its section")
            section_page(pdf, data)
        if len(part):
            app.start(f"{data.spec.name}: scaling pages")
            scaling_pages(pdf, data, part, a.figdir)
        app.start(f"{data.spec.name}: paired differences")
        paired_page(pdf, pair)
        app.start(f"{data.spec.name}: loss curves")
        loss_curve_pages(pdf, data, a.figdir)
        app.start(f"{data.spec.name}: private moments")
        moment_pages(pdf, data)
        app.start(f"{data.spec.name}: trajectories")
        trajectory_pages(pdf, data)


def cited_stores(crossovers: pd.DataFrame | None, laws: pd.DataFrame | None) -> list[str]:
    """The stores the crossovers' and laws' rows name ("headline4_law_eps (tight)" ->
    headline4_law_eps), in their order."""
    names: list[str] = []
    for frame, col in ((crossovers, "source"), (laws, "sources")):
        if frame is None or col not in frame:
            continue
        for cell in frame[col].dropna().astype(str):
            names += [part.split(" (")[0].strip() for part in cell.split(";")]
    return list(dict.fromkeys(n for n in names if n))


def cited_store_pages(pdf: Any, names: list[str], configs: Path = CONFIGS) -> None:
    """One page per store a CSV cites but the report does not load: its spec (from
    `configs`/NAME.toml), where the cited rows come from, the commit its spec was last changed
    at, and its privacy as declared (eps, delta, calibration, algorithms); said plainly when
    neither the spec nor the store is here."""
    for name in names:
        text_page(pdf, f"Cited store {name}: spec, provenance, privacy",
                  cited_store_text(name, configs), size=7.5, page=A4_LANDSCAPE)


def cited_store_text(name: str, configs: Path = CONFIGS) -> str:
    """`cited_store_pages`'s body for one store."""
    path = configs / f"{name}.toml"
    head = (f"store       results/{name}.sqlite: not among this report's inputs; the main report "
            "cites its rows through reports/crossovers.csv and reports/crossover_laws.csv "
            "(`make reference-law`, `make reference-sensitivity`), computed from it.")
    if not path.is_file():
        return head + f"\nspec        {path.name}: not found, so its spec cannot be shown."
    text = path.read_text()
    spec = tomllib.loads(text)
    grid = spec.get("grid", {})
    # a spec's tables are [[algorithm]] and [[problem]] (bench/configs)
    algs = [a.get("name", "?") if isinstance(a, dict) else str(a)
            for a in spec.get("algorithm", spec.get("algorithms", []))]
    probs = [p.get("name", "?") if isinstance(p, dict) else str(p)
             for p in spec.get("problem", spec.get("problems", []))]
    cal = spec.get("calibration", "?")
    what = {"tight": "each Spider's noise set so that its releases spend all of eps (equal "
                     "privacy)", "theory": "the papers' noise formulas (unequal spend)"}
    lines = [head, f"spec        {path.relative_to(configs.parents[1])}, last changed at "
             f"{_last_commit(path)}", f"            {spec.get('description', '')}", "",
             "grid        " + "; ".join(f"{k} {v}" for k, v in grid.items()),
             f"            repetitions {spec.get('repetitions', '?')} (paired data seeds), base "
             f"seed {spec.get('seed', '?')}, data {spec.get('data', '?')}",
             f"problems    {', '.join(probs) or '?'}",
             f"algorithms  {', '.join(algs) or '?'} (built-in; their privacy checked by the "
             "release engine's ledger on every cell when the sweep ran)",
             "", "privacy (declared)",
             f"  eps {grid.get('eps', '?')}, delta {grid.get('delta', '?')} per run; "
             f"calibration {cal}: {what.get(cal, cal)}",
             "  spent / declared eps per cell is not recomputed here (the store is not loaded): "
             "load it with `dprates report` for its privacy page.",
             "", "design notes (the spec's opening comment)", "",
             wrap_paragraphs(spec_design_notes(text), 150)]
    return "\n".join(lines)


def _last_commit(path: Path) -> str:
    """The short hash and date of the last commit that changed `path` ('not committed' outside
    a git checkout)."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%h (%cs)", "--", path.name],
                             cwd=path.parent, capture_output=True, text=True, timeout=20,
                             check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out or "no commit found"
