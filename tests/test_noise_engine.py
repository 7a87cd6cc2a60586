"""The noise engine (`algorithms.privacy.noise_engine`, issue 71, item 1): the Spiders, the
empirical SOSP Spider, the tree private Spider, private SpiderBoost, recursive regularization
(and their JL forms) and the ellipsoid family release through it, bit for bit with their own
loops before the move (tests/engine_digests.json: fingerprints taken at 50c1a79, honest and
under every planted fault); the engine owns the clip, the noise, the generator and the faults."""

from __future__ import annotations

import json

import pytest

from tests.engine_digests import CONFIGS, PATH, cfg_id, fingerprint

OLD = json.loads(PATH.read_text())


@pytest.mark.parametrize("cfg", CONFIGS, ids=[cfg_id(c) for c in CONFIGS])
def test_each_family_on_the_engine_is_its_old_loop_bit_for_bit(cfg):
    got = fingerprint(cfg)
    assert got["n_steps"] > 0 or cfg[0] == "recursive_regularization_linear"
    assert got == OLD[cfg_id(cfg)]


# -- the engine owns the clip, the noise, the generator and the faults ---------------------------

FAMILY_MODULES = ["algorithms.sosp.engine", "algorithms.sosp.empirical",
                  "algorithms.first_order.tree_private_spider",
                  "algorithms.first_order.private_spiderboost",
                  "algorithms.convex.recursive_regularization",
                  "algorithms.adaptive_noise.ellipsoid", "algorithms.adaptive_noise.estimated_scales",
                  "algorithms.adaptive_noise.baselines", "algorithms.first_order.noisy_gd"]

#: what only the engines may name: the draws, the clips, the subsampler, the tree
ENGINE_ONLY = ("standard_normal", "normal", "clip_rows", "clipped_grad_sum",
               "clipped_grad_diff_sum", "mapped_grad_sum", "poisson_subsample", "gaussian_noise",
               "noisy_second_moments", "private_second_moments")


@pytest.mark.parametrize("name", FAMILY_MODULES)
def test_no_family_keeps_noise_clip_or_fault_code_of_its_own(name):
    """Docstrings aside, a family's module names none of the engine's primitives nor a planted
    fault, and its run's generator goes to the engine (the one use of `rng` in a `_run`)."""
    import ast
    import importlib
    import inspect

    from algorithms.privacy.faults import FAULTS

    tree = ast.parse(inspect.getsource(importlib.import_module(name)))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert not names & set(ENGINE_ONLY), sorted(names & set(ENGINE_ONLY))
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str) and len(n.value) < 40}
    assert not strings & set(FAULTS), sorted(strings & set(FAULTS))
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name in ("_run", "run_engine"):
            uses = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == "rng"]
            assert len(uses) <= 1, f"{fn.name} reads rng {len(uses)} times"


def _engine(faults=(), private=True, seed=0):
    import numpy as np

    import problems
    from algorithms.privacy.noise_engine import NoiseEngine

    prob = problems.get_problem("glm", d=5)
    records = prob.stream(seed=seed, budget=400, data="records").take(400)
    return NoiseEngine(prob, np.random.default_rng(seed), private=private, faults=faults), \
        prob, records


def test_a_release_is_noised_to_its_own_clip_and_divisor():
    """The noise std is the rule's z x (2 C / n) for the clip C the engine applied; measured
    from 4,000 releases' residuals (a chi-square estimate: +-2.3% at 3 sigma)."""
    import numpy as np

    engine, prob, records = _engine()
    engine.use_gaussian(2.5, "z*s")
    x = np.full(5, 0.3)
    for clip, n in ((0.05, 400), (3.0, 100)):
        r = engine.gaussian_release(x, records[:n], clip, n)
        assert r.std == 2.5 * (2 * clip / n) and r.told == 2 * clip / n and r.clip == clip
        rows = prob.per_sample_grads(x, records[:n])
        norms = np.linalg.norm(rows, axis=1)
        expect = (rows * np.minimum(1.0, clip / norms)[:, None]).sum(axis=0) / n
        np.testing.assert_allclose(r.leaf, expect, rtol=1e-12, atol=1e-15)
        res = np.concatenate([engine.gaussian_release(x, records[:n], clip, n).value - expect
                              for _ in range(800)])
        assert abs(res.std() / r.std - 1) < 0.023


def test_the_planted_faults_are_the_engines():
    import numpy as np

    x = np.full(5, 0.3)
    honest, _, records = _engine()
    third, _, _ = _engine(("noise_third",))
    unclipped, prob, _ = _engine(("no_clipping",))
    for e in (honest, third, unclipped):
        e.use_gaussian(2.5, "z*s")
    a, b = honest.gaussian_release(x, records, 0.01, 400), third.gaussian_release(x, records, 0.01, 400)
    np.testing.assert_allclose(b.value - b.leaf, (a.value - a.leaf) / 3, rtol=1e-12)
    assert a.std == b.std  # the noise told is the calibrated one: the fault hides
    c = unclipped.gaussian_release(x, records, 0.01, 400)
    assert c.clip == np.inf and c.std == a.std
    np.testing.assert_allclose(c.leaf, prob.per_sample_grads(x, records).mean(axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="told_clip is for the planted faults only"):
        honest.gaussian_release(x, records, 0.01, 400, told_clip=0.001)


def test_a_tree_leaf_is_clipped_to_the_trees_sensitivity():
    """Every tree leaf over k records is clipped to at most s k / 2 (replace-one sensitivity s),
    whatever clip the algorithm asks for; a non-private run keeps the clip it asks for."""
    engine, _, _ = _engine()
    engine.use_tree(1.0, 0.004)
    assert engine.tree_clip(5.0, 100) == 0.2 and engine.tree_clip(0.1, 100) == 0.1
    assert engine.tree_clip(5.0, 100, cap=False) == 5.0
    quiet, _, _ = _engine(private=False)
    quiet.use_tree(0.0, 0.004)
    assert quiet.tree_clip(5.0, 100) == 5.0


def test_an_unknown_fault_or_rule_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^planted_faults=\['nope'\] is invalid: must be among"):
        _engine(("nope",))
    engine, _, _ = _engine()
    with pytest.raises(ValueError, match=r"^rule='z\*C' is invalid: must be one of"):
        engine.use_gaussian(1.0, "z*C")
