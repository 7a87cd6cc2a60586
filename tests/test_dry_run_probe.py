"""Issue 72, item 6: dry runs a user can plan by. Keys no stored or shipped rate prices (a
plugin's) are probed by running their smallest cell; every cell expected past limits.time is
named with its estimate."""

from __future__ import annotations

import time

import pytest

from bench.cli import main
from bench.config import parse_spec
from bench.cost import DEFAULT_CELL_OVERHEAD, PROBE_TIME, CostModel, probe_rates, rate_key, work_scale
from tests.guide_variants import GUIDE

SPEC = """
name = "probe"
seed = 1
[grid]
n = [{n}]
d = [3]
eps = [1.0]
[limits]
time = {limit}
[[problem]]
name = "{problem}"
[[algorithm]]
name = "{algorithm}"
"""


def test_the_probe_runs_each_unpriced_keys_smallest_cell_twice_and_prices_from_the_second():
    cells = parse_spec(SPEC.format(n="1000, 4000, 2000", limit=300, problem="hard_valley",
                                   algorithm="gaussian_spider")).cells()
    model = CostModel()  # nothing stored, nothing shipped: every key unpriced
    clock = iter([0.0, 5.0, 7.5])  # the start, after the warm run, after the timed run

    def fake_clock():
        return next(clock)
    calls = []

    def compute(cell, cap):
        calls.append((cell.n, cap))
        return {}
    horizon = {1000: 100.0, 2000: 200.0, 4000: 400.0}

    def h(c):
        return horizon[c.n]
    mp = pytest.MonkeyPatch()
    mp.setattr(time, "perf_counter", fake_clock)
    try:
        assert probe_rates(cells, model, h, compute, limit=30.0) == 1
    finally:
        mp.undo()
    # the smallest cell (n 1000), twice, each capped at min(limits.time, PROBE_TIME)
    assert calls == [(1000, min(30.0, PROBE_TIME))] * 2
    fit = model.probed[rate_key(cells[0])]
    smallest = min(cells, key=lambda c: c.n)
    assert fit.rate == pytest.approx((2.5 - DEFAULT_CELL_OVERHEAD) / work_scale(smallest, h))
    assert model.probe_seconds == pytest.approx(7.5)
    # a larger cell of the key is priced by scaling, its estimate no longer the default guess
    big = max(cells, key=lambda c: c.n)
    mid = model.unclipped(big, h)[1]
    assert mid == pytest.approx(fit.overhead + fit.rate * work_scale(big, h))


@pytest.fixture
def unloaded_after(tmp_path):
    """The plugins the test's in-process commands load from tmp_path, unregistered after: a later
    test in the same worker loads the guide's quadratic_valley itself (a clash), and a sweep
    stores the process's loaded plugins with every cell (which xdist's scheduling decides)."""
    yield
    from tests.plugin_registry import unload_plugins_under

    unload_plugins_under(tmp_path)


@pytest.mark.usefixtures("unloaded_after")
def test_a_plugin_dry_run_probes_and_names_every_cell_past_the_limit(tmp_path, capsys):
    plugin = tmp_path / "my_quadratic_valley.py"
    plugin.write_text(GUIDE)
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(n="200, 800", limit=1e-4, problem="quadratic_valley",
                                algorithm="dp_gd"))
    rc = main(["sweep", "--plugin", str(plugin), str(spec), "--dry-run", "--out",
               str(tmp_path / "s.sqlite")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "1 algorithm-problem pairs priced by probing their smallest cell" in out
    assert "2 of 2 cells are likely to pass limits.time" in out
    for n in (200, 800):
        assert f"    dp_gd/quadratic_valley d=3 n={n} eps=1 rep=0" in out, out
    assert not (tmp_path / "s.sqlite").exists()  # a dry run stores nothing
    # --no-probe: the default rates, no probe line
    main(["sweep", "--plugin", str(plugin), str(spec), "--dry-run", "--no-probe", "--out",
          str(tmp_path / "s.sqlite")])
    assert "probing" not in capsys.readouterr().out
