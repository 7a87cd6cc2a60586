"""`make bench`'s old-against-new table (issue 27): after pytest-benchmark's own table, one line
per benchmark that measured the previous implementation beside the new one in the same run.

A benchmark opts in through its `extra_info`: the new figure and the old one under one of the
key pairs of `PAIRS` (microseconds), and optionally `goal_us`. Nothing is printed when no
benchmark holds such a pair (`make test` runs the benchmarks with pytest-benchmark disabled,
so their figures are never recorded there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

#: (new, old) extra_info keys, in microseconds: the whole-engine cost per step
#: (test_step_perf) and the O2 step alone (test_counts_perf).
PAIRS = (("per_step_us", "old_per_step_us"), ("median_us", "old_median_us"))

TITLE = ("issue 27: cost per step, new against old (counts stream version 2) measured in the "
         "same test")


def old_new_rows(benchmarks: Iterable[tuple[str, Mapping]]) -> list[tuple]:
    """(name, new us, old us, old / new, goal us or None) per (name, extra_info) with a pair."""
    rows = []
    for name, info in benchmarks:
        for new_key, old_key in PAIRS:
            if new_key in info and old_key in info:
                new, old = float(info[new_key]), float(info[old_key])
                rows.append((name, new, old, old / new, info.get("goal_us")))
                break
    return rows


def old_new_table(rows: list[tuple]) -> list[str]:
    """The rows as aligned text lines (`old_new_rows`), a title and a header first; [] if none."""
    if not rows:
        return []
    width = max(len("benchmark"), *(len(r[0]) for r in rows))
    lines = [TITLE, f"{'benchmark':<{width}}  {'new us':>9}  {'old us':>9}  {'old/new':>7}  "
                    f"{'goal us':>7}  goal"]
    for name, new, old, ratio, goal in rows:
        verdict = "-" if goal is None else ("met" if new <= goal else "missed")
        goal_txt = "-" if goal is None else f"{goal:.0f}"
        lines.append(f"{name:<{width}}  {new:>9.1f}  {old:>9.1f}  {ratio:>6.2f}x  {goal_txt:>7}  "
                     f"{verdict}")
    return lines


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's own table
def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    session = getattr(config, "_benchmarksession", None)
    if session is None:
        return
    found = [(b.name, b.extra_info) for b in session.benchmarks if b is not None]
    lines = old_new_table(old_new_rows(found))
    if lines:
        terminalreporter.write_sep("-", "old against new")
        for line in lines:
            terminalreporter.write_line(line)
