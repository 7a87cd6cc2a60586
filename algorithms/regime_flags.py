"""A regime flag as a value (issue 75, item 2): what a flag on a fit's window says (its kind, which
the regime gate reads) and why (its sentence, which the report prints); what a forecast's balance
of a claim's two terms rests on. Rendered to text once, at the claims table's columns, and never
parsed back: the gate reads the kinds (`gate_kinds`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class FlagKind(StrEnum):
    """What a regime flag says of a fit's window (issue 75, item 2: typed, never parsed back)."""
    CEILING = "ceiling"  # runs sit at their start, or the bound is above a tenth of it
    FLOOR = "floor"  # the statistical term (or the eps = inf floor) carries the slope
    CENSORED = "censored"  # some runs never reached their threshold: counted, not a gate
    NO_POINTS = "no design point"  # a forecast with no design point in the window: said, not a gate


#: The kinds that fail the regime gate: where the window touches the start (ceiling) or the
#: non-private floor, the measured slope is the saturation's, not the claim's. Censoring is
#: intrinsic to the sample-complexity view and is counted, not gated.
GATE_KINDS = frozenset({FlagKind.CEILING, FlagKind.FLOOR})


@dataclass(frozen=True)
class RegimeFlag:
    """One flag on a fit's window: its kind (what the gate reads) and the sentence that says
    why (what the report prints, rendered by `render`, never read back)."""
    kind: FlagKind
    text: str

    @property
    def gates(self) -> bool:
        return self.kind in GATE_KINDS

    def render(self) -> str:
        return self.text if self.kind is FlagKind.NO_POINTS else f"{self.kind.value}: {self.text}"


def render_flags(flags: Iterable[RegimeFlag]) -> str:
    """The flags as a claims table prints them, "; "-joined."""
    return "; ".join(f.render() for f in flags)


def gate_kinds(flags: Iterable[RegimeFlag]) -> str:
    """The kinds of the flags that fail the gate, sorted and ";"-joined ("" when it passes):
    the claims CSV's `gate_kinds` column, which the gate reads back as enum values."""
    return ";".join(sorted({f.kind.value for f in flags if f.gates}))


class ForecastSource(StrEnum):
    """What a forecast's balance of the two terms rests on: the claim's terms with constants at
    1, or a Spider's own rules (which alone gate a verdict: `gate_flags`)."""
    CLAIM_TERMS = "claim's terms, constants at 1"
    RULES_BUDGET = "the rules' sample budget (private part against non-private), knobs at 1"
    RULES_ACCURACY = "the rules' accuracy at n (private part against non-private), knobs at 1"

    @property
    def from_rules(self) -> bool:
        return self is not ForecastSource.CLAIM_TERMS


__all__ = ["GATE_KINDS", "FlagKind", "ForecastSource", "RegimeFlag", "gate_kinds", "render_flags"]
