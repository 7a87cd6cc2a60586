"""One writer per store (bench.store_lock) and the rerun of a store holding FAILED plugin cells
(issue 57, item 5): a second sweep on a store stops with one line naming the holder's pid, the
lock dies with its holder, and a store whose cells ran with --allow-unverified after a FAILED
privacy check does not rerun silently."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bench.config import parse_spec
from bench.privacy_gate import PrivacyCheckFailed
from bench.runner import run_sweep
from bench.store_lock import StoreBusy, StoreLock, lock_path
from tests.cli import ENV, ROOT, run_cli

SPEC = ('name = "s"\nseed = 1\nrepetitions = 2\n[grid]\nn = [200]\nd = [2]\neps = [1.0]\n'
        '[[problem]]\nname = "logistic"\n[[algorithm]]\nname = "dp_gd"\n')


def test_a_second_writer_stops_with_the_holders_pid(tmp_path: Path):
    store = tmp_path / "s.sqlite"
    spec_file = tmp_path / "s.toml"
    spec_file.write_text(SPEC)
    with StoreLock(store) as held:
        assert held.held and f"pid {os.getpid()}" in lock_path(store).read_text()
        with pytest.raises(StoreBusy, match=f"being written by another sweep \\(pid {os.getpid()},"):
            run_sweep(parse_spec(SPEC), store, jobs=1, progress=False)
        out = run_cli("sweep", str(spec_file), "--out", str(store), "--quiet", cwd=tmp_path)
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        assert out.returncode == 2 and len(lines) == 1, out.stderr
        assert f"pid {os.getpid()}" in lines[0] and "s.sqlite" in lines[0]
        assert not store.exists()  # refused before any cell, or even the store, was written
    assert lock_path(store).read_text() == ""  # released: emptied, left in place
    res = run_sweep(parse_spec(SPEC), store, jobs=1, progress=False)
    assert res.ran == 2


def test_the_lock_dies_with_its_holder(tmp_path: Path):
    """A holder killed with SIGKILL leaves no stale lock (flock is released by the kernel)."""
    store = tmp_path / "s.sqlite"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from bench.store_lock import StoreLock\n"
         f"l = StoreLock({str(store)!r}).__enter__(); print('held', flush=True); time.sleep(60)"],
        cwd=ROOT, env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusy, match=f"pid {holder.pid},"):
            StoreLock(store).__enter__()
    finally:
        holder.kill()
        holder.wait()
    with StoreLock(store) as lock:  # the file still says the dead pid: the lock does not care
        assert lock.held


def test_a_rerun_of_a_store_with_failed_plugin_cells_stops(tmp_path: Path):
    store = tmp_path / "s.sqlite"
    spec = parse_spec(SPEC)
    assert run_sweep(spec, store, jobs=1, progress=False).ran == 2
    # as a sweep run with --allow-unverified after a FAILED check stores its cells
    conn = sqlite3.connect(store)
    with conn:
        conn.execute("UPDATE cells SET privacy_check = 'FAILED: moved 2.3e+05 x (planted)'")
    conn.close()
    with pytest.raises(PrivacyCheckFailed, match="holds cells of plugin dp_gd whose privacy "
                                                 "check FAILED"):
        run_sweep(spec, store, jobs=1, progress=False)
    res = run_sweep(spec, store, jobs=1, progress=False, allow_unverified=True)
    assert res.ran == 0 and set(res.privacy_failed) == {"dp_gd"}
    spec_file = tmp_path / "s.toml"
    spec_file.write_text(SPEC)
    stopped = run_cli("sweep", str(spec_file), "--out", str(store), "--quiet", cwd=tmp_path)
    assert stopped.returncode == 2 and "holds cells of plugin dp_gd" in stopped.stderr
    kept = run_cli("sweep", str(spec_file), "--out", str(store), "--quiet", "--allow-unverified",
                   cwd=tmp_path)
    assert kept.returncode == 3, kept.stderr  # FAILED cells: a script notices
