"""Command-line values: numbers, whole counts written as 2e5, and KEY=VALUE assignments
(one clear line naming the flag when a value is invalid)."""

from __future__ import annotations

import argparse
import math
from typing import Any


def parse_value(text: str) -> Any:
    """'3' -> 3, '0.5' -> 0.5, 'inf' -> inf, 'true'/'false' -> bool, else the string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_assignments(items: list[str] | None, flag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"{flag} {item!r} is invalid: must be key=value")
        key, value = item.split("=", 1)
        out[key.strip()] = parse_value(value)
    return out


def parse_count(text: str, flag: str) -> int:
    """An integer >= 1 written as 200000, 2e5 or 2E5 (a float is accepted only if integral)."""
    v = parse_value(text)
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{flag}={text} is invalid: must be a whole number >= 1 "
                         "(e.g. 200000 or 2e5)")
    return v


def positive_float(text: str) -> float:
    v = parse_value(text)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a number > 0 (or inf)")
    return float(v)
