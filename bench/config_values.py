"""Checks of single spec values, and `SpecError`: tables of allowed keys, integers, grid lists,
number lists, parameter tables, and delta entries (a number or a rule "1/n^p") with the
delta of a cell they give (`bench.config` parses a whole spec with them)."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from typing import Any


class SpecError(ValueError):
    """An invalid sweep spec (the message names the key, the value and what is allowed)."""


def invalid_value(key: str, value: Any, allowed: str) -> SpecError:
    return SpecError(f"{key}={value!r} is invalid: {allowed}")


def did_you_mean(key: str, allowed: Iterable[str]) -> str:
    """' (did you mean "x"?)' for the allowed names closest to a typo (difflib), else ""."""
    close = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def check_keys(table: Any, allowed: set[str], where: str) -> None:
    if not isinstance(table, dict):
        raise invalid_value(where, table, "must be a table")
    for key in table:
        if key not in allowed:
            at = f"{where}.{key}" if where else str(key)
            raise SpecError(f"{at} is an unknown key{did_you_mean(key, allowed)}: allowed are "
                            f"{', '.join(sorted(allowed))}")


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def int_like(key: str, v: Any, lo: int) -> int:
    if is_number(v) and math.isfinite(v) and float(v).is_integer() and v >= lo:
        return int(v)
    raise invalid_value(key, v, f"must be an integer >= {lo}")


def grid_list(key: str, v: Any) -> list:
    if not isinstance(v, list):
        raise invalid_value(key, v, "must be a list of values")
    if not v:
        raise invalid_value(key, v, "must not be empty")
    if len({repr(x) for x in v}) != len(v):
        raise invalid_value(key, v, "must not repeat a value")
    return v


DELTA_RULE = re.compile(r"^1/n(?:\^(\d+(?:\.\d+)?))?$")


def delta_entry(x: Any) -> float | str:
    """A number in (0, 1), or a rule "1/n^p" (p > 0) kept as its canonical string."""
    if is_number(x) and 0 < float(x) < 1:
        return float(x)
    if isinstance(x, str):
        m = DELTA_RULE.match(x.replace(" ", ""))
        if m and (m.group(1) is None or float(m.group(1)) > 0):
            return f"1/n^{float(m.group(1) or 1):g}"
    raise SpecError(f"grid.delta contains {x!r}: every delta must be a number in (0, 1) or a "
                    'rule "1/n^p" with p > 0 (1 / budget^p per cell)')


def delta_for(entry: float | str, budget: int | None) -> float:
    """The delta of a cell: the number itself, or 1 / budget^p for a rule "1/n^p"."""
    if isinstance(entry, str):
        return float(budget) ** -float(entry.split("^")[1])
    return float(entry)


def number_list(key: str, v: Any, check, allowed: str) -> list:
    vals = grid_list(key, v)
    for x in vals:
        if not is_number(x) or not check(float(x)):
            raise SpecError(f"{key} contains {x!r}: {allowed}")
    return vals


def param_table(key: str, v: Any) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise invalid_value(key, v, "must be a table of name = value")
    for k, x in v.items():
        if not isinstance(x, (int, float, str, bool)):
            raise SpecError(f"{key}.{k}={x!r} is invalid: must be a number, string or boolean")
    return dict(v)
