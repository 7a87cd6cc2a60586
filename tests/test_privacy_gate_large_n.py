"""Issue 71, item 4: one more check at a sweep's largest n (`bench.privacy_gate.largest_n`).

A self-noised Poisson DP-SGD whose batch is capped at 256 records in memory while its ledger
accounts the rate q = b / n: invisible wherever q n <= 256, as at the checks' own cap of
20,000 records (b 120 there), and FAILED at the sweep's largest n, 100,000 (b 600: the
sampler test reads 256 of 600 a release, z about -40)."""

from __future__ import annotations

import pytest

from tests.leak_sources import LEAKS

#: The leaks module under its own names (it may load beside tests/test_plugin_leaks.py's), the
#: memory cap at 256 records.
CAPPED = (LEAKS.replace("batch = batch[:150]", "batch = batch[:256]")
          .replace('name = "leak_', 'name = "bign_leak_')
          .replace('{"name": f"leak_{_fault}"', '{"name": f"bign_leak_{_fault}"'))
PARAMS = {"T": 10, "c_b": 0.05}


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    from bench import plugins as registry
    from tests.plugin_registry import unload_plugins_under

    assert CAPPED.count("bign_leak_") >= 3 and "batch[:256]" in CAPPED
    path = tmp_path_factory.mktemp("bign") / "bign_leaks.py"
    path.write_text(CAPPED)
    registry.load_plugin(str(path))
    yield "bign_leak_capped_batch"
    unload_plugins_under(path)


def _cells(algorithm: str, ns: tuple[int, ...]):
    from bench.cells import Cell

    return [Cell.make(problem="glm", problem_params={}, algorithm=algorithm, params=PARAMS, n=n,
                      d=5, eps=1.0, delta=1e-6, rep=0) for n in ns]


def test_the_largest_n_is_checked_past_the_cap():
    from bench.privacy_gate import LARGE_N_RECORDS, largest_n

    cells = _cells("x", (2000, 100_000, 40_000))
    top, n = largest_n(cells, 20_000)
    assert top.n == 100_000 and n == 100_000
    assert largest_n(_cells("x", (2000, 20_000)), 20_000) is None
    assert largest_n(_cells("x", (10**9,)), 20_000)[1] == LARGE_N_RECORDS


@pytest.mark.slow
def test_a_batch_capped_in_memory_is_failed_at_the_largest_n(capped):
    from algorithms.privacy.audit.plugin_checks import check_plugin, needs_permission
    from bench.privacy_gate import plugin_label

    # at the checks' own cap the cap never binds: the sampler test passes it
    small = check_plugin(capped, problem="glm", d=5, eps=1.0, params=PARAMS, n=20_000, seed=0)
    assert not small.label.startswith("FAILED"), small.label
    label = plugin_label(capped, _cells(capped, (2000, 100_000)), seed=0)
    assert label.startswith("FAILED: at glm, d 5, eps 1, n 100000: ") and needs_permission(label)
    assert "records on average where its ledger's Poisson rate" in label, label
