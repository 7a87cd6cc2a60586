"""The measured private share (issue 55, item 6: the gate from measurement), against references
known by construction: synthetic stores whose private and eps = inf medians are set by hand, so
each share is 1 - control / private computed here from the planted numbers, independently of
`analysis.verdict_engine.flags`.

Covered: the samples-to-target view (x = alpha, x = eps, x = d, a per-target instance, fixed-
budget cells read at thresholds), the error view, the knob matching (a control at another knob
setting is not a control, in theory and tuned fits), censored runs, and NaN / None where there
is no control."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.declarations import FitSpec, StoreData
from analysis.points import fit_points_table
from analysis.verdict_engine.flags import floor_check, measured_private_share

REPS = 5
#: Multipliers of a design point's median over its 5 seeds (median 1: the planted value).
SPREAD = (0.5, 0.8, 1.0, 1.3, 2.0)


def _cells(rows: list[dict]) -> pd.DataFrame:
    """A store's cells table from short specifications: each row gives algorithm, problem,
    eps, d, n, target_alpha, params (knobs), problem_params and the 5 seeds' y (`values`) for
    `column`; every other column fit_points_table reads gets a neutral value."""
    out = []
    for r in rows:
        knobs = tuple(sorted(r.get("params", {})))
        for rep, v in enumerate(r["values"]):
            out.append({
                "key": f"c{len(out)}", "status": r.get("status", "ok"),
                "algorithm": r.get("algorithm", "gaussian_spider"),
                "problem": r.get("problem", "hard_valley"),
                "problem_params": r.get("problem_params", {}), "params": r.get("params", {}),
                "knobs": knobs, "d": r.get("d", 10), "n": r.get("n", 10**12),
                "eps": r["eps"], "delta": r.get("delta", 1e-6),
                "target_alpha": r.get("target_alpha", math.nan), "rep": rep,
                "left_saddle": True, "alpha_x0": 0.915, "grad_x0": 0.0, "samples_used": 1.0,
                "first_o1_batch": 1.0, "n_steps": 100.0,
                "samples_to_target": v if r.get("column", "samples_to_target") == "samples_to_target"
                else math.nan,
                "alpha_best": v if r.get("column") == "alpha_best" else math.nan})
    return pd.DataFrame(out)


def _seeds(median: float) -> list[float]:
    return [median * s for s in SPREAD]


def _data(rows: list[dict], curves: dict | None = None) -> StoreData:
    cells = _cells(rows)
    return StoreData(spec=None, cells=cells, path="",
                     load_curves=lambda kind, keys: {k: (curves or {})[k] for k in keys
                                                     if k in (curves or {})})


def _sub(data: StoreData, fit: FitSpec, mode: str = "theory") -> pd.DataFrame:
    """The fit's points inside its window, as `analysis.claims.run_fit` hands them to the gate
    (one group: these stores hold one algorithm and instance per fit group)."""
    pts = fit_points_table(data, fit, mode)
    lo, hi = fit.window
    return pts[(pts["x"] >= lo * (1 - 1e-9)) & (pts["x"] <= hi * (1 + 1e-9))]


SAMPLES_ALPHA = FitSpec("n_star_vs_alpha", "sample_complexity", "alpha", "n_star", (0.01, 0.09),
                        "theory")
TARGETS = (0.09, 0.03, 0.01)
#: private and eps = inf medians of n* per target (alpha_mult = 1): shares 0.99, 0.95, 0.6
PRIVATE = {0.09: 1e6, 0.03: 4e7, 0.01: 1e9}
CONTROL = {0.09: 1e4, 0.03: 2e6, 0.01: 4e8}


def _target_rows(eps: float, medians: dict[float, float], params: dict | None = None,
                 **kw) -> list[dict]:
    return [{"eps": eps, "target_alpha": t, "values": _seeds(medians[t]),
             "params": params if params is not None else {"alpha_mult": 1}, **kw}
            for t in medians]


def test_samples_to_target_share_is_one_minus_the_controls_n_star_over_the_private_one():
    data = _data(_target_rows(0.1, PRIVATE) + _target_rows(math.inf, CONTROL))
    share = measured_private_share(data, _sub(data, SAMPLES_ALPHA), SAMPLES_ALPHA)
    # one value per target, in increasing alpha: 0.01, 0.03, 0.09
    assert share == pytest.approx([1 - 4e8 / 1e9, 1 - 2e6 / 4e7, 1 - 1e4 / 1e6])


def test_a_control_at_another_knob_setting_is_not_a_control():
    """The theory fit reads alpha_mult = 1; eps = inf runs at alpha_mult = 2 (ten times
    faster here) are another algorithm configuration: ignored, so the share comes from the
    alpha_mult = 1 control only, and without it there is no control at all (None)."""
    other = _target_rows(math.inf, {t: CONTROL[t] / 10 for t in TARGETS}, {"alpha_mult": 2})
    also_private = _target_rows(0.1, {t: PRIVATE[t] / 3 for t in TARGETS}, {"alpha_mult": 2})
    data = _data(_target_rows(0.1, PRIVATE) + _target_rows(math.inf, CONTROL) + other
                 + also_private)
    share = measured_private_share(data, _sub(data, SAMPLES_ALPHA), SAMPLES_ALPHA)
    assert share == pytest.approx([0.6, 0.95, 0.99])
    only_other = _data(_target_rows(0.1, PRIVATE) + other)
    assert measured_private_share(only_other, _sub(only_other, SAMPLES_ALPHA), SAMPLES_ALPHA) is None


def test_a_tuned_fit_reads_the_share_of_the_setting_the_envelope_chooses_with_its_own_control():
    """Tuned: at each target the envelope picks the knob setting with the smallest private
    median; the share is that setting's, against that setting's control."""
    private_2 = {0.09: 5e5, 0.03: 8e7, 0.01: 5e8}  # alpha_mult = 2 wins at 0.09 and 0.01
    control_2 = {0.09: 4e5, 0.03: 1e3, 0.01: 5e7}
    data = _data(_target_rows(0.1, PRIVATE) + _target_rows(math.inf, CONTROL)
                 + _target_rows(0.1, private_2, {"alpha_mult": 2})
                 + _target_rows(math.inf, control_2, {"alpha_mult": 2}))
    fit = FitSpec("tuned", "sample_complexity", "alpha", "n_star", (0.01, 0.09), "tuned")
    share = measured_private_share(data, _sub(data, fit, "tuned"), fit)
    # 0.01: alpha_mult 2 (5e8 < 1e9): 1 - 5e7 / 5e8; 0.03: alpha_mult 1 (4e7 < 8e7):
    # 1 - 2e6 / 4e7 (not 1 - 1e3 / 8e7); 0.09: alpha_mult 2: 1 - 4e5 / 5e5
    assert share == pytest.approx([0.9, 0.95, 0.2])


def test_points_without_a_control_are_nan_and_a_store_without_eps_inf_gives_none():
    partial = _target_rows(math.inf, {0.03: CONTROL[0.03]})  # only the middle target
    data = _data(_target_rows(0.1, PRIVATE) + partial)
    share = measured_private_share(data, _sub(data, SAMPLES_ALPHA), SAMPLES_ALPHA)
    assert len(share) == 3 and np.isnan(share[0]) and np.isnan(share[2])
    assert share[1] == pytest.approx(0.95)
    private_only = _data(_target_rows(0.1, PRIVATE))
    assert measured_private_share(private_only, _sub(private_only, SAMPLES_ALPHA),
                                  SAMPLES_ALPHA) is None
    # a control that did not run (status error) is no control either
    failed = _data(_target_rows(0.1, PRIVATE) + _target_rows(math.inf, CONTROL, status="error"))
    assert measured_private_share(failed, _sub(failed, SAMPLES_ALPHA), SAMPLES_ALPHA) is None


def test_censored_runs_count_as_never_reached():
    """n* NaN is a run that never reached its target (inf in the median): a private median
    that never reaches while its control does is all privacy (share 1); a control whose median
    never reaches the target is no control (NaN)."""
    rows = [{"eps": 0.1, "target_alpha": 0.09, "values": _seeds(1e6), "params": {"alpha_mult": 1}},
            {"eps": 0.1, "target_alpha": 0.03, "values": [1e7, 2e7, 3e7, math.nan, math.nan],
             "params": {"alpha_mult": 1}},  # median 3e7: two censored runs are its top two
            {"eps": 0.1, "target_alpha": 0.01, "values": [1e9, math.nan, math.nan, math.nan, 2e9],
             "params": {"alpha_mult": 1}},  # median censored
            {"eps": math.inf, "target_alpha": 0.09, "values": [math.nan, math.nan, math.nan, 1, 2],
             "params": {"alpha_mult": 1}},  # the control never reaches 0.09 in median
            {"eps": math.inf, "target_alpha": 0.03, "values": _seeds(3e6), "params": {"alpha_mult": 1}},
            {"eps": math.inf, "target_alpha": 0.01, "values": _seeds(CONTROL[0.01]),
             "params": {"alpha_mult": 1}}]
    data = _data(rows)
    share = measured_private_share(data, _sub(data, SAMPLES_ALPHA), SAMPLES_ALPHA)
    assert share[0] == 1.0  # 0.01: private median never reached, control 4e8
    assert share[1] == pytest.approx(1 - 3e6 / 3e7)
    assert np.isnan(share[2])  # 0.09: the control's median never reached


def test_samples_against_eps_and_d_use_the_control_at_the_cells_target():
    """x = eps: every eps shares the one eps = inf control at the cell's target (a control at
    another target is ignored); x = d: each d its own."""
    fit_eps = FitSpec("n_star_vs_eps", "sample_complexity", "eps", "n_star", (0.01, 0.3), "theory")
    priv = {0.01: 2e9, 0.03: 4e8, 0.1: 1e8, 0.3: 2e7}
    rows = [{"eps": e, "target_alpha": 0.03, "values": _seeds(m)} for e, m in priv.items()]
    rows += [{"eps": math.inf, "target_alpha": 0.03, "values": _seeds(1e7)},
             {"eps": math.inf, "target_alpha": 0.05, "values": _seeds(1.0)}]  # another target
    data = _data(rows)
    share = measured_private_share(data, _sub(data, fit_eps), fit_eps)
    assert share == pytest.approx([1 - 1e7 / m for m in priv.values()])

    fit_d = FitSpec("n_star_vs_d", "sample_complexity", "d", "n_star", (5, 40), "theory")
    priv_d = {5: 1e8, 10: 2e8, 20: 4e8, 40: 8e8}
    ctrl_d = {5: 1e7, 10: 1e7, 20: 1e8, 40: 6e8}
    rows = [{"eps": 0.03, "d": d, "target_alpha": 0.03, "values": _seeds(m)} for d, m in priv_d.items()]
    rows += [{"eps": math.inf, "d": d, "target_alpha": 0.03, "values": _seeds(m)}
             for d, m in ctrl_d.items()]
    data = _data(rows)
    share = measured_private_share(data, _sub(data, fit_d), fit_d)
    assert share == pytest.approx([0.9, 0.95, 0.75, 0.25])


def test_a_per_target_instance_is_matched_to_its_own_control():
    """hard_ramp builds one instance per target (its alpha): the control of a target is the
    eps = inf run on that target's instance."""
    fit = FitSpec("ramp", "sample_complexity", "alpha", "n_star", (0.01, 0.09), "theory")
    rows = [{"problem": "hard_ramp", "problem_params": {"alpha": t}, "eps": e, "target_alpha": t,
             "values": _seeds(m[t]), "params": {}}
            for e, m in ((0.1, PRIVATE), (math.inf, CONTROL)) for t in TARGETS]
    data = _data(rows)
    share = measured_private_share(data, _sub(data, fit), fit)
    assert share == pytest.approx([0.6, 0.95, 0.99])


def test_fixed_budget_cells_read_the_controls_curve_at_the_same_threshold_and_n():
    fit = FitSpec("curves", "sample_complexity", "alpha", "n_star", (0.02, 0.1), "theory")
    thresholds = [0.1, 0.05, 0.02, 0.01]
    private = [1e5, 1e6, 1e7, None]  # samples to each threshold (None: never)
    control = [1e3, 1e5, 5e6, 9e6]
    control_other_n = [1.0, 1.0, 1.0, 1.0]  # a control at another budget: ignored
    rows = [{"eps": 0.1, "n": 10**8, "values": [0.0] * REPS},
            {"eps": math.inf, "n": 10**8, "values": [0.0] * REPS},
            {"eps": math.inf, "n": 10**7, "values": [0.0] * REPS}]
    cells = _cells(rows)
    curves = {}
    for k, eps, n in zip(cells["key"], cells["eps"], cells["n"], strict=True):
        s = private if math.isfinite(eps) else control if n == 10**8 else control_other_n
        curves[k] = {"threshold": thresholds, "samples": s}
    data = StoreData(spec=None, cells=cells, path="",
                     load_curves=lambda kind, keys: {k: curves[k] for k in keys})
    share = measured_private_share(data, _sub(data, fit), fit)
    assert share == pytest.approx([0.5, 0.9, 0.99])  # x = 0.02, 0.05, 0.1


def test_error_view_share_and_floor_check_match_controls_at_the_same_n_and_knobs():
    """Error view, x = privacy: the control of (n, knob setting) is the eps = inf median at that
    n with the same knobs; a control at alpha_mult = 2 is ignored; the floor check (3x) reads the
    same pairs."""
    fit = FitSpec("err", "error", "privacy", "alpha_best", (1e-9, 1.0), "theory")
    ns = (10**6, 10**7, 10**8)
    priv = {10**6: 0.04, 10**7: 0.02, 10**8: 0.01}
    ctrl = {10**6: 0.002, 10**7: 0.004, 10**8: 0.005}
    rows = [{"eps": 0.1, "n": n, "values": _seeds(priv[n]), "column": "alpha_best",
             "params": {"alpha_mult": 1}} for n in ns]
    rows += [{"eps": math.inf, "n": n, "values": _seeds(ctrl[n]), "column": "alpha_best",
              "params": {"alpha_mult": 1}} for n in ns]
    rows += [{"eps": math.inf, "n": n, "values": _seeds(priv[n]), "column": "alpha_best",
              "params": {"alpha_mult": 2}} for n in ns]  # another knob: would read share 0
    data = _data(rows)
    sub = _sub(data, fit)
    share = measured_private_share(data, sub, fit)
    # increasing x = sqrt(d)/(n eps): n = 1e8, 1e7, 1e6
    assert share == pytest.approx([0.5, 0.8, 0.95])
    # n = 1e8: 0.01 is within 3x of its control 0.005 (the floor), the others are not
    assert floor_check(data, sub, fit) == (True, 0, 3)
    without_1e8 = _data([r for r in rows if not (math.isinf(r["eps"]) and r["n"] == 10**8
                                                 and r["params"] == {"alpha_mult": 1})])
    share = measured_private_share(without_1e8, _sub(without_1e8, fit), fit)
    assert np.isnan(share[0]) and share[1:] == pytest.approx([0.8, 0.95])
    assert floor_check(without_1e8, _sub(without_1e8, fit), fit) == (False, 1, 3)


def test_a_non_private_fit_has_no_share_and_the_floor_check_is_error_view_only():
    fit = FitSpec("stat", "error", "n", "alpha_best", (1e5, 1e9), "theory", {"eps": "inf"})
    rows = [{"eps": math.inf, "n": n, "values": _seeds(1 / n), "column": "alpha_best"}
            for n in (10**6, 10**7)]
    data = _data(rows)
    assert measured_private_share(data, _sub(data, fit), fit) is None
    both = _data(_target_rows(0.1, PRIVATE) + _target_rows(math.inf, PRIVATE))  # share 0
    assert floor_check(both, _sub(both, SAMPLES_ALPHA), SAMPLES_ALPHA) == (False, 0, 0)
    assert measured_private_share(both, _sub(both, SAMPLES_ALPHA), SAMPLES_ALPHA) == \
        pytest.approx([0.0, 0.0, 0.0])


def test_controls_lent_by_another_store_count_and_a_knob_at_its_default_matches():
    """`controls_from`: eps = inf cells lent by another store (run there at alpha_mult = 1, here
    with no knob grid: params {}) are this store's controls; lent cells at another knob value
    (alpha_mult 2, planted ten times faster) are not."""
    lent = _cells(_target_rows(math.inf, CONTROL)
                  + _target_rows(math.inf, {t: CONTROL[t] / 10 for t in TARGETS},
                                 {"alpha_mult": 2})).assign(control_store="lender")
    cells = _cells(_target_rows(0.1, PRIVATE, {}))
    data = StoreData(spec=None, cells=cells, path="", load_curves=lambda kind, keys: {},
                     controls=lent)
    share = measured_private_share(data, _sub(data, SAMPLES_ALPHA), SAMPLES_ALPHA)
    assert share == pytest.approx([0.6, 0.95, 0.99])
    # without the loan the same store has no control
    alone = StoreData(spec=None, cells=cells, path="", load_curves=lambda kind, keys: {})
    assert measured_private_share(alone, _sub(alone, SAMPLES_ALPHA), SAMPLES_ALPHA) is None


_LENDER = """name = "lender"
seed = 3
repetitions = 2
calibration = "{cal}"
stop_at_target = true
data = "counts"
[grid]
target_alpha = [0.3, 0.2]
budget = 100000000
d = [5]
eps = [inf]
delta = [1e-6]
[[problem]]
name = "strict_saddle"
[[algorithm]]
name = "gaussian_spider"
grid = {{ alpha_mult = [1, 2] }}
"""


def test_a_store_lends_its_controls_only_where_its_cells_are_this_specs_runs(tmp_path):
    """Two real stores: the borrower (eps 1, no knob grid) gets the lender's eps = inf cells,
    each marked with its store; a lender at another calibration lends nothing and says why, and
    so does a missing one."""
    from bench.config import parse_spec
    from bench.runner import run_sweep
    from bench.store import open_store_data

    borrower_text = (_LENDER.format(cal="theory").replace('name = "lender"', 'name = "borrower"')
                     .replace("eps = [inf]", "eps = [1.0]")
                     .replace("grid = { alpha_mult = [1, 2] }\n", "")
                     .replace('data = "counts"', 'data = "counts"\ncontrols_from = ["lender"]'))
    run_sweep(parse_spec(_LENDER.format(cal="theory")), tmp_path / "lender.sqlite", jobs=1)
    run_sweep(parse_spec(borrower_text), tmp_path / "borrower.sqlite", jobs=1)
    data = open_store_data(tmp_path / "borrower.sqlite")
    assert data.controls_refused == ()
    assert len(data.controls) == 8 and set(data.controls["control_store"]) == {"lender"}
    assert not np.isfinite(data.controls["eps"].to_numpy(float)).any()
    fit = FitSpec("f", "sample_complexity", "alpha", "n_star", (0.2, 0.3), "theory")
    share = measured_private_share(data, fit_points_table(data, fit, "theory"), fit)
    assert share is not None and np.isfinite(share).all()
    # another calibration: the lender's cells are not this spec's runs
    (tmp_path / "lender.sqlite").unlink()
    run_sweep(parse_spec(_LENDER.format(cal="tight")), tmp_path / "lender.sqlite", jobs=1)
    refused = open_store_data(tmp_path / "borrower.sqlite")
    assert refused.controls is None
    assert refused.controls_refused == ("controls_from 'lender': its calibration differs from "
                                        "this spec's, so its cells are not this spec's controls",)
    (tmp_path / "lender.sqlite").unlink()
    gone = open_store_data(tmp_path / "borrower.sqlite")
    assert gone.controls is None and "no store" in gone.controls_refused[0]


def test_controls_from_is_validated_before_any_work():
    from bench.config import SpecError, parse_spec

    text = _LENDER.format(cal="theory")
    for bad in ('["lender"]', '"headline2"', '[1]', '["a b"]'):
        with pytest.raises(SpecError, match="controls_from"):
            parse_spec(text.replace('data = "counts"', f'data = "counts"\ncontrols_from = {bad}'))
