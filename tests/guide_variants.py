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


def loaded_guide_problem(directory, first_line: str, filename: str, problem: str):
    """Generator for a fixture: the guide's block starting `first_line` written to
    directory/filename, loaded as plugins are (bench.plugins), its problem `problem` yielded,
    and every problem the file registered unregistered after (later tests count the registry)."""
    import problems
    from bench import plugins as registry
    from bench.plugins import load_plugin

    (directory / filename).write_text(guide_block(first_line))
    load_plugin(str(directory / filename))
    yield problems.get_problem(problem)
    for entry in [e for e in registry.loaded() if e.startswith(str(directory))]:
        for name in registry._LOADED.pop(entry).problems:
            problems._REGISTRY.pop(name, None)
