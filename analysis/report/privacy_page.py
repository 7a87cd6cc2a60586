"""The report's privacy page: spent / declared eps per algorithm, its accountant and its privacy
check, per store (`privacy_page`, from `analysis.privacy_checks.ledger`).
"""

from __future__ import annotations

from matplotlib.backends.backend_pdf import PdfPages

from analysis.declarations import StoreData
from analysis.privacy_checks.ledger import spent_table, spent_text
from analysis.report.layout import _text_page


def privacy_page(pdf: PdfPages, datas: list[StoreData]) -> None:
    """Spent / declared eps per algorithm, its accountant, its privacy check (fair rules: each
    algorithm gets the noise its accountant needs, no more)."""
    body = "\n\n".join(f"{d.spec.name}\n" + spent_text(spent_table(d.cells)) for d in datas)
    _text_page(pdf, "Privacy: spent / declared eps and verification", body, size=7.5)
