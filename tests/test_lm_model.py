"""Issue 74, item 2: the LSTM language model's per-example gradients (JAX vmap of grad) against
two independent references: the gradient of each window computed alone, and central finite
differences of the window's loss; its parameter count against the formula."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")  # the [lm] extra; the test extra installs it

from problems.language_model.model import LSTMModel, LSTMShape, windows_of  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return LSTMModel(LSTMShape(vocab=40, hidden=6), seed=3)


def _windows(n: int = 5) -> np.ndarray:
    ids = np.random.default_rng(9).integers(0, 40, 36 * n + 1)
    return windows_of(ids)[:n]


def test_the_parameter_count_is_the_formula_and_the_flat_vector(model):
    V, H = 40, 6
    assert model.d == V * H + 4 * H * 2 * H + 4 * H + V == model.shape.parameter_count()
    assert LSTMShape(5000, 64).parameter_count() == 358_024  # the module docstring's figure


def test_windows_cut_the_stream_into_overlapping_boundaries():
    w = windows_of(np.arange(80), length=10)
    assert w.shape == (7, 11) and w[1, 0] == w[0, -1] == 10 and w.dtype == np.int32


def test_per_example_gradients_equal_each_window_alone(model):
    W = _windows()
    x = model.x0 + 0.05 * np.random.default_rng(1).standard_normal(model.d)
    batch = model.per_example_grads(x, W)
    assert batch.shape == (5, model.d) and batch.dtype == np.float64
    for i in range(len(W)):
        alone = model.per_example_grads(x, W[i:i + 1])[0]
        np.testing.assert_allclose(batch[i], alone, rtol=1e-12, atol=1e-15)
    assert not np.allclose(batch[0], batch[1])  # each window its own gradient


def test_per_example_gradients_match_finite_differences(model):
    W = _windows(2)
    rng = np.random.default_rng(2)
    x = model.x0 + 0.05 * rng.standard_normal(model.d)
    g = model.per_example_grads(x, W)
    # coordinates in the embedding, the LSTM weights, the gate biases and the output bias
    coords = [3, model.shape.vocab * 6 + 17, model.d - 40 - 5, model.d - 1]
    h = 1e-6
    for j in coords:
        e = np.zeros(model.d)
        e[j] = h
        fd = (model.per_example_losses(x + e, W) - model.per_example_losses(x - e, W)) / (2 * h)
        np.testing.assert_allclose(g[:, j], fd, rtol=1e-5, atol=1e-9)


def test_perplexity_of_the_uniform_start_is_about_the_vocabulary(model):
    # small weights: every next token about equally likely, so exp(loss) ~ V
    ppl = model.perplexity(model.x0, _windows(4))
    assert 35 < ppl < 46, ppl
