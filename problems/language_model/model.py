"""The LSTM language model of seed 002's experiment, at workstation size, with per-example
gradients by JAX (issue 74, item 2).

Seed 002 (arXiv 2106.13756, "Training Private Language Models on WikiText-2") trains an LSTM
language model of 2.1e6 parameters. Ours is the same architecture, smaller so that a run of the
grid fits in minutes on 2 CPU cores: a word embedding (V x E), one LSTM layer of H units, and a
softmax over the vocabulary whose weights are the embedding's (tied, E = H), plus an output
bias: V H + 8 H^2 + 4 H + V parameters (`LSTMShape.parameter_count`); at V 5000, E = H 64,
358,024, 0.17 of the paper's. Per-example gradients are dense (the tied softmax reads every
row of the embedding), b x P floats a step: 250 windows at that size took 15 s a step on 2
loaded cores, so the grid's shape is chosen by its cost (issue 74, item 4), not fixed here.

A record is one window of `L + 1` consecutive tokens of the training stream (inputs the first L,
targets the last L); its loss is the mean cross entropy of its L next-token predictions, and
perplexity is exp of the mean loss over a part's windows. The parameters travel as one flat
float64 vector x (what the suite's optimizers step on); `per_example_grads(x, windows)` returns
the (b, P) matrix of each window's gradient, by `jax.vmap` of `jax.grad` (compiled once per
shape with `jax.jit`), the library the issue names for per-example gradients on a CPU.

Why JAX and not PyTorch with Opacus: PyTorch from the package registry pulls its CUDA libraries
on Linux (gigabytes); jax and jaxlib for CPU are 89 MB of wheels (measured: jax 0.10.2, jaxlib
0.10.2), and vmap of grad is per-example gradients by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

try:  # the optional extra: `pip install -e '.[lm]'` (the test extra carries it too)
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    # float64 throughout: the suite's clip and noise arithmetic is float64 (set for the
    # process: the experiment is the only JAX user in it)
    jax.config.update("jax_enable_x64", True)
except ImportError:  # pragma: no cover - said in one line where a model is built
    jax = None

#: Window length (tokens a record predicts).
L = 35


def _require_jax() -> None:
    if jax is None:
        raise ImportError("the language-model experiment needs jax: install it with "
                          "`.venv/bin/python -m pip install -e '.[lm]'`")


@dataclass(frozen=True)
class LSTMShape:
    """vocab V, embedding and hidden size E = H (tied softmax)."""

    vocab: int
    hidden: int = 64

    def parameter_count(self) -> int:
        V, H = self.vocab, self.hidden
        return V * H + 4 * H * (2 * H) + 4 * H + V


def init_params(shape: LSTMShape, seed: int = 0) -> dict:
    """Uniform(-0.1, 0.1) weights (the usual LSTM LM start), zero biases, the forget gate's
    bias at 1; a dict of float64 arrays."""
    _require_jax()
    rng = np.random.default_rng([seed, 74])
    V, H = shape.vocab, shape.hidden
    bias = np.zeros(4 * H)
    bias[H:2 * H] = 1.0
    return {"emb": rng.uniform(-0.1, 0.1, (V, H)), "w": rng.uniform(-0.1, 0.1, (2 * H, 4 * H)),
            "b": bias, "out_b": np.zeros(V)}


def flat(params: dict) -> tuple[np.ndarray, object]:
    """(x, unravel): the parameters as one float64 vector and the map back."""
    _require_jax()
    vec, unravel = ravel_pytree({k: jnp.asarray(v, dtype=jnp.float64) for k, v in params.items()})
    return np.asarray(vec, dtype=np.float64), unravel


def _window_loss(params: dict, window):
    """Mean next-token cross entropy of one window (L + 1 token ids)."""
    emb, w, b, out_b = params["emb"], params["w"], params["b"], params["out_b"]
    H = emb.shape[1]
    inputs, targets = window[:-1], window[1:]

    def step(carry, token):
        h, c = carry
        z = jnp.concatenate([emb[token], h]) @ w + b
        i, f, g, o = (jax.nn.sigmoid(z[:H]), jax.nn.sigmoid(z[H:2 * H]), jnp.tanh(z[2 * H:3 * H]),
                      jax.nn.sigmoid(z[3 * H:]))
        c = f * c + i * g
        h = o * jnp.tanh(c)
        return (h, c), h

    zero = jnp.zeros(H, dtype=emb.dtype)
    _, hs = jax.lax.scan(step, (zero, zero), inputs)
    logits = hs @ emb.T + out_b
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[:, None], axis=1))


class LSTMModel:
    """The model on flat parameters: per-window losses and per-window gradients (module
    docstring). float64 throughout (the suite's clip and noise arithmetic is float64)."""

    def __init__(self, shape: LSTMShape, seed: int = 0) -> None:
        _require_jax()
        self.shape = shape
        self.x0, unravel = flat(init_params(shape, seed))
        self.d = int(self.x0.size)

        def loss_flat(x, window):
            return _window_loss(unravel(x), window)

        self._losses = jax.jit(jax.vmap(loss_flat, in_axes=(None, 0)))
        self._grads = jax.jit(jax.vmap(jax.grad(loss_flat), in_axes=(None, 0)))

    def per_example_losses(self, x: np.ndarray, windows: np.ndarray) -> np.ndarray:
        k, padded = _padded(windows)
        return np.asarray(self._losses(jnp.asarray(x), jnp.asarray(padded)))[:k]

    def per_example_grads(self, x: np.ndarray, windows: np.ndarray) -> np.ndarray:
        """(b, d) float64 (writable: the suite clips it in place): each window's gradient of
        its mean cross entropy at x."""
        k, padded = _padded(windows)
        return np.array(self._grads(jnp.asarray(x), jnp.asarray(padded)))[:k]

    def perplexity(self, x: np.ndarray, windows: np.ndarray, chunk: int = 512) -> float:
        """exp of the mean per-token loss over the windows."""
        losses = [self.per_example_losses(x, windows[i:i + chunk])
                  for i in range(0, len(windows), chunk)]
        return float(math.exp(np.concatenate(losses).mean())) if losses else math.nan


def _padded(windows: np.ndarray) -> tuple[int, np.ndarray]:
    """(k, the k windows padded with copies of the first to a compiled size): a Poisson batch's
    size varies from step to step, and each new size would compile the vmapped gradient again
    (measured: 20 steps of a 40-word model, 45 s). Sizes are powers of two up to 64, then
    multiples of 32: a batch of expected size 250 (sd 16) then meets about six sizes and
    computes at most 31 padded rows (padding it to 512, as powers of two would a third of the
    time, doubled its step). The padded rows are computed and dropped."""
    windows = np.asarray(windows, dtype=np.int32)
    k = len(windows)
    size = max(8, 1 << max(0, (k - 1).bit_length())) if k <= 64 else -(-k // 32) * 32
    if size == k:
        return k, windows
    return k, np.concatenate([windows, np.repeat(windows[:1], size - k, axis=0)])


def windows_of(ids: np.ndarray, length: int = L) -> np.ndarray:
    """The stream cut into non-overlapping windows of length + 1 tokens (consecutive windows
    share their boundary token: the target of one is the first input of the next)."""
    n = (len(ids) - 1) // length
    idx = np.arange(n)[:, None] * length + np.arange(length + 1)[None, :]
    return np.asarray(ids, dtype=np.int32)[idx]


__all__ = ["L", "LSTMModel", "LSTMShape", "flat", "init_params", "windows_of"]
