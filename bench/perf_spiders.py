"""Benchmark: each Spider against the floor of one vectorized pass.

The floor is the time to compute two per-sample gradients (O2 needs two) for every sample
the run consumed, in one vectorized pass over the in-memory data (in blocks of 65536 rows).
Target (issue 3): run time <= 2.0 x floor. Ratios are measured in one process, one run.

    python bench/perf_spiders.py [--n 1000000] [--d 100] [--eps 1.0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from algorithms import Privacy, get_algorithm
from problems import get_problem


def floor_time(problem, data: np.ndarray, used: int, repeats: int = 3) -> float:
    x, y = np.full(problem.d, 0.3), np.full(problem.d, 0.2)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for start in range(0, used, 65536):
            block = data[start : min(used, start + 65536)]
            problem.per_sample_grads(x, block)
            problem.per_sample_grads(y, block)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--problem", default="strict_saddle")
    args = ap.parse_args()
    problem = get_problem(args.problem, d=args.d)
    data = problem.sample(args.n, np.random.default_rng(0))
    print(f"{args.problem}, n={args.n}, d={args.d}, eps={args.eps}")
    print(f"{'algorithm':22s} {'run s':>8s} {'floor s':>8s} {'ratio':>6s} {'samples':>9s} {'steps':>7s}")
    for name in ("gaussian_spider", "tree_spider", "adaptive_tree_spider"):
        alg = get_algorithm(name)(horizon_mult=100.0)  # use the whole budget
        t0 = time.perf_counter()
        traj = alg.run(problem, data, Privacy(args.eps, 1e-6), np.random.default_rng(1))
        run = time.perf_counter() - t0
        fl = floor_time(problem, data, traj.samples_used)
        print(f"{name:22s} {run:8.3f} {fl:8.3f} {run / fl:6.2f} {traj.samples_used:9d} {traj.n_steps:7d}")


if __name__ == "__main__":
    main()
