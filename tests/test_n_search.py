"""Samples to a target for algorithms that run on n records, by a search over n inside one
target cell (issue 57, item 1; `bench.n_search`): the search against planted reach functions
(where the true n* is known), a sweep that puts DP-SGD, DP-GD and a Spider in one spec checked
against direct runs at the bracket's ends, and `compare` reading it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.config import SpecError, parse_spec
from bench.n_search import RATIO, search_n_star, start_size


def _planted(n_true: int, calls: list[int]):
    def reaches(n: int):
        calls.append(n)
        return n >= n_true, 1.0 / n, 10 * n
    return reaches


@pytest.mark.parametrize("n_true", [1, 64, 65, 1000, 12345, 99999, 100000])
def test_a_monotone_threshold_is_bracketed_to_the_declared_ratio(n_true):
    calls: list[int] = []
    res = search_n_star(_planted(n_true, calls), 100000)
    assert res.n_star is not None and res.n_star >= n_true
    if res.lo is None:  # the first n reached
        assert res.n_star == calls[0] == start_size(100000)
    else:
        assert res.lo < n_true <= res.n_star
        assert res.n_star / res.lo <= RATIO or res.n_star - res.lo == 1
    # every run is recorded in order; the doubling never passes the cap
    assert [r["n"] for r in res.runs] == calls and max(calls) <= 100000
    assert res.to_json()["total_grad_evals"] == 10 * sum(calls)
    # the cost: doublings from the start plus ~log2(log2(2) / log2(RATIO)) = 2 bisections
    assert len(calls) <= math.ceil(math.log2(100000 / start_size(100000))) + 1 + 3


def test_beyond_the_cap_is_censored_after_a_run_at_the_cap_itself():
    calls: list[int] = []
    res = search_n_star(_planted(10**6, calls), 100000)
    assert res.censored and res.n_star is None and calls[-1] == 100000
    assert res.to_json()["censored"] is True


def test_a_non_monotone_seed_gives_a_reaching_n_with_a_failing_n_below():
    """Reaching at n in [500, 600) and from 2000 on: the path finds one of them, bracketed."""
    def reaches(n):
        ok = 500 <= n < 600 or n >= 2000
        return ok, 0.0, None
    res = search_n_star(reaches, 100000, n0=100)
    hit = {r["n"]: r["reached"] for r in res.runs}
    assert hit[res.n_star] and (res.lo is None or not hit[res.lo])
    assert res.lo is None or res.n_star / res.lo <= RATIO or res.n_star - res.lo == 1


def test_bad_arguments_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"n_max=0 is invalid"):
        search_n_star(lambda n: (True, 0.0, None), 0)
    with pytest.raises(ValueError, match=r"ratio=1 is invalid"):
        search_n_star(lambda n: (True, 0.0, None), 10, ratio=1)


SPEC = """
name = "one_axis"
seed = 3
repetitions = 2
stop_at_target = true
target_metric = "alpha_sosp"
search_cap = 30000
[grid]
target_alpha = [0.1]
budget = 40000
d = [10]
eps = [1.0]
delta = [1e-6]
[[problem]]
name = "hard_valley"
[[algorithm]]
name = "dp_sgd"
[[algorithm]]
name = "adaptive_tree_spider"
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from bench.runner import run_sweep
    from bench.store import load

    spec = parse_spec(SPEC)
    path = tmp_path_factory.mktemp("n_search") / "one_axis.sqlite"
    run_sweep(spec, path, jobs=1, progress=False)
    return spec, load(str(path)), path


def test_one_spec_holds_a_searched_n_star_checked_against_direct_runs(swept):
    """The stored n* of each DP-SGD cell reaches the target when run directly at n* and its
    bracket's lower end does not (`bench.single_run.run_cell` at those n, the cell's seeds);
    the runs of one search read one data stream's prefixes (the first records agree)."""
    from bench.single_run import run_cell

    spec, df, _ = swept
    sgd = df[df["algorithm"] == "dp_sgd"]
    assert len(sgd) == 2 and (sgd["status"] == "ok").all()
    assert all(row["n_max"] == 30000 for row in sgd["n_search"])  # the spec's search_cap
    cells = {c.key: c for c in spec.cells()}
    for _, row in sgd.iterrows():
        info = row["n_search"]
        assert row["samples_to_target"] == info["n_star"] and row["target_metric"] == "alpha_sosp"
        assert row["grad_evals"] == next(r["grad_evals"] for r in info["runs"]
                                         if r["n"] == info["n_star"])
        cell = cells[row["key"]]
        params = {k: v for k, v in cell.run_params().items() if k != "target_alpha"}
        digests = set()
        for n, want in ((info["n_star"], True), (info["lo"], False)):
            res = run_cell("dp_sgd", "hard_valley", int(n), 10, 1.0, params=params,
                           data_seed=cell.data_seed(),
                           rng=np.random.default_rng(cell.algorithm_seed()), data=cell.data,
                           metric="alpha_sosp")
            assert (res["metrics"]["alpha_best"] <= 0.1) is want
            digests.add(res["data_digest"])
        assert len(digests) == 1  # prefix-consistent: the same first records at both n
    # the Spider's cells are ordinary one-pass target cells in the same store
    spider = df[df["algorithm"] == "adaptive_tree_spider"]
    assert len(spider) == 2 and spider["n_search"].isna().all()


def test_compare_puts_both_on_one_axis_with_passes(swept):
    from analysis.comparisons.compare import compare_table
    from analysis.comparisons.compare_export import display

    _, df, _ = swept
    table, _notes = compare_table(df[df["status"] == "ok"], 0.1)
    views = dict(zip(table["algorithm"], table["view"], strict=True))
    assert views == {"dp_sgd": "n search", "adaptive_tree_spider": "one pass"}
    sgd = table[table["algorithm"] == "dp_sgd"].iloc[0]
    n_star = df.loc[df["algorithm"] == "dp_sgd", "samples_to_target"].to_numpy(float)
    assert sgd["samples"] == pytest.approx(np.median(n_star))
    evals = df.loc[df["algorithm"] == "dp_sgd", "grad_evals"].to_numpy(float)
    assert sgd["passes"] == pytest.approx(np.median(evals / n_star))
    shown = display(table)
    assert "n records (searched)" in set(shown["view"])
    assert shown.loc[shown["algorithm"] == "dp_sgd", "grad. evals"].iloc[0] != "-"


@pytest.mark.parametrize("edit,message", [
    ('target_metric = "alpha_sosp"', 'target_metric = "loss"', ),
    ('target_metric = "alpha_sosp"', 'target_metric = "excess_risk"'),
])
def test_target_metric_is_validated_before_any_work(edit, message):
    text = SPEC.replace(edit, message)
    want = "is invalid" if "loss" in message else "stop_at_target"
    with pytest.raises(SpecError, match=want):
        parse_spec(text)
    budget = SPEC.replace("target_alpha = [0.1]\nbudget = 40000", "n = [1000]").replace(
        "stop_at_target = true\n", "")
    with pytest.raises(SpecError, match=r"target_metric is only allowed with grid\.target_alpha"):
        parse_spec(budget)


def test_a_cell_without_target_metric_keeps_its_key():
    """Stores written before target_metric keep their keys (the field joins the key only when
    set)."""
    from bench.cells import Cell

    kw = dict(problem="hard_valley", problem_params={}, algorithm="dp_sgd", params={},
              n=1000, d=10, eps=1.0, delta=1e-6, rep=0, target_alpha=0.1)
    plain, metric = Cell.make(**kw), Cell.make(**kw, metric="alpha_sosp")
    assert "metric" not in plain.content() and plain.key != metric.key
    assert Cell.from_dict(metric.to_dict()) == metric


def test_the_guides_spec_parses_and_searches_only_the_multi_pass_algorithm():
    """bench/README.md's "One spec, one axis" example: its DP-SGD target cells search n, the
    Spider's count samples."""
    import re
    from pathlib import Path

    from bench.n_search import searches_n

    text = (Path(__file__).resolve().parents[1] / "bench" / "README.md").read_text()
    block = next(b for b in re.findall(r"```toml\n(.*?)```", text, flags=re.S)
                 if 'name = "one_axis"' in b)
    spec = parse_spec(block)
    kinds = {(c.algorithm, searches_n(c)) for c in spec.cells()}
    assert kinds == {("dp_sgd", True), ("adaptive_tree_spider", False)}
    assert {c.metric for c in spec.cells()} == {"alpha_sosp"}


@pytest.mark.parametrize("value,message", [
    ("0", "must be an integer >= 1"), ("2.5", "must be an integer >= 1"),
    ("50000", "must be at most grid.budget = 40000")])
def test_search_cap_is_validated(value, message):
    with pytest.raises(SpecError, match=message):
        parse_spec(SPEC.replace("search_cap = 30000", f"search_cap = {value}"))


OUTPUT_SPEC = SPEC.replace('name = "one_axis"', 'name = "own_output"').replace(
    "search_cap = 30000", 'search_cap = 30000\nreach = "output"').replace(
    '[[algorithm]]\nname = "adaptive_tree_spider"\n', "")


def test_reach_is_validated_before_any_work():
    """reach = "output" needs a search over n and an algorithm that states its output rule: a
    Spider (its papers' output rules are not implemented) and a spec without target_metric are
    refused in one line naming the parameter."""
    with pytest.raises(SpecError, match=r"reach='output' is invalid for algorithm "
                                        r"'adaptive_tree_spider'"):
        parse_spec(SPEC.replace("search_cap = 30000", 'search_cap = 30000\nreach = "output"'))
    with pytest.raises(SpecError, match=r"reach='last' is invalid: must be one of best, output"):
        parse_spec(OUTPUT_SPEC.replace('reach = "output"', 'reach = "last"'))
    with pytest.raises(SpecError, match=r"reach is only allowed with target_metric"):
        parse_spec(OUTPUT_SPEC.replace('target_metric = "alpha_sosp"\n', "").replace(
            "search_cap = 30000\n", ""))
    assert {c.reach for c in parse_spec(OUTPUT_SPEC).cells()} == {"output"}
    # reach = "best" is the default: the cells (and their keys) of a spec that does not say it
    best = parse_spec(OUTPUT_SPEC.replace('reach = "output"', 'reach = "best"'))
    plain = parse_spec(OUTPUT_SPEC.replace('reach = "output"\n', ""))
    assert [c.key for c in best.cells()] == [c.key for c in plain.cells()]
    assert all(c.reach is None for c in best.cells())


def test_a_search_at_the_own_output_reads_the_last_iterate(tmp_path):
    """reach = "output": the stored n* of each DP-SGD cell has its last iterate at the target
    when run directly at n*, and the bracket's lower end does not (`run_cell` at those n with
    the cell's seeds); the cell says which reading it used."""
    from bench.runner import run_sweep
    from bench.single_run import run_cell
    from bench.store import load

    spec = parse_spec(OUTPUT_SPEC)
    path = tmp_path / "own_output.sqlite"
    run_sweep(spec, path, jobs=1, progress=False)
    df = load(str(path))
    assert (df["status"] == "ok").all() and set(df["target_reach"]) == {"output"}
    cells = {c.key: c for c in spec.cells()}
    for _, row in df.iterrows():
        info = row["n_search"]
        cell = cells[row["key"]]
        params = {k: v for k, v in cell.run_params().items() if k != "target_alpha"}
        for n, want in ((info["n_star"], True), (info["lo"], False)):
            if n is None:
                continue
            res = run_cell("dp_sgd", "hard_valley", int(n), 10, 1.0, params=params,
                           data_seed=cell.data_seed(),
                           rng=np.random.default_rng(cell.algorithm_seed()), data=cell.data,
                           metric="alpha_sosp")
            assert (res["metrics"]["alpha_last"] <= 0.1) is want, (n, res["metrics"]["alpha_last"])
