"""`dprates` in fresh processes (the registries start empty of plugins, as for a user), shared
by the tests that drive the command line: one command, or several at once when none reads what
another writes (each is its own process; on two cores they overlap instead of queueing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


def run_clis(*commands: list[str] | tuple[list[str], Path], cwd: Path = ROOT,
             timeout: float = 600, exe: list[str] | None = None, env: dict | None = ENV
             ) -> list[subprocess.CompletedProcess]:
    """Each command (the arguments after `dprates`, or those and its own working directory)
    in its own process, all started at once; their results in the commands' order. `exe`:
    the program (default `python -m bench.cli`); `env` None: this process's environment."""
    exe = exe or [sys.executable, "-m", "bench.cli"]
    procs = []
    for command in commands:
        args, where = command if isinstance(command, tuple) else (command, cwd)
        procs.append((args, subprocess.Popen([*exe, *args], cwd=where, text=True, env=env,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    out = []
    for args, proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for _, p in procs:
                p.kill()
            raise
        out.append(subprocess.CompletedProcess(args, proc.returncode, stdout, stderr))
    return out


def run_cli(*args: str, cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess:
    """One command in a fresh process."""
    return run_clis(list(args), cwd=cwd, timeout=timeout)[0]
