"""The language model as a suite problem (issue 74, items 2 and 3): the built-in optimizers
run on it unchanged, their releases through the one release engine.

A record is one token window of the private training part (`model.windows_of`), stored as a
row of float64 token ids (the suite's record layout); `per_sample_grads(x, rows)` is the
model's per-window gradient at the flat parameters x, so DP-SGD's Poisson batches, per-record
clipping, PLD-calibrated noise and ledger are the engine's (`algorithms.privacy.engine`),
exactly as on every other problem. The data set is finite and given: a run takes the training
windows as its `data` (no distribution to draw from: `_draw` refuses). There is no population
oracle; the experiment judges a point by its validation and test perplexity.

The constants are fixed by the shape, never read from the data: G is the clip the spec sets
(the paper's projection threshold B), M and rho nominal, B0 = log V (the loss at the uniform
start).
"""

from __future__ import annotations

import math

import numpy as np

from problems.base import Constants, Problem
from problems.language_model.model import LSTMModel, LSTMShape


class LanguageModelProblem(Problem):
    """The LSTM language model over token windows (module docstring). Not registered: it
    needs the corpus and jax, and has no population oracle for the SOSP benchmarks."""

    name = "lstm_language_model"
    character = "benign"
    description = "seed 002's LSTM language model on token windows (issue 74)"

    def __init__(self, vocab: int, hidden: int = 64, clip: float = 1.0, seed: int = 0) -> None:
        shape = LSTMShape(int(vocab), int(hidden))
        self.model = LSTMModel(shape, seed)
        super().__init__(self.model.d)
        self.shape, self.clip, self.seed = shape, float(clip), int(seed)

    @property
    def constants(self) -> Constants:
        return Constants(G=self.clip, M=1.0, rho=1.0, B0=math.log(self.shape.vocab))

    @property
    def x0(self) -> np.ndarray:
        return self.model.x0.copy()

    def params(self) -> dict:
        return {"d": self.d, "vocab": self.shape.vocab, "hidden": self.shape.hidden,
                "clip": self.clip, "seed": self.seed}

    def _draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError("the language model's data set is the corpus's training "
                                  "windows: pass them as the run's data")

    def per_sample_losses(self, x: np.ndarray, batch: np.ndarray) -> np.ndarray:
        rows = np.asarray(batch)
        if len(rows) == 0:
            return np.zeros(0)
        return self.model.per_example_losses(x, rows.astype(np.int32))

    def per_sample_grads(self, x: np.ndarray, batch: np.ndarray) -> np.ndarray:
        rows = np.asarray(batch)
        if len(rows) == 0:
            return np.zeros((0, self.d))
        return self.model.per_example_grads(x, rows.astype(np.int32))

    def _no_population(self) -> NotImplementedError:
        return NotImplementedError("a language model has no population oracle: judge a point "
                                   "by its validation perplexity (model.perplexity)")

    def population_loss(self, x: np.ndarray) -> float:
        raise self._no_population()

    def population_grad(self, x: np.ndarray) -> np.ndarray:
        raise self._no_population()

    def population_hessian(self, x: np.ndarray) -> np.ndarray:
        raise self._no_population()


__all__ = ["LanguageModelProblem"]
