"""Typed verdicts (sixth edition, issue 70 item 4): what a fit row's verdict is, as a value.

The engine (`decide`) builds a `Verdict`; its text is rendered from it (`Verdict.text`) and never
parsed back. Every reader of a claims CSV that needs the kind reads the `verdict_kind` column
(the enum's value), not the English; `kind_of` maps a rendered verdict of an older edition (whose
CSV has no `verdict_kind`) to its kind, for the edition diff only.

The kinds, in the order `decide` tries them (the first that holds is the verdict):

- EXCEEDS_BOUND: the measured curve lies above the algorithm's own upper bound (its rules, knobs
  at 1) beyond the seeds' one-sided interval at some design point;
- RULES_SLOWER / RULES_FASTER: the primary test rejected (the residual slope's CI clears +-m):
  the verdict whatever the O~ test says;
- FOLLOWS_MEASURED: the primary test holds and the measured slope over the deepest decade of a
  design of two decades or more lies within +-m of the claim (the claim link on data);
- FOLLOWS_CHAIN / FOLLOWS_OTHER: the primary test holds and the rules' asymptote is / is not the
  claim;
- CLAIM_SLOWER / CLAIM_FASTER: the O~ test rejected (the CI clears the claim's band);
- REACHES_MEASURED: no rules decision, no O~ rejection, and the measured deepest decade within
  +-m of the claim (the claim link on data without the rules test);
- UNTESTABLE: the O~ test's accepted range holds the rival claim (or is wider than the gap);
- CONSISTENT / NOT_REFUTED: the O~ test agrees (inside +-m / meets the band);
- DESIGN_TOO_SHORT: no test decided and the resolution of every test is wider than the gap it
  must tell (the margin, the rival): only here is the design the verdict;
- NOT_IN_REGIME (the regime gate, applied after), NO_CLAIM and INCONCLUSIVE (nothing to read).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np


class VerdictKind(StrEnum):
    EXCEEDS_BOUND = "exceeds_bound"
    RULES_SLOWER = "rules_slower"
    RULES_FASTER = "rules_faster"
    FOLLOWS_MEASURED = "follows_measured"
    FOLLOWS_CHAIN = "follows_chain"
    FOLLOWS_OTHER = "follows_other"
    CLAIM_SLOWER = "claim_slower"
    REACHES_MEASURED = "reaches_measured"
    CLAIM_FASTER = "claim_faster"
    UNTESTABLE = "untestable"
    CONSISTENT = "consistent"
    NOT_REFUTED = "not_refuted"
    DESIGN_TOO_SHORT = "design_too_short"
    NOT_IN_REGIME = "not_in_regime"
    NO_CLAIM = "no_claim"
    INCONCLUSIVE = "inconclusive"


#: The verdicts' names as the report prints them (a suffix may follow: "by X", "(accepts a..b)").
NAMES = {
    VerdictKind.EXCEEDS_BOUND: "exceeds its bound",
    VerdictKind.RULES_SLOWER: "slower than its rules",
    VerdictKind.RULES_FASTER: "faster than its rules",
    VerdictKind.FOLLOWS_MEASURED: "follows its rules and reaches the claim on its deepest decade",
    VerdictKind.FOLLOWS_CHAIN: "follows its rules, whose asymptote is the claim",
    VerdictKind.FOLLOWS_OTHER: "follows its rules, whose asymptote is not the claim",
    VerdictKind.CLAIM_SLOWER: "slower than claimed",
    VerdictKind.CLAIM_FASTER: "faster than claimed",
    VerdictKind.REACHES_MEASURED: "reaches the claim on its deepest decade",
    VerdictKind.UNTESTABLE: "the O~ claim is untestable on this window",
    VerdictKind.CONSISTENT: "consistent",
    VerdictKind.NOT_REFUTED: "not refuted by the O~ claim",
    VerdictKind.DESIGN_TOO_SHORT: "design too short",
    VerdictKind.NOT_IN_REGIME: "not in regime",
    VerdictKind.NO_CLAIM: "no claim",
    VerdictKind.INCONCLUSIVE: "inconclusive",
}

#: What each kind says about the claim, in plain words (the report's glossary and the edition
#: diff's "why").
MEANING = {
    VerdictKind.EXCEEDS_BOUND: "the measured curve lies above the algorithm's own bound (its "
        "rules, constants at 1) beyond the seeds' interval: the bound as implemented fails",
    VerdictKind.RULES_SLOWER: "the residual slope against the algorithm's own rules clears the "
        "margin m on the unfavourable side: the curve falls more slowly than its bound says",
    VerdictKind.RULES_FASTER: "the residual slope against the algorithm's own rules clears the "
        "margin m on the favourable side: the bound is loose on this window",
    VerdictKind.FOLLOWS_MEASURED: "the residual slope against the algorithm's own rules is "
        "within +-m and, on a design of two decades or more, the measured slope over the deepest "
        "decade lies within +-m of the claim: both links of the chain measured",
    VerdictKind.FOLLOWS_CHAIN: "the residual slope against the algorithm's own rules is within "
        "+-m and the rules' local slope tends to the claim",
    VerdictKind.FOLLOWS_OTHER: "the curve follows its rules, but the rules' local slope does not "
        "tend to the claimed exponent",
    VerdictKind.CLAIM_SLOWER: "the CI clears the claim's band (its declared logs, +-m) on the "
        "unfavourable side",
    VerdictKind.CLAIM_FASTER: "the CI clears the claim's band (its declared logs, +-m) on the "
        "favourable side",
    VerdictKind.REACHES_MEASURED: "the rules test does not decide and the O~ test does not "
        "reject, and the measured slope over the deepest decade of a design of two decades or "
        "more lies within +-m of the claim",
    VerdictKind.UNTESTABLE: "the O~ band accepts the rival claim too (or is wider than the gap "
        "to it) and no other test decides",
    VerdictKind.CONSISTENT: "the seeds' CI lies within the margin m of the claim's slope",
    VerdictKind.NOT_REFUTED: "the CI meets the claim's band (its declared logs, +-m) and no "
        "other test decides",
    VerdictKind.DESIGN_TOO_SHORT: "no test decides and every test's resolution on this design is "
        "wider than the gap it must tell (the margin, the rival)",
    VerdictKind.NOT_IN_REGIME: "the regime gate (ceiling, floor or the private share below 0.9)",
    VerdictKind.NO_CLAIM: "the algorithm declares no claim on this metric",
    VerdictKind.INCONCLUSIVE: "no CI to read",
}

#: Kinds that agree with the claim (a claim over several fits reads the weakest; strongest
#: first).
AGREEING = (VerdictKind.FOLLOWS_MEASURED, VerdictKind.CONSISTENT, VerdictKind.REACHES_MEASURED,
            VerdictKind.FOLLOWS_CHAIN, VerdictKind.NOT_REFUTED)
#: Kinds that reject a slope test, with the direction they reject it in. EXCEEDS_BOUND rejects the
#: bound's level, not a slope: it has no direction (a tilt about the window's centre can lift
#: either end above the bound).
DIRECTION = {VerdictKind.RULES_SLOWER: "slower", VerdictKind.RULES_FASTER: "faster",
             VerdictKind.CLAIM_SLOWER: "slower", VerdictKind.CLAIM_FASTER: "faster"}
#: Kinds that reject a test (a slope test, or the bound's level).
REJECTED = (*DIRECTION, VerdictKind.EXCEEDS_BOUND)



def _g(v: float) -> str:
    return f"{v:.3g}" if math.isfinite(v) else "-"


@dataclass(frozen=True)
class Verdict:
    """One row's verdict. `by`: the rejected test's distance beyond its reference (the residual
    for the rules test, the exceedance ratio for the bound); `accepts`: the accepted range a
    "not refuted" / "untestable" verdict prints; `even_with_logs`: the O~ rejection clears a band
    its declared logs widen; `band_low..band_high`: the pure power laws that receive this verdict
    on this design (NaN: unbounded on that side)."""

    kind: VerdictKind
    by: float = math.nan
    accepts: str = ""
    even_with_logs: bool = False
    band_low: float = math.nan
    band_high: float = math.nan

    @property
    def text(self) -> str:
        name = NAMES[self.kind]
        if self.kind in (VerdictKind.RULES_SLOWER, VerdictKind.RULES_FASTER) \
                and math.isfinite(self.by):
            return f"{name} by {abs(self.by):.3g}"
        if self.kind is VerdictKind.EXCEEDS_BOUND and math.isfinite(self.by):
            return f"{name} ({self.by:.3g}x)"
        if self.kind in (VerdictKind.CLAIM_SLOWER, VerdictKind.CLAIM_FASTER):
            return name + (" even with logs" if self.even_with_logs else "")
        if self.kind in (VerdictKind.NOT_REFUTED, VerdictKind.UNTESTABLE) and self.accepts:
            return f"{name} ({self.accepts})"
        return name

    @property
    def band(self) -> str:
        """The band of pure power-law slopes that receive this verdict, as text."""
        if not (math.isfinite(self.band_low) or math.isfinite(self.band_high)):
            return ""
        lo = _g(self.band_low) if math.isfinite(self.band_low) else "-inf"
        hi = _g(self.band_high) if math.isfinite(self.band_high) else "+inf"
        return f"{lo}..{hi}"


def kind_of(verdict: str) -> VerdictKind | None:
    """The kind of a rendered verdict (an older edition's CSV, which has no `verdict_kind`);
    None for a text no kind renders (a claim's joint verdict, a fourth-edition label)."""
    if not isinstance(verdict, str) or verdict.startswith("consistent up to"):
        return None  # the fourth edition's allowance, no kind of this engine
    for kind in sorted(NAMES, key=lambda k: -len(NAMES[k])):
        if verdict == NAMES[kind] or verdict.startswith(NAMES[kind] + " "):
            return kind
    return None


def share_source(measured: object, source: object = "") -> str:
    """Whose private share a row's gate read: "measured" (eps = inf controls), "rules" (the
    rules' split) or "" (none), from its typed `private_share_measured` column; an older
    edition's CSV without it is read off its `private_share_source` text."""
    if isinstance(measured, (bool, np.bool_)):
        return "measured" if measured else "rules"
    if isinstance(measured, str) and measured in ("True", "False"):
        return "measured" if measured == "True" else "rules"
    text = str(source) if isinstance(source, str) else ""
    return "measured" if text.startswith("measured") else "rules" if text.startswith("the rules") \
        else ""


__all__ = ["AGREEING", "DIRECTION", "MEANING", "NAMES", "REJECTED", "Verdict", "VerdictKind",
           "kind_of", "share_source"]
