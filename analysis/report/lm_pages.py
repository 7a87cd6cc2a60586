"""Seed 002's language-model experiment in the appendix (issue 74, item 5): its figure
(validation perplexity against the step per eps) and its text (corpus, model, grid, cost, the
perplexity table with 95% intervals and the claim rows), read from the files `make reference-lm`
writes beside the report's figures (reports/lm_experiment.png and lm_experiment.md); no pages
when they are not there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg
import matplotlib.pyplot as plt

from analysis.report.layout import A4_LANDSCAPE, text_page

FIGURE, TEXT = "lm_experiment.png", "lm_experiment.md"


def lm_files(figdir: Path | None) -> tuple[Path, Path] | None:
    """(figure, text) in `figdir` when both exist, else None."""
    if figdir is None:
        return None
    fig, text = Path(figdir) / FIGURE, Path(figdir) / TEXT
    return (fig, text) if fig.is_file() and text.is_file() else None


def lm_pages(pdf: Any, app: Any, figdir: Path | None) -> bool:
    """The section (its bookmark through `app.start`); whether it was drawn."""
    files = lm_files(figdir)
    if files is None:
        return False
    figure, text = files
    app.start("Seed 002's language-model experiment (Shakespeare, LSTM)")
    fig = plt.figure(figsize=A4_LANDSCAPE)
    ax = fig.add_axes((0.04, 0.06, 0.92, 0.86))
    ax.imshow(mpimg.imread(figure))
    ax.set_axis_off()
    fig.text(0.04, 0.96, "Seed 002's language-model experiment: validation perplexity against "
             "the step (reports/lm_experiment.png, `make reference-lm`)", fontsize=11,
             weight="bold", va="top")
    pdf.savefig(fig)
    plt.close(fig)
    body = text.read_text(encoding="utf-8").replace("**", "")
    text_page(pdf, "Seed 002's language-model experiment: corpus, model, grid, results", body,
              size=6.5, page=A4_LANDSCAPE)
    return True


__all__ = ["lm_files", "lm_pages"]
