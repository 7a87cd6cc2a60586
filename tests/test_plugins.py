"""Plugins (bench.plugins): the README's example runs through sweep, fit and report on loky
workers; bad plugins stop every command with one line and exit 2, before anything runs."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli import ROOT, run_cli, run_clis
from tests.report_pdf import report_pages

#: The guide that holds the plugin example ("Add your own algorithm or problem").
PLUGIN_GUIDE = ROOT / "bench" / "README.md"


def readme_block(first_line: str) -> str:
    """The fenced code block of the plugin guide (bench/README.md) whose first line is
    `first_line`."""
    text = PLUGIN_GUIDE.read_text()
    for block in re.findall(r"```(?:python|toml)\n(.*?)```", text, flags=re.S):
        if block.splitlines()[0].strip() == first_line:
            return block
    raise AssertionError(f"no {PLUGIN_GUIDE.relative_to(ROOT)} block starts with {first_line!r}")


def test_the_readme_example_runs_through_sweep_fit_and_report(tmp_path: Path):
    (tmp_path / "my_plugin.py").write_text(readme_block("# my_plugin.py"))
    (tmp_path / "mine.toml").write_text(readme_block("# mine.toml (next to my_plugin.py)"))
    store = tmp_path / "results" / "mine.sqlite"
    # a plugin that noises on its own is audited, never certified: its sweep stops in one line
    # before any cell unless told --allow-unverified, as the guide says
    stopped = run_cli("sweep", "mine.toml", "--out", str(store), "--jobs", "2", "--quiet",
                      cwd=tmp_path)
    assert stopped.returncode == 2 and "Traceback" not in stopped.stderr, stopped.stderr
    assert stopped.stderr.startswith("dprates: error: plugin clipped_sgd: privacy audited: no "
                                     "leak found (4 of 4 configurations checked; check seed ")
    sweep = run_cli("sweep", "mine.toml", "--out", str(store), "--jobs", "2", "--quiet",
                    "--allow-unverified", cwd=tmp_path)
    assert sweep.returncode == 0, sweep.stderr
    import json

    from bench.store import load

    df = load(store)
    assert len(df) == 24 and set(df["status"]) == {"ok"}, df[["algorithm", "status", "error_message"]]
    assert set(df["algorithm"]) == {"clipped_sgd", "noisy_sgd"} and set(df["problem"]) == {"box_quadratic"}
    assert len(set(df["pid"])) >= 2  # the cells ran in the loky workers, which loaded the plugin
    prov = json.loads(df["plugins"].iloc[0])
    assert prov[0]["algorithms"] == ["clipped_sgd"] and prov[0]["problems"] == ["box_quadratic"]
    assert prov[0]["version"].startswith("sha256:")
    # the outside algorithm's claim is fitted and reported beside the built-in baseline
    # fit, report and claims only read the store: all three at once, each in its process
    fit, report, claims = run_clis((["fit", str(store)], tmp_path),
                                   ["report", str(store), "-o", str(tmp_path / "mine.pdf")],
                                   ["claims", "--plugin", str(tmp_path / "my_plugin.py")])
    assert fit.returncode == 0, fit.stderr
    assert re.search(r"grad_vs_privacy\s+clipped_sgd \[privacy audited\]\s+box_quadratic",
                     fit.stdout), fit.stdout
    assert report.returncode == 0, report.stderr
    main_pages, appendix = report_pages(tmp_path / "mine.pdf")
    text = " ".join(main_pages + appendix)
    assert "clipped_sgd: grad_norm (population)" in text  # its declared claim, with its fit
    assert "clipped_sgd" in claims.stdout and "my notes, Claim 1" in claims.stdout


BAD = {
    # the line that raised, named by file and line (issue 57, item 5)
    "import": ("import numpy\nraise RuntimeError('boom')\n",
               "failed to import: RuntimeError: boom (at "),
    "syntax": ("import numpy\ndef f(:\n    pass\n", "failed to import: SyntaxError: "),
    "clash": (textwrap.dedent("""
        import algorithms
        from algorithms import DPGD

        @algorithms.register
        class Mine(DPGD):
            name = "dp_gd"
        """), "algorithm name 'dp_gd' (class Mine) clashes with a built-in algorithm"),
    "missing": (textwrap.dedent("""
        import numpy as np
        import problems

        @problems.register
        class Half(problems.Problem):
            name = "half"
            constants = x0 = None
            def _draw(self, n, rng): return np.zeros((n, 1))
            def per_sample_losses(self, x, z): return z[:, 0]
            def per_sample_grads(self, x, z): return z
        """), "problem class 'Half' (half) is invalid: it lacks population_grad, "
              "population_hessian, population_loss"),
    "nothing": ("X = 1\n", "registered nothing"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_plugin_stops_every_command_with_one_line(tmp_path: Path, case: str):
    body, message = BAD[case]
    (tmp_path / "bad.py").write_text(body)
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\nseed = 1\nplugins = ["bad.py"]\n[grid]\nn = [100]\nd = [2]\n'
                    'eps = [1.0]\n[[problem]]\nname = "logistic"\n[[algorithm]]\nname = "dp_gd"\n')
    store = tmp_path / "out.sqlite"
    for res in run_clis(["sweep", str(spec), "--out", str(store)], ["list", "--plugin", "bad.py"],
                        ["run", "dp_gd", "--problem", "logistic", "--n", "100", "--d", "2",
                         "--eps", "1", "--plugin", "bad.py"], cwd=tmp_path):
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.returncode == 2, res.stderr
        assert len(lines) == 1 and "plugin" in lines[0] and "bad.py" in lines[0], res.stderr
        assert message in lines[0], lines[0]
        if case in ("import", "syntax"):
            assert lines[0].endswith("bad.py:2)"), lines[0]
    assert not store.exists()  # nothing ran


def test_register_validates_in_process():
    import algorithms
    import problems

    with pytest.raises(ValueError, match=r"must subclass algorithms\.FirstOrderAlgorithm"):
        algorithms.register(int)
    with pytest.raises(ValueError, match=r"must subclass problems\.Problem"):
        problems.register(dict)

    class NoRun(algorithms.FirstOrderAlgorithm):
        name = "no_run"

    with pytest.raises(ValueError, match="lacks _run, theory_params"):
        algorithms.register(NoRun)
    assert "no_run" not in algorithms.available()


@pytest.mark.slow
def test_dask_workers_import_the_plugin(tmp_path: Path):
    """The same example on a Dask LocalCluster (worker processes that never saw the plugin)."""
    pytest.importorskip("distributed")
    (tmp_path / "my_plugin.py").write_text(readme_block("# my_plugin.py"))
    spec = readme_block("# mine.toml (next to my_plugin.py)").replace("repetitions = 3",
                                                                     "repetitions = 1")
    (tmp_path / "mine.toml").write_text(spec)
    script = textwrap.dedent(f"""
        import os
        import distributed
        from bench.config import load_spec
        from bench.runner import run_sweep
        from bench.store import load

        if __name__ == "__main__":
            spec = load_spec({str(tmp_path / "mine.toml")!r})
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                          dashboard_address=None) as cluster:
                run_sweep(spec, {str(tmp_path / "d.sqlite")!r}, backend="dask",
                          scheduler=cluster.scheduler_address, progress=False,
                          allow_unverified=True)
            df = load({str(tmp_path / "d.sqlite")!r})
            assert set(df["status"]) == {{"ok"}}, df["error_message"].tolist()
            assert os.getpid() not in set(df["pid"])
            print("cells", len(df))
        """)
    (tmp_path / "run.py").write_text(script)
    res = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, text=True, capture_output=True,
                         timeout=600, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0 and "cells 8" in res.stdout, res.stderr[-3000:]
