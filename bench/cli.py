"""The `dprates` command line."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import numpy as np


def parse_value(text: str) -> Any:
    """'3' -> 3, '0.5' -> 0.5, 'inf' -> inf, 'true'/'false' -> bool, else the string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_assignments(items: list[str] | None, flag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"{flag} {item!r} is invalid: must be key=value")
        key, value = item.split("=", 1)
        out[key.strip()] = parse_value(value)
    return out


def _positive_float(text: str) -> float:
    v = parse_value(text)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a number > 0 (or inf)")
    return float(v)


def cmd_list(args: argparse.Namespace) -> int:
    import algorithms
    import problems

    print("problems:")
    for name, desc in problems.describe().items():
        print(f"  {name:24s} {desc}")
    print("algorithms:")
    for name in algorithms.available():
        cls = algorithms.get_algorithm(name)
        print(f"  {name:24s} {cls.description}  [claimed: {cls.claimed_rate}]")
    return 0


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else str(f)
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def cmd_run(args: argparse.Namespace) -> int:
    from bench.cell import run_cell

    res = run_cell(args.algorithm, args.problem, args.n, args.d, args.eps, delta=args.delta,
                   seed=args.seed, params=parse_assignments(args.param, "--param"),
                   problem_params=parse_assignments(args.problem_param, "--problem-param"),
                   calibration=args.calibration)
    res.pop("trajectory")
    if args.json:
        print(json.dumps(_jsonable(res)))
        return 0
    print(f"{args.algorithm} on {args.problem} (d={args.d}, n={args.n}, eps={args.eps}, "
          f"delta={args.delta}, seed={args.seed})")
    print("parameters used:")
    for k, v in res["params"].items():
        print(f"  {k:24s} {_fmt(v)}")
    print("result:")
    for k, v in res["metrics"].items():
        print(f"  {k:24s} {_fmt(v)}")
    for w in res["warnings"]:
        print(f"warning: {w}")
    print(f"run time {res['timing']['run_wall']:.3f} s, evaluation {res['timing']['eval_wall']:.3f} s")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from bench.cell import run_cell
    from problems import get_problem

    print("Problems (d = 10): constants, |grad F(x0)|, lambda_min(hess F(x0))")
    for name in ("strict_saddle", "hard_valley", "phase_retrieval", "logistic", "mean_estimation"):
        p = get_problem(name, d=10)
        c = p.constants
        print(f"  {name:16s} G={c.G:<8.4g} M={c.M:<8.4g} rho={c.rho:<8.4g} B0={c.B0:<7.4g} "
              f"|grad F(x0)|={np.linalg.norm(p.population_grad(p.x0)):.3g} "
              f"lambda_min={p.population_lambda_min(p.x0):.4g}")
    print("\nThe three Spiders, n = 200000, d = 10, delta = 1e-6, seed 0:")
    print(f"  {'problem':14s} {'algorithm':22s} {'eps':>5s} {'alpha_best':>10s} "
          f"{'samples':>8s} {'steps':>6s} stop")
    for prob in ("strict_saddle", "hard_valley"):
        for alg in ("gaussian_spider", "tree_spider", "adaptive_tree_spider"):
            for eps in (0.5, math.inf):
                r = run_cell(alg, prob, 200_000, 10, eps, seed=0)
                m = r["metrics"]
                print(f"  {prob:14s} {alg:22s} {eps:>5} {m['alpha_best']:>10.4g} "
                      f"{m['samples_used']:>8d} {m['n_steps']:>6d} {m['stop_reason']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dprates",
        description="Benchmark the convergence rates of differentially private non-convex optimizers.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="registered problems and algorithms")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("run", help="run one algorithm on one problem and print its metrics")
    p.add_argument("algorithm")
    p.add_argument("--problem", required=True)
    p.add_argument("--n", type=int, required=True, help="sample budget")
    p.add_argument("--d", type=int, required=True, help="dimension")
    p.add_argument("--eps", type=_positive_float, required=True, help="privacy eps (inf: non-private)")
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calibration", default="tight", help="tight (default) or theory")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="algorithm knob or parameter override (repeatable)")
    p.add_argument("--problem-param", action="append", metavar="KEY=VALUE",
                   help="problem parameter (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("demo", help="short demonstration (what `make demo` runs)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"dprates: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
