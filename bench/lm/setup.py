"""The language-model experiment's stated scale, its data and the public moments (issue 74).

Seed 002 (Asi, Duchi, Fallah, Javidbakht, Talwar 2021, arXiv 2106.13756, "Training Private
Language Models on WikiText-2") trains a 2.1e6-parameter LSTM with batch 250 for several epochs
on WikiText-2. Ours, sized so the whole grid runs in about an hour on 2 CPU cores (`LMSetup`):
the Shakespeare corpus split by work (`problems.language_model.corpus`), a word vocabulary of
2,000 counted on the public part, windows of 20 tokens, an LSTM of 32 units with a tied softmax
(74,320 parameters, 3.5% of the paper's), Poisson batches of expected size 250, 100 steps
(0.57 of an epoch of the 44,238 training windows; measured: 0.8 s a step on one loaded core).
The curve reads the first `curve_windows` validation windows every `eval_every` steps; the
last iterate is scored on the whole validation and test parts.

The public part plays the paper's held-out WikiText-103 subset: one epoch of per-window
gradients on it at the shared start x0 gives (a) the per-coordinate second moments from which
Pasan's and Pagan's ellipsoids are shaped (`optimal_diagonal`, the stylized case's optimum with
sigma_j the public root mean square) and (b) the public root-mean-square gradient norm G_pub,
the unit of every method's threshold B: DP-SGD clips at B G_pub, Pasan and Pagan project onto
{g : g^T C g <= B^2} with sum_j c_j sigma_j^2 = 1 (so B = 1 is the typical gradient for all
three; the paper's B is absolute in its own model's units, ours relative, a [CHOICE] that
keeps one B grid fair to the three).

Every run starts at the same public x0 (the model's seed 0): seeds vary the Poisson batches and
the noise, and the public moments are computed once.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class LMSetup:
    """The stated scale (module docstring). `delta` below 1 / n (n 44,238 training windows)."""

    vocab: int = 2000
    hidden: int = 32
    window: int = 20
    b: int = 250
    steps: int = 100
    delta: float = 1e-5
    eval_every: int = 20
    curve_windows: int = 2000
    corpus_seed: int = 0
    init_seed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class LMData:
    """Each part's windows (int32 rows of window + 1 token ids) and the corpus's summary."""

    train: np.ndarray
    public: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    summary: str
    tokens: dict


def load_data(setup: LMSetup, corpus_dir: str | Path | None = None) -> LMData:
    """The corpus split (`build_corpus`) cut into windows of `setup.window` tokens."""
    from problems.language_model.corpus import archive_path, build_corpus
    from problems.language_model.model import windows_of

    corpus = build_corpus(archive_path(corpus_dir), seed=setup.corpus_seed, vocab=setup.vocab)
    parts = {p: windows_of(corpus.ids[p], setup.window) for p in corpus.ids}
    return LMData(parts["train"], parts["public"], parts["validation"], parts["test"],
                  corpus.summary(), dict(corpus.tokens))


@dataclass(frozen=True)
class PublicMoments:
    """sigma2: each coordinate's mean squared gradient over the public windows at x0 (floored
    at 1e-8 of its mean: a coordinate the public gradients never move would give an infinite
    c_j); g_rms: their root-mean-square norm."""

    sigma2: np.ndarray
    g_rms: float


def public_moments(model, x0: np.ndarray, public: np.ndarray, chunk: int = 256) -> PublicMoments:
    """One epoch of per-window gradients on the public part at x0 (module docstring)."""
    total, norms2 = np.zeros(model.d), 0.0
    for i in range(0, len(public), chunk):
        g = model.per_example_grads(x0, public[i:i + chunk])
        total += np.einsum("ij,ij->j", g, g)
        norms2 += float(np.einsum("ij,ij->", g, g))
    m = len(public)
    sigma2 = total / m
    sigma2 = np.maximum(sigma2, 1e-8 * float(sigma2.mean()))
    return PublicMoments(sigma2, math.sqrt(norms2 / m))


@functools.lru_cache(maxsize=2)
def prepared(setup: LMSetup, corpus_dir: str | None) -> tuple:
    """(data, problem, moments) for a worker process, computed once per process (the corpus,
    the model's compiled gradients and one public epoch: about 20 s)."""
    from problems.language_model.problem import LanguageModelProblem

    data = load_data(setup, corpus_dir)
    problem = LanguageModelProblem(setup.vocab, setup.hidden, seed=setup.init_seed)
    return data, problem, public_moments(problem.model, problem.x0, data.public)


__all__ = ["LMData", "LMSetup", "PublicMoments", "load_data", "prepared", "public_moments"]
