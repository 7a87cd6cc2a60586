"""The text of a report as pytest reads it: the main PDF and its appendix, page by page."""

from __future__ import annotations

from pathlib import Path


def pdf_pages(path: Path) -> list[str]:
    """Each page's extracted text, in order."""
    from pypdf import PdfReader

    return [p.extract_text() for p in PdfReader(path).pages]


def report_pages(main: Path) -> tuple[list[str], list[str]]:
    """The main report's pages and its appendix's (`analysis.report.build.appendix_path_for`);
    the appendix is [] when the report wrote none."""
    from analysis.report.build import appendix_path_for

    appendix = appendix_path_for(Path(main))
    return pdf_pages(Path(main)), pdf_pages(appendix) if appendix.exists() else []
