"""`dprates audit`: the black-box privacy audit table, the multi-release audit and the
planted-bug table (and the sensitivity check of outside algorithms)."""

from __future__ import annotations

import argparse

from bench.cli.values import parse_assignments


def cmd_audit(args: argparse.Namespace) -> int:
    """Black-box audit table (and, with --faults, the planted-bug table over three layers)."""
    import functools
    import time

    import algorithms
    from algorithms.privacy.audit.audit import NOT_AUDITED, audit, audit_instance_name
    from algorithms.privacy.audit.fault_table import fault_table
    from algorithms.privacy.faults import FAULTS
    from bench.plugins import load_plugins, loaded

    algs = algorithms.available() if args.algorithm == "all" else [args.algorithm]
    for a in algs:
        algorithms.get_algorithm(a)
        if a in NOT_AUDITED and args.algorithm != "all":
            raise ValueError(f"algorithm={a!r} has no one-release audit instance: {NOT_AUDITED[a]}")
    outside = [a for a in algs if a not in algorithms.BUILTIN]
    params = parse_assignments(args.param, "--param")
    skipped = [a for a in algs if a in NOT_AUDITED or (a in outside and audit_instance_name(a) is None)]
    algs = [a for a in algs if a not in skipped]
    # Workers (loky) start without the plugins this process loaded: each loads them first.
    setup = functools.partial(load_plugins, loaded()) if loaded() else None
    eps_list = args.eps or [0.5, 1.0, 2.0]
    for e in eps_list:
        if not 0 < e < float("inf"):
            raise ValueError(f"--eps={e} is invalid: must be a finite number > 0")
    if args.runs < 100:
        raise ValueError(f"--runs={args.runs} is invalid: must be >= 100")
    faults = None
    if args.faults:
        faults = tuple(FAULTS) if args.faults == "all" else tuple(args.faults.split(","))
        bad = [f for f in faults if f not in FAULTS]
        if bad:
            raise ValueError(f"--faults={args.faults!r} is invalid: must be 'all' or among "
                             f"{', '.join(FAULTS)}")
    t0 = time.perf_counter()
    if outside:
        from algorithms.privacy.audit.plugin_checks import check_plugin

        e = eps_list[0]
        print(f"Privacy check of outside algorithms (algorithms.privacy.audit.plugin_checks: "
              f"patterns, sensitivity, a same-seed replay of the algorithm's own code at every "
              f"release, its noise and ledger, the forced-transcript replay on the release API, "
              f"and an empirical eps lower bound over {args.runs} runs per data set for a "
              f"self-noising one; problem {args.problem}, d {args.d}, eps {e:g}, record mode):")
        for a in outside:
            r = check_plugin(a, problem=args.problem, d=args.d, eps=e, delta=args.delta,
                             params=params, seed=args.seed, lower_bound_runs=args.runs)
            print(f"  {a:22s} {r.label}  ({r.releases} releases, largest move "
                  f"{r.max_ratio:.3g} x the told sensitivity)")
        print()
    print(f"Black-box audit: {args.runs} runs on D and on D' (one canary), delta {args.delta:g}; "
          "eps_lb: 95% lower confidence bound (Clopper-Pearson, test chosen on a held-out half);")
    print("mu: empirical Gaussian-DP mu (95% CI) against the accountant's. Pass: eps_lb <= eps and "
          "mu's 99.9% lower bound <= the accountant's mu.")
    print(f"  {'algorithm':22s} {'eps':>5s} {'eps_lb':>7s} {'mu (95% CI)':>22s} "
          f"{'accountant mu':>13s}  result")
    for a in skipped:
        why = NOT_AUDITED.get(a, "it derives from no audited built-in algorithm, so no "
                                 "one-release instance fits it")
        print(f"  {a:22s} not audited here: {why}")
    for a in algs:
        for e in eps_list:
            r = audit(a, e, delta=args.delta, runs=args.runs, seed=args.seed, n_jobs=args.jobs or -1,
                      setup=setup)
            print(f"  {a:22s} {e:5g} {r.eps_lb:7.3f} {r.mu_empirical:8.3f} [{r.mu_low:5.3f}, "
                  f"{r.mu_high:5.3f}] {r.mu_accountant:13.3f}  {'FLAGGED' if r.flagged else 'pass'}")
    if args.multi:
        from algorithms.privacy.audit.multi_release_audit import MULTI_RELEASE_ROWS, multi_release_audit

        print(f"\nMulti-release audit ({args.runs} runs on D and on D', eps 8, delta {args.delta:g}): mu of "
              "the whole released sequence (linear test fitted on a held-out half, 95% CI), the")
        print("exact mu of that sequence from the noise used, and the accountant's. Flagged: 99.9% "
              "lower bound above the accountant's mu.")
        print(f"  {'scenario':15s} {'planted bug':14s} {'mu (95% CI)':>22s} {'exact':>6s} "
              f"{'accountant':>10s}  result")
        for sc, fl in MULTI_RELEASE_ROWS:
            r = multi_release_audit(sc, delta=args.delta, runs=max(args.runs, 200), faults=fl,
                                    seed=args.seed, n_jobs=args.jobs or -1)
            print(f"  {sc:15s} {','.join(fl) or '-':14s} {r.mu_empirical:8.3f} [{r.mu_low:5.3f}, "
                  f"{r.mu_high:5.3f}] {r.mu_exact:6.3f} {r.mu_accountant:10.3f}  "
                  f"{'FLAGGED' if r.flagged else 'pass'}")
    if faults:
        e = args.fault_eps
        print(f"\nPlanted bugs (eps {e:g}; layer 1 sensitivity, layer 2 noise KS, layer 3 audit with "
              f"{args.fault_runs} runs):")
        print(f"  {'bug':15s} {'algorithm':22s} {'eps_lb':>7s}  caught by")
        for row in fault_table(eps=e, runs=args.fault_runs, seed=args.seed, n_jobs=args.jobs or -1,
                               faults=faults):
            print(f"  {row['fault']:15s} {row['algorithm']:22s} {row['eps_lb']:7.3f}  {row['caught_by']}")
    print(f"\n{time.perf_counter() - t0:.1f} s")
    return 0
