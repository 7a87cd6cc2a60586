"""The fifth edition's two summary cells (issue 55): a row's primary test against its own rules
(`rules_text`) and what its decisions would accept on its own design (`resolution_text`)."""

from __future__ import annotations

import math
import re
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


#: "faster" / "slower" as the verdict engine writes them (`FAVOURABLE`: better for the reader,
#: so their sign against the numbers flips with the view and x); page 1 says "steeper" /
#: "flatter" instead, one convention that reads off the slopes in the row (issue 73, item 1).
_PACE = re.compile(r"\b(faster|slower)\b(?=( than claimed)?)")


def steepness(view: Any, x: Any, faster: bool, reference: Any) -> str | None:
    """"steeper" where the measured slope lies further from 0 than `reference` (the rules' or the
    claim's slope) on the side the verdict engine's `faster` / `slower` puts it, "flatter"
    where nearer; None where the (view, x) or the reference is unknown."""
    from analysis.verdict_engine.verdicts import FAVOURABLE

    sign = FAVOURABLE.get((str(view), str(x)))
    if sign is None or not finite(reference):
        return None
    towards = sign if faster else -sign  # the sign of measured - reference
    ref = float(reference)
    return "steeper" if ref == 0 or (towards > 0) == (ref > 0) else "flatter"


def as_steepness(text: Any, view: Any, x: Any, rules: Any, claimed: Any) -> str:
    """`text` with each "faster" / "slower" rewritten as "steeper" / "flatter" (against the
    claim's slope where followed by "than claimed", else the rules'); left as it is where the
    direction is unknown."""
    def word(m: re.Match) -> str:
        ref = claimed if m.group(2) else rules
        ref = _number(ref)
        return steepness(view, x, m.group(1) == "faster", ref) or m.group(1)

    return _PACE.sub(word, str(text))


def _number(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
