"""Issue 71, item 2: a plugin problem is untrusted code (`algorithms.privacy.audit.problem_checks`,
`bench.privacy_gate.problem_labels`, `algorithms.counts_maps`).

Each leak is planted as a user might write it, on the guide's `quadratic_valley`
(problems/README.md) or on the built-in GLM: a support bound halved past x_1 = 20 (the
compiled loss's own check samples 6 points and passes it), a G read off the problem's own
data, per-record gradients normalized by the batch's largest, and an atoms layout's
structured clipped sum that clips the batch's sum at k C. Each must be FAILED (or, for the
structured sum, never called); the honest guide problem and built-ins checked as plugins
raise no false alarm."""

from __future__ import annotations

import numpy as np
import pytest

from tests.guide_variants import GUIDE, guide_variant

LEAKY = {
    # (declared bound functions are no longer read, so the leak is planted as a method: the
    # check flags it, and the clip guard uses the suite's bound whatever the method says)
    "qv_far_bound": [("    def params(self):",
                      "    def record_grad_bound(self, x):\n"
                      "        return (0.5 if x[0] > 20.0 else 1.0) * super().record_grad_bound(x)\n\n"
                      "    def params(self):")],
    "qv_data_G": [("    @property\n    def constants(self):",
                   "    def _draw(self, n, rng):\n        rows = super()._draw(n, rng)\n"
                   "        self.seen = 1.0 + float(rows[:, 0].mean())\n        return rows\n\n"
                   "    @property\n    def constants(self):"),
                  ("        return Constants(G=(1 + s) * self.c * (0.5 + beta) / w + top * self.R "
                   "+ self.tau,",
                   "        return Constants(G=getattr(self, 'seen', 1.0) * self.c / w,")],
    "qv_batch_scaled": [("    def params(self):",
                         "    def per_sample_grads(self, x, batch):\n"
                         "        g = super().per_sample_grads(x, batch)\n"
                         "        return g / max(1.0, float(np.linalg.norm(g, axis=1).max()))\n\n"
                         "    def params(self):")],
}

KCLIP_GLM = '''
import numpy as np

import problems
from problems.glm import GLM


@problems.register
class KClipGLM(GLM):
    """The GLM with a faster clipped sum: the batch's sum clipped at k C (not each record)."""
    name, description = "kclip_glm", "plugin: the GLM, its clipped sum clipped once at k C"

    def counts_clipped_sum(self, x, y, batch, clip):
        present = np.flatnonzero(batch.counts)
        rows = self.per_sample_grads(x, self.atoms[present]) if y is None else \\
            self.per_sample_grad_diffs(x, y, self.atoms[present])
        total = batch.counts[present].astype(float) @ rows
        cap = batch.k * clip
        norm = float(np.linalg.norm(total))
        return total if norm <= cap else total * (cap / norm)
'''


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    import problems
    from bench import plugins as registry

    d = tmp_path_factory.mktemp("problem_checks")
    files = {"my_quadratic_valley": GUIDE, "kclip_glm": KCLIP_GLM,
             **{name: guide_variant(name, edits) for name, edits in LEAKY.items()}}
    for name, src in files.items():
        (d / f"{name}.py").write_text(src)
        registry.load_plugin(str(d / f"{name}.py"))
    yield d
    for entry in [e for e in registry.loaded() if e.startswith(str(d))]:
        for name in registry._LOADED.pop(entry).problems:
            problems._REGISTRY.pop(name, None)


def _check(name: str, data: str, d: int = 10):
    from algorithms.privacy.audit.problem_checks import check_problem

    return check_problem(name, d=d, data_mode=data, seed=0)


@pytest.mark.parametrize("name, data, says", [
    ("qv_far_bound", "counts", r"its support bound on the per-record gradient norm at a public "
                               r"point is [\d.e+-]+, but a record of the enumerated support has "
                               r"[\d.e+-]+ \(2x\)"),
    ("qv_data_G", "records", r"its constants \(G\) changed after it drew data"),
    ("qv_data_G", "counts", r"its constants \(G\) changed after it drew data"),
    ("qv_batch_scaled", "records", r"per_sample_grads row 0 at a public point differs from the "
                                   r"same record's row computed alone"),
])
def test_each_planted_problem_leak_is_failed_with_its_reason(loaded, name, data, says):
    import re

    res = _check(name, data)
    assert not res.ok, res
    assert res.reason.startswith(f"problem {name!r}: ") and re.search(says, res.reason), res.reason


def test_the_far_bound_passes_the_compiled_losss_own_sampled_check(loaded):
    """The leak this check exists for: the declaration's own check (6 points, none past
    x_1 = 20) admits it; the clip guard never reads it (the suite's bound, issue 71)."""
    from algorithms.counts_maps import clipped_grad_sum
    from problems import get_problem
    from problems.compiled_loss import CompiledTwoPointLoss, check_counts_exact
    from problems.counts.stream import CountsClipError

    pr = get_problem("qv_far_bound", d=10)
    check_counts_exact(pr)  # no CountsExactnessError
    x = np.full(10, 0.1)
    x[0] = 25.0
    true = CompiledTwoPointLoss.record_grad_bound(pr, x)
    assert pr.record_grad_bound(x) == 0.5 * true
    batch = pr.stream(seed=1, budget=10**6, data="counts").take(1000)
    with pytest.raises(CountsClipError):  # a clip between the two bounds: refused
        clipped_grad_sum(pr, x, batch, 0.75 * true, "O1")


@pytest.mark.parametrize("name, d, data", [
    ("quadratic_valley", 10, "counts"), ("quadratic_valley", 10, "records"),
    ("quadratic_valley", 30, "counts"),  # 2^32 records: sampled support
    ("hard_valley", 10, "counts"), ("strict_saddle", 4, "records"), ("glm", 8, "counts"),
    ("logistic", 5, "records"), ("phase_retrieval", 6, "records"),
])
def test_honest_problems_raise_no_false_alarm(loaded, name, d, data):
    res = _check(name, data, d)
    assert res.ok, res.reason


def test_a_plugin_problems_structured_sum_is_never_called(loaded):
    """KClipGLM's sum clipped once at k C: with it, one record moves a counts release far past
    2C; the suite computes the per-atom clipped sum instead (the reference: each atom's row
    clipped, times its count), and a neighbour moves it by at most 2C."""
    from algorithms.counts_maps import clipped_grad_sum
    from algorithms.privacy.mechanisms import clip_rows
    from problems import get_problem
    from problems.counts.layouts import CountsBatch

    prob = get_problem("kclip_glm", d=8)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(8)
    counts = rng.multinomial(400, np.full(len(prob.atoms), 1 / len(prob.atoms)))
    batch = CountsBatch(400, counts)
    norms = np.linalg.norm(prob.per_sample_grads(x, prob.atoms), axis=1)
    C = 0.25 * float(np.median(norms))
    reference = counts.astype(float) @ clip_rows(prob.per_sample_grads(x, prob.atoms), C)
    assert np.allclose(clipped_grad_sum(prob, x, batch, C), reference, rtol=1e-12, atol=1e-12)
    # one record moved from a smallest-gradient atom to the largest's (present in the batch)
    lo, hi = int(np.argmin(np.where(counts > 0, norms, np.inf))), int(np.argmax(norms))
    moved = counts.copy()
    moved[lo] -= 1
    moved[hi] += 1
    other = CountsBatch(400, moved)
    planted = np.linalg.norm(prob.counts_clipped_sum(x, None, other, C)
                             - prob.counts_clipped_sum(x, None, batch, C)) / (2 * C)
    suite = np.linalg.norm(clipped_grad_sum(prob, x, other, C)
                           - clipped_grad_sum(prob, x, batch, C)) / (2 * C)
    assert suite <= 1 + 1e-9 < planted, (suite, planted)


def test_the_built_in_glm_keeps_its_structured_sum(monkeypatch):
    from algorithms.counts_maps import clipped_grad_sum
    from problems import get_problem, is_builtin
    from problems.counts.layouts import CountsBatch

    prob = get_problem("glm", d=8)
    assert is_builtin(prob)
    called = []
    original = type(prob).counts_clipped_sum
    monkeypatch.setattr(type(prob), "counts_clipped_sum",
                        lambda self, *a: called.append(1) or original(self, *a))
    counts = np.zeros(len(prob.atoms), dtype=np.int64)
    counts[:3] = 5
    clipped_grad_sum(prob, np.zeros(8), CountsBatch(15, counts), 1.0)
    assert called == [1]


def test_a_sweep_on_a_failed_problem_stops_even_for_a_built_in(loaded, tmp_path):
    """dp_gd is built-in, but its clip reads the problem's G: on qv_data_G the gate labels it
    FAILED and the sweep stops before any cell, in one line naming the problem."""
    from bench.config import parse_spec
    from bench.runner import PrivacyCheckFailed, run_sweep

    spec = parse_spec("""
name = "untrusted"
seed = 0
[grid]
n = [2000]
d = [10]
eps = [1.0]
[[problem]]
name = "qv_data_G"
[[algorithm]]
name = "dp_gd"
params = {T = 20}
""")
    with pytest.raises(PrivacyCheckFailed) as stopped:
        run_sweep(spec, tmp_path / "u.sqlite", jobs=1, progress=False)
    line = str(stopped.value)
    assert line.startswith("dp_gd: privacy FAILED: problem 'qv_data_G': its constants (G) "
                           "changed after it drew data") and "\n" not in line, line
    assert not (tmp_path / "u.sqlite").exists()
