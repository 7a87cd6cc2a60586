"""Every reference row's stated verdict band, planted (issue 70, item 6).

From the committed points of every declared fit (reports/reference_fit_points.csv, written by
`make reference-report`) and the committed claims CSV, each row is replayed through the engine
(`analysis.verdict_engine.replant`): first as measured, which must give back the row's exponent,
CI (to the CSV's 4 significant digits) and verdict kind (the points are the row's, the bootstrap
the row's generator); then
the row's curve tilted to 0.01 inside each finite edge of its band must receive the row's verdict
kind (before the regime gate: `test_verdict_kind`) and tilted 0.01 outside must not. A band
wrong by more than 0.01 fails. About 0.25 s a replant; ~65 rows, ~5 replants each."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.verdict_engine.replant import judge, row_points, tilt

REPORTS = Path(__file__).resolve().parent.parent / "reports"
CLAIMS = REPORTS / "reference_exponents.csv"
POINTS = REPORTS / "reference_fit_points.csv"
TOL = 0.01
#: The claims CSV's relative precision (4 significant digits).
CSV_DIGITS = 5e-4


def _rows() -> list[pd.Series]:
    if not (CLAIMS.is_file() and POINTS.is_file()):
        return []
    table = pd.read_csv(CLAIMS)
    if "test_verdict_kind" not in table:
        return []
    keep = table["predicted"].notna() & table["test_verdict_kind"].notna() \
        & (table["verdict_band_low"].notna() | table["verdict_band_high"].notna())
    return [r for _, r in table[keep].iterrows()]


ROWS = _rows()
_POINTS: list[pd.DataFrame] = []


def _points() -> pd.DataFrame:
    if not _POINTS:
        _POINTS.append(pd.read_csv(POINTS))
    return _POINTS[0]


def test_the_reference_carries_bands_and_points():
    """The sixth edition's CSV states a band on every row with a claim and a verdict of a test,
    and its points file holds every such row's runs."""
    assert ROWS, "reports/reference_exponents.csv has no verdict bands or no fit points file"
    table = pd.read_csv(CLAIMS)
    with_claim = table[table["predicted"].notna() & (table["verdict"] != "no claim")]
    assert len(ROWS) >= 0.9 * len(with_claim)
    missing = [f"{r['spec']}/{r['fit']}/{r['algorithm']}" for r in ROWS
               if row_points(_points(), r).empty]
    assert not missing, missing


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['spec']}-{r['fit']}-{r['algorithm']}-"
                                           f"{int(r['group_index'])}" for r in ROWS])
def test_a_row_replants_to_its_stated_band(row):
    pts = row_points(_points(), row)
    again = judge(pts, row)
    # the CSV keeps 4 significant digits (page 1 and the README read the same numbers)
    for col in ("exponent", "ci_low", "ci_high"):
        assert again[col] == pytest.approx(row[col], rel=CSV_DIGITS, abs=1e-12), col
    assert again["test_verdict_kind"] == row["test_verdict_kind"], again["verdict_reason"]
    kind = row["test_verdict_kind"]
    lo, hi = row["verdict_band_low"], row["verdict_band_high"]
    # inside: TOL in from the edge, or the band's middle where it is narrower than 2 TOL
    step = min(TOL, (hi - lo) / 2) if math.isfinite(lo) and math.isfinite(hi) else TOL
    for edge, inward in ((lo, +1), (hi, -1)):
        if not math.isfinite(edge):
            continue
        inside = judge(tilt(pts, edge + inward * step, row["exponent"]), row)
        assert inside["test_verdict_kind"] == kind, \
            f"{edge + inward * step:.4f} inside the band's edge {edge:.4f}: {inside['verdict']}"
        outside = judge(tilt(pts, edge - inward * TOL, row["exponent"]), row)
        assert outside["test_verdict_kind"] != kind, \
            f"{edge - inward * TOL:.4f} outside the band's edge {edge:.4f}: {outside['verdict']}"
