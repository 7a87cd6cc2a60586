"""Plugins that leak, each a few lines written as a user would, must read FAILED with a one-line
reason naming the release and the factor (issue 44); honest subclasses of the built-ins pass.

The references are outside the code under test: the leaking DP-SGD's real eps comes from
dp-accounting's PLD accountant composed here for the releases it made (not from the plugin's
record), and each planted fault's size is computed by hand from its definition."""

from __future__ import annotations

import math
import re
import textwrap

import pytest

from tests.cli import run_cli, run_clis
from tests.plugin_sources import TOY_DPGD

PLANTED = TOY_DPGD + textwrap.dedent('''
    from algorithms import DPSGD
    from algorithms.privacy.accounting.ledger import ledger_pld
    from algorithms.privacy.accounting.pld import poisson_gaussian_calibration

    class ToyDPSGD(DPSGD):
        """DP-SGD written by hand (the built-in's releases are the engine's, which a subclass
        cannot recalibrate): Poisson batches at q = b / n, noise N(0, (z C)^2) on the clipped
        sum over b, z from `_calibration`, one release to the probe a step."""
        claims = ()

        def _calibration(self, privacy, p, n):
            return poisson_gaussian_calibration(privacy.eps, privacy.delta,
                                                min(1.0, p["b"] / n), int(p["T"]))

        def _run(self, problem, stream, n, privacy, rng, p, deadline, probe, monitor):
            T, eta, C, b = int(p["T"]), float(p["eta"]), float(p["C"]), int(p["b"])
            cal = self._calibration(privacy, p, n)
            sample = np.asarray(stream.take(n), dtype=float)
            x = problem.x0.copy()
            traj = TrajectoryBuilder(x, T, p["max_iterate_floats"])
            for t in range(T):
                batch = sample[rng.random(n) < b / n]
                leaf = clip_rows(problem.per_sample_grads(x, batch), C).sum(axis=0) / b
                std = cal.scale * C / b
                g = leaf + std * rng.standard_normal(problem.d)
                if probe is not None:
                    probe.release(t=t + 1, oracle=1, x=x.copy(), batch=batch, clip=C, leaf=leaf,
                                  told=2 * C / b, denom=b, released=g.copy())
                x = x - eta * g
                traj.step(x, t + 1, n, b, std, float(np.linalg.norm(g)))
            p["privacy_mu"] = float("nan")
            return traj.build(x, T, n, T * b, "T_reached", ledger_pld(cal), p, sample, [])

    @algorithms.register
    class ShortLedgerSGD(ToyDPSGD):
        """DP-SGD whose noise is calibrated for a tenth of the steps it runs."""
        name = "planted_short_ledger"
        claims = ()

        def _calibration(self, privacy, p, n):
            return poisson_gaussian_calibration(privacy.eps, privacy.delta,
                                                min(1.0, p["b"] / n), int(p["T"]) // 10)

    @algorithms.register
    class HalfRateSGD(ToyDPSGD):
        """DP-SGD that tells its accountant half the batch it samples."""
        name = "planted_half_rate"
        claims = ()

        def _calibration(self, privacy, p, n):
            return poisson_gaussian_calibration(privacy.eps, privacy.delta,
                                                min(1.0, p["b"] / (2 * n)), int(p["T"]))

    @algorithms.register
    class HonestSGD(ToyDPSGD):
        name = "planted_honest_sgd"
        claims = ()

    class _PlantedGD(ToyDPGD):
        """The compact DP-GD; `fault` plants one bug."""
        fault = ""

        def _leaf(self, per, C, n, t):
            if self.fault == "clip_first_only" and t > 0:
                return per.sum(axis=0) / n
            if self.fault == "clip_after_mean":
                m = per.mean(axis=0)
                return m * min(1.0, C / max(np.linalg.norm(m), 1e-300))
            return super()._leaf(per, C, n, t)

        def _std(self, z, C, n, t):
            std = super()._std(z, C, n, t)
            if self.fault == "noise_once" and t > 0:
                return 0.0
            return std * 0.9 ** t if self.fault == "shrinking" else std

    @algorithms.register
    class HonestGD(_PlantedGD):
        name = "planted_honest_gd"

    @algorithms.register
    class ClipFirstOnly(_PlantedGD):
        name = "planted_clip_first_only"
        fault = "clip_first_only"

    @algorithms.register
    class NoiseOnce(_PlantedGD):
        name = "planted_noise_once"
        fault = "noise_once"

    @algorithms.register
    class Shrinking(_PlantedGD):
        name = "planted_shrinking"
        fault = "shrinking"

    @algorithms.register
    class ClipAfterMean(_PlantedGD):
        name = "planted_clip_after_mean"
        fault = "clip_after_mean"
''')


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    from bench import plugins as registry
    from tests.plugin_registry import unload_plugins_under

    path = tmp_path_factory.mktemp("planted") / "planted.py"
    path.write_text(PLANTED)
    registry.load_plugin(str(path))
    yield path
    unload_plugins_under(path)


def _check(name, **kw):
    from algorithms.privacy.audit.plugin_checks import check_plugin

    return check_plugin(name, **kw)


SGD = {"problem": "glm", "d": 5, "eps": 1.0, "n": 20_000, "params": {"T": 200, "b": 400}}
#: The same leak at the same q = b / n = 0.02, T = 200 and noise multiplier z (which depend on
#: q, T, eps and delta only, not on n), on 2,000 records: the ledger's 20 composed releases
#: against the 200 made is a count, not a statistic, so n does not change what is detected,
#: and the honest DP-SGD passes every step of the check at these sizes too. The check's 1,000
#: replays of up to 200 steps each are then half as long (each check 21 s -> 11 s).
SGD_2000 = {**SGD, "n": 2_000, "params": {"T": 200, "b": 40}}


def test_a_dpsgd_whose_ledger_covers_a_tenth_of_its_releases_fails(planted):
    """The issue's first leak: noise for T // 10 = 20 steps, 200 releases at q = 0.02. Its
    record says it spent ~eps; dp-accounting, composed here over the 200 releases it made,
    says 2.5 eps."""
    import dp_accounting
    from dp_accounting import dp_event, pld

    from algorithms.privacy.accounting.pld import poisson_gaussian_calibration

    z = poisson_gaussian_calibration(1.0, 1e-6, 0.02, 20).scale
    acc = pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                            value_discretization_interval=1e-4)
    acc.compose(dp_event.PoissonSampledDpEvent(0.02, dp_event.GaussianDpEvent(z)), 200)
    real = acc.get_epsilon(1e-6)
    assert 2.2 < real < 2.8, real  # the issue measured 2.51 at z = 1.111
    bad = _check("planted_short_ledger", **SGD_2000)
    assert bad.status == "FAILED", bad
    assert bad.reason == "its ledger composes 20 releases, the run made 200 (releases 21 to 200 " \
                         "unaccounted)", bad.reason
    assert _check("planted_honest_sgd", **SGD_2000).status == "passed"


def test_a_dpsgd_that_tells_its_accountant_half_its_batch_fails(planted):
    bad = _check("planted_half_rate", **SGD)
    # it samples at q = 400 / 20000 and tells q = 0.01: its batches average ~400 records where
    # the told rate gives 200 (the sampler check sees it before the ledger rebuild does)
    assert bad.status == "FAILED" and re.search(
        r"read 39\d\.\d records on average where its ledger's Poisson rate q = 0.01 gives 200 of "
        r"20000", bad.reason), bad
    observed = float(bad.reason.split("read ")[1].split(" records")[0]) / 20_000
    assert abs(observed - 0.02) < 0.001  # b / n = 400 / 20,000


@pytest.mark.parametrize("problem,d", [("hard_valley", 10), ("glm", 5)])
def test_a_dpgd_that_clips_its_first_release_only_fails_on_a_later_release(planted, problem, d):
    kw = {"problem": problem, "d": d, "eps": 1.0, "n": 2000, "params": {"T": 30}}
    assert _check("planted_honest_gd", **kw).status == "passed"
    bad = _check("planted_clip_first_only", **kw)
    assert bad.status == "FAILED", bad
    assert bad.reason.startswith("replayed with one record replaced, its release "), bad.reason
    assert " of 30 moved " in bad.reason
    # an adversarial record at 1e6 unclipped, against a told sensitivity of 2 C / n: the move
    # is of order 1e6 / (2 C), far above 1e3 for these problems' C
    assert bad.max_ratio > 1e3, bad


def test_noise_at_the_first_release_only_fails(planted):
    kw = {"problem": "glm", "d": 5, "eps": 1.0, "n": 2000, "params": {"T": 30}}
    bad = _check("planted_noise_once", **kw)
    assert bad.status == "FAILED", bad
    # releases are pooled in groups of >= 200 noise values: the first group with no noise
    assert re.fullmatch(r"its releases? \d+( to \d+)? \(?of 30\)? adds? no noise", bad.reason), \
        bad.reason
    assert not bad.reason.startswith("its release 1 ")


def test_noise_that_shrinks_over_the_run_fails(planted):
    """std_t = 0.9^t std: full-batch GDP composition of 30 releases gives mu^2 = mu_budget^2 x
    mean(0.9^-2t) = 28.9 mu_budget^2 (hand sum), far above the ledger's mu_budget."""
    factor = math.sqrt(sum(0.9 ** (-2 * t) for t in range(30)) / 30)
    assert factor > 5
    kw = {"problem": "glm", "d": 5, "eps": 1.0, "n": 2000, "params": {"T": 30}}
    bad = _check("planted_shrinking", **kw)
    assert bad.status == "FAILED" and "its ledger says mu" in bad.reason, bad
    mu_seen = float(bad.reason.split("mu >= ")[1].split(" ")[0])
    mu_told = float(bad.reason.split("mu = ")[1])
    # the rebuilt mu uses the noise's upper confidence bounds: below the true factor, above 2
    assert 2 < mu_seen / mu_told < factor, bad.reason


def test_a_clip_applied_after_averaging_fails(planted):
    kw = {"problem": "glm", "d": 5, "eps": 1.0, "n": 2000, "params": {"T": 30}}
    bad = _check("planted_clip_after_mean", **kw)
    assert bad.status == "FAILED" and bad.reason.startswith("replayed with one record replaced"), bad
    assert bad.max_ratio > 10, bad


SPEC = """
name = "planted"
seed = 0
data = "records"
plugins = ["{plugin}"]
[grid]
n = [2000]
d = [5]
eps = [1.0]
[[problem]]
name = "glm"
[[algorithm]]
name = "planted_clip_first_only"
params = {{T = 30}}
[[algorithm]]
name = "dp_gd"
"""


def test_a_failed_check_is_loud_from_sweep_to_every_export(planted, tmp_path):
    """Tried as a new user would: the sweep stops before any cell with one line (exit 2);
    with --allow-unverified it runs every cell and exits 3; the claims exports (markdown,
    LaTeX, CSV) carry a row for the plugin, which declares no claim, saying FAILED."""
    spec = tmp_path / "planted.toml"
    spec.write_text(SPEC.format(plugin=planted))
    store = tmp_path / "planted.sqlite"
    out = run_cli("sweep", str(spec), "--out", str(store), "--quiet", "--jobs", "1")
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        "dprates: error: plugin planted_clip_first_only: privacy FAILED: replayed with one "
        "record replaced, its release "), lines
    assert "--allow-unverified" in lines[0]
    out = run_cli("sweep", str(spec), "--out", str(store), "--quiet", "--jobs", "1",
                  "--allow-unverified")
    assert out.returncode == 3, out
    assert "2 cells run (ok 2)" in out.stdout, out.stdout
    assert "privacy FAILED: planted_clip_first_only" in out.stderr
    # the three exports at once, each in its process; markdown is the default format (no
    # --format), whose page-1 banner is checked too
    formats = ("markdown", "latex", "csv")
    exports = run_clis(*[["claims", "--measured", str(store), "--boot", "50", "--plugin",
                          str(planted), *([] if fmt == "markdown" else ["--format", fmt])]
                         for fmt in formats])
    for fmt, text in zip(formats, exports, strict=True):
        assert text.returncode == 0, text.stderr
        name = "planted_clip_first_only" if fmt != "latex" else r"planted\_clip\_first\_only"
        first_row = [ln for ln in text.stdout.splitlines() if name in ln]
        assert first_row and "privacy FAILED" in first_row[0], (fmt, text.stdout[:2000])
    assert "PRIVACY FAILED: planted_clip_first_only: replayed" in exports[0].stdout
