"""The atlas's CSV (`reports/atlas.csv`, `dprates atlas --format csv`): the long table of
`analysis.comparisons.atlas` written at full precision and read back with its readings
recomputed, so an atlas read from its CSV gives the same answers as the stores; and the
selection of its rows by metric, problem, d and eps (`filter_table`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.comparisons.atlas import COLUMNS, OPTIONAL, with_readings


def write_csv(table: pd.DataFrame, path: str | Path) -> Path:
    """Write the long table as the atlas CSV (`reports/atlas.csv`): full float precision, so
    reading it back (`read_csv`) gives the same table."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table[COLUMNS].to_csv(path, index=False)
    return path


def read_csv(path: str | Path) -> pd.DataFrame:
    """The long table of an atlas CSV this module wrote; ValueError naming the file when it is
    not one. Point readings are recomputed from the medians and intervals."""
    try:
        table = pd.read_csv(path, keep_default_na=False, na_values=[""],
                            dtype={"instance": str, "flags": str, "source": str, "pairing": str,
                                   "algorithm": str, "winner": str, "reading": str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ValueError(f"{str(path)!r} is invalid: not a readable atlas CSV ({exc})") from None
    for c in OPTIONAL:
        if c not in table:
            table[c] = math.nan
    missing = [c for c in COLUMNS if c not in table]
    if missing:
        raise ValueError(f"{str(path)!r} is invalid: not an atlas CSV (`dprates atlas --format csv`"
                         f"; missing columns {', '.join(missing)})")
    for c in ("instance", "flags", "source", "pairing", "read_from"):
        table[c] = table[c].fillna("").astype(str)
    for c in ("d", "eps", "x", "value", "bound", "ci_low", "ci_high", "ratio", "ratio_low",
              "ratio_high"):
        table[c] = table[c].astype(float)
    table["reps"] = table["reps"].astype(int)
    return with_readings(table)


def filter_table(table: pd.DataFrame, metric: str | None = None, problem: str | None = None,
                 d: float | None = None, eps: float | None = None) -> pd.DataFrame:
    """The rows of `table` matching each given option; ValueError naming the option, its value
    and the values the atlas holds when one matches nothing."""
    for opt, want in (("metric", metric), ("problem", problem), ("d", d), ("eps", eps)):
        if want is None:
            continue
        have = sorted(set(table[opt]), key=lambda v: (str(type(v)), v))
        if opt in ("metric", "problem"):
            keep = table[opt] == want
        else:
            keep = np.array([math.isclose(float(v), float(want), rel_tol=1e-9) for v in table[opt]],
                            dtype=bool)
        if not keep.any():
            shown = ", ".join(v if isinstance(v, str) else f"{v:g}" for v in have) or "none"
            raise ValueError(f"--{opt}={want!r} is invalid: the atlas holds {opt} {shown}"
                             + (" (the claim metrics of its design points)"
                                if opt == "metric" else ""))
        table = table[keep]
    return table
