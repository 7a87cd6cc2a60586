"""Issue 56: the leaks an outside auditor found passing the plugin check, planted here one by
one (tests/leak_sources.py), each FAILED with a one-line reason naming the release or field, or
refused (the sweep stops without --allow-unverified); the honest plugins they derive from
(DP-GD with momentum, Poisson DP-SGD; self-noised and on the release API) raise no false alarm
at 18 configurations each: every one of 4 problems at every one of 3 eps, at the 3 check seeds
in rotation (`_honest_configs`).

Each expected reason is derived from the planted bug's definition (which release it touches
first), not read off the code under test: `tenth` drops the noise at t = 10, `one_draw` reuses
release 1's draw at release 2, `same_batch` reseeds its sampler so releases 1 and 2 coincide,
`raise_10C` raises on the first replay with a record past 10 C, the desk leaks change what the
run does from release 1 or 2 on."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tests.leak_sources import LEAKS

N, D, T = 2000, 5, 30
LEAKED = {
    "clean_step": r"^its release 2 of 30 is computed at the same iterate under 3 other seeds' "
                  r"noise: its steps do not use the released values",
    "one_draw": r"^its releases 1 and 2 of 30 add the same noise draw",
    "same_batch": r"^its releases 1 and 2 of 30 read the same batch of \d+ records",
    "median_clip": r"^replayed with one record replaced \(same seed, same state\), its release "
                   r"\d+ of 30 added other noise",
    "standardize": r"^replayed with one record replaced, its first release moved [\d.e+]+ x the "
                   r"told sensitivity$",
    "tenth": r"^its release 10 of 30 adds no noise$",
    "raise_10C": r"^replayed with one record replaced, its run crashed before release 1 of 30 "
                 r"\(ValueError: a record's gradient is past 10 C\)$",
    "refresh": r"^replayed with one record replaced, its release \d+ of 30 moved [\d.e+]+ x the "
               r"told sensitivity$",
    # issue 71: a clip in float32 makes a record at 1e300 a NaN release (NaN moves were dropped)
    "float32_clip": r"^replayed with one record replaced, its release 1 of 30 came out NaN \(a "
                    r"record's gradient the clip did not bound: a clip in low precision, or "
                    r"none\?\)$",
    # issue 71: Poisson batches of expected size 200 cut at 150, the ledger at q = 0.1
    "capped_batch": r"^its 30 sampled releases read 150 records on average where its ledger's "
                    r"Poisson rate q = 0.1 gives 200 of 2000 \(z = -\d+\.\d: a capped or fixed "
                    r"batch accounted at another rate\?\)$",
    # issue 71: noise (w_t - w_{t-1}) / sqrt 2, each release's variance right, the sum's gone
    "anticorrelated": r"^its noise is correlated between consecutive releases \(r = -0\.\d\d over "
                      r"\d+ products of the recorded run and \d+ reruns, z = -\d+\.\d\): a ledger "
                      r"that composes its releases as independent does not hold$",
    "desk_clean_step": r"^with record \d+ replaced by .* and the recorded releases forced, "
                       r"release 2 was asked for at another iterate x$",
    "desk_early_stop": r"^with record \d+ replaced by an adversarial record at full scale and "
                       r"the recorded releases forced, it stopped after release 1 of 30$",
    "desk_unwatched": r"^with the probe switched off, field iterates at step 1 differs$",
    # issue 71: the noise predicted from the desk's live generator and subtracted; seen only
    # because the replay re-seeds that generator (on the recording's seed it predicted the
    # recorded noise again, and passed)
    "desk_live_noise": r"^with record \d+ replaced by .* and the recorded releases forced, "
                       r"release 2 was asked for at another iterate x$",
}


@pytest.fixture(scope="module")
def leaks(tmp_path_factory):
    from bench import plugins as registry
    from tests.plugin_registry import unload_plugins_under

    path = tmp_path_factory.mktemp("leaks") / "leaks.py"
    path.write_text(LEAKS)
    registry.load_plugin(str(path))
    yield path
    unload_plugins_under(path)


def _params(name: str) -> dict:
    poisson = name in ("same_batch", "median_clip", "shuffled", "capped_batch") or "sgd" in name
    return {"T": T, **({"b": 200} if poisson else {})}


def _check(name: str, problem: str = "glm", d: int = D, eps: float = 1.0, seed: int = 0):
    from algorithms.privacy.audit.plugin_checks import check_plugin

    return check_plugin(f"leak_{name}", problem=problem, d=d, eps=eps, n=N,
                        params=_params(name), seed=seed)


@pytest.mark.parametrize("fault", list(LEAKED))
def test_each_planted_leak_fails_naming_the_release_or_field(leaks, fault):
    from algorithms.privacy.audit.plugin_checks import needs_permission

    res = _check(fault)
    assert res.status == "FAILED", res
    assert re.search(LEAKED[fault], res.reason), res.reason
    assert "\n" not in res.label and needs_permission(res.label)


def test_shuffled_epochs_accounted_as_poisson_are_failed(leaks):
    """Issue 71: each record exactly once per epoch (3 epochs of 200-record batches over 2000
    records) while the ledger composes Poisson subsamples at q = 0.1: every record value's
    inclusion count is 3 x its multiplicity, a dispersion of 0 where Binomial gives 1. The
    honest Poisson DP-SGD raises no alarm on the same problems (below)."""
    res = _check("shuffled")
    assert res.status == "FAILED", res
    assert re.search(r"^its 30 sampled releases include its 2000 records \(\d+ distinct\) with a "
                     r"dispersion 0x that of independent Poisson sampling at q = 0.1 \(z = "
                     r"-\d+\.\d; each record about equally often: shuffled epochs\?\), while "
                     r"its ledger accounts Poisson subsampling$", res.reason), res.reason


def test_past_the_cap_every_eps_is_still_checked():
    """Issue 71: a noise table wrong at one eps passed when the gate checked the extremes only
    (3 of 10 configurations). Past MAX_CONFIGS every distinct eps gets one configuration."""
    from bench.cells import Cell
    from bench.privacy_gate import MAX_CONFIGS, configurations

    eps_values = [0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0, 3.0]
    cells = [Cell.make(problem="glm", problem_params={}, algorithm="x", params={"T": 30},
                       n=n, d=d, eps=e, delta=1e-6, rep=0)
             for e in eps_values for n in (1000, 4000) for d in (5, 10)]
    chosen, total = configurations(cells, 20_000)
    assert total == 32 and len(chosen) > MAX_CONFIGS
    assert sorted({c.eps for c in chosen}) == eps_values
    assert {c.n for c in chosen} == {1000, 4000} and {c.d for c in chosen} == {5, 10}


@pytest.mark.slow
def test_a_noise_table_wrong_at_one_eps_of_eight_stops_the_sweep(leaks):
    """Issue 71: the noise a tenth of its table's value at eps 0.7 only, in a sweep of 8 eps x 2
    n (16 configurations, past MAX_CONFIGS): the extremes alone (eps 0.1 and 3) passed it; with
    every eps checked the label is FAILED at eps 0.7."""
    from algorithms.privacy.audit.plugin_checks import needs_permission
    from bench.cells import Cell
    from bench.privacy_gate import plugin_label

    cells = [Cell.make(problem="glm", problem_params={}, algorithm="leak_typo",
                       params={"T": T}, n=n, d=D, eps=e, delta=1e-6, rep=0)
             for e in (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0, 3.0) for n in (1000, 2000)]
    label = plugin_label("leak_typo", cells, seed=0)
    assert label.startswith("FAILED: at glm, d 5, eps 0.7, n ") and needs_permission(label), label


@pytest.mark.slow
def test_a_warm_start_from_a_looser_run_is_failed_by_the_fresh_process_replay(leaks):
    """Issue 71: a run at eps 0.5 that starts from the last iterate of the run at eps 1 (module
    state) read "private by construction" while every replay ran in the recording's process;
    replayed in a fresh one it starts cold, and its first release is asked for elsewhere."""
    first = _check("desk_warm_start", eps=1.0)
    assert first.status == "private by construction", first
    second = _check("desk_warm_start", eps=0.5)
    assert second.status == "FAILED", second
    assert re.search(r"^with record \d+ replaced by .* and the recorded releases forced, release "
                     r"1 was asked for at another iterate x$", second.reason), second.reason


def _spec(algorithm: str, eps: str, params: str = "") -> str:
    return f"""
name = "leaks"
seed = 0
[grid]
n = [{N}]
d = [{D}]
eps = [{eps}]
[[problem]]
name = "glm"
[[algorithm]]
name = "{algorithm}"
params = {{T = {T}{params}}}
"""


def test_leaks_the_black_box_cannot_see_are_refused_not_certified(leaks, tmp_path, monkeypatch):
    """An early stop on the clean gradient norm (self-noised) passes every black-box check: it
    is audited, never certified, and its sweep stops before any cell unless allowed; a plugin
    that reports no release, or logs a norm that is no release's (a clean norm, or an honest
    post-processed one: the check cannot tell), is unverified and stops too."""
    from bench.config import parse_spec
    from bench.runner import PrivacyCheckFailed, run_sweep

    monkeypatch.setenv("DPRATES_CHECK_SEED", "5")
    early = _check("early_stop")
    assert early.status == "passed" and early.label.startswith("audited: no leak found (check "
                                                               "seed 0, eps 1, n 2000, d 5: ")
    for name, says in (("early_stop", "audited: no leak found (1 of 1 configurations checked; "
                                      "check seed 5, eps 0.5"),
                       ("no_probe", "unverified: its run reported no release to the probe"),
                       ("log_clean", "unverified: its step log's est_norm at step 1 (")):
        spec = parse_spec(_spec(f"leak_{name}", "0.5"))
        with pytest.raises(PrivacyCheckFailed) as stopped:
            run_sweep(spec, tmp_path / f"{name}.sqlite", jobs=1, progress=False)
        assert f"plugin leak_{name}: privacy {says}" in str(stopped.value), str(stopped.value)
        assert not (tmp_path / f"{name}.sqlite").exists()


def test_a_leak_at_one_eps_stops_the_sweep_that_would_have_checked_another(leaks, tmp_path,
                                                                          monkeypatch):
    """A noise std capped at a constant leaks only where the budget needs more noise than the
    cap: checked at eps 1 alone it passes; the sweep checks every configuration and stops on
    eps 0.1, naming it."""
    import algorithms
    from bench.config import parse_spec
    from bench.runner import PrivacyCheckFailed, run_sweep

    honest = algorithms.get_algorithm("leak_honest_momentum_gd")
    import problems
    from algorithms import Privacy

    prob = problems.get_problem("glm", d=D)
    std = {}
    for eps in (0.1, 1.0):
        run = honest(T=T).run(prob, prob.sample(N, np.random.default_rng(0)), Privacy(eps, 1e-6),
                              np.random.default_rng(1))
        std[eps] = float(run.records["noise_std"][0])
    assert std[0.1] > 5 * std[1.0]  # the GDP multiplier at T = 30 scales ~1 / eps
    monkeypatch.setattr(algorithms.get_algorithm("leak_capped"), "cap",
                        float(np.sqrt(std[0.1] * std[1.0])))
    assert _check("capped", eps=1.0).status == "passed"
    monkeypatch.setenv("DPRATES_CHECK_SEED", "3")
    with pytest.raises(PrivacyCheckFailed) as stopped:
        run_sweep(parse_spec(_spec("leak_capped", "0.1, 1.0")), tmp_path / "c.sqlite", jobs=1,
                  progress=False)
    said = re.search(r"plugin leak_capped: privacy FAILED: at glm, d 5, eps 0.1, n 2000: its "
                     r"releases compose to mu >= ([\d.]+) \(full batch, 30 releases\), its "
                     r"ledger says mu = (\d+\.\d+)", str(stopped.value))
    assert said, str(stopped.value)
    # the composed mu grows by the factor the cap cut the noise by (std(0.1) / cap), up to the
    # check's 99.9% lower confidence bound on the noise it measured
    factor = std[0.1] / np.sqrt(std[0.1] * std[1.0])
    assert 0.8 * factor <= float(said[1]) / float(said[2]) <= factor * 1.01


HONEST = ("honest_momentum_gd", "honest_poisson_sgd", "desk_momentum_gd", "desk_poisson_sgd")
PROBLEMS = (("glm", 5), ("logistic", 4), ("strict_saddle", 4), ("mean_estimation", 2))
HONEST_EPS = (0.3, 1.0, 3.0)


def _honest_configs(plugin: int, problem: int) -> list[tuple[float, int]]:
    """The (eps, check seed) pairs honest plugin number `plugin` is checked at on problem number
    `problem`: every eps once, at a seed rotating over 0, 1, 2 with the problem and the plugin,
    and half of the (problem, eps) pairs again at the next seed. Over the 4 problems that is 18
    configurations per plugin, every plugin on every
    problem at every eps and at each of the 3 check seeds; the full cross (36 each, 144 checks
    of 1-3 s, a release-API check spawning a fresh process) was a quarter of the suite's CPU."""
    out = []
    for j, eps in enumerate(HONEST_EPS):
        seed = (problem + j + plugin) % 3
        out.append((eps, seed))
        if (problem + j) % 2 == plugin % 2:
            out.append((eps, (seed + 1) % 3))
    return out


# One test per (problem, plugin) (issue 75, item 4): parts of 4-15 s that xdist spreads over
# its workers, where 4 tests of 50-65 s each left one worker running the last of them alone.
@pytest.mark.slow
@pytest.mark.parametrize("name", HONEST)
@pytest.mark.parametrize("problem, d", PROBLEMS, ids=[p for p, _ in PROBLEMS])
def test_honest_plugins_raise_no_false_alarm(leaks, problem, d, name):
    """The 4 honest plugins on each problem at every eps (`_honest_configs`): the self-noised
    ones are audited with no leak found, the ones on the release API private by construction."""
    from algorithms.privacy.audit.plugin_checks import AUDITED, BY_CONSTRUCTION

    want = BY_CONSTRUCTION if name.startswith("desk") else AUDITED
    configs = _honest_configs(HONEST.index(name), [p for p, _ in PROBLEMS].index(problem))
    for eps, seed in configs:
        res = _check(name, problem=problem, d=d, eps=eps, seed=seed)
        assert res.label.startswith(want), (name, eps, seed, res)


def test_every_honest_plugin_is_checked_at_18_configurations_covering_each_problem_eps_seed():
    for k in range(len(HONEST)):
        configs = [(i, *c) for i in range(len(PROBLEMS)) for c in _honest_configs(k, i)]
        assert len(configs) == len(set(configs)) == 18
        assert {(i, eps) for i, eps, _ in configs} == {(i, eps) for i in range(len(PROBLEMS))
                                                       for eps in HONEST_EPS}
        for i in range(len(PROBLEMS)):
            assert {seed for i2, _, seed in configs if i2 == i} == {0, 1, 2}


# one test per (plugin, eps), each at the 3 check seeds: the same 18 configurations in 6 parts
@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("name", ["desk_accumulate", "desk_noised_stop"])
def test_honest_release_api_schedules_raise_no_false_alarm(leaks, name, eps):
    """Several releases at one iterate, and a stop on released values only (which a
    neighbouring data set may flip): private by construction at 3 eps x 3 check seeds."""
    from algorithms.privacy.audit.plugin_checks import BY_CONSTRUCTION

    for seed in (0, 1, 2):
        res = _check(name, eps=eps, seed=seed)
        assert res.label == BY_CONSTRUCTION, (name, eps, seed, res)


def test_the_check_seed_is_fresh_per_sweep_unless_fixed(monkeypatch):
    from bench.privacy_gate import check_seed

    monkeypatch.delenv("DPRATES_CHECK_SEED", raising=False)
    assert len({check_seed() for _ in range(8)}) >= 7
    monkeypatch.setenv("DPRATES_CHECK_SEED", "42")
    assert check_seed() == 42
    monkeypatch.setenv("DPRATES_CHECK_SEED", "x")
    with pytest.raises(ValueError, match="DPRATES_CHECK_SEED='x' is invalid: must be an integer"):
        check_seed()


def _gdp_mu(eps: float, delta: float) -> float:
    """mu of mu-GDP at (eps, delta), from the closed form delta(eps) = Phi(-eps/mu + mu/2) -
    e^eps Phi(-eps/mu - mu/2) (Dong, Roth and Su, arXiv:1905.02383, Cor. 2.13), solved here."""
    from scipy import optimize, stats

    def gap(mu):
        return (stats.norm.cdf(-eps / mu + mu / 2)
                - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta)

    return optimize.brentq(gap, 1e-3, 50.0)


@pytest.mark.parametrize("fault, flagged", [("honest_momentum_gd", False), ("quiet", True)])
def test_the_empirical_eps_lower_bound_flags_an_under_noised_step_only(leaks, fault, flagged):
    """The canary audit (plugin_lower_bound) over 2000 runs per data set: eps_lb > eps for a
    plugin noising a hundredth of its budget's need, <= eps for the honest one; the measured
    mu of the first step against its closed form ||leaf' - leaf|| / std, computed here by hand
    (std = 2 C sqrt(T) / (n mu_GDP(eps)), divided by 100 for the quiet plant)."""
    from algorithms import Privacy
    from algorithms.privacy.audit.layers import record_run
    from algorithms.privacy.audit.plugin_lower_bound import CANARY_CLIPS, lower_bound

    name = f"leak_{fault}"
    run = record_run(name, problem="glm", d=D, n=N, eps=1.0, params={"T": T}, seed=0)
    bound = lower_bound(name, run.problem, run.data, run.events[0], Privacy(1.0, 1e-6),
                        {"T": T}, seed=0, runs=2000)
    assert bound.flagged is flagged and (bound.eps_lb > 1.0) is flagged, bound
    # the closed form: the canary's gradient (norm ~10 C at x0) clipped to C replaces record j's
    from algorithms.privacy.audit.plugin_replay import scaled_records

    C, x0 = float(run.traj.params["C"]), np.asarray(run.events[0]["x"], dtype=float)
    j = int(np.random.default_rng([0, 12]).integers(N))
    canary = scaled_records(run.problem, {"x": x0, "oracle": 1},
                            np.asarray(run.problem.adversarial_records(), dtype=float), C,
                            (CANARY_CLIPS,))[0]
    grads = run.problem.per_sample_grads(x0, np.array([run.data[j], canary]))
    clipped = [gr * min(1.0, C / np.linalg.norm(gr)) for gr in grads]
    assert np.linalg.norm(grads[1]) > 5 * C  # the canary is clipped: it moves by C at most
    std = 2 * C * math.sqrt(T) / (N * _gdp_mu(1.0, 1e-6)) / (100 if flagged else 1)
    mu_step = float(np.linalg.norm(clipped[1] - clipped[0])) / N / std
    # the measured mu projects on an estimated direction: never above the step's beyond its
    # interval; with the quiet plant's strong signal the direction is the true one
    assert bound.mu_low <= mu_step, (bound, mu_step)
    if flagged:
        assert bound.mu_low <= mu_step <= bound.mu_high and bound.eps_lb > 2.0, (bound, mu_step)


def test_a_gaussian_spider_subclass_is_audited_and_its_third_of_the_noise_fails(monkeypatch):
    """The Gaussian Spider engine releases its running estimate (released = nabla_t), so each
    release's new noise is nabla_t - nabla_{t-1} - leaf_t: read as released - nabla it was 0
    ("adds no noise", a false alarm on the honest engine). With a third of the noise (the
    engine's planted `noise_third`), the composed mu is 3x the ledger's: FAILED, the ratio
    within the check's 99.9% bound of 3."""
    import algorithms

    base = algorithms.get_algorithm("gaussian_spider")

    class Third(base):
        name = "leak_gaussian_spider_third"

        def __init__(self, **kw):
            kw.pop("planted_faults", None)
            super().__init__(planted_faults=("noise_third",), **kw)

    monkeypatch.setitem(algorithms._REGISTRY, Third.name, Third)
    from algorithms.privacy.audit.plugin_checks import AUDITED, check_plugin

    for d in (2, 4):
        honest = check_plugin("gaussian_spider", problem="strict_saddle", d=d, eps=1.0, n=N)
        assert honest.label.startswith(AUDITED), honest
    third = check_plugin(Third.name, problem="strict_saddle", d=4, eps=1.0, n=N)
    said = re.search(r"its releases compose to mu >= ([\d.]+) \(one pass, \d+ releases\), its "
                     r"ledger says mu = (\d+\.\d+)", third.reason)
    assert third.status == "FAILED" and said, third
    assert 2.5 <= float(said[1]) / float(said[2]) <= 3.0 * 1.01


def test_the_fresh_process_holds_no_module_state_of_the_recording_process(monkeypatch):
    """`fresh_context` (a fork server where the platform has one, else spawn): a process started
    from it holds none of this process's module state, neither an attribute set on a suite
    module here nor a module imported here after the server started."""
    import sys
    import types
    from concurrent.futures import ProcessPoolExecutor

    import algorithms
    from algorithms.privacy.audit.transcript_replay import fresh_context

    probe = "__import__('sys').modules.get('dprates_parent_only') is None and " \
            "not hasattr(__import__('algorithms'), 'dprates_parent_mark')"
    with ProcessPoolExecutor(max_workers=1, mp_context=fresh_context()) as pool:
        assert pool.submit(eval, probe).result()  # (starts the server where there is one)
    monkeypatch.setattr(algorithms, "dprates_parent_mark", 1, raising=False)
    monkeypatch.setitem(sys.modules, "dprates_parent_only", types.ModuleType("dprates_parent_only"))
    assert not eval(probe)  # here, both are seen
    with ProcessPoolExecutor(max_workers=1, mp_context=fresh_context()) as pool:
        assert pool.submit(eval, probe).result()


def test_the_fresh_process_sees_the_import_path_of_the_check_not_of_the_server(tmp_path,
                                                                               monkeypatch):
    """A fork server is started once, but each process forked from it gets the directory and
    sys.path of the process that asks for it (multiprocessing's preparation data, as spawn):
    a plugin that imports a helper beside it, on a path added after the server started, is
    checked, not crashed."""
    from concurrent.futures import ProcessPoolExecutor

    from algorithms.privacy.audit.plugin_checks import check_plugin
    from algorithms.privacy.audit.transcript_replay import fresh_context
    from bench import plugins as registry
    from tests.plugin_registry import unload_plugins_under
    from tests.test_plugins import readme_block

    with ProcessPoolExecutor(max_workers=1, mp_context=fresh_context()) as pool:
        pool.submit(int, 0).result()  # the server up before the path below exists
    (tmp_path / "dprates_late_helper.py").write_text("ETA_SCALE = 1.0\n")
    plugin = tmp_path / "late_desk.py"
    plugin.write_text("import dprates_late_helper  # noqa: F401\n"
                      + readme_block("# desk_plugin.py").replace('"desk_', '"late_desk_'))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    registry.load_plugin(str(plugin))
    try:
        res = check_plugin("late_desk_dp_sgd", problem="glm", d=5, eps=1.0, n=2000, seed=0)
        assert res.status == "private by construction", res
    finally:
        unload_plugins_under(plugin)
