"""`dprates run`: one algorithm on one problem, its parameters and metrics as text or JSON."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np

from bench.cli.values import parse_assignments, parse_count


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
        if math.isnan(f):  # missing (e.g. samples_to_target of a censored run): JSON null
            return None
        return f if math.isfinite(f) else str(f)  # +-inf (eps of a non-private run): "inf"
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def cmd_run(args: argparse.Namespace) -> int:
    from bench.single_run import run_cell

    params = parse_assignments(args.param, "--param")
    if args.target_alpha is not None:
        if "target_alpha" in params:
            raise ValueError(f"--target-alpha={args.target_alpha:g} is invalid together with "
                             f"--param target_alpha={params['target_alpha']}: give one")
        params["target_alpha"] = args.target_alpha
    n = parse_count(args.n, "--n")
    import problems
    from bench.config_parameters import check_problem_params

    problems.get_problem_class(args.problem)  # an unknown name: one line with the allowed ones
    check_problem_params(args.problem, parse_assignments(args.problem_param, "--problem-param"),
                         "--problem-param")
    from bench.single_run import check_target

    problems.get_problem(args.problem, d=args.d)  # a bad d: the problem's own line first
    check_target(args.algorithm, args.problem, args.d,
                 parse_assignments(args.problem_param, "--problem-param"), args.target_alpha,
                 "--target-alpha")
    res = run_cell(args.algorithm, args.problem, n, args.d, args.eps, delta=args.delta,
                   seed=args.seed, params=params,
                   problem_params=parse_assignments(args.problem_param, "--problem-param"),
                   calibration=args.calibration, data=args.data,
                   stop_at_target=args.stop_at_target, counts_version=args.counts_stream)
    res.pop("trajectory")
    res.pop("problem_obj")
    res.pop("evaluation_only", None)  # hidden by the accountant: never a run fact (bench.disclosure)
    if args.json:
        print(json.dumps(_jsonable(res)))
        return 0
    print(f"{args.algorithm} on {args.problem} (d={args.d}, n={n}, eps={args.eps}, "
          f"delta={args.delta}, seed={args.seed}, data={res['data']})")
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


RUN_EPILOG = """\
what the result means:
  alpha_best        alpha_SOSP = max(||grad F||, max(0, -lambda_min(hess F))^2 / rho)
                    of the best iterate (by the population oracle): the accuracy the sweeps
                    and fits use. alpha_last: of the final iterate. alpha_selected: of the
                    iterate with the smallest private gradient estimate (a choice the
                    algorithm could make itself, without the population oracle).
  samples_used      samples consumed; less than --n when the run ends at its own horizon
                    (stop_reason T_reached: the rules' step count T = B0 M / gamma^2 was
                    walked before the data ran out), data_exhausted, target_reached (with
                    --stop-at-target), diverged or timeout.
  samples_to_target samples consumed when alpha_SOSP first fell to --target-alpha
                    (null if it never did: a censored run).
  eps_eff           (parameters) the eps the rules budget each release with after composing
                    the run's releases; eps_spent: the whole run's eps (at the given delta).
"""
