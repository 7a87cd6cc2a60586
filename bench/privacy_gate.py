"""The privacy gate of a sweep: the `privacy_check` label each algorithm's cells are stored
with, decided before any cell runs, and which labels stop the sweep.

* a built-in algorithm: "built-in" (the test suite's three privacy layers cover it);
* a plugin: `algorithms.privacy.audit.plugin_checks.check_plugin` on every distinct private
  configuration of its pending cells (problem, d, eps, delta, n, parameters; past `MAX_CONFIGS`
  of them, the extremes of eps, n and d and one at every other eps, and the label says how many
  of how many), with a check seed drawn fresh for each sweep (a plugin cannot be tuned to pass
  at one seed; the seed is in the label, and `DPRATES_CHECK_SEED` fixes it to reproduce one).
  Where the sweep's largest n is past the checks' own cap, one more check runs there (at up to
  `LARGE_N_RECORDS` records: a batch capped in memory shows only at large n).
  The worst outcome is the algorithm's label: FAILED (at the configuration named), unverified,
  audited (a self-noising plugin: no leak found, never certified; its label carries the
  empirical eps lower bound of `algorithms.privacy.audit.plugin_lower_bound` at the smallest eps
  checked, beside the declared eps), or private by construction (the release API, every
  configuration's checks passed).

A plugin problem is untrusted code too: `problem_labels` checks each one the pending cells use
(`algorithms.privacy.audit.problem_checks`: constants that read the data, per-record oracles
that read other records, a product layout's support bound), and every algorithm with a cell on
a problem that fails is labelled FAILED, built-ins included.

A sweep stops before any cell on a plugin not built-in, private by construction or non-private
(`PrivacyCheckFailed`: FAILED, unverified or audited) unless run with --allow-unverified; its
cells then carry the label into every table, export and PDF.
"""

from __future__ import annotations

import math
import os
import secrets
import sys
from typing import Any

from bench.cells import Cell

#: Distinct configurations of one plugin checked at most (each check reruns the plugin tens
#: to hundreds of times at up to `CHECK_RECORDS` records); past it, the extremes.
MAX_CONFIGS = 6
#: Records of the one more check at a sweep's largest n, when that n is past the checks' own
#: cap (`plugin_checks.CHECK_RECORDS`): what a plugin does only at large n (a batch capped in
#: memory while its ledger assumes q n) shows there (issue 71, item 4).
LARGE_N_RECORDS = 1_000_000
#: Outcome order, worst first: the label of an algorithm is its worst configuration's.
_ORDER = ("FAILED", "unverified", "audited", "passed", "private by construction",
          "non-private")


class PrivacyCheckFailed(ValueError):
    """A plugin's privacy check said FAILED, unverified or audited and the sweep was not told
    to run it anyway: the sweep stops before any cell (one line, exit 2 from the CLI)."""


def check_seed() -> int:
    """The check seed of this sweep: fresh, or `DPRATES_CHECK_SEED` when set."""
    fixed = os.environ.get("DPRATES_CHECK_SEED")
    if fixed is not None:
        try:
            return int(fixed)
        except ValueError:
            raise ValueError(f"DPRATES_CHECK_SEED={fixed!r} is invalid: must be an integer"
                             ) from None
    return secrets.randbits(31)


def _config(c: Cell, cap: int) -> tuple:
    return (c.problem, c.problem_params, c.d, c.eps, c.delta, c.calibration,
            min(c.n or cap, cap), tuple(sorted((k, repr(v)) for k, v in c.run_params().items())))


def configurations(cells: list[Cell], cap: int) -> tuple[list[Cell], int]:
    """One cell per distinct private configuration of `cells` (one algorithm's), at most
    `MAX_CONFIGS` of them past which the extremes of n and d and one configuration at every
    distinct eps (issue 71: a noise table wrong at one eps only), and how many there are."""
    private = [c for c in cells if math.isfinite(c.eps)] or cells[:1]
    distinct: dict[tuple, Cell] = {}
    for c in private:
        distinct.setdefault(_config(c, cap), c)
    chosen = list(distinct.values())
    if len(chosen) > MAX_CONFIGS:
        ext: dict[tuple, Cell] = {}
        for key in (lambda c: c.eps, lambda c: c.n or cap, lambda c: c.d):
            for pick in (min(chosen, key=key), max(chosen, key=key)):
                ext.setdefault(_config(pick, cap), pick)
        chosen = list(ext.values())[:MAX_CONFIGS]
        checked = {c.eps for c in chosen}
        for c in distinct.values():  # every eps once: its own noise calibration
            if c.eps not in checked:
                chosen.append(c)
                checked.add(c.eps)
    return chosen, len(distinct)


def _kind(label: str) -> str:
    for k in _ORDER:
        if label.startswith(k):
            return k
    return "unverified"


def _where(c: Cell, n: int) -> str:
    """The configuration a check ran at (n: the records it used)."""
    return f"at {c.problem}, d {c.d}, eps {c.eps:g}, n {n}"


def largest_n(cells: list[Cell], cap: int) -> tuple[Cell, int] | None:
    """The private cell of the largest finite n, and the records its extra check uses
    (at most `LARGE_N_RECORDS`), when that n is past the configurations' cap; else None."""
    private = [c for c in cells if math.isfinite(c.eps) and c.n is not None and c.n > cap]
    if not private:
        return None
    top = max(private, key=lambda c: c.n)
    return top, min(int(top.n), LARGE_N_RECORDS)


def plugin_label(algorithm: str, cells: list[Cell], seed: int) -> str:
    """The stored label of a plugin's cells (module docstring)."""
    from algorithms.privacy.audit import plugin_checks as pc
    from algorithms.privacy.audit.plugin_lower_bound import RUNS

    chosen, total = configurations(cells, pc.CHECK_RECORDS)
    checks = [(c, min(c.n or pc.CHECK_RECORDS, pc.CHECK_RECORDS)) for c in chosen]
    large = largest_n(cells, pc.CHECK_RECORDS)
    if large is not None:  # one more, at the sweep's largest n (issue 71, item 4)
        checks.append(large)
    # the empirical eps lower bound at the smallest budget (where a noise shortfall shows most)
    tightest = min(range(len(chosen)), key=lambda i: chosen[i].eps)
    outcomes = []
    for i, (c, n) in enumerate(checks):
        res = pc.check_plugin(algorithm, problem=c.problem, d=c.d, eps=c.eps, delta=c.delta,
                              params=c.run_params(), problem_params=dict(c.problem_params),
                              calibration=c.calibration, n=n, seed=seed,
                              lower_bound_runs=RUNS if i == tightest else 0)
        outcomes.append((c, n, res))
    worst_c, worst_n, worst = min(outcomes, key=lambda o: _ORDER.index(_kind(o[2].label)))
    label = worst.label
    scope = (f"{len(chosen)} of {total} configurations checked"
             + (" (the extremes of eps, n and d, and every eps)" if len(chosen) < total else "")
             + (f", and one at the largest n ({large[1]} records)" if large is not None else ""))
    if label.startswith(("FAILED", "unverified")) and len(checks) > 1:
        status, _, reason = label.partition(": ")
        return f"{status}: {_where(worst_c, worst_n)}: {reason}" if reason else label
    if label.startswith(pc.AUDITED):
        tried = outcomes[tightest][2].tried  # the one with the empirical bound
        return f"{pc.AUDITED} ({scope}; {tried})"
    return label


def privacy_checks(cells: list[Cell], quiet_failures: bool = False,
                   seed: int | None = None) -> dict[str, str]:
    """algorithm -> the `privacy_check` label its cells are stored with (module docstring),
    run here, in the parent, before any cell. A label that is not a pass is reported on
    stderr, unless `quiet_failures` (the sweep then stops on it with one line of its own)."""
    from algorithms.privacy.audit import plugin_checks as pc

    out: dict[str, str] = {}
    for c in cells:
        if c.algorithm in out:
            continue
        label = pc.builtin_label(c.algorithm)
        if label is None:
            seed = check_seed() if seed is None else seed
            label = plugin_label(c.algorithm, [x for x in cells if x.algorithm == c.algorithm],
                                 seed)
            if pc.needs_permission(label) and not quiet_failures:
                print(f"dprates: warning: {c.algorithm}: privacy {label}", file=sys.stderr)
        out[c.algorithm] = label
    for algorithm, label in problem_labels(cells, quiet_failures).items():
        out[algorithm] = label  # a failed problem is worse than any label it replaces
    return out


def problem_labels(cells: list[Cell], quiet_failures: bool = False) -> dict[str, str]:
    """algorithm -> "FAILED: <the problem's reason>" for each algorithm with a cell on a
    plugin problem that fails `algorithms.privacy.audit.problem_checks` (checked once per
    problem, parameters, d and data mode of the pending cells: the smallest and largest d of
    each, the extremes past `MAX_CONFIGS`). A built-in algorithm on such a problem is not
    private either: its clip reads the problem's oracles."""
    from algorithms.privacy.audit.problem_checks import check_problem
    from problems import BUILTIN

    configs: dict[tuple, list[Cell]] = {}
    for c in cells:
        if c.problem not in BUILTIN:
            configs.setdefault((c.problem, c.problem_params, c.data), []).append(c)
    out: dict[str, str] = {}
    for (problem, params, data), group in configs.items():
        ds = sorted({int(c.d) for c in group})
        for d in sorted({ds[0], ds[-1]}):
            res = check_problem(problem, d=d, problem_params=dict(params), data_mode=data)
            if res.ok:
                continue
            label = f"FAILED: {res.reason} (d {d}, data {data})"
            for c in group:
                out.setdefault(c.algorithm, label)
            if not quiet_failures:
                print(f"dprates: warning: problem {problem}: privacy {label}", file=sys.stderr)
            break
    return out


def refusal(blocked: dict[str, str]) -> str:
    """The one line a sweep stops with."""
    from algorithms.privacy.audit.plugin_checks import builtin_label

    return ("; ".join(f"{'plugin ' if builtin_label(a) is None else ''}{a}: privacy {lab}"
                      for a, lab in blocked.items())
            + ". The sweep stops before its cells: only built-in algorithms and plugins private "
              "by construction (the release API) run without --allow-unverified (rerun with it "
              "to run them anyway: every table and export then carries the label, and a FAILED "
              "one makes the command exit with status 3)")


def blocked_labels(checks: dict[str, Any]) -> dict[str, str]:
    """The labels that stop a sweep without --allow-unverified."""
    from algorithms.privacy.audit.plugin_checks import needs_permission

    return {a: lab for a, lab in checks.items() if needs_permission(lab)}
