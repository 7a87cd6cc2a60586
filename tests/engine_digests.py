"""Fingerprints of the tree-mechanism and per-release-Gaussian families' runs, taken from their
own loops before they moved onto the one engine (issue 71, item 1), and the code that takes them.

`python -m tests.engine_digests` rewrites tests/engine_digests.json from the code in the tree;
it was run at 50c1a79 (each family still clipping and noising in its own loop; the last five
configurations, the reference's own counts-mode paths, in a worktree of that code after the
move), so the file is the old loops' output: tests/test_noise_engine.py compares the moved code against it.
A fingerprint is the SHA-256 of everything a run returns that a store or a privacy check reads
(iterates, step log with dtypes, params, ledger, stop reason, counters, warnings) and of every
release the privacy probe sees (point, clip, told sensitivity, noise, leaf, released value).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

import problems
from algorithms import Privacy, get_algorithm

PATH = Path(__file__).with_name("engine_digests.json")

#: (algorithm, problem, d, n, eps, data, parameters, planted faults, seed)
CONFIGS = [
    # the Spiders (algorithms.sosp.engine; counts mode on hard_valley runs the compiled O2 steps)
    ("gaussian_spider", "hard_valley", 10, 200000, 1.0, "counts", {}, (), 1),
    ("gaussian_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, (), 2),
    ("gaussian_spider", "strict_saddle", 4, 20000, 0.5, "records", {"noise_multiplier": 40.0}, (), 3),
    ("gaussian_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, ("noise_third",), 4),
    ("gaussian_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, ("no_clipping",), 5),
    ("gaussian_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, ("o2_wrong_step",), 6),
    ("gaussian_spider", "hard_valley", 10, 200000, math.inf, "counts", {}, (), 7),
    ("tree_spider", "hard_valley", 10, 200000, 1.0, "counts", {}, (), 8),
    ("tree_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, (), 9),
    ("tree_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, ("tree_depth_1",), 10),
    ("tree_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, ("noise_third",), 11),
    ("adaptive_tree_spider", "hard_valley", 10, 200000, 1.0, "counts", {}, (), 12),
    ("adaptive_tree_spider", "hard_valley", 10, 200000, 0.3, "records", {}, (), 13),
    ("adaptive_tree_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, ("tree_one_leaf",), 14),
    ("adaptive_tree_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, ("no_clipping",), 15),
    ("adaptive_tree_spider", "strict_saddle", 4, 20000, 0.5, "records", {}, ("reuse_sample",), 16),
    ("adaptive_tree_spider", "strict_saddle", 4, 20000, 0.5, "records", {"sigma": 5.0}, (), 17),
    ("adaptive_tree_spider", "glm", 5, 20000, 1.0, "counts", {}, (), 18),
    # seed 000's empirical SOSP Spider
    ("empirical_sosp_spider", "strict_saddle", 4, 5000, 1.0, "records", {}, (), 19),
    ("empirical_sosp_spider", "glm", 5, 5000, 1.0, "counts", {}, (), 20),
    ("empirical_sosp_spider", "strict_saddle", 4, 5000, 1.0, "records", {}, ("noise_third",), 21),
    ("empirical_sosp_spider", "strict_saddle", 4, 5000, 1.0, "records", {}, ("no_clipping",), 22),
    ("empirical_sosp_spider", "strict_saddle", 4, 5000, 1.0, "records", {}, ("o2_wrong_step",), 23),
    # seed 001's first-order methods
    ("tree_private_spider", "glm", 5, 50000, 1.0, "counts", {}, (), 24),
    ("tree_private_spider", "glm", 5, 50000, 1.0, "records", {}, (), 25),
    ("tree_private_spider", "glm", 5, 50000, 1.0, "records", {}, ("noise_third",), 26),
    ("tree_private_spider", "glm", 5, 50000, 1.0, "records", {}, ("no_clipping",), 27),
    ("private_spiderboost", "glm", 5, 2000, 1.0, "records", {}, (), 28),
    ("private_spiderboost", "glm", 5, 5000, 1.0, "counts", {}, (), 29),
    ("private_spiderboost", "glm", 5, 5000, 0.5, "records", {}, ("noise_third",), 30),
    ("private_spiderboost", "glm", 5, 5000, 0.5, "records", {}, ("no_clipping",), 31),
    ("private_spiderboost", "glm", 5, 1000, math.inf, "records", {}, (), 32),
    ("recursive_regularization", "glm", 5, 300, 1.0, "records", {}, (), 33),
    ("recursive_regularization", "glm", 5, 300, 1.0, "records", {}, ("noise_third",), 34),
    ("recursive_regularization", "glm", 5, 300, 1.0, "records", {}, ("no_clipping",), 35),
    ("recursive_regularization_linear", "glm", 5, 20000, 1.0, "records", {}, (), 36),
    ("recursive_regularization_linear", "glm", 5, 20000, 1.0, "records", {}, ("no_domain",), 37),
    ("recursive_regularization_linear", "glm", 5, 20000, 1.0, "records", {}, ("noise_third",), 38),
    ("jl_private_spiderboost", "glm", 5, 5000, 1.0, "records", {}, (), 39),
    ("jl_recursive_regularization", "glm", 5, 300, 1.0, "records", {}, (), 40),
    # seed 002's ellipsoid methods and their baselines
    ("pasan", "scaled_linear", 10, 2000, 1.0, "records", {}, (), 41),
    ("pagan", "scaled_linear", 10, 2000, 1.0, "records", {}, (), 42),
    ("pagan", "scaled_linear", 10, 2000, 1.0, "records", {}, ("noise_isotropic",), 43),
    ("pagan", "scaled_linear", 10, 2000, 1.0, "records", {}, ("noise_third",), 44),
    ("pagan", "scaled_linear", 10, 2000, 1.0, "records", {}, ("no_clipping",), 45),
    ("pagan_private_scales", "scaled_linear", 10, 2000, 1.0, "records", {}, (), 46),
    ("pagan_public_scales", "scaled_linear", 10, 2000, 1.0, "records", {}, (), 47),
    ("private_sgd_iso", "scaled_linear", 10, 2000, 1.0, "records", {}, (), 48),
    ("private_adagrad_iso", "scaled_linear", 10, 2000, 1.0, "records", {}, (), 49),
    ("pdp_sgd", "scaled_linear", 10, 300, 1.0, "records", {}, (), 50),
    # the reference's own paths (counts mode on the product layouts the specs sweep)
    ("empirical_sosp_spider", "hard_valley", 10, 20000, 1.0, "counts", {}, (), 51),
    ("gaussian_spider", "hard_ramp", 10, 200000, 0.3, "counts", {}, (), 52),
    ("tree_private_spider", "hard_valley", 10, 5000000, 0.01, "counts", {"target_alpha": 0.07}, (), 53),
    ("private_spiderboost", "logistic", 4, 20000, 1.0, "counts", {}, (), 54),
    ("pagan", "scaled_linear", 10, 2000, 1.0, "records", {"projection": "euclidean"}, (), 55),
]


#: seed 002's reference problem (bench/configs/seed002_scaling3_d.toml)
PROBLEM_PARAMS = {"scaled_linear": {"power": 1.5, "mean_frac": 0.5}}


class Events:
    """A privacy probe that keeps every release it is told of."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def release(self, **info) -> None:
        self.events.append(info)


def cfg_id(cfg: tuple) -> str:
    return f"{cfg[0]}-{cfg[1]}-{cfg[5]}-{'+'.join(cfg[7]) or 'honest'}-{cfg[8]}"


def run(cfg: tuple, probe=None):
    name, prob_name, d, n, eps, data, params, faults, seed = cfg
    prob = problems.get_problem(prob_name, d=d, **PROBLEM_PARAMS.get(prob_name, {}))
    stream = prob.stream(seed=seed, budget=n, data=data)
    return get_algorithm(name)(planted_faults=faults, **params).run(
        prob, stream, Privacy(eps, 1e-6), np.random.default_rng([seed, 1]), probe=probe)


def _feed(h, value) -> None:
    if isinstance(value, np.ndarray):
        h.update(str(value.dtype).encode() + str(value.shape).encode())
        h.update(np.ascontiguousarray(value).tobytes())
    else:
        h.update(repr(value).encode())


#: the probe fields a privacy check reads (point, clip, told sensitivity, noise, leaf, value)
EVENT_KEYS = ("t", "oracle", "x", "x_prev", "clip", "leaf", "told", "noise_std", "nabla",
              "released", "restart", "escape")


def fingerprint(cfg: tuple) -> dict[str, str | int]:
    """SHA-256 of a run's returned values, and of its releases seen by a probe (a second run)."""
    traj = run(cfg)
    h = hashlib.sha256()
    for field in ("iterates", "steps", "samples_at", "est_norm_at"):
        _feed(h, np.asarray(getattr(traj, field)))
    for key in sorted(traj.records):
        h.update(key.encode())
        _feed(h, np.asarray(traj.records[key]))
    for value in (traj.samples_used, traj.grad_evals, traj.stop_reason, traj.n_steps,
                  traj.privacy_spent, traj.params, traj.evaluation_only, traj.warnings):
        _feed(h, value)
    probe = Events()
    if cfg[5] == "records":  # the privacy probe runs on records only (counts mode refuses it)
        run(cfg, probe)
    e = hashlib.sha256()
    for event in probe.events:
        for key in EVENT_KEYS:
            if key in event:
                e.update(key.encode())
                _feed(e, np.asarray(event[key]) if key in ("x", "x_prev", "leaf", "nabla",
                                                            "released") else event[key])
    return {"run": h.hexdigest(), "releases": e.hexdigest(), "n_steps": int(traj.n_steps),
            "n_releases": len(probe.events)}


def main() -> None:
    import time
    out = {}
    for cfg in CONFIGS:
        t0 = time.perf_counter()
        out[cfg_id(cfg)] = fingerprint(cfg)
        print(cfg_id(cfg), out[cfg_id(cfg)]["n_steps"], out[cfg_id(cfg)]["n_releases"],
              f"{time.perf_counter() - t0:.2f} s", file=sys.stderr)
    PATH.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
