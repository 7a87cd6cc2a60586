"""Issue 74, items 3 and 6 (first part): the language model as a suite problem; a tiny private
run of the built-in DP-SGD end to end, its releases the engine's: each clipped to the clip the
accountant is told, the ledger's eps checked by dp-accounting composed here."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from algorithms import Privacy, get_algorithm
from problems.language_model.model import windows_of
from problems.language_model.problem import LanguageModelProblem


class _Probe:
    def __init__(self) -> None:
        self.events: list[dict] = []

    def release(self, **info) -> None:
        self.events.append(info)


@pytest.mark.slow
def test_a_tiny_private_dpsgd_run_on_the_language_model():
    import dp_accounting
    from dp_accounting import dp_event, pld

    prob = LanguageModelProblem(vocab=40, hidden=6, clip=0.5)
    ids = np.random.default_rng(0).integers(0, 40, 36 * 400 + 1)
    windows = windows_of(ids).astype(float)
    probe = _Probe()
    T, b, eps, delta = 20, 40, 1.0, 1e-5
    run = get_algorithm("dp_sgd")(T=T, b=b, eta=0.5).run(prob, windows, Privacy(eps, delta),
                                                          np.random.default_rng(1), probe=probe)
    assert run.n_steps == T and run.stop_reason == "T_reached"
    assert np.all(np.isfinite(run.iterates[-1])) and run.iterates.shape[1] == prob.d
    # every release clipped at the problem's clip, told 2C / b, noised z C / b
    z = run.params["noise_multiplier"]
    for e in probe.events:
        assert e["clip"] == 0.5 and e["told"] == pytest.approx(2 * 0.5 / b)
        assert e["noise_std"] == pytest.approx(z * 0.5 / b)
        leaf_norms = np.linalg.norm(prob.per_sample_grads(e["x"], e["batch"]), axis=1)
        assert np.linalg.norm(e["leaf"]) <= len(leaf_norms) * 0.5 / b + 1e-12
    # the ledger's eps, recomposed outside: T Poisson-subsampled Gaussians at q = b / n
    acc = pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                            value_discretization_interval=1e-4)
    acc.compose(dp_event.PoissonSampledDpEvent(b / len(windows), dp_event.GaussianDpEvent(z)), T)
    assert acc.get_epsilon(delta) == pytest.approx(eps, rel=2e-3)
    # the model moved: the validation perplexity of the last iterate is not the start's
    held = windows[:100].astype(np.int32)
    assert prob.model.perplexity(run.iterates[-1], held) != prob.model.perplexity(prob.x0, held)


def test_the_language_model_has_no_population_and_no_draw():
    prob = LanguageModelProblem(vocab=20, hidden=4)
    with pytest.raises(NotImplementedError, match="no population oracle"):
        prob.population_grad(prob.x0)
    with pytest.raises(NotImplementedError, match="pass them as the run's data"):
        prob.sample(5, np.random.default_rng(0))
    assert prob.constants.B0 == pytest.approx(np.log(20))
