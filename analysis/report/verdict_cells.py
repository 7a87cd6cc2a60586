"""The fifth edition's two summary cells (issue 55): a row's primary test against its own rules
(`rules_text`) and what its decisions would accept on its own design (`resolution_text`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def finite(v: Any) -> bool:
    return isinstance(v, (int, float, np.floating)) and math.isfinite(float(v))


def rules_text(row: Mapping[str, Any]) -> str:
    """The primary test as a summary cell (issue 55): "follows", "slower by 0.1 [0.06, 0.14]",
    "undecided", or "no rules curve", with the margin."""
    v = str(row.get("rules_verdict", "") or "")
    if not v or v == "nan":
        return "-"
    if v.startswith("no rules curve"):
        return "no rules curve"
    res, lo, hi, m = (row.get(k) for k in ("rules_residual", "rules_residual_low",
                                            "rules_residual_high", "margin"))
    short = v.replace(" than its rules", "").replace(" its rules", "").replace(" against", "")
    if finite(res) and finite(lo) and finite(hi):
        short += f" ({float(res):+.2f} [{float(lo):+.2f}, {float(hi):+.2f}]"
        short += f", m {float(m):.2g})" if finite(m) else ")"
    return short


def resolution_text(row: Mapping[str, Any]) -> str:
    """What the row's decisions would accept on its own design (issue 55, item 3): the pure
    power laws the rules test calls "follows" and those the O~ test does not refute; first, the
    band of pure power laws that receive the row's own verdict (sixth edition, issue 70), and
    whether it was decided on a design under the length rule."""
    parts = []
    blo, bhi = row.get("verdict_band_low"), row.get("verdict_band_high")
    if finite(blo) or finite(bhi):
        lo_t = f"{float(blo):.3g}" if finite(blo) else "-inf"
        hi_t = f"{float(bhi):.3g}" if finite(bhi) else "+inf"
        parts.append(f"this verdict for {lo_t}..{hi_t}")
    if "decided on a short design" in str(row.get("resolution", "")):
        parts.append("short design")
    lo, hi = row.get("rules_accepts_low"), row.get("rules_accepts_high")
    if finite(lo) and finite(hi):
        parts.append(f"rules test {float(lo):.3g}..{float(hi):.3g}")
    elif str(row.get("rules_verdict", "")).startswith(("follows", "slower", "faster", "undecided")):
        parts.append("rules test: nothing at m")
    lo, hi = row.get("accepts_low"), row.get("accepts_high")
    if finite(lo) and finite(hi):
        parts.append(f"O~ test {float(lo):.3g}..{float(hi):.3g}")
    return "; ".join(parts) or "-"
