"""What each algorithm of a store spent of its privacy budget, and whether its privacy is
verified: the report's privacy page and the mark its tables carry for unverified algorithms.

Fair rules (the protocol) need each algorithm to get the noise its accountant needs, no more:
an accountant that over-noises one family bends that family's fitted n and eps exponents. So
the report shows, per algorithm, the accountant that calibrated it (exact GDP, or the PLD of
dp-accounting for Poisson-subsampled releases) and spent / declared eps over its private cells,
from the ledger each cell stored (`algorithms.privacy.accounting.ledger_eps` re-derives it).
"""

from __future__ import annotations

import math

import pandas as pd

from algorithms.privacy.audit.plugin_checks import is_verified

#: The mark a table puts beside an algorithm whose privacy is not verified, and beside one whose
#: check found a leak (a plugin run with --allow-unverified after its check said FAILED).
UNVERIFIED_MARK = "privacy unverified"
FAILED_MARK = "privacy FAILED"
#: The mark of a self-noising plugin whose checks found no leak: audited, not certified.
AUDITED_MARK = "privacy audited"


def privacy_note(label: str) -> str:
    """A table's privacy cell for an unverified algorithm's stored `privacy_check` label:
    "privacy FAILED: <why>" for a check that found a leak, "privacy audited: no leak found
    (<what was tried>)" for a self-noising plugin whose checks passed (a store written before
    audits were told apart says "passed"), "privacy unverified: <label>" for one that could
    not be checked."""
    label = str(label)
    if label.startswith("FAILED"):
        return f"{FAILED_MARK}: {label.removeprefix('FAILED').lstrip(': ')}"
    if label.startswith("audited"):
        return f"{AUDITED_MARK}: {label.removeprefix('audited').lstrip(': ')}"
    if label == "passed":
        return f"{AUDITED_MARK}: no leak found (an older store's black-box check)"
    return f"{UNVERIFIED_MARK}: {label}"


def bracket(note: str) -> str:
    """The short mark of a privacy cell ("privacy FAILED", "privacy audited" or "privacy
    unverified")."""
    for m in (FAILED_MARK, AUDITED_MARK):
        if str(note).startswith(m):
            return m
    return UNVERIFIED_MARK


def unverified_algorithms(df: pd.DataFrame) -> dict[str, str]:
    """algorithm -> its privacy_check label, for the algorithms of `df` not verified (plugins
    whose check failed or could not run; stores without the column have none)."""
    if not len(df):
        return {}
    if "privacy_check" not in df:  # a store older than the label: plugins are unverified
        df = df.assign(privacy_check=None)
    out = {}
    for alg, labels in df.groupby("algorithm")["privacy_check"]:
        bad = [lab for lab in labels.unique() if not is_verified(lab, str(alg))]
        if bad:
            out[str(alg)] = str(bad[0])
    return out


def mark(algorithm: str, unverified: dict[str, str]) -> str:
    """`algorithm`, with the unverified (or FAILED) mark where it applies (for table cells)."""
    if algorithm not in unverified:
        return algorithm
    return f"{algorithm} [{bracket(privacy_note(unverified[algorithm]))}]"


def spent_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm, over its finished private cells: the accountant, the number of cells, and
    spent / declared eps (min, median, max); the privacy check label."""
    rows = []
    if not len(df) or "eps_spent" not in df:
        return pd.DataFrame(rows)
    ok = df[(df["status"] == "ok") & df["eps"].map(lambda e: math.isfinite(e))]
    for alg, sub in ok.groupby("algorithm", sort=False):
        ratio = (sub["eps_spent"] / sub["eps"]).dropna()
        acc = sorted(set(sub["accountant"].dropna())) if "accountant" in sub else []
        checks = sorted({str(x) for x in sub.get("privacy_check", pd.Series(dtype=object)).dropna()})
        rows.append({
            "algorithm": alg, "accountant": ", ".join(acc) or "gdp (older store)",
            "cells": len(sub),
            "spent_min": float(ratio.min()) if len(ratio) else math.nan,
            "spent_median": float(ratio.median()) if len(ratio) else math.nan,
            "spent_max": float(ratio.max()) if len(ratio) else math.nan,
            "privacy_check": ", ".join(checks) or "built-in (older store)",
        })
    return pd.DataFrame(rows)


def spent_text(table: pd.DataFrame) -> str:
    """The table as the report's monospaced page body."""
    if not len(table):
        return "No finished private cell."
    lines = [f"{'algorithm':26s} {'accountant':10s} {'cells':>6s}  spent / declared eps "
             "(min, median, max)   privacy check"]
    for r in table.itertuples():
        lines.append(f"{r.algorithm:26s} {r.accountant:10s} {r.cells:6d}  {r.spent_min:7.4f} "
                     f"{r.spent_median:7.4f} {r.spent_max:7.4f}          {r.privacy_check}")
    lines += ["", "spent: the eps each cell's accountant composed, at the cell's delta (exact GDP, or "
              "dp-accounting's PLD, whose calibration spends >= 99% of eps); "
              "'built-in': covered by the test suite's three privacy layers; 'private by "
              "construction': a plugin on the suite's release API whose forced-transcript "
              "replay and black-box checks passed; 'audited: no leak found': a self-noising "
              "plugin whose black-box checks found no leak (audited, never certified: marked "
              "'privacy audited' in every table); anything else is marked 'privacy unverified' "
              "or 'privacy FAILED'."]
    from problems.evaluation.metrics import EVALUATION_ONLY

    lines += ["", "Evaluation only (non-private functions of a cell's sample, stored to evaluate "
              "a run, never released by it): " + "; ".join(f"{k}: {v}" for k, v in
                                                           EVALUATION_ONLY.items()) + "."]
    return "\n".join(lines)
