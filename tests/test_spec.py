"""Sweep specs: validation corpus (one clear line, exit code 2, nothing written), cell keys and
paired seeds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from bench.cells import Cell
from bench.cli import main
from bench.config import SpecError, parse_spec

VALID = """
name = "t"
seed = 7
repetitions = 2
[grid]
n = [1000, 2000]
d = [3]
eps = [0.5, inf]
[[problem]]
name = "strict_saddle"
[[algorithm]]
name = "gaussian_spider"
grid = { alpha_mult = [0.5, 1] }
[[algorithm]]
name = "adaptive_tree_spider"
[[fit]]
name = "f"
view = "error"
x = "privacy"
window = [0.001, 1]
"""


def _replace(old: str, new: str) -> str:
    assert old in VALID, old
    return VALID.replace(old, new)


# (spec text, a fragment the error line must contain)
BAD_SPECS = [
    (_replace('seed = 7', 'seed = 7\ncolour = "red"'), "colour is an unknown key"),
    (_replace('seed = 7', 'seed = -1'), "seed=-1"),
    (_replace('seed = 7', 'seed = "7"'), "seed='7'"),
    (_replace('repetitions = 2', 'repetitions = 0'), "repetitions=0"),
    (_replace('eps = [0.5, inf]', 'eps = [0.5, 0]'), "grid.eps contains 0"),
    (_replace('eps = [0.5, inf]', 'eps = [-1.0]'), "grid.eps contains -1.0"),
    (_replace('eps = [0.5, inf]', 'eps = []'), "grid.eps=[] is invalid: must not be empty"),
    (_replace('eps = [0.5, inf]', 'eps = 0.5'), "grid.eps=0.5 is invalid: must be a list"),
    (_replace('eps = [0.5, inf]', 'eps = ["big"]'), "grid.eps contains 'big'"),
    (_replace('d = [3]', 'd = [2.5]'), "grid.d=2.5"),
    (_replace('d = [3]', 'd = [0]'), "grid.d=0"),
    (_replace('n = [1000, 2000]', 'n = [1000, 1000]'), "must not repeat"),
    (_replace('n = [1000, 2000]', 'target_alpha = [0.1]'), "grid.budget is missing"),
    (_replace('n = [1000, 2000]', 'n = [1000]\ntarget_alpha = [0.1]'), "exactly one of n"),
    (_replace('d = [3]', 'd = [3]\ndelta = [1.5]'), "grid.delta contains 1.5"),
    (_replace('d = [3]', 'd = [3]\nsize = [1]'), "grid.size is an unknown key"),
    (_replace('name = "strict_saddle"', 'name = "saddle"'), "problem[0].name='saddle'"),
    (_replace('name = "strict_saddle"', 'name = "strict_saddle"\nparams = { omega = -1 }'),
     "problem[0] (strict_saddle, d=3)"),
    (_replace('name = "gaussian_spider"', 'name = "sgd"'), "algorithm[0].name='sgd'"),
    (_replace('grid = { alpha_mult = [0.5, 1] }', 'grid = { alpha_mul = [0.5, 1] }'),
     "algorithm[0] (gaussian_spider)"),
    (_replace('grid = { alpha_mult = [0.5, 1] }', 'grid = { alpha_mult = [] }'),
     "algorithm[0].grid.alpha_mult=[] is invalid"),
    (_replace('grid = { alpha_mult = [0.5, 1] }', 'grid = { alpha_mult = [0.5, -1] }'),
     "algorithm[0] (gaussian_spider)"),
    (_replace('view = "error"', 'view = "slope"'), "fit[0].view='slope'"),
    (_replace('x = "privacy"', 'x = "time"'), "fit[0].x='time'"),
    (_replace('window = [0.001, 1]', 'window = [1, 0.001]'), "fit[0].window=[1, 0.001]"),
    (_replace('[[fit]]', '[limits]\ntime = -5\n[[fit]]'), "limits.time=-5"),
    ('name = "t"\nseed = 1', "grid is missing"),
    (_replace('seed = 7', 'seed = 7\ndata = "rows"'), "data='rows' is invalid"),
    (_replace('seed = 7', 'seed = 7\ndata = "counts"').replace('"strict_saddle"', '"phase_retrieval"'),
     "data='counts' is invalid for problem 'phase_retrieval'"),
    ("name = [", "is not valid TOML"),
]


@pytest.mark.parametrize("text,fragment", BAD_SPECS)
def test_bad_spec_one_line_exit_2_nothing_written(tmp_path: Path, capsys, text: str, fragment: str):
    spec = tmp_path / "bad.toml"
    spec.write_text(text)
    out = tmp_path / "out.sqlite"
    rc = main(["sweep", str(spec), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("dprates: error: "), err
    assert fragment in err, err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_delta_may_be_a_rule_of_the_budget():
    """delta = "1/n^1.1" gives each cell 1 / budget^1.1 (its n, or grid.budget), next to fixed
    values; bad rules are one line at load."""
    spec = parse_spec(_replace("eps = [0.5, inf]", 'eps = [0.5, inf]\ndelta = [1e-6, "1/n^1.1"]'))
    got = {(c.n, c.delta) for c in spec.cells()}
    assert got == {(1000, 1e-6), (2000, 1e-6), (1000, 1000**-1.1), (2000, 2000**-1.1)}
    assert spec.grid["delta"] == [1e-6, "1/n^1.1"]
    target = parse_spec(_replace("n = [1000, 2000]", "target_alpha = [0.1]\nbudget = 100000")
                        .replace("eps = [0.5, inf]", 'eps = [0.5]\ndelta = ["1/n"]')
                        .split("[[fit]]")[0])
    assert {c.delta for c in target.cells()} == {1e-5}
    for bad in ('"1/n^-2"', '"n^2"', "2.0"):
        with pytest.raises(SpecError, match=r"grid\.delta contains"):
            parse_spec(_replace("eps = [0.5, inf]", f"eps = [0.5, inf]\ndelta = [{bad}]"))


def test_fits_are_checked_against_the_grid_before_any_run():
    """A where value the grid lacks, a window in the wrong units: one line each, at load."""
    with pytest.raises(SpecError, match=r"fit\[0\].where.eps=0.3 is invalid: not in the grid "
                                        r"\(eps: 0.5, inf\)"):
        parse_spec(_replace('window = [0.001, 1]', 'window = [0.001, 1]\nwhere = { eps = 0.3 }'))
    with pytest.raises(SpecError, match=r"where.target_alpha is invalid: the grid has no"):
        parse_spec(_replace('window = [0.001, 1]',
                            'window = [0.001, 1]\nwhere = { target_alpha = 0.1 }'))
    # x = privacy is sqrt(d)/(n eps): 0.0017-0.0035 here; a window written in n's units fails.
    with pytest.raises(SpecError, match=r"fit\[0\].window=\[1000, 2000\] is invalid: it holds 0 "
                                        r"of the design values of x = privacy"):
        parse_spec(_replace('window = [0.001, 1]', 'window = [1000, 2000]'))
    with pytest.raises(SpecError, match="holds 1 of the design values of x = n"):
        parse_spec(_replace('x = "privacy"\nwindow = [0.001, 1]', 'x = "n"\nwindow = [500, 1500]'))


BAD_COMMANDS = [
    (["sweep", "{spec}", "--jobs", "0"], "--jobs=0"),
    (["sweep", "{spec}", "--backend", "dask"], "--scheduler"),
    (["sweep", "{spec}", "--scheduler", "tcp://x:1"], "only used with --backend dask"),
    (["sweep", "{dir}/missing.toml"], "no such file"),
    (["status", "{dir}/missing.sqlite"], "no such file"),
    (["export", "{dir}/missing.sqlite", "--csv", "{dir}/x.csv"], "no such file"),
    (["run", "sgd", "--problem", "strict_saddle", "--n", "10", "--d", "2", "--eps", "1"], "sgd"),
    (["run", "gaussian_spider", "--problem", "strict_saddle", "--n", "0", "--d", "2", "--eps", "1"],
     "n=0"),
]


@pytest.mark.parametrize("argv,fragment", BAD_COMMANDS)
def test_bad_command_line(tmp_path: Path, capsys, argv: list[str], fragment: str):
    spec = tmp_path / "ok.toml"
    spec.write_text(VALID)
    argv = [a.format(spec=spec, dir=tmp_path) for a in argv]
    rc = main([*argv, "--quiet"] if argv[0] == "sweep" else argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and fragment in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.toml"]


def test_export_to_a_file_that_is_not_a_store(tmp_path: Path, capsys):
    bogus = tmp_path / "x.sqlite"
    bogus.write_bytes(b"")
    assert main(["status", str(bogus)]) == 2
    assert "not a dprates store" in capsys.readouterr().err


def test_cells_keys_and_pairing():
    spec = parse_spec(VALID)
    cells = spec.cells()
    # 3 knob settings x 2 n x 2 eps x 2 reps
    assert len(cells) == 3 * 2 * 2 * 2
    assert len({c.key for c in cells}) == len(cells)
    # Paired: the data seed depends on (base seed, problem, params, d, rep) only.
    by_rep: dict[int, set] = {}
    for c in cells:
        by_rep.setdefault(c.rep, set()).add(tuple(c.data_seed().entropy))
    assert all(len(v) == 1 for v in by_rep.values())
    assert by_rep[0] != by_rep[1]
    # Algorithm seeds differ between cells.
    assert len({tuple(c.algorithm_seed().entropy) for c in cells}) == len(cells)


def test_editing_a_spec_keeps_unchanged_cells():
    before = {c.key for c in parse_spec(VALID).cells()}
    after = {c.key for c in parse_spec(_replace("eps = [0.5, inf]", "eps = [0.5, inf, 2.0]")).cells()}
    assert before < after and len(after) == len(before) * 3 // 2
    # 1 and 1.0 are the same knob value; reordering a grid changes nothing.
    reordered = _replace("alpha_mult = [0.5, 1]", "alpha_mult = [1.0, 0.5]").replace(
        "n = [1000, 2000]", "n = [2000, 1000]")
    assert {c.key for c in parse_spec(reordered).cells()} == before
    # Another base seed is another sweep.
    assert not before & {c.key for c in parse_spec(_replace("seed = 7", "seed = 8")).cells()}


def test_data_mode_defaults_to_counts_where_supported():
    cells = parse_spec(VALID).cells()
    assert {c.data for c in cells} == {"counts"}
    records = parse_spec(_replace("seed = 7", 'seed = 7\ndata = "records"')).cells()
    assert {c.data for c in records} == {"records"}
    # The mode is part of what a cell is: same grid point, other mode, other key.
    assert not {c.key for c in cells} & {c.key for c in records}
    pr = parse_spec(_replace('"strict_saddle"', '"phase_retrieval"')).cells()
    assert {c.data for c in pr} == {"records"}


def test_per_target_problem_gets_one_instance_per_target():
    text = (_replace('"strict_saddle"', '"hard_ramp"')
            .replace("n = [1000, 2000]", "target_alpha = [0.05, 0.02]\nbudget = 100000"))
    text = text[:text.index("[[fit]]")]
    cells = parse_spec(text).cells()
    assert {(c.target_alpha, dict(c.problem_params)["alpha"]) for c in cells} == {(0.05, 0.05),
                                                                                   (0.02, 0.02)}
    fixed = text.replace('name = "hard_ramp"', 'name = "hard_ramp"\nparams = { alpha = 0.04 }')
    assert {dict(c.problem_params)["alpha"] for c in parse_spec(fixed).cells()} == {0.04}
    # A target the instance cannot be built for is refused before anything runs.
    with pytest.raises(SpecError, match=r"hard_ramp, d=3, target_alpha=0.3\): alpha=0.3"):
        parse_spec(text.replace("[0.05, 0.02]", "[0.3, 0.02]"))


def test_cell_round_trip_and_run_params():
    c = Cell.make(problem="hard_valley", problem_params={"w": 0.5}, algorithm="tree_spider",
                  params={"alpha_mult": 2}, n=10, d=3, eps=math.inf, delta=1e-6, rep=1,
                  target_alpha=0.1)
    assert Cell.from_dict(c.to_dict()) == c
    assert c.run_params() == {"alpha_mult": 2, "target_alpha": 0.1}
    seq = c.data_seed()
    assert np.array_equal(np.random.default_rng(seq).random(3),
                          np.random.default_rng(Cell.from_dict(c.to_dict()).data_seed()).random(3))


def test_shipped_specs_are_valid():
    from bench.config import load_spec

    for path in sorted(Path(__file__).resolve().parent.parent.joinpath("bench", "configs").glob("*.toml")):
        spec = load_spec(path)
        assert spec.cells(), path


def test_spec_error_is_value_error():
    with pytest.raises(SpecError):
        parse_spec("name = 'x'")
    assert issubclass(SpecError, ValueError)
