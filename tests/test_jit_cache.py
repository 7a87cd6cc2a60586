"""A plugin's compiled functions and the code that calls them, cached on disk across processes
(issue 72, item 3; `problems.jit_cache`).

The processes here are fresh interpreters (a sweep's workers): the second one loads what the
first compiled, a changed plugin file compiles anew and computes its new loss, and the same
file under another path (another module name) loads without numba's "no module named" failure.
Every figure is checked against the guide's loss in closed form (numpy), not against the code
under test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from problems.jit_cache import load_generated, source_digest
from tests.guide_variants import GUIDE

ROOT = Path(__file__).resolve().parents[1]

#: One worker: load the plugin, call the per-record gradients (row loop) and the compiled
#: difference through its C wrapper, and report numba's cache hits.
WORKER = """
import json, sys
import numpy as np
from bench.plugins import load_plugin
from problems import get_problem
from problems.compiled_loss import FUNCTIONS
from algorithms.sosp.compiled_maps import map_profile, _through

if len(sys.argv) > 2:  # the file imported under another module name (a package's plugin)
    import importlib.util
    spec = importlib.util.spec_from_file_location(sys.argv[2], sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    sys.modules[sys.argv[2]] = module
    spec.loader.exec_module(module)
    name = "quadratic_valley"
else:
    name = load_plugin(sys.argv[1]).problems[0]
pr = get_problem(name, d=5)
gen = np.random.default_rng(7)
x, y = gen.standard_normal(5), gen.standard_normal(5)
bits = gen.integers(0, 2, size=(3, len(pr.record_low))).astype(bool)
rows = np.where(bits, pr.record_high, pr.record_low)
grads = pr.per_sample_grads(x, rows)
prof = map_profile(pr)
assert not isinstance(prof, str), prof
zh = np.ascontiguousarray(rows[0, :2])
out = np.empty(5)
_through(int(prof.addrs[1]), x, y, zh, prof.params, out)
cls = type(pr)
declared = [r for r in FUNCTIONS if getattr(cls, r) is not None]  # the bounds are not declared
hits = {r: sum(getattr(cls, r).stats.cache_hits.values()) for r in declared}
misses = {r: sum(getattr(cls, r).stats.cache_misses.values()) for r in declared}
print(json.dumps({"x": x.tolist(), "y": y.tolist(), "rows": rows.tolist(),
                  "params": pr.fn_params.tolist(), "grads": grads.tolist(), "diff": out.tolist(),
                  "fn_hits": hits, "fn_misses": misses, "wrapper_hits": [w.cache_hits for w in prof.keep]}))
"""


def _worker(plugin: Path, cache: Path, *module: str) -> dict:
    env = {**os.environ, "DPRATES_JIT_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", WORKER, str(plugin), *module], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _closed_form(r: dict, quad_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The guide's per-record gradients and the difference at the first record, in numpy:
    grad_0 = (1 + z0) c phi'(x1) + xi_1, grad_j = f a (1 + v z1) x_j + xi_j (f the variant's
    factor on the quadratic block)."""
    c, w, beta, _s, a, v, _h = r["params"]
    x, y, rows = np.array(r["x"]), np.array(r["y"]), np.array(r["rows"])

    def d1(u: float) -> float:
        t = u / w
        return (-t / (1 + t * t) + beta * t / np.sqrt(1 + t * t)) / w

    grads = np.empty((len(rows), len(x)))
    for i, z in enumerate(rows):
        grads[i, 0] = (1 + z[0]) * c * d1(x[0]) + z[2]
        grads[i, 1:] = quad_factor * a * (1 + v * z[1]) * x[1:] + z[3:]
    z = rows[0]
    diff = np.empty(len(x))
    diff[0] = (1 + z[0]) * c * (d1(x[0]) - d1(y[0]))
    diff[1:] = quad_factor * a * (1 + v * z[1]) * (x[1:] - y[1:])
    return grads, diff


def _check(r: dict, quad_factor: float = 1.0) -> None:
    grads, diff = _closed_form(r, quad_factor)
    np.testing.assert_allclose(r["grads"], grads, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(r["diff"], diff, rtol=1e-13, atol=1e-15)


@pytest.mark.slow
def test_a_second_worker_loads_what_the_first_compiled(tmp_path):
    plugin = tmp_path / "plugins" / "my_quadratic_valley.py"
    plugin.parent.mkdir()
    plugin.write_text(GUIDE)
    cache = tmp_path / "jit"
    first, second = _worker(plugin, cache), _worker(plugin, cache)
    for r in (first, second):
        _check(r)
    assert first["grads"] == second["grads"] and first["diff"] == second["diff"]
    assert sum(first["fn_hits"].values()) == 0 and first["wrapper_hits"] == [0, 0, 0]
    # every declared function Python compiled (the map's: the row loops carry their own) and
    # every C wrapper loaded from disk, nothing compiled
    # (the declared bounds are not read: the suite computes the clip guard's bound, issue 71)
    assert first["fn_misses"]["grad_diff_fn"] == 1 and first["fn_misses"]["pop_grad_fn"] == 1
    assert second["fn_hits"]["grad_diff_fn"] == 1 and second["fn_hits"]["pop_grad_fn"] == 1
    assert sum(second["fn_misses"].values()) == 0
    assert second["wrapper_hits"] == [1, 1, 1]

    # the file changed: its new loss (the quadratic block doubled), compiled anew
    plugin.write_text(GUIDE.replace("    scale = p[4] * (1.0 + p[5] * z[1])\n",
                                    "    scale = 2.0 * p[4] * (1.0 + p[5] * z[1])\n")
                      .replace("    scale = p[4] * (1.0 + p[5] * zh[1])\n",
                               "    scale = 2.0 * p[4] * (1.0 + p[5] * zh[1])\n"))
    changed = _worker(plugin, cache)
    _check(changed, quad_factor=2.0)
    assert sum(changed["fn_hits"].values()) == 0 and changed["wrapper_hits"] == [0, 0, 0]

    # the first file's content under another path: another module name, no stale entry read
    other = tmp_path / "elsewhere" / "my_quadratic_valley.py"
    other.parent.mkdir()
    other.write_text(GUIDE)
    _check(_worker(other, cache))
    # the same file, as loaded by the second worker, imported under another module name:
    # numba's entries beside it name the first module, so they are not this one's
    again = _worker(other, cache, "my_package.valley_plugin")
    _check(again)
    assert again["fn_hits"]["grad_diff_fn"] == 0


def test_the_key_follows_the_file_content_and_refuses_closures(tmp_path):
    """source_digest: another content, another key; a closure or a function without a source
    file has none (its cells, not its file, say what it computes), and is compiled per process."""
    path = tmp_path / "plug_digest.py"
    code = "import numba\n\n\n@numba.njit\ndef f(x):\n    return x + {}\n"
    keys = []
    for k in (1.0, 2.0):
        path.write_text(code.format(k))
        scope: dict = {}
        exec(compile(path.read_text(), str(path), "exec"), scope)
        keys.append(source_digest(scope["f"]))
    assert keys[0] is not None and keys[1] is not None and keys[0] != keys[1]

    k = 3.0
    closure = numba.njit(lambda x: x + k)
    assert source_digest(closure) is None
    scope = {}
    exec("import numba\nf = numba.njit(lambda x: x * 2.0)\n", scope)
    assert source_digest(scope["f"]) is None
    module = load_generated(closure, "import numba\n\n@numba.njit(cache=CACHE)\n"
                                     "def g(x):\n    return fn(x) * 2.0\n")
    assert module.__dict__["CACHE"] is False and module.g(1.0) == 8.0


def test_generated_modules_unused_for_a_month_are_pruned(tmp_path, monkeypatch):
    """A module (and numba's files for it) untouched for PRUNE_AFTER_DAYS goes when the next
    one is written; the one written stays."""
    import importlib.util
    import time

    from problems import jit_cache

    monkeypatch.setenv("DPRATES_JIT_CACHE", str(tmp_path / "jit"))
    monkeypatch.setattr(jit_cache, "_PRUNED", set())
    src = tmp_path / "plug_prune.py"
    src.write_text("import numba\n\n\n@numba.njit\ndef f(x):\n    return x + 1.0\n")
    spec = importlib.util.spec_from_file_location("plug_prune_mod", src)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "plug_prune_mod", mod)
    spec.loader.exec_module(mod)
    template = "import numba\n\n@numba.njit('float64(float64)', cache=CACHE)\ndef g(x):\n    return fn(x)\n"
    old = tmp_path / "jit" / "dprates_jit_old.py"
    stale = tmp_path / "jit" / "__pycache__" / "dprates_jit_old.g-3.py311.nbi"
    stale.parent.mkdir(parents=True)
    old.write_text("x = 1\n")
    stale.write_text("")
    month = time.time() - (jit_cache.PRUNE_AFTER_DAYS + 1) * 86400
    os.utime(old, (month, month))
    assert load_generated(mod.f, template).g(2.0) == 3.0
    assert not old.exists() and not stale.exists()
    assert len(list((tmp_path / "jit").glob("dprates_jit_*.py"))) == 1
