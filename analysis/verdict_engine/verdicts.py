"""Verdicts: a fit's CI read against a prediction with the declared margin (`verdict`:
consistent / faster than claimed / slower than claimed / inconclusive), the direction in which
each x counts as faster (`FAVOURABLE`); the names of the other verdicts; and the regime gate
(issue 28, point 1): a fit whose window fails it (a ceiling or floor flag) gets "not in regime"
with that reason, whatever its CI (`apply_gate`, which reads the flags' kinds, never their text).
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pandas as pd

from algorithms.regime_flags import GATE_KINDS, FlagKind, RegimeFlag, gate_kinds, render_flags
from analysis.verdict_engine.rates import ExponentFit
from analysis.verdict_engine.typed import VerdictKind, kind_of

#: Direction of "faster than claimed": +1 if an exponent above the prediction is more
#: favourable in the regime the claim is about (large n, small target alpha, strong privacy
#: i.e. small eps, high dimension), -1 if below. Example: n* ~ alpha^-1 measured against a
#: claimed alpha^-2 needs fewer samples as alpha -> 0: faster than claimed.
FAVOURABLE = {
    ("error", "privacy"): +1, ("error", "n"): -1, ("error", "eps"): +1, ("error", "d"): -1,
    ("error", "rank"): -1,
    ("sample_complexity", "alpha"): +1, ("sample_complexity", "eps"): +1,
    ("sample_complexity", "d"): -1, ("sample_complexity", "privacy"): -1,
}


def verdict(fit: ExponentFit | dict, predicted: float | None, view: str = "error",
            x: str | None = None, margin: float | None = None) -> str:
    """A CI against a prediction with the declared margin m (`analysis.verdict_engine.margins`;
    fifth edition, issue 55): consistent (the CI inside [p - m, p + m]), faster / slower than
    claimed (the CI entirely beyond p + m or p - m, on the favourable / unfavourable side, see
    FAVOURABLE), inconclusive (no prediction, no CI, or a CI across p +- m). No absolute width
    rule: a CI that clears the prediction by more than m is conclusive however wide."""
    from analysis.verdict_engine.margins import margin as declared_margin

    f = fit if isinstance(fit, dict) else asdict(fit)
    lo, hi = f["ci_low"], f["ci_high"]
    xname = x or f["x"]
    if predicted is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    m = declared_margin(predicted) if margin is None else margin
    if predicted - m <= lo and hi <= predicted + m:
        return "consistent"
    if predicted - m <= hi and lo <= predicted + m:
        return "inconclusive"
    above = lo > predicted + m
    sign = FAVOURABLE.get((view, xname))
    if sign is None:
        raise ValueError(f"(view, x)=({view!r}, {xname!r}) is invalid: no favourable direction "
                         f"is defined; allowed are {sorted(FAVOURABLE)}")
    return "faster than claimed" if (above == (sign > 0)) else "slower than claimed"


#: The verdict of a fit that fails the regime gate (a ceiling or floor flag): its slope says
#: nothing about the claim, whatever its CI (issue 28, point 1). Its reason is in `regime`.
NOT_IN_REGIME = "not in regime"
#: The verdict of a claim no window can test (its bound binds only past the budget).
OUT_OF_REACH = "out of reach"
#: The verdict of a fit of an algorithm that declares no claim on the fit's metric.
NO_CLAIM = "no claim"
#: The verdict of a declared claim that no fit measures.
NOT_MEASURED = "not measured"
#: The flag kinds that fail the regime gate (`algorithms.regime_forecast.GATE_KINDS`): where the
#: window touches the start (ceiling) or the non-private floor, the measured slope is the
#: saturation's, not the claim's. "censored" is not among them: censoring is intrinsic to the
#: sample-complexity view and is counted.
GATE_FLAGS = tuple(sorted(k.value for k in GATE_KINDS))


def flag_columns(flags: list[RegimeFlag]) -> dict[str, str]:
    """A fit row's flag columns, rendered from its typed flags: `flags` (every flag's text),
    `gate_kinds` (the kinds that fail the gate, what `apply_gate` reads) and `regime` (the
    gate's reason, or "in regime")."""
    return {"flags": render_flags(flags), "gate_kinds": gate_kinds(flags),
            "regime": render_flags(f for f in flags if f.gates) or "in regime"}


def legacy_regime_reason(flags: str | float | None) -> str:
    """The gate's reason read off an older edition's `flags` text (a claims CSV written before
    the `gate_kinds` column, issue 75): its ceiling / floor parts. Only `apply_gate` on such a
    CSV calls it; a fresh fit carries its flags typed (`RegimeFlag`) and never parses them."""
    if not isinstance(flags, str):
        return ""
    parts = [p.strip() for p in flags.split("; ") if p.strip()]
    return "; ".join(p for p in parts if p.split(":")[0].strip() in GATE_FLAGS)


def _gate_columns(table: pd.DataFrame) -> tuple[list[set[str]], list[str]]:
    """Per row, the gate's kinds and its reason: from the typed columns (`gate_kinds`, the
    enum values; `regime`, rendered from the flags) where the row has them, else (a row of an
    older edition's CSV, whose `gate_kinds` is missing) from its flags text."""
    typed = table["gate_kinds"] if "gate_kinds" in table else pd.Series(None, index=table.index,
                                                                        dtype=object)
    regime = table["regime"] if "regime" in table else pd.Series("", index=table.index)
    flags = table["flags"] if "flags" in table else pd.Series("", index=table.index)
    kinds, reasons = [], []
    for k, r, f in zip(typed, regime, flags, strict=True):
        if isinstance(k, str):
            kinds.append(set(k.split(";")) - {""})
            reasons.append(str(r) if kinds[-1] else "")
        else:
            reasons.append(legacy_regime_reason(f))
            kinds.append({p.split(":")[0].strip() for p in reasons[-1].split("; ")} - {""})
    return kinds, reasons


def read_back(table: pd.DataFrame) -> pd.DataFrame:
    """A claims table read back from its CSV: an empty `gate_kinds` field (which pandas reads
    as missing) is the typed "no failing kind", not an older edition's missing column."""
    if "gate_kinds" in table:
        # (not fillna: a column of empty fields reads back as float NaN, which takes no "")
        table = table.assign(gate_kinds=[k if isinstance(k, str) else "" for k in table["gate_kinds"]])
    return table


def apply_gate(table: pd.DataFrame) -> pd.DataFrame:
    """A fit table (from `run_fit`, or a claims CSV read back) with the regime gate applied
    from its typed gate columns (`gate_kinds`, `regime`): `regime` holds "in regime" or the
    reason, and every verdict read from a CI on that window (verdict, rules_verdict,
    two_term_verdict) becomes "not in regime" where the gate fails. Idempotent: a gated table
    comes back unchanged."""
    if table.empty or ("flags" not in table and "gate_kinds" not in table):
        return table
    out = table.copy()
    kinds, reasons = _gate_columns(out)
    out["regime"] = [r or "in regime" for r in reasons]
    out["gate_kinds"] = [";".join(sorted(k)) for k in kinds]
    failed = np.array([bool(k) for k in kinds], dtype=bool)
    # The two-term fit models the floor (b n^-q), so only a ceiling fails it.
    ceiling = np.array([FlagKind.CEILING.value in k for k in kinds], dtype=bool)
    gated_verdict = np.zeros(len(out), dtype=bool)
    for col, mask in (("verdict", failed), ("rules_verdict", failed), ("two_term_verdict", ceiling)):
        if col in out:
            col_vals = out[col].astype(object)
            # a claimless row stays "no claim": there is no claim whose regime could fail
            has = (col_vals.notna() & (col_vals.astype(str) != "")
                   & (col_vals.astype(str) != NO_CLAIM)).to_numpy()
            out[col] = np.where(mask & has, NOT_IN_REGIME, col_vals)
            if col == "verdict":
                gated_verdict = mask & has
    if "verdict" in out:  # the typed kind follows the gate (analysis.verdict_engine.typed)
        vkinds = out["verdict_kind"].astype(object) if "verdict_kind" in out \
            else pd.Series([None] * len(out), index=out.index, dtype=object)
        # an older edition's CSV without `verdict_kind`: `kind_of` maps its rendered verdict
        out["verdict_kind"] = [VerdictKind.NOT_IN_REGIME.value if gated else
                               k if isinstance(k, str) and k else
                               (kind_of(v).value if kind_of(v) is not None else "")
                               for k, v, gated in zip(vkinds, out["verdict"], gated_verdict,
                                                      strict=True)]
    return out
