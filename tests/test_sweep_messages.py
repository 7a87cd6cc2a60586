"""What a sweep tells its user when something goes wrong (issue 73, item 6): every failed cell
named in the summary, and a resume hint that repeats the command as given."""

from __future__ import annotations

import pandas as pd

from bench.cli import build_parser
from bench.cli.stores import failure_lines
from bench.cli.sweep import sweep_command


def _args(argv: list[str]):
    return build_parser().parse_args(argv)


def test_the_resume_hint_repeats_the_command_as_given():
    args = _args(["sweep", "mine.toml", "--out", "results/other.sqlite", "--jobs", "2", "--quiet",
                  "--retry-failed", "--plugin", "my_plugin.py"])
    assert sweep_command(args) == ("dprates sweep --plugin my_plugin.py mine.toml --out "
                                   "results/other.sqlite --jobs 2 --retry-failed --quiet")
    assert sweep_command(_args(["sweep", "mine.toml"])) == "dprates sweep mine.toml"
    args = _args(["sweep", "s.toml", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:8786",
                  "--blas-threads", "0"])
    assert sweep_command(args) == ("dprates sweep s.toml --scheduler tcp://127.0.0.1:8786 "
                                   "--backend dask --blas-threads 0")


def test_every_failed_cell_is_named():
    cells = pd.DataFrame([
        {"key": "a" * 20, "algorithm": "dp_sgd", "problem": "hard_valley", "d": 10, "eps": 0.1,
         "rep": 0, "status": "ok", "error_type": None, "error_message": None},
        {"key": "b" * 20, "algorithm": "dp_sgd", "problem": "hard_valley", "d": 10, "eps": 1.0,
         "rep": 1, "status": "timeout", "error_type": "CellTimeout",
         "error_message": "cell exceeded 60 s (backstop alarm)\nmore"},
        {"key": "c" * 20, "algorithm": "dp_gd", "problem": "hard_valley", "d": 10, "eps": 0.1,
         "rep": 2, "status": "error", "error_type": "ValueError", "error_message": "bad"},
    ])
    lines = failure_lines(cells)
    assert lines == [
        "  bbbbbbbbbbbb dp_sgd/hard_valley eps=1 rep=1 [timeout]: CellTimeout: cell exceeded 60 s "
        "(backstop alarm)",
        "  cccccccccccc dp_gd/hard_valley eps=0.1 rep=2 [error]: ValueError: bad"]
    assert failure_lines(cells[cells["status"] == "ok"]) == []


def test_a_failure_without_a_message_is_named_too():
    """A store read back gives NaN, not None, for an empty error text."""
    cells = pd.DataFrame([{"key": "d" * 20, "algorithm": "dp_sgd", "problem": "hard_valley",
                           "rep": 0, "status": "error", "error_type": float("nan"),
                           "error_message": float("nan")}])
    assert failure_lines(cells) == ["  dddddddddddd dp_sgd/hard_valley rep=0 [error]: : "]


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def test_an_interrupted_sweep_and_demo_repeat_their_command_with_every_flag(tmp_path,
                                                                             monkeypatch, capsys):
    from bench import runner
    from bench.cli import main

    monkeypatch.setattr(runner, "run_sweep", _interrupt)
    out = tmp_path / "my store.sqlite"
    assert main(["sweep", "bench/configs/quick.toml", "--out", str(out), "--jobs", "1",
                 "--quiet"]) == 130
    err = capsys.readouterr().err
    assert (f"rerun `dprates sweep bench/configs/quick.toml --out '{out}' --jobs 1 --quiet` to "
            "resume") in err
    assert main(["demo", "--out", str(out), "--jobs", "1", "--report", "x.pdf"]) == 130
    err = capsys.readouterr().err
    assert "interrupted: 0 of 360 cells are stored" in err
    assert f"rerun `dprates demo --jobs 1 --out '{out}' --report x.pdf` to resume" in err


def test_the_failed_cells_are_named_with_the_command_that_reruns_them(tmp_path, capsys):
    from bench.cli import build_parser
    from bench.cli.pipelines import demo_command
    from bench.cli.sweep import print_failures
    from tests.synthetic_cells import targeted, write_store

    rows = targeted("gaussian_spider", [100, 200, 300], 0.05)
    rows[1].update(status="timeout", error_type="CellTimeout",
                   error_message="cell exceeded 300 s (backstop alarm)")
    rows += targeted("gaussian_spider", [50, 60, 70], 0.09)
    rows[-1].update(status="error", error_type="ValueError", error_message="bad")
    store = write_store(tmp_path / "failed.sqlite", rows)
    args = build_parser().parse_args(["demo", "--out", store, "--quiet"])
    assert print_failures(store, demo_command(args, retry_failed=True)) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "2 cells failed (stored with their error):"
    assert lines[1].endswith("gaussian_spider/hard_valley target_alpha=0.05 rep=1 [timeout]: "
                             "CellTimeout: cell exceeded 300 s (backstop alarm)")
    assert lines[2].endswith("gaussian_spider/hard_valley target_alpha=0.09 rep=2 [error]: "
                             "ValueError: bad")
    assert lines[3] == f"rerun them with `dprates demo --out {store} --retry-failed --quiet`"
    assert print_failures(write_store(tmp_path / "ok.sqlite", rows[:1]), "x") == 0
    assert capsys.readouterr().out == ""
