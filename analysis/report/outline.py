"""Sections of a report PDF, its table of contents and bookmarks (issue 59, item 1).

matplotlib's PdfPages writes pages but no outline, so a report records where each section starts
(`Sections.start` before the section's pages are drawn) and `finish` rewrites the file with pypdf:
a contents page in front (for the appendix), one bookmark per section that drew a page and a
page number at the foot of every page.
"""

from __future__ import annotations

import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.backends.backend_pdf import PdfPages

from analysis.report.layout import A4

#: Contents lines per page (at CONTENTS_FONT).
CONTENTS_PER_PAGE, CONTENTS_FONT = 52, 9.5


@dataclass
class Sections:
    """Where each section of one PDF starts: (title, first page index), in page order."""

    pdf: Any
    marks: list[tuple[str, int]] = field(default_factory=list)

    def start(self, title: str) -> None:
        """Mark that the next page drawn opens section `title`."""
        self.marks.append((title, self.pdf.get_pagecount()))

    def drawn(self) -> list[tuple[str, int]]:
        """The sections that drew at least one page (a section whose start equals the next
        one's, or the page count at the end, drew none)."""
        ends = [m[1] for m in self.marks[1:]] + [self.pdf.get_pagecount()]
        return [(t, p) for (t, p), end in zip(self.marks, ends, strict=True) if end > p]


def contents_pages(title: str, entries: list[tuple[str, int]], subtitle: str) -> list[Any]:
    """Figures of the contents: one line per section with its page (1-based, in the final file)."""
    lines = [f"{textwrap.shorten(t, 88, placeholder='...'):<90s} {p:>4d}" for t, p in entries]
    chunks = [lines[i:i + CONTENTS_PER_PAGE] for i in range(0, max(1, len(lines)), CONTENTS_PER_PAGE)]
    figs = []
    for k, chunk in enumerate(chunks):
        fig = plt.figure(figsize=A4)
        fig.text(0.08, 0.95, title + (f" (continued, {k + 1} of {len(chunks)})" if k else ""),
                 fontsize=15, weight="bold", va="top")
        top = 0.87
        if not k:
            wrapped = textwrap.wrap(subtitle, 100)
            fig.text(0.08, 0.915, "\n".join(wrapped), fontsize=CONTENTS_FONT, va="top")
            # the list starts under the subtitle however many lines it wraps to (at a fixed
            # 0.87 a four-line subtitle ran onto the list: issue 73, item 4)
            top = min(top, 0.915 - len(wrapped) * CONTENTS_FONT * 1.25 / (A4[1] * 72) - 0.01)
        fig.text(0.08, top, "\n".join(chunk), fontsize=CONTENTS_FONT * 0.8, va="top",
                 family="monospace")
        figs.append(fig)
    return figs


def contents_page_count(n_sections: int) -> int:
    return max(1, -(-n_sections // CONTENTS_PER_PAGE))


def _number_pages(writer: Any) -> None:
    """Stamp "page k of N" at the foot of every page (issue 73, item 4): one transparent page of
    each page's own size drawn by matplotlib, merged over it."""
    from pypdf import PdfReader

    pages = list(writer.pages)
    with tempfile.TemporaryDirectory() as tmp:
        stamps = Path(tmp) / "numbers.pdf"
        with PdfPages(stamps) as pdf:
            for k, page in enumerate(pages, start=1):
                w, h = float(page.mediabox.width), float(page.mediabox.height)
                fig = plt.figure(figsize=(w / 72, h / 72))
                fig.patch.set_alpha(0)
                fig.text(0.985, 0.006, f"page {k} of {len(pages)}", ha="right", va="bottom",
                         fontsize=6, color="0.35")
                pdf.savefig(fig, transparent=True)
                plt.close(fig)
        for page, stamp in zip(pages, PdfReader(stamps).pages, strict=True):
            page.merge_page(stamp)


def finish(path: Path, sections: list[tuple[str, int]], contents: str | None = None,
           subtitle: str = "") -> int:
    """Rewrite the PDF at `path` with one bookmark per section, given `contents` (its title)
    contents pages in front listing every section with its page, and "page k of N" at the foot
    of every page. Returns the page count."""
    from pypdf import PdfReader, PdfWriter

    reader = PdfReader(path)
    writer = PdfWriter()
    offset = 0
    if contents is not None:
        offset = contents_page_count(len(sections))
        entries = [(t, p + offset + 1) for t, p in sections]
        with tempfile.TemporaryDirectory() as tmp:
            front = Path(tmp) / "contents.pdf"
            with PdfPages(front) as pdf:
                for fig in contents_pages(contents, entries, subtitle):
                    pdf.savefig(fig)
                    plt.close(fig)
            for page in PdfReader(front).pages:
                writer.add_page(page)
    for page in reader.pages:
        writer.add_page(page)
    _number_pages(writer)
    if contents is not None:
        writer.add_outline_item(title=contents, page_number=0)
    for title, page in sections:
        writer.add_outline_item(title=title, page_number=page + offset)
    writer.add_metadata({k: str(v) for k, v in (reader.metadata or {}).items()})
    with open(path, "wb") as fh:
        writer.write(fh)
    return len(writer.pages)
