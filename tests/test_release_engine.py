"""The release engine (`algorithms.privacy.engine`, issue 71, item 1): DP-GD, DP-SGD and one-pass
noisy SGD release through it, bit for bit with their own loops before the move
(tests/engine_reference.py, the code at f61288e) on records and counts, private and not, with a
larger noise multiplier and with each planted fault; and the engine, not the algorithm, owns
the noise and the clip."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import problems
from algorithms import Privacy, get_algorithm
from tests.engine_reference import OLD

#: (algorithm, problem, d, n, eps, data, parameters, planted faults, seed)
CONFIGS = [
    ("dp_gd", "glm", 5, 2000, 0.3, "records", {}, (), 3),
    ("dp_gd", "glm", 5, 2000, 1.0, "counts", {}, (), 4),
    ("dp_gd", "hard_valley", 10, 50000, 0.1, "counts", {"T": 300}, (), 5),
    ("dp_gd", "strict_saddle", 4, 3000, 1.0, "records", {"noise_multiplier": 150.0}, (), 6),
    ("dp_gd", "strict_saddle", 4, 3000, 1.0, "records", {}, ("noise_third",), 7),
    ("dp_gd", "strict_saddle", 4, 3000, 1.0, "records", {}, ("no_clipping",), 8),
    ("dp_gd", "glm", 5, 2000, math.inf, "records", {}, (), 15),
    ("dp_sgd", "glm", 5, 2000, 0.3, "records", {}, (), 3),
    ("dp_sgd", "glm", 5, 2000, 1.0, "counts", {}, (), 4),
    ("dp_sgd", "logistic", 4, 4000, 0.5, "records", {"noise_multiplier": 60.0}, (), 9),
    ("dp_sgd", "strict_saddle", 4, 3000, 1.0, "records", {}, ("noise_third",), 10),
    ("noisy_sgd", "strict_saddle", 4, 20000, 1.0, "records", {}, (), 11),
    ("noisy_sgd", "hard_valley", 10, 200000, 0.5, "counts", {}, (), 12),
    ("noisy_sgd", "glm", 5, 5000, 0.3, "records", {"noise_multiplier": 400.0}, (), 13),
    ("noisy_sgd", "hard_valley", 10, None, 0.5, "counts", {"target_alpha": 0.3}, (), 14),
]


class _Events:
    def __init__(self) -> None:
        self.events: list[dict] = []

    def release(self, **info) -> None:
        self.events.append(info)


def _run(cls, cfg, probe=None):
    _, name, d, n, eps, data, params, faults, seed = cfg
    prob = problems.get_problem(name, d=d)
    stream = prob.stream(seed=seed, budget=n if n is not None else 10**7, data=data)
    return cls(planted_faults=faults, **params).run(prob, stream, Privacy(eps, 1e-6),
                                                    np.random.default_rng([seed, 1]), probe=probe)


def _same(a, b) -> None:
    for field in ("iterates", "steps", "samples_at", "est_norm_at"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.records.keys() == b.records.keys()
    for key in a.records:
        assert np.array_equal(a.records[key], b.records[key]), key
        assert a.records[key].dtype == b.records[key].dtype, key
    assert (a.samples_used, a.grad_evals, a.stop_reason, a.n_steps) == \
        (b.samples_used, b.grad_evals, b.stop_reason, b.n_steps)
    assert repr(a.privacy_spent) == repr(b.privacy_spent)
    assert repr(a.params) == repr(b.params) and a.evaluation_only == b.evaluation_only
    assert a.warnings == b.warnings


@pytest.mark.parametrize("cfg", CONFIGS, ids=[f"{c[0]}-{c[1]}-{c[5]}-{c[8]}" for c in CONFIGS])
def test_the_baselines_on_the_engine_are_their_old_loops_bit_for_bit(cfg):
    new, old = _run(get_algorithm(cfg[0]), cfg), _run(OLD[cfg[0]], cfg)
    assert new.n_steps > 1
    _same(new, old)


@pytest.mark.parametrize("cfg", [CONFIGS[0], CONFIGS[5], CONFIGS[7], CONFIGS[11]],
                         ids=["dp_gd", "dp_gd-no_clipping", "dp_sgd", "noisy_sgd"])
def test_the_probe_sees_the_same_releases(cfg):
    """What the privacy checks read: each release's point, clip, told sensitivity, divisor,
    noise and value (the O1 `restart` flag is the engine's: every O1 release restarts)."""
    a, b = _Events(), _Events()
    _run(get_algorithm(cfg[0]), cfg, a)
    _run(OLD[cfg[0]], cfg, b)
    assert len(a.events) == len(b.events) > 1
    for ea, eb in zip(a.events, b.events, strict=True):
        for key in ("t", "oracle", "x", "x_prev", "clip", "leaf", "told", "noise_std", "released",
                    "denom"):
            assert np.array_equal(np.asarray(ea[key]), np.asarray(eb[key])), key


def test_a_smaller_noise_multiplier_is_refused_in_one_line():
    prob = problems.get_problem("strict_saddle", d=4)
    with pytest.raises(ValueError, match=r"^parameter noise_multiplier=1\.0 is invalid: must be "
                                         r">= [\d.]+, the noise \(eps, delta\) needs$"):
        get_algorithm("dp_gd")(noise_multiplier=1.0).run(
            prob, prob.stream(seed=1, budget=3000), Privacy(1.0, 1e-6), np.random.default_rng(1))


def test_the_baselines_keep_no_noise_or_clip_code_of_their_own():
    """The engine draws, clips and calibrates: the baselines' code (docstrings aside) names none
    of it."""
    import ast

    import algorithms.first_order.noisy_gd as module

    tree = ast.parse(inspect.getsource(module))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str) and len(n.value) < 40}
    for name in ("standard_normal", "normal", "clip_rows", "clipped_grad_sum", "batch_grad_sum",
                 "composed_gaussian_multiplier", "poisson_gaussian_calibration",
                 "poisson_subsample", "ledger_gdp", "ledger_pld", "with_noise_factor"):
        assert name not in names, name
    assert not strings & {"noise_third", "no_clipping"}
