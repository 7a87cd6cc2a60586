"""The language-model experiment's appendix pages (issue 74, item 5): drawn from
reports/lm_experiment.{png,md} when both exist, nothing otherwise."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.backends.backend_pdf import PdfPages

from analysis.report.lm_pages import lm_pages


class _Sections:
    def __init__(self) -> None:
        self.started: list[str] = []

    def start(self, title: str) -> None:
        self.started.append(title)


def test_the_section_is_drawn_from_the_files_and_only_then(tmp_path):
    app = _Sections()
    with PdfPages(tmp_path / "a.pdf") as pdf:
        assert not lm_pages(pdf, app, tmp_path)  # no files yet
        assert not lm_pages(pdf, app, None)
        fig = plt.figure(figsize=(4, 3))
        fig.savefig(tmp_path / "lm_experiment.png")
        plt.close(fig)
        (tmp_path / "lm_experiment.md").write_text("# title\n\n| a | b |\n" + "line\n" * 120)
        assert lm_pages(pdf, app, tmp_path)
        pages = pdf.get_pagecount()
    assert app.started == ["Seed 002's language-model experiment (Shakespeare, LSTM)"]
    assert pages >= 3  # the figure, then the text over two pages (123 lines at 6.5 pt)
