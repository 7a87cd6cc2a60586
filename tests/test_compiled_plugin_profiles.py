"""Outside problems on the compiled O2 steps (problems/README.md, `problems.jit_profile`,
`algorithms.sosp.compiled_profiles`): the guide's plugin, loaded as a plugin, runs compiled and
its whole runs are bit for bit the Python loop's and hard_valley's (the same valley written as
a plugin); a plugin whose profile cannot be shown exact runs the Python loop, equal too, and
says why once in one line."""

from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from algorithms import Privacy, get_algorithm
from algorithms.sosp import compiled_profiles
from problems import get_problem
from problems.jit_profile import JitProfile
from tests.cli import run_clis
from tests.compiled_runs import FIXED
from tests.compiled_runs import run as _run
from tests.compiled_runs import same as _same

ROOT = Path(__file__).resolve().parents[1]


def guide_block(first_line: str) -> str:
    """The fenced python block of problems/README.md whose first line is `first_line`."""
    text = (ROOT / "problems" / "README.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        if block.splitlines()[0].strip() == first_line:
            return block
    raise AssertionError(f"no problems/README.md block starts with {first_line!r}")


GUIDE = guide_block("# my_valley.py")

#: Variants of the guide's plugin whose profile the compiled steps must refuse, each with the
#: reason its one line gives: (what replaces what in the guide's code, the reason).
BROKEN = {
    "pv_python": ([("@numba.njit\ndef valley_d1", "def valley_d1")], "is not a numba.njit function"),
    "pv_fastmath": ([("@numba.njit\ndef valley_d1", "@numba.njit(fastmath=True)\ndef valley_d1")],
                    "is compiled with fastmath"),
    "pv_float32": ([("    return (-v / (1.0 + v * v) + p[1] * v / math.sqrt(1.0 + v * v)) / p[0]",
                     "    return np.float32((-v / (1.0 + v * v) + p[1] * v / math.sqrt(1.0 + v * v)) "
                     "/ p[0])")], "returns float32, not float64"),
    "pv_untyped": ([("    v = u / p[0]\n", "    v = u / p[0] + 'x'\n")], "does not compile"),
    "pv_override": ([("    def params(self):", "    def _profile_and_unit(self, x):\n"
                      "        return super()._profile_and_unit(x)\n\n    def params(self):")],
                    "it overrides SeparableSaddle._profile_and_unit"),
}


def _variant(name: str, edits: list[tuple[str, str]]) -> str:
    src = GUIDE.replace('"two_point_valley"', f'"{name}"')
    for old, new in edits:
        assert old in src, old
        src = src.replace(old, new)
    return src


#: An outside two-point valley from the mixins alone (its own per-sample gradients), as in
#: issue 47: the compiled steps cannot compute its map.
MIXINS = textwrap.dedent('''
    import math
    import numpy as np
    import problems
    from problems.base import Constants
    from problems.finite_support import TwoPointCoordinates

    @problems.register
    class MixinValley(TwoPointCoordinates, problems.Problem):
        name, character = "mixin_valley", "hard"

        def __init__(self, d=10):
            super().__init__(d)
            self.record_high = np.array([0.5, 0.5, *([0.5 / math.sqrt(d)] * d)])
            self.record_low = -self.record_high
            self._init_two_point()

        constants = property(lambda self: Constants(G=3.0, M=6.0, rho=18.0, B0=9.0))
        x0 = property(lambda self: np.zeros(self.d))

        def _d1(self, u):
            v = u / 0.5
            return (-v / (1.0 + v * v) + 5e-5 * v / math.sqrt(1.0 + v * v)) / 0.5

        def per_sample_losses(self, x, z):
            return np.zeros(len(z))

        def per_sample_grads(self, x, z):
            y = x[1:]
            g = z[:, 2:].copy()
            g[:, 0] += (1 + z[:, 0]) * self._d1(float(x[0]))
            g[:, 1:] += np.outer((1 + z[:, 1]) * 0.5, y / math.sqrt(1.0 + y @ y))
            return g

        def record_grad_bound(self, x):
            return 3.0

        def record_grad_diff_bound(self, x, y):
            return 6.0 * float(np.linalg.norm(x - y))

        def population_loss(self, x):
            return 0.0

        def population_grad(self, x):
            return self.per_sample_grads(x, np.zeros((1, self.d + 2)))[0]

        def population_hessian(self, x):
            return np.eye(self.d)
''')


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    """The guide's plugin and its broken variants, loaded as plugins are (bench.plugins)."""
    from bench.plugins import load_plugin

    d = tmp_path_factory.mktemp("plugin_profiles")
    (d / "my_valley.py").write_text(GUIDE)
    load_plugin(str(d / "my_valley.py"))
    for name, (edits, _) in BROKEN.items():
        (d / f"{name}.py").write_text(_variant(name, edits))
        load_plugin(str(d / f"{name}.py"))
    (d / "mixin_valley.py").write_text(MIXINS)
    load_plugin(str(d / "mixin_valley.py"))
    yield d
    # Unregister them: later test files count the registry's problems.
    import problems
    from bench import plugins as registry

    for entry in [e for e in registry.loaded() if e.startswith(str(d))]:
        for name in registry._LOADED.pop(entry).problems:
            problems._REGISTRY.pop(name, None)


CASES = [
    ("tree_spider", {"b": 10**4, "B": 10**4, "T": 1500, **FIXED}, {}),
    ("gaussian_spider", {"b": 10**4, "B": 10**4, "T": 1500, **FIXED}, {}),
    ("tree_spider", {"b": 10**8, "B": 10**8, "T": 800, **FIXED}, {}),
    ("tree_spider", {"b": 10**5, "B": 10**5, "T": 1500, "kappa": 1e-3, "D": 0.01}, {}),
    ("adaptive_tree_spider", {"b": 10**4, "T": 1200}, {}),
    ("adaptive_tree_spider", {"target_alpha": 0.05}, {"monitor_target": 0.05}),
    ("tree_spider", {"b": 10**4, "B": 10**4, "T": 800, **FIXED, "escape_threshold": 10.0}, {}),
]


@pytest.mark.parametrize("seed", [5, 6, 7])
@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("alg,kw,opts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_the_guides_plugin_runs_compiled_and_equals_the_python_loop_and_hard_valley(
        plugins, compiled_steps, alg, kw, opts, d, seed):
    """Three references, bit for bit: the plugin in the Python loop, hard_valley compiled and
    hard_valley in the Python loop (the plugin's valley is hard_valley's, operation for
    operation). Most of the plugin's O2 steps ran compiled."""
    fast = _run("two_point_valley", alg, kw, d=d, seed=seed, **opts)
    ran = sum(compiled_steps)
    slow = _run("two_point_valley", alg, kw, d=d, seed=seed, compiled=False, **opts)
    assert sum(compiled_steps) == ran  # the reference took no compiled step
    _same(fast, slow)
    _same(fast, _run("hard_valley", alg, kw, d=d, seed=seed, **opts))
    _same(fast, _run("hard_valley", alg, kw, d=d, seed=seed, compiled=False, **opts))
    o2 = int((fast[0].records["oracle"] == 2).sum())
    assert o2 > 0 and ran >= 0.5 * o2


@pytest.mark.parametrize("d", [10, 100])
def test_records_mode_and_the_population_oracles_are_hard_valleys(plugins, d):
    """The profile's Python side (value, d1, d2 through JitProfile, scalars and arrays) gives
    hard_valley's numbers: records-mode runs bit for bit, oracles to rounding (log1p)."""
    kw = {"b": 2000, "B": 2000, "T": 60, **FIXED}
    _same(_run("two_point_valley", "tree_spider", kw, d=d, data="records", budget=10**6),
          _run("hard_valley", "tree_spider", kw, d=d, data="records", budget=10**6))
    mine, ref = get_problem("two_point_valley", d=d), get_problem("hard_valley", d=d)
    assert mine.constants == ref.constants
    rng = np.random.default_rng(d)
    for x in [np.zeros(d), *rng.normal(0, 3, (5, d))]:
        assert mine.population_grad(x).tobytes() == ref.population_grad(x).tobytes()
        assert mine.population_hessian(x).tobytes() == ref.population_hessian(x).tobytes()
        assert mine.population_loss(x) == pytest.approx(ref.population_loss(x), rel=1e-14, abs=1e-15)
    u = rng.normal(0, 5, (3, 4))
    for f in ("d1", "d2"):
        got, want = getattr(mine.profile, f)(u), getattr(ref.profile, f)(u)
        assert got.shape == u.shape and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_profile_that_cannot_be_shown_exact_runs_the_python_loop_and_says_why_once(
        plugins, compiled_steps, capsys, name):
    kw = {"b": 10**4, "B": 10**4, "T": 300, **FIXED}
    capsys.readouterr()
    if name == "pv_untyped":  # its d1 raises in Python too: the run fails as the loop's
        with pytest.raises(Exception, match=r"(?i)typing"):
            _run(name, "tree_spider", kw)
        assert compiled_steps == []
    else:
        fast = _run(name, "tree_spider", kw)
        _run(name, "tree_spider", kw, seed=6)  # a second run: no second line
        assert compiled_steps == []
        _same(fast, _run(name, "tree_spider", kw, compiled=False))
        if name in ("pv_python", "pv_override"):  # still the valley's numbers
            _same(fast, _run("hard_valley", "tree_spider", kw))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("dprates:")]
    assert len(lines) == 1, lines
    assert f"problem '{name}'" in lines[0] and "Python loop" in lines[0]
    assert BROKEN[name][1] in lines[0], lines[0]


def test_a_problem_from_the_mixins_alone_says_its_map_is_not_the_separable_one(
        plugins, compiled_steps, capsys):
    capsys.readouterr()
    tr = _run("mixin_valley", "tree_spider", {"b": 10**4, "B": 10**4, "T": 50, **FIXED})[0]
    assert tr.n_steps == 50 and compiled_steps == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'mixin_valley' (MixinValley)" in err[0]
    assert "its O2 map is neither problems.separable.SeparableSaddle's nor declared" in err[0]


def test_built_in_problems_never_print_the_line(compiled_steps, capsys):
    """A built-in refused (a map method overridden) runs the Python loop silently, as before."""
    from problems.separable import HardValley

    own = {"counts_grad_diff": lambda self, *a: HardValley.counts_grad_diff(self, *a)}
    Sub = type("Sub", (HardValley,), own)
    pr = Sub(d=10)
    stream = pr.stream(np.random.SeedSequence([1, 10]), budget=10**16, data="counts")
    get_algorithm("tree_spider")(b=10**4, B=10**4, T=50, **FIXED).run(
        pr, stream, Privacy(0.1), np.random.default_rng(1))
    assert compiled_steps == [] and capsys.readouterr().err == ""


def test_a_d1_differing_in_python_from_the_compiled_one_is_caught(plugins):
    """An instance's own d1 is refused; and the check at 60 points finds a Python d1 one ulp
    off the compiled one (the check itself, on such a profile)."""
    pr = get_problem("two_point_valley", d=10)
    got = compiled_profiles.o2_profile(pr)
    assert isinstance(got, compiled_profiles.O2Profile) and got.mode == compiled_profiles.MODE_ADDRESS
    fn = type(pr.profile).d1_fn
    pr.profile.d1 = lambda u: float(np.nextafter(fn(float(u), pr.profile.params), math.inf))
    assert "overrides JitProfile.d1" in compiled_profiles.o2_profile(pr)
    why = compiled_profiles._check(pr.profile, fn, got.addr)
    assert why == "its d1 at u=0.0 is 5e-324 (float) in Python but 0.0 compiled", why
    del pr.profile.d1
    assert compiled_profiles._check(pr.profile, fn, got.addr) is None
    assert len(compiled_profiles._POINTS) == 60  # as problems/README.md says


def test_a_d1_raising_mid_run_hands_the_step_back_and_raises_as_the_loop(plugins, compiled_steps):
    """A d1 that raises past |u| = 0.05 (as numba's error_model="python" does): the compiled
    steps run up to there, then Python's step raises the same error as the Python loop."""
    src = _variant("pv_raises", [("    v = u / p[0]\n", "    if abs(u) > 0.05:\n"
                                  "        raise ValueError('past the fence')\n    v = u / p[0]\n")])
    namespace: dict = {}
    exec(compile(src, "pv_raises.py", "exec"), namespace)
    import problems

    try:
        kw = {"b": 10**4, "B": 10**4, "T": 3000, **FIXED}
        errors = []
        for compiled in (True, False):
            with pytest.raises(ValueError, match="past the fence") as info:
                _run("pv_raises", "tree_spider", kw, compiled=compiled)
            errors.append(str(info.value))
        assert sum(compiled_steps) > 0 and errors[0] == errors[1]
    finally:
        problems._REGISTRY.pop("pv_raises", None)


def test_jit_profile_states_what_is_wrong():
    class NoD2(JitProfile):
        value_fn = d1_fn = staticmethod(lambda u, p: u)

    with pytest.raises(ValueError, match="set d2_fn"):
        NoD2([1.0], G=1, M=1, rho=1, drop=1)

    class Ok(NoD2):
        d2_fn = staticmethod(lambda u, p: 0.0)

    with pytest.raises(ValueError, match="one-dimensional"):
        Ok([[1.0]], G=1, M=1, rho=1, drop=1)
    with pytest.raises(ValueError, match="rho=nan"):
        Ok([1.0], G=1, M=1, rho=math.nan, drop=1)
    ok = Ok([1.0, 2.0], G=1, M=1, rho=1, drop=1)
    assert ok.params.dtype == np.float64 and ok.params.flags.c_contiguous
    assert ok.d1(3) == 3.0 and ok.d1(np.arange(3)).tolist() == [0.0, 1.0, 2.0]


def test_the_cli_runs_the_plugin_as_hard_valley_and_a_broken_one_says_why(plugins):
    """`dprates run` in fresh processes: the guide's plugin prints no fallback line and gives
    hard_valley's metrics; a broken variant prints one line and the same metrics."""
    common = ["--n", "3e7", "--d", "10", "--eps", "0.1", "--json"]
    runs = [("two_point_valley", "my_valley.py"), ("pv_python", "pv_python.py"), ("hard_valley", None)]
    done = run_clis(*[["run", "tree_spider", "--problem", problem,
                       *(["--plugin", plugin] if plugin else []), *common]
                      for problem, plugin in runs], cwd=plugins)  # the three at once
    out = {}
    for (problem, _), res in zip(runs, done, strict=True):
        assert res.returncode == 0, res.stderr
        out[problem] = (json.loads(res.stdout), [ln for ln in res.stderr.splitlines()
                                                 if ln.startswith("dprates:")])
    assert out["two_point_valley"][1] == [] and out["hard_valley"][1] == []
    assert len(out["pv_python"][1]) == 1 and "pv_python" in out["pv_python"][1][0]
    ref = out["hard_valley"][0]
    assert ref["metrics"]["n_steps"] > 100
    for problem in ("two_point_valley", "pv_python"):
        got = out[problem][0]
        assert got["metrics"] == ref["metrics"] and got["curve"] == ref["curve"]


def test_threads_running_the_plugin_and_a_numpy_profile_keep_their_own_d1(plugins):
    """A Dask worker runs cells in threads and the compiled steps release the GIL: the plugin's
    addressed d1 and hard_ramp's object mode one side by side give each run's own numbers."""
    import threading

    kw = {"b": 10**6, "B": 10**6, "T": 1000, **FIXED}
    want = {p: _run(p, "tree_spider", kw, compiled=False)[0] for p in ("two_point_valley", "hard_ramp")}
    got = {}

    def one(problem):
        got[problem] = _run(problem, "tree_spider", kw)[0]

    for _ in range(2):
        threads = [threading.Thread(target=one, args=(p,)) for p in want]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for p, tr in want.items():
            assert got[p].iterates.tobytes() == tr.iterates.tobytes(), p
