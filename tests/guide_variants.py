"""The guide's `quadratic_valley` plugin (problems/README.md) and variants of it with edits, for
tests/test_compiled_loss.py and tests/test_problem_checks.py."""

from __future__ import annotations

from tests.test_compiled_plugin_profiles import guide_block

GUIDE = guide_block("# my_quadratic_valley.py")


def guide_variant(name: str, edits: list[tuple[str, str]]) -> str:
    """The guide's source registered as `name` (class QV_<name>), each (old, new) edit applied
    (old must occur)."""
    src = GUIDE.replace('"quadratic_valley"', f'"{name}"').replace("class QuadraticValley",
                                                                   f"class QV_{name}")
    for old, new in edits:
        assert old in src, old
        src = src.replace(old, new)
    return src
