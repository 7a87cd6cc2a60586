"""The report as one self-contained HTML file (`dprates report --html`, issue 59, item 3).

The same pages as the two PDFs, in the same sections: every page the PDF draws is captured as it
is saved (`CapturedPdf`: a PNG inlined as base64, and the page's own text lines, so the file is
searchable), and the sections whose numbers are tables (the claims summary, the headline's
rows, the declared fits, the crossovers, the atlas) also get them as real HTML tables that sort
by a click on a column header (a few lines of inline JavaScript; numbers sort as numbers). No
file, font or script outside the one file is referenced, so it opens offline and can be mailed.
"""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

#: Resolution of the inlined page images: the main report's pages, the appendix's.
MAIN_DPI, APPENDIX_DPI = 110, 72


@dataclass
class HtmlPage:
    """One captured PDF page: its PNG and the text its figure writes (fig.text lines)."""

    png: bytes
    text: str


@dataclass
class HtmlSection:
    """A section of the HTML report: its heading, tables (caption, frame) and pages."""

    title: str
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    pages: list[HtmlPage] = field(default_factory=list)


class CapturedPdf:
    """A PdfPages (or a wrapper of one) that also keeps every saved page as an `HtmlPage`, in
    order, before the figure is closed; everything else is the wrapped object's."""

    def __init__(self, pdf: Any, dpi: int) -> None:
        self._pdf, self._dpi = pdf, dpi
        self.pages: list[HtmlPage] = []

    def savefig(self, fig: Any, **kw: Any) -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=self._dpi)
        text = "\n".join(t.get_text() for t in fig.texts if t.get_text().strip())
        self.pages.append(HtmlPage(buf.getvalue(), text))
        self._pdf.savefig(fig, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pdf, name)


def sections_of(pages: list[HtmlPage], marks: list[tuple[str, int]],
                tables: dict[str, list[tuple[str, pd.DataFrame]]] | None = None,
                prefix: str = "") -> list[HtmlSection]:
    """Split `pages` at the section marks (title, first page index, as `outline.Sections.drawn`
    gives them), attaching `tables[title]` to its section."""
    tables = tables or {}
    out = []
    ends = [p for _, p in marks[1:]] + [len(pages)]
    for (title, start), end in zip(marks, ends, strict=True):
        out.append(HtmlSection(prefix + title, list(tables.get(title, [])), pages[start:end]))
    return out


def _cell(v: Any) -> str:
    if isinstance(v, float):
        if not math.isfinite(v):
            return "" if math.isnan(v) else str(v)
        return f"{v:.4g}"
    return "" if v is None else str(v)


def table_html(caption: str, frame: pd.DataFrame) -> str:
    """A sortable table (class "sortable"): a header row and one row per frame row."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
                     for row in frame.itertuples(index=False, name=None))
    return (f'<div class="wrap"><table class="sortable"><caption>{html.escape(caption)}'
            f"</caption>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>")


_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;color:#222}
nav{position:fixed;top:0;left:0;bottom:0;width:260px;overflow-y:auto;background:#f5f5f7;
padding:12px;font-size:13px;box-sizing:border-box}
nav a{display:block;color:#235;text-decoration:none;margin:2px 0}
nav .part{font-weight:bold;margin-top:10px}
main{margin-left:270px;padding:16px 24px;max-width:1200px}
table.sortable{border-collapse:collapse;font-size:12.5px;margin:10px 0 18px}
table.sortable caption{text-align:left;font-weight:bold;margin-bottom:4px}
table.sortable th{background:#e8eaf0;cursor:pointer;position:sticky;top:0}
table.sortable th,table.sortable td{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
table.sortable th.asc::after{content:" \\25B2"}table.sortable th.desc::after{content:" \\25BC"}
.wrap{overflow-x:auto;max-height:80vh;overflow-y:auto}
img.page{max-width:100%;border:1px solid #ddd;margin:6px 0}
details{margin:0 0 16px}pre{white-space:pre-wrap;font-size:12px}
"""

_SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function(th){
  th.addEventListener('click',function(){
    var table=th.closest('table'),body=table.tBodies[0];
    var i=Array.prototype.indexOf.call(th.parentNode.children,th);
    var asc=!th.classList.contains('asc');
    th.parentNode.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc')});
    th.classList.add(asc?'asc':'desc');
    var rows=Array.prototype.slice.call(body.rows);
    function key(r){var t=r.cells[i].textContent.trim(),n=parseFloat(t);
      return (t!==''&&isFinite(n)&&/^[-+]?[0-9.]/.test(t))?[0,n]:[1,t.toLowerCase()];}
    rows.sort(function(a,b){var x=key(a),y=key(b);
      if(x[0]!==y[0])return x[0]-y[0];var c=x[1]<y[1]?-1:x[1]>y[1]?1:0;return asc?c:-c;});
    rows.forEach(function(r){body.appendChild(r)});
  });
});
"""


def write_html(path: str | Path, title: str, parts: list[tuple[str, list[HtmlSection]]]) -> int:
    """Write the report to `path`: a contents sidebar, then per part (the main report, the
    appendix) its sections, each with its tables and page images. Returns the number of pages."""
    nav, body, n_pages, k = [], [], 0, 0
    for part, sections in parts:
        nav.append(f'<div class="part">{html.escape(part)}</div>')
        body.append(f"<h1>{html.escape(part)}</h1>")
        for s in sections:
            k += 1
            anchor = f"s{k}"
            nav.append(f'<a href="#{anchor}">{html.escape(s.title)}</a>')
            body.append(f'<section id="{anchor}"><h2>{html.escape(s.title)}</h2>')
            body.extend(table_html(c, f) for c, f in s.tables if len(f))
            for p in s.pages:
                n_pages += 1
                data = base64.b64encode(p.png).decode("ascii")
                body.append(f'<img class="page" alt="page {n_pages}: {html.escape(s.title)}" '
                            f'src="data:image/png;base64,{data}">')
                if p.text:
                    body.append(f"<details><summary>text of this page</summary><pre>"
                                f"{html.escape(p.text)}</pre></details>")
            body.append("</section>")
    doc = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
           f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
           f"<nav>{''.join(nav)}</nav>\n<main>\n{chr(10).join(body)}\n</main>\n"
           f"<script>{_SCRIPT}</script></body></html>\n")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(doc, encoding="utf-8")
    return n_pages
