"""The report's privacy page: spent / declared eps per algorithm, its accountant and its privacy
check, per store (`privacy_page`, from `algorithms.privacy.audit.ledger`).
"""

from __future__ import annotations

from matplotlib.backends.backend_pdf import PdfPages

from algorithms.privacy.audit.ledger import spent_table, spent_text
from analysis.declarations import StoreData
from analysis.report.layout import A4_LANDSCAPE, text_page


def privacy_summary_page(pdf: PdfPages, datas: list[StoreData], cited: list[str] = ()) -> None:
    """The main report's one-page privacy summary: spent / declared eps per algorithm over all
    stores' cells, its accountant and its privacy check (per store: `privacy_page`); `cited`:
    the stores the report cites only through its CSVs (the crossovers'), named with where
    their declared privacy and provenance are (issue 73, item 4)."""
    import pandas as pd

    frames = [d.cells for d in datas if len(d.cells)]
    cells = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    names = ", ".join(d.spec.name for d in datas)
    loaded = {d.spec.name for d in datas}
    rest = [c for c in cited if c not in loaded]
    more = (f"\n\nCited through reports/crossovers.csv and crossover_laws.csv, not loaded: "
            f"{', '.join(rest)}: their spec, provenance and declared privacy (calibration, eps, "
            "delta): the appendix, 'Stores cited through the CSVs'." if rest else "")
    # landscape, as every other page of the main report (issue 73, item 4: one orientation)
    text_page(pdf, "Privacy: spent / declared eps and verification",
              f"All {len(datas)} store(s): {names}\n\n" + spent_text(spent_table(cells)) + more,
              size=7.5, page=A4_LANDSCAPE)


def privacy_page(pdf: PdfPages, datas: list[StoreData]) -> None:
    """Per store: spent / declared eps per algorithm, its accountant, its privacy check (fair rules: each
    algorithm gets the noise its accountant needs, no more)."""
    body = "\n\n".join(f"{d.spec.name}\n" + spent_text(spent_table(d.cells)) for d in datas)
    text_page(pdf, "Privacy per store: spent / declared eps and verification", body, size=7.5)
