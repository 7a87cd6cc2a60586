"""`make bench`'s old-against-new table (bench/benchmarks/conftest.py): the rows it reads from
the benchmarks' extra_info, their text, and the hook printing them in a real pytest run."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parents[1] / "bench" / "benchmarks" / "conftest.py"


def _module():
    spec = importlib.util.spec_from_file_location("bench_benchmarks_conftest", CONFTEST)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rows_take_either_key_pair_and_skip_benchmarks_without_one():
    mod = _module()
    rows = mod.old_new_rows([
        ("a", {"per_step_us": 20.0, "old_per_step_us": 50.0, "goal_us": 20.0}),
        ("b", {"median_us": 40.0, "old_median_us": 30.0}),
        ("c", {"median_ms": 0.03}),  # a first-order step: no old figure, no row
        ("d", {"per_step_us": 5.0}),  # a new figure alone: no row
    ])
    assert rows == [("a", 20.0, 50.0, 2.5, 20.0), ("b", 40.0, 30.0, 0.75, None)]


def test_table_text_aligns_and_says_met_or_missed():
    mod = _module()
    lines = mod.old_new_table([("long_name[x]", 20.04, 50.0, 2.495, 20.0),
                               ("b", 21.0, 16.8, 0.8, 20.0), ("c", 40.0, 30.0, 0.75, None)])
    assert lines[0] == mod.TITLE
    assert lines[1] == "benchmark        new us     old us  old/new  goal us  goal"
    assert lines[2] == "long_name[x]       20.0       50.0    2.50x       20  missed"
    assert lines[3] == "b                  21.0       16.8    0.80x       20  missed"
    assert lines[4] == "c                  40.0       30.0    0.75x        -  -"
    assert mod.old_new_table([("a", 19.0, 20.0, 20 / 19, 20.0)])[2].endswith("met")
    assert mod.old_new_table([]) == []


def test_a_benchmark_run_prints_the_table_after_pytest_benchmarks_own(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_fake.py").write_text(
        "def test_step(benchmark):\n"
        "    benchmark.pedantic(lambda: None, rounds=1, iterations=1)\n"
        "    benchmark.extra_info.update(per_step_us=12.5, old_per_step_us=50.0, goal_us=20.0)\n"
        "def test_no_pair(benchmark):\n"
        "    benchmark.pedantic(lambda: None, rounds=1, iterations=1)\n")
    # a pytest of its own: without the variables an xdist worker (make test runs two) hands its
    # children, under which pytest-benchmark would think it runs in a worker and stay silent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert text.index("benchmark: 2 tests") < text.index("old against new")
    ours = text[text.index("old against new"):].splitlines()
    row = next(line for line in ours if line.startswith("test_step "))
    assert row.split() == ["test_step", "12.5", "50.0", "4.00x", "20", "met"]
    assert not any(line.startswith("test_no_pair ") for line in ours)
    disabled = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "--benchmark-disable", str(tmp_path)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert disabled.returncode == 0 and "old against new" not in disabled.stdout
