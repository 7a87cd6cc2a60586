"""Outside problems on the compiled O2 steps (issues 47 and 58; pytest-benchmark, `make bench`).

The plugins are problems/README.md's two examples, loaded as plugins are
(`bench.plugins.load_plugin`): `two_point_valley` (hard_valley's profile declared as a
`problems.jit_profile.JitProfile`, the separable map) and `quadratic_valley` (a loss of another
form declared by `problems.compiled_loss.CompiledTwoPointLoss`: the valley, a quadratic block
scaled per record, a linear term; its O2 map called by address). In
one test per (Spider, d, B), in counts mode at eps 0.1, three figures a step: the plugin on the
compiled steps, built-in hard_valley on them, and the plugin in the Python loop (the compiled
steps off: what every plugin ran before). Each is (wall(T2) - wall(T1)) / (T2 - T1), so the
set-up (calibration, rules, the plugin's check) cancels; the three run in alternation, REPEATS
times, and the medians are kept (the machine is shared). Goal: the plugin within 1.5x of
hard_valley's step at d = 10 and d = 100 (asserted). The O2-only runs are the fixed-batch tree
Spider with kappa = 1e300, D = 0.01 (every step after the first an O2 of B records) and the
adaptive tree Spider with b = B and its own rules (O1 restarts included), as in
test_step_perf.py. With --benchmark-disable (as `make test` passes) each runs once at a quick
size and the goal is not asserted.

    pytest bench/benchmarks/test_plugin_profile_speed.py --benchmark-enable -s
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.sosp import compiled_o2
from problems import get_problem

ROOT = Path(__file__).resolve().parents[2]
GOAL_RATIO = 1.5
REPEATS = 5


GUIDES = ("my_valley.py", "my_quadratic_valley.py")


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    """problems/README.md's two example blocks, loaded as plugins (unloaded after): file name
    -> the problem it registers."""
    import problems
    from bench import plugins as registry

    text = (ROOT / "problems" / "README.md").read_text()
    loaded, names = [], {}
    for guide in GUIDES:
        block = next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)
                     if b.startswith(f"# {guide}"))
        path = tmp_path_factory.mktemp("plugin_speed") / guide
        path.write_text(block)
        info = registry.load_plugin(str(path))
        loaded.append(info)
        names[guide] = info.problems[0]
    yield names
    for info in loaded:
        registry._LOADED.pop(info.entry, None)
        for name in info.problems:
            problems._REGISTRY.pop(name, None)


def _wall(problem: str, name: str, d: int, B: int, T: int, compiled: bool) -> float:
    """Seconds for one whole run of T steps (eps 0.1, counts mode)."""
    pr = get_problem(problem, d=d)
    if name == "adaptive_tree_spider":
        alg = get_algorithm(name)(b=B, T=T)
    else:
        alg = get_algorithm(name)(b=B, B=B, T=T, kappa=1e300, D=0.01)
    stream = pr.stream(np.random.SeedSequence([5, d]), budget=10**16, data="counts")
    compiled_o2.ENABLED = compiled
    try:
        t0 = time.perf_counter()
        traj = alg.run(pr, stream, Privacy(0.1), np.random.default_rng(0))
        wall = time.perf_counter() - t0
    finally:
        compiled_o2.ENABLED = True
    assert traj.n_steps == T
    return wall


def _per_step(problem: str, name: str, d: int, B: int, T1: int, T2: int, compiled: bool) -> float:
    return (_wall(problem, name, d, B, T2, compiled) - _wall(problem, name, d, B, T1, compiled)) / (T2 - T1)


@pytest.mark.parametrize("guide", GUIDES)
@pytest.mark.parametrize("name", ["tree_spider", "adaptive_tree_spider"])
@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("B", [10**4, 10**8], ids=["B1e04", "B1e08"])
def test_plugin_valley_step_against_hard_valley(benchmark, plugins, guide, name, d, B):
    plugin = plugins[guide]
    if guide == "my_quadratic_valley.py" and B == 10**4:
        # at B 1e4 and d 100 the noise walks |x_2:d| to ~50 (hard_valley measured 45-53),
        # outside the quadratic block's domain where its G holds: the O1 guard refuses there
        B = 10**5
    full = not benchmark.disabled
    T1, T2 = (200, 1200) if full else (5, 10)
    for problem in (plugin, "hard_valley"):  # compiled kernels and the plugin's wrapper loaded
        _wall(problem, name, d, B, 3, True)
    out = {}

    def run():
        out["plugin"] = _per_step(plugin, name, d, B, T1, T2, True)

    benchmark.pedantic(run, rounds=1, iterations=1)
    if not full:
        return
    figures = {"plugin": [out["plugin"]], "hard_valley": [], "python_loop": []}
    for k in range(REPEATS):
        if k:
            figures["plugin"].append(_per_step(plugin, name, d, B, T1, T2, True))
        figures["hard_valley"].append(_per_step("hard_valley", name, d, B, T1, T2, True))
        figures["python_loop"].append(_per_step(plugin, name, d, B, T1, T2, False))
    mine, ref, loop = (statistics.median(figures[k]) for k in ("plugin", "hard_valley", "python_loop"))
    ratio = mine / ref
    benchmark.extra_info.update(plugin_us=mine * 1e6, hard_valley_us=ref * 1e6,
                                python_loop_us=loop * 1e6, ratio=ratio,
                                python_loop_ratio=loop / mine, goal_ratio=GOAL_RATIO)
    print(f"\n{plugin} {name} d={d} B={B:.0e}: plugin {mine * 1e6:.1f} us/step, hard_valley "
          f"{ref * 1e6:.1f} ({ratio:.2f}x), plugin in the Python loop {loop * 1e6:.1f} "
          f"({loop / mine:.1f}x the compiled)")
    assert ratio <= GOAL_RATIO, (f"plugin {mine * 1e6:.1f} us a step, {ratio:.2f}x hard_valley's "
                                 f"{ref * 1e6:.1f} (goal <= {GOAL_RATIO}x)")
