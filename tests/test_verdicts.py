"""Verdicts that cannot be misread: the regime gate (issue 28, point 1), the claims summary
and its exports (issue 32), checked on hand-made tables whose right answers are known."""

from __future__ import annotations

import json
import math

import pandas as pd

from analysis.verdict_engine.verdicts import NOT_IN_REGIME, apply_gate, legacy_regime_reason


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


def test_regime_reason_reads_flags_as_written_in_an_older_editions_csv():
    assert legacy_regime_reason(math.nan) == "" and legacy_regime_reason("") == ""
    assert legacy_regime_reason("floor: x; censored: y") == "floor: x"


def test_the_gate_reads_the_typed_kinds_never_the_flags_text():
    """A fresh fit's rows carry `gate_kinds` (enum values) and `regime` (rendered from the typed
    flags): the gate reads those. A row whose text says "ceiling" but whose kinds are empty
    passes, and one whose kinds say floor fails whatever its text, so nothing reads the
    English; the typed columns of a fit agree with an older edition's reading of its text."""
    from algorithms.regime_flags import FlagKind, RegimeFlag
    from analysis.verdict_engine.verdicts import flag_columns

    flags = [RegimeFlag(FlagKind.CENSORED, "some runs never reached their threshold"),
             RegimeFlag(FlagKind.FLOOR, "a design point within 3x of its eps = inf median")]
    cols = flag_columns(flags)
    assert cols == {"flags": "censored: some runs never reached their threshold; floor: a design "
                             "point within 3x of its eps = inf median", "gate_kinds": "floor",
                    "regime": "floor: a design point within 3x of its eps = inf median"}
    assert legacy_regime_reason(cols["flags"]) == cols["regime"]
    assert flag_columns([]) == {"flags": "", "gate_kinds": "", "regime": "in regime"}
    table = pd.DataFrame([
        _row(**cols, two_term_verdict="consistent"),
        _row(flags="ceiling: text a reader might misparse", gate_kinds="", regime="in regime"),
        _row(flags="", gate_kinds="ceiling", regime="ceiling: runs never left the start",
             two_term_verdict="consistent"),
    ])
    out = apply_gate(table)
    assert out["verdict"].tolist() == [NOT_IN_REGIME, "consistent", NOT_IN_REGIME]
    assert out["regime"].tolist() == [cols["regime"], "in regime", "ceiling: runs never left the start"]
    # the two-term fit models the floor: only the ceiling fails it
    assert out["two_term_verdict"].tolist() == ["consistent", "", NOT_IN_REGIME]
    assert out["verdict_kind"].tolist()[0] == "not_in_regime"
    assert apply_gate(out).equals(out)
    # a fresh table beside an older edition's rows (no gate_kinds: read off their text), and a
    # CSV round trip (an empty gate_kinds field reads back as missing: `read_back`)
    from analysis.verdict_engine.verdicts import read_back

    old = pd.DataFrame([_row(flags="floor: a design point within 3x of its eps = inf median"),
                        _row(flags="censored: some runs never reached their threshold")])
    mixed = apply_gate(pd.concat([table, old], ignore_index=True))
    assert mixed["verdict"].tolist() == [NOT_IN_REGIME, "consistent", NOT_IN_REGIME,
                                         NOT_IN_REGIME, "consistent"]
    assert mixed["gate_kinds"].tolist() == ["floor", "", "ceiling", "floor", ""]
    import io

    back = read_back(pd.read_csv(io.StringIO(mixed.to_csv(index=False))))
    assert apply_gate(back)["verdict"].tolist() == mixed["verdict"].tolist()


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


ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
CSV = ROOT / "reports" / "reference_exponents.csv"


def test_committed_csv_verdicts_obey_the_gate():
    """Every flagged row of the committed reference CSV says "not in regime" (re-derived by
    `dprates regate`, not by hand), and every unflagged row keeps a CI reading."""
    table = pd.read_csv(CSV)
    flagged = table["gate_kinds"].fillna("") != ""
    # the typed kinds the gate read agree with an older edition's reading of the flags' text
    assert (flagged == table["flags"].fillna("").map(lambda f: bool(legacy_regime_reason(f)))).all()
    # fifth edition (issue 55): 13 of the 64 rows carry a ceiling or floor flag (the second
    # edition: 58 of 85); the privacy-share gate flags 10 rows, all on a measured share (eps = inf
    # controls at the rows' own knobs: the Spiders' error views, seed 000, noisy SGD's store,
    # seed 002, and the benign Gaussian Spider, 0.78 once headline2_benign ran its controls);
    # the GLM comparison's 3 rows left the gate when its controls were run (shares
    # 0.914-0.929); a claim none of whose rows passes reads "not in regime" (test below);
    # sixth edition (issue 70, item 3): headline6_deep's 4 rows, in regime (the rules' split)
    assert (len(table), flagged.sum()) == (68, 13)
    share_gated = table["flags"].fillna("").str.contains("private share over the window")
    assert share_gated.sum() == 10
    assert table.loc[share_gated, "private_share_source"].str.startswith("measured").sum() == 10
    assert table.loc[share_gated, "private_share_measured"].astype(bool).sum() == 10
    assert (table.loc[flagged, "verdict"] == NOT_IN_REGIME).all()
    assert (table.loc[~flagged, "verdict"] != NOT_IN_REGIME).all()
    assert (table.loc[flagged, "regime"] == table.loc[flagged, "flags"].map(legacy_regime_reason)).all()
    # "ceiling" / "floor" in `flags` always means outside the regime: the advisory "floor
    # unchecked" has its own column (11 rows carry it)
    gate_words = table["flags"].fillna("").str.contains("ceiling|floor")
    assert (table.loc[gate_words, "verdict"] == NOT_IN_REGIME).all()
    advisory = table["advisory"].fillna("")
    assert advisory.str.startswith("floor unchecked").sum() == 11


def test_claims_summary_one_row_per_declared_claim_decided_in_regime():
    from algorithms import all_claims
    from analysis.report.tables import claims_summary
    from bench.measured import read_fits

    fits = read_fits([CSV])
    summary = claims_summary(fits)
    claims = all_claims()
    assert len(summary) == len(claims) == 23
    assert list(zip(summary["algorithm"], summary["metric"], strict=True)) == \
        [(c.algorithm, c.metric) for c in claims]
    for r in summary.itertuples():
        hits = fits[(fits["algorithm"] == r.algorithm) & (fits["metric"] == r.metric)]
        if hits.empty:
            assert r.verdict == "not measured"
        elif (hits["regime"] == "in regime").any():  # an in-regime fit decides it
            assert r.regime == "in regime" and r.verdict != NOT_IN_REGIME
        else:  # no fit in regime: says so with the reason, the slope in parentheses
            assert r.verdict == NOT_IN_REGIME and r.regime.startswith(("ceiling", "floor"))
            assert r.measured.startswith("(")
    gs = summary[summary["algorithm"] == "gaussian_spider"].iloc[0]
    # The headline (sixth edition, issue 70, item 3): the row whose measured claim link tells
    # the claim from its rival decides: headline6_deep, hard_valley, theory mode, two decades of
    # alpha at eps 0.001 (its first group); its rules test undecided (-0.09 against m 0.097),
    # its deepest decade within m of -7/3
    assert gs["decided by"].startswith("headline6_deep/deep_n_star_vs_alpha, theory, hard_valley, "
                                       "x = alpha, eps 0.001")
    assert gs["measured"] == "-2.43 [-2.44, -2.41]"
    assert gs["verdict"] == "reaches the claim on its deepest decade"
    assert gs["against its rules"] == "undecided (-0.09 [-0.10, -0.07], m 0.097)"
    ad = summary[summary["algorithm"] == "adaptive_tree_spider"].iloc[0]
    assert ad["decided by"].startswith("headline6_deep/deep_n_star_vs_alpha")
    assert ad["verdict"] == "follows its rules, whose asymptote is the claim"
    note = claims_summary(fits, privacy={("dp_gd", ""): "privacy unverified"})
    assert note.loc[note["algorithm"] == "dp_gd", "privacy"].iloc[0] == "privacy unverified"


def test_readme_claims_table_is_the_generated_one():
    """README Results opens with the table `make readme-claims` writes from the CSV."""
    from bench.cli.claims import README_BEGIN, README_END, readme_claims_block

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip()
    assert block == readme_claims_block([str(CSV)]), \
        "README's claims table differs from reports/reference_exponents.csv: run make readme-claims"


def _latex_ok(tex: str, n_cols: int) -> None:
    """booktabs structure: one each of toprule / midrule / bottomrule, every row n_cols cells,
    balanced braces, no unescaped special character in the cells."""
    import re

    assert tex.count(r"\toprule") == tex.count(r"\midrule") == tex.count(r"\bottomrule") == 1
    spec = re.split(r"\\begin\{(?:tabular|longtable)\}", tex, maxsplit=1)[1].split("\n", 1)[0]
    assert "|" not in spec  # no vertical rules
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
    rows = [r for r in body.strip().split("\n") if r.strip()]
    for r in rows:
        assert r.endswith(r"\\")
        cells = re.split(r"(?<!\\)&", r[:-2])
        assert len(cells) == n_cols, r
        for c in cells:  # rates and numbers are math ($...$, issue 46 item 7): the text outside
            text = re.sub(r"(?<!\\)\$[^$]*(?<!\\)\$", "", c)
            assert not re.search(r"(?<!\\)[_%$#^~]", text.replace(r"\textasciitilde{}", "")
                                 .replace(r"\textasciicircum{}", "")), c
    depth = 0
    for ch in re.sub(r"\\[{}]", "", tex):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0


def test_claims_exports_markdown_latex_csv(tmp_path, capsys):
    import io
    import shutil
    import subprocess

    from analysis.report.tables import EXPORT_COLUMNS
    from bench.cli import main

    assert main(["claims", "--measured", str(CSV), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    assert len(lines) == 2 + 23 and lines[0].count(" | ") == len(EXPORT_COLUMNS) - 2
    assert main(["claims", "--measured", str(CSV), "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(table) == 23 and {"exponent", "ci_low", "ci_high", "verdict"} <= set(table.columns)
    for fmt_args in ([], ["--standalone"]):
        out = tmp_path / "claims.tex"
        assert main(["claims", "--measured", str(CSV), "--format", "latex", "-o", str(out),
                     *fmt_args]) == 0
        tex = out.read_text()
        _latex_ok(tex, len(EXPORT_COLUMNS) - 1)  # no privacy notes: that column is dropped
        assert r"\usepackage{booktabs}" in tex if fmt_args else "% requires" in tex
    if shutil.which("pdflatex"):  # compile as is where a TeX is installed
        res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "claims.tex"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stdout[-2000:]
    assert main(["claims", "--format", "latex"]) == 2
    assert "need --measured" in capsys.readouterr().err
    assert main(["claims", "--measured", str(tmp_path / "nope.csv")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_reduced_specs_keep_windows_designs_and_first_seeds():
    """The quick reference's specs: the full spec's windows, design points and fits, its
    first k seeds (the same data seeds: cells differ from the full ones only in rep), and with
    theory_only the knob grids cut to the theory defaults."""
    from bench.config import load_spec
    from bench.quick_reference import CONFIGS, load_manifest, reduce_spec

    for entry in load_manifest():
        full = load_spec(CONFIGS / f"{entry['name']}.toml")
        quick = reduce_spec(full, entry["repetitions"], entry["theory_only"])
        assert quick.fits == full.fits and quick.grid == full.grid and quick.name == full.name
        assert quick.repetitions == entry["repetitions"] < full.repetitions
        full_keys = {c.key for c in full.cells()}
        cells = quick.cells()
        assert {c.rep for c in cells} == set(range(entry["repetitions"]))
        if entry["theory_only"]:
            assert all(v == [1.0] for a in quick.algorithms for v in a["grid"].values())
            assert {c.key for c in cells} <= full_keys  # the full run's own theory cells
        else:
            assert {c.key for c in cells} <= full_keys


def test_quick_reference_comparison_counts_agreement_per_claim():
    from bench.quick_reference import compare

    full = pd.DataFrame([{"algorithm": "a", "claim": "c1", "verdict": "consistent",
                          "decided by": "headline2/f, theory", "measured": "1"},
                         {"algorithm": "b", "claim": "c2", "verdict": "slower than claimed",
                          "decided by": "headline2/f, theory", "measured": "2"},
                         {"algorithm": "c", "claim": "c3", "verdict": NOT_IN_REGIME,
                          "decided by": "seed002_scaling_d/f, theory", "measured": "3"}])
    quick = full.assign(verdict=["consistent", "inconclusive", NOT_IN_REGIME])
    table = compare(quick, full, {"headline2"})
    assert table["agree"].tolist() == ["yes", "no", "not covered"]
    assert table["same fit"].tolist() == ["yes", "yes", "-"]


def test_floor_flag_compares_each_instance_with_its_own_eps_inf_runs():
    """Two instances of one problem (a GLM at rank 5 and at rank 10) in one store: the private
    points of rank 5 sit 10x above rank 5's eps = inf median but within 3x of rank 10's; pooling
    the instances by problem name (the old grouping) would flag them, per instance they pass,
    and a rank-10 point within 3x of its own floor is flagged."""
    from analysis.declarations import FitSpec, StoreData
    from analysis.verdict_engine.flags import _floor_flag

    def cells(rank: int, eps: float, y: float) -> list[dict]:
        return [{"status": "ok", "algorithm": "dp_gd", "problem": "glm", "problem_params": {"rank": rank},
                 "n": 1000, "d": 10, "eps": eps, "emp_grad_best": y} for _ in range(3)]

    inf = pd.DataFrame(cells(5, math.inf, 1e-4) + cells(10, math.inf, 1e-3))
    fit = FitSpec("f", "error", "privacy", "emp_grad_best", (1e-6, 1.0), "theory")

    def sub(rank: int, y: float) -> pd.DataFrame:
        return pd.DataFrame({"algorithm": "dp_gd", "problem": "glm",
                             "instance_params": json.dumps({"rank": rank}, sort_keys=True), "n": 1000,
                             "d": 10, "x": [1e-3] * 3, "y": [y] * 3, "eps": [1.0] * 3})

    data = StoreData(spec=None, cells=inf, path="", load_curves=lambda kind, keys: {})
    assert not _floor_flag(data, sub(5, 1e-3), fit)  # 10x its own floor (1e-4)
    assert _floor_flag(data, sub(10, 2e-3), fit)  # 2x its own floor (1e-3)


def test_a_private_error_fit_without_eps_inf_controls_says_its_floor_is_unchecked():
    """A design point with no eps = inf run of its own (algorithm, instance, n, d) cannot be
    checked against the floor: counted (no silent pass), and advisory (not a gate flag)."""
    from analysis.declarations import FitSpec, StoreData
    from analysis.verdict_engine.flags import floor_check
    from analysis.verdict_engine.verdicts import legacy_regime_reason as regime_reason

    def cells(n: int, eps: float, y: float) -> list[dict]:
        return [{"status": "ok", "algorithm": "dp_gd", "problem": "glm", "problem_params": {},
                 "n": n, "d": 10, "eps": eps, "emp_grad_best": y} for _ in range(3)]

    fit = FitSpec("f", "error", "privacy", "emp_grad_best", (1e-6, 1.0), "theory")
    sub = pd.DataFrame({"algorithm": "dp_gd", "problem": "glm", "instance_params": "{}",
                        "n": [1000, 1000, 4000, 4000], "d": 10, "x": [1e-3, 1e-3, 2e-4, 2e-4],
                        "y": [1e-2] * 4, "eps": [1.0] * 4})
    control_at_1000 = StoreData(spec=None, cells=pd.DataFrame(cells(1000, math.inf, 1e-4)), path="",
                                load_curves=lambda kind, keys: {})
    assert floor_check(control_at_1000, sub, fit) == (False, 1, 2)  # n = 4000 has none
    private_only = StoreData(spec=None, cells=pd.DataFrame(cells(1000, 1.0, 1e-2)), path="",
                             load_curves=lambda kind, keys: {})
    assert floor_check(private_only, sub, fit) == (False, 2, 2)
    both = StoreData(spec=None, cells=pd.DataFrame(cells(1000, math.inf, 5e-3) + cells(4000, math.inf, 1e-4)),
                     path="", load_curves=lambda kind, keys: {})
    assert floor_check(both, sub, fit) == (True, 0, 2)  # n = 1000 within 3x of its floor
    assert regime_reason("floor unchecked: 2 of 2 design points have no eps = inf run") == ""
    assert regime_reason("floor: a design point within 3x of its eps = inf median") != ""
