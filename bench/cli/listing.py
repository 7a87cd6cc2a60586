"""`dprates list`: the registered problems and algorithms, or one's parameters and knobs
(`--params NAME`)."""

from __future__ import annotations

import argparse


def cmd_list(args: argparse.Namespace) -> int:
    import algorithms
    import problems

    if args.params:
        return _list_params(args.params)
    print("problems (data modes, default first):")
    for name, desc in problems.describe().items():
        modes = "|".join(problems.data_modes(name))
        print(f"  {name:24s} {desc}  [data: {modes}]")
    print("algorithms (data modes: counts where the problem's layout makes it exact):")
    for name in algorithms.available():
        cls = algorithms.get_algorithm(name)
        print(f"  {name:24s} {cls.description}  [claimed: {cls.claimed_rate}] "
              f"[data: {algorithms.data_modes_note(cls)}]")
    return 0


def _list_params(name: str) -> int:
    """A problem's parameters (with defaults) or an algorithm's knobs and overrides."""
    import algorithms
    import problems
    from bench.config_parameters import algorithm_parameters, problem_parameters

    if name in problems.available():
        cls = problems.get_problem_class(name)
        print(f"problem {name} ({problems.character(name)}): parameters (--problem-param KEY=VALUE, "
              "or [[problem]] params in a spec), defaults:")
        print(f"  {'d':14s} (the grid's d)")
        for k, v in problem_parameters(name).items():
            note = "  (set per target alpha unless fixed)" if k == cls.per_target_param else ""
            print(f"  {k:14s} {v!r}{note}")
        return 0
    if name in algorithms.available():
        from algorithms.sosp.spider import KNOB_DEFAULTS

        cls = algorithms.get_algorithm(name)
        defaults = {**(KNOB_DEFAULTS if getattr(cls, "family", "") == "sosp_spider" else {}),
                    **getattr(cls, "knob_defaults", {})}
        keys = algorithm_parameters(name)
        print(f"algorithm {name}: knobs and overrides (--param KEY=VALUE, or [[algorithm]] params / "
              "grid in a spec); a knob's theory default in brackets, an override replaces a rule:")
        for k in keys:
            print(f"  {k:24s} " + (f"[{defaults[k]!r}]" if k in defaults else "override"))
        return 0
    raise ValueError(f"--params={name!r} is invalid: must be a problem ({', '.join(problems.available())}) "
                     f"or an algorithm ({', '.join(algorithms.available())})")
