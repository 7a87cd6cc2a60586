"""Verdicts that cannot be misread: the regime gate (issue 28, point 1), the claims summary
and its exports (issue 32), checked on hand-made tables whose right answers are known."""

from __future__ import annotations

import math

import pandas as pd

from analysis.claims import NOT_IN_REGIME, apply_gate, regime_reason


def _row(**kw):
    base = {"algorithm": "gaussian_spider", "problem": "hard_valley", "view": "sample_complexity",
            "mode": "theory", "x": "alpha", "predicted": -7 / 3, "exponent": -2.4, "ci_low": -2.5,
            "ci_high": -2.3, "verdict": "consistent", "rules_verdict": "consistent",
            "two_term_verdict": "", "flags": ""}
    return {**base, **kw}


def test_gate_turns_every_flagged_row_into_not_in_regime_with_its_reason():
    table = pd.DataFrame([
        _row(),
        _row(flags="ceiling: the window reaches within 10x of the start saddle's alpha_SOSP "
                   "(0.4 against 0.915)", verdict="slower than claimed"),
        _row(flags="floor: a design point within 3x of its eps = inf median",
             verdict="faster than claimed", two_term_verdict="consistent"),
        _row(flags="censored: some runs never reached their threshold", verdict="slower than claimed"),
        _row(flags="censored: some runs never reached their threshold; ceiling: runs in the window "
                   "never left the start saddle (alpha_SOSP 0.915: never halved)",
             two_term_verdict="consistent"),
    ])
    out = apply_gate(table)
    assert out["verdict"].tolist() == ["consistent", NOT_IN_REGIME, NOT_IN_REGIME,
                                       "slower than claimed", NOT_IN_REGIME]
    # censoring is counted, not gated
    assert out["regime"][0] == "in regime" and out["regime"][3] == "in regime"
    assert out["regime"][1].startswith("ceiling: the window reaches within 10x")
    assert out["regime"][4] == ("ceiling: runs in the window never left the start saddle "
                                "(alpha_SOSP 0.915: never halved)")
    assert (out["rules_verdict"][[1, 2, 4]] == NOT_IN_REGIME).all()
    # The two-term model carries the floor as a term of its own: only a ceiling fails it.
    assert out["two_term_verdict"][2] == "consistent" and out["two_term_verdict"][4] == NOT_IN_REGIME
    assert apply_gate(out).equals(out)  # idempotent: a CSV read back and gated again is unchanged


def test_regime_reason_reads_flags_as_written_in_a_csv():
    assert regime_reason(math.nan) == "" and regime_reason("") == ""
    assert regime_reason("floor: x; censored: y") == "floor: x"


SPEC_TARGETS = """
name = "t"
seed = 1
[grid]
target_alpha = [{targets}]
budget = 100000
d = [10]
eps = [1.0]
[[problem]]
name = "hard_valley"
[[algorithm]]
name = "gaussian_spider"
"""


def test_spec_check_refuses_a_target_at_or_above_the_start(capsys, tmp_path):
    """hard_valley's start saddle has alpha_SOSP = lambda_min^2 / rho with lambda_min =
    -(1 - beta) / w^2 (its docstring's closed form, 0.915): a target of 2.0, or the start's
    value itself, is met at step 0."""
    import pytest

    from bench.cli import main
    from bench.config import SpecError, parse_spec
    from problems import get_problem

    start = ((1 - 5e-5) / 0.5**2) ** 2 / get_problem("hard_valley", d=10).constants.rho
    for bad in ("2.0, 0.5", f"{start + 1e-12!r}, 0.5"):
        with pytest.raises(SpecError, match=r"grid.target_alpha contains .*at or above the start's "
                           r"alpha_SOSP\(x0\) = 0.915 on hard_valley"):
            parse_spec(SPEC_TARGETS.format(targets=bad))
    parse_spec(SPEC_TARGETS.format(targets=f"{start - 1e-6!r}, 0.5"))  # just below: accepted
    path = tmp_path / "t.toml"
    path.write_text(SPEC_TARGETS.format(targets="2.0"))
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "targets must be < 0.915" in err
