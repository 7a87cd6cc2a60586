"""How much of its declared eps each run's noise really spends (issue 43, item 1: fair
calibration): per store, one row per algorithm and instance with the calibration and the
median and range over its cells of eps_exact / eps, eps_exact from the composition the run's
mechanism really is on dp-accounting's PLD (`algorithms.privacy.audit.eps_spent`; `eps_spent_page`)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from algorithms.privacy.audit.eps_spent import spent_fraction_table
from analysis.declarations import StoreData
from analysis.report.layout import table_figure

PER_PAGE = 22

NOTE = ("spent: eps_exact / eps, eps_exact the eps at the cell's delta of the composition its "
        "noise really is (replace-one, dp-accounting's PLD, pessimistic at 1e-4 of eps): a Gaussian "
        "Spider's one release per record, a tree Spider's tree_nodes node values per record, any "
        "other algorithm's stored ledger. source: 'params' (the run's stored noise), 'rules' (not "
        "stored: the rules at the cell's design point), 'ledger'. ledger gap: the largest "
        "|eps_exact - stored eps| / eps. Fair rules need every algorithm of a comparison near 1: "
        "'theory' (the papers' formulas) spends 0.55-0.75 for a Gaussian release and 0.21-0.46 "
        "for a tree, so comparisons rest on 'tight'.")


def _num(v: object, fmt: str) -> str:
    return format(float(v), fmt) if isinstance(v, (int, float)) and math.isfinite(float(v)) else "-"


def eps_spent_rows(data: StoreData) -> pd.DataFrame:
    """The page's rows for one store (empty when it has no private cell)."""
    table = spent_fraction_table(data.cells)
    if not len(table):
        return pd.DataFrame()
    table = table.sort_values(["algorithm", "instance", "d", "eps", "calibration"], kind="stable")
    return pd.DataFrame({
        "spec": data.spec.name, "algorithm": table["algorithm"], "instance": table["instance"],
        "d": table["d"].map(lambda v: f"{int(v)}"), "eps": table["eps"].map(lambda v: f"{v:g}"),
        "calibration": table["calibration"], "cells": table["cells"].map(str),
        "spent (median)": table["fraction_median"].map(lambda v: _num(v, ".3f")),
        "range": [f"{_num(a, '.3f')} .. {_num(b, '.3f')}"
                  for a, b in zip(table["fraction_min"], table["fraction_max"], strict=True)],
        "source": table["source"],
        "ledger gap": table["ledger_gap"].map(lambda v: _num(v, ".0e")),
    }).reset_index(drop=True)


def eps_spent_page(pdf: PdfPages, datas: list[StoreData]) -> None:
    """Pages of `eps_spent_rows` over the stores (none when no store has a private cell)."""
    parts = [eps_spent_rows(d) for d in datas]
    parts = [p for p in parts if len(p)]
    if not parts:
        return
    table = pd.concat(parts, ignore_index=True)
    for start in range(0, len(table), PER_PAGE):
        chunk = table.iloc[start:start + PER_PAGE]
        fig = table_figure("Privacy: the share of eps each run's noise really spends", chunk,
                           [0.02, 0.16, 0.96, 0.74], fontsize=6.8, row_scale=1.25)
        fig.text(0.04, 0.12, NOTE, fontsize=7, va="top", wrap=True)
        pdf.savefig(fig)
        plt.close(fig)
