"""The files of measured crossovers: reports/crossovers.csv (one row per crossover, written by
`dprates crossover-law --csv` and `dprates sensitivity --csv`, read by `dprates report
--crossovers` and `dprates atlas --ranges`) and reports/crossover_laws.csv (one row per family's
law, `dprates crossover-law --law-csv`, read by `dprates report --laws`). Both commands merge into
one file: rows from the same sources (families, for laws) are replaced, the others kept."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from analysis.comparisons.crossover_law import SLOPE_COLUMNS, Law

#: The columns of reports/crossovers.csv: one row per measured crossover.
CROSSOVER_COLUMNS = ["problem", "source", "eps", "d", "constants", "alpha_star", "ci_low",
                     "ci_high", "where", "bracket", "use_adaptive", "use_gaussian", "predicted",
                     "rules_alone", *SLOPE_COLUMNS, "rules_paired_slope", "share_adaptive",
                     "share_gaussian", "paired_gate"]
#: The columns a crossovers CSV must have (one written before the slope columns still reads;
#: its rows carry NaN slopes until their command is rerun).
REQUIRED_COLUMNS = CROSSOVER_COLUMNS[:14]
CROSSOVERS_BY = "`dprates crossover-law --csv` / `dprates sensitivity --csv`"
LAWS_BY = "`dprates crossover-law --law-csv`"
#: The columns of reports/crossover_laws.csv: one row per family's law.
LAW_COLUMNS = ["problem", "sources", "conditions", "fitted", "eps_exp", "eps_ci_low",
               "eps_ci_high", "d_exp", "d_ci_low", "d_ci_high", "pred_eps_exp", "pred_d_exp"]


def crossovers_csv(law: Law) -> pd.DataFrame:
    """One row per measured crossover (family, spec and calibration, eps, d, constants, alpha*
    and its CI, how it was bracketed, the budget uses and the predictions), for
    reports/crossovers.csv, which the reference report's headline page reads."""
    return law.table.assign(constants="knobs at 1")[CROSSOVER_COLUMNS]


def _read(path: str, flag: str, required: list[str], made_by: str) -> pd.DataFrame:
    """A CSV read back for `flag`, refused in one line naming the flag when it is unreadable or
    lacks `required` columns."""
    try:
        table = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        why = " ".join(str(exc).split())  # pandas' parser messages run over lines
        raise ValueError(f"{flag}={path!r} is invalid: {why} (a CSV of {made_by})") from None
    missing = [c for c in required if c not in table]
    if missing:
        raise ValueError(f"{flag}={path!r} is invalid: it lacks the columns {missing} (a CSV of "
                         f"{made_by})")
    return table


def _merge(path: str, rows: pd.DataFrame, columns: list[str], required: list[str], key: str,
           flag: str, made_by: str) -> pd.DataFrame:
    """`rows` merged into the CSV at `path`: its rows with the same `key` values replaced, the
    others kept (a file lacking `required` columns is refused, never overwritten)."""
    rows = rows.reindex(columns=columns)
    if Path(path).is_file():
        old = _read(path, flag, required, made_by).reindex(columns=columns)
        # a rerun puts its rows where the old ones of its `key` were, so that rerunning every
        # command rewrites the file in the same order
        order = {k: i for i, k in enumerate(dict.fromkeys([*old[key], *rows[key]]))}
        rows = pd.concat([old[~old[key].isin(set(rows[key]))], rows], ignore_index=True)
        rows = rows.sort_values(key, key=lambda col: col.map(order), kind="stable",
                                ignore_index=True)
    # six digits: page 2 and the markdown round these again, to three
    rows.to_csv(path, index=False, float_format="%.6g")
    return rows


def merge_crossovers(path: str, rows: pd.DataFrame, flag: str = "--csv") -> pd.DataFrame:
    """reports/crossovers.csv with `rows` in it: the file's rows from the same sources are
    replaced, those of other sources (the law's stores, the sensitivity store) kept, so both
    commands write one file. Returns the merged table (also written)."""
    return _merge(path, rows, CROSSOVER_COLUMNS, REQUIRED_COLUMNS, "source", flag, CROSSOVERS_BY)


def law_row(law: Law) -> pd.DataFrame:
    """The law as one row of reports/crossover_laws.csv (empty when there is no law: fewer than
    two conditions, or fewer than two inside their brackets so that no exponent is defined):
    the family, its sources, how many conditions there are and how many the plane runs through,
    the exponents with CIs and those the scaled rules give."""
    t = law.table
    if len(t) < 2 or not (math.isfinite(law.eps_exp) or math.isfinite(law.d_exp)):
        return pd.DataFrame(columns=LAW_COLUMNS)
    return pd.DataFrame([{
        "problem": t["problem"].iloc[0], "sources": "; ".join(dict.fromkeys(t["source"])),
        "conditions": len(t), "fitted": law.fitted,
        "eps_exp": law.eps_exp, "eps_ci_low": law.eps_ci[0], "eps_ci_high": law.eps_ci[1],
        "d_exp": law.d_exp, "d_ci_low": law.d_ci[0], "d_ci_high": law.d_ci[1],
        "pred_eps_exp": law.pred_eps_exp, "pred_d_exp": law.pred_d_exp}], columns=LAW_COLUMNS)


def merge_laws(path: str, row: pd.DataFrame, flag: str = "--law-csv") -> pd.DataFrame:
    """reports/crossover_laws.csv with `row` in it, replacing the same family's law (one law per
    family). Returns the merged table (also written)."""
    return _merge(path, row, LAW_COLUMNS, LAW_COLUMNS, "problem", flag, LAWS_BY)


def read_crossovers(path: str, flag: str) -> pd.DataFrame:
    """reports/crossovers.csv read back for a command's `flag` (--crossovers, --ranges), its
    columns in CROSSOVER_COLUMNS' order (a file from before the slope columns: NaN slopes)."""
    table = _read(path, flag, REQUIRED_COLUMNS, CROSSOVERS_BY)
    return table.reindex(columns=[*CROSSOVER_COLUMNS,
                                  *(c for c in table.columns if c not in CROSSOVER_COLUMNS)])


def read_laws(path: str, flag: str) -> pd.DataFrame:
    """reports/crossover_laws.csv read back for `flag` (--laws)."""
    return _read(path, flag, LAW_COLUMNS, LAWS_BY)
