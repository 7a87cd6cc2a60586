"""The practitioners' atlas (analysis.comparisons.practitioners, `dprates practitioners`): planted
cells where DP-SGD (an n search) needs 100x fewer samples than the Gaussian Spider at 50 passes,
so the table must name DP-SGD with margin 100, its compute 50 x n*, the Spider / DP-SGD ratios
100x samples and 2.8x gradient evaluations, mark an n* found at the search's first n as an
upper bound, and survive the CSV round trip into the README block."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.comparisons.atlas import WINNER, atlas_table
from analysis.comparisons.practitioners import (
    practitioners_table,
    recommendation,
    summary_rows,
)
from bench.cli import main
from tests.synthetic_cells import targeted, write_store

SPREAD = [0.9, 0.95, 1.0, 1.05, 1.1]


def _search(n_star: float, first: bool = False) -> dict:
    return {"censored": False, "lo": None if first else n_star / 2 ** 0.25, "n_max": 2e6,
            "n_star": n_star, "ratio": 2 ** 0.25,
            "runs": [{"n": n_star, "reached": True, "value": 0.04, "grad_evals": 0, "wall": 0.1}]}


def planted(first_n: bool = False) -> list[dict]:
    """Target 0.05: DP-SGD n* = 1e4 f (records, searched, 50 passes), the Gaussian Spider 1e6 f
    (1.4 gradient evaluations a sample), DP-GD 2e4 f (400 passes); same base seed."""
    rows = []
    sgd = [1e4 * f for f in SPREAD]
    for r, row in enumerate(targeted("dp_sgd", sgd, 0.05, data="records")):
        # the store reads DP-SGD's public q n T: batch b = n / 2, 100 steps = 50 passes
        row.update(grad_evals=50 * sgd[r], n_search=_search(sgd[r], first_n), n=sgd[r],
                   params_used={"sampling": "poisson", "b": sgd[r] / 2}, n_steps=100)
        rows.append(row)
    gd = [2e4 * f for f in SPREAD]
    for r, row in enumerate(targeted("dp_gd", gd, 0.05, data="records")):
        row.update(grad_evals=400 * gd[r], n_search=_search(gd[r]), n=gd[r])
        rows.append(row)
    sp = [1e6 * f for f in SPREAD]
    for r, row in enumerate(targeted("gaussian_spider", sp, 0.05, data="records")):
        row.update(grad_evals=1.4 * sp[r])
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    cells = pd.DataFrame(planted())
    return practitioners_table(atlas_table(cells, n_boot=400), cells, n_boot=400)


def test_the_table_names_the_winner_with_its_margin_and_compute(table):
    sgd = table[table["algorithm"] == "dp_sgd"].iloc[0]
    assert sgd["reading"] == WINNER and sgd["winner"] == "dp_sgd"
    assert sgd["value"] == pytest.approx(1e4)
    assert sgd["grad_evals"] == pytest.approx(5e5) and sgd["passes"] == pytest.approx(50)
    gd = table[table["algorithm"] == "dp_gd"].iloc[0]
    assert gd["ratio"] == pytest.approx(2.0)  # the runner-up over the winner, paired
    assert (gd["ratio_low"], gd["ratio_high"]) == (pytest.approx(2.0), pytest.approx(2.0))
    spider = table[table["algorithm"] == "gaussian_spider"].iloc[0]
    assert spider["ratio"] == pytest.approx(100.0) and spider["passes"] == pytest.approx(1.4)


def test_the_best_spiders_ratio_to_each_multi_pass_method(table):
    sgd = table[table["algorithm"] == "dp_sgd"].iloc[0]
    assert sgd["best_spider"] == "gaussian_spider"
    # 1e6 f / 1e4 f on every seed (paired: same base seed and data mode): exactly 100
    assert (sgd["vs_spider"], sgd["vs_spider_low"], sgd["vs_spider_high"]) == \
        (pytest.approx(100.0), pytest.approx(100.0), pytest.approx(100.0))
    gd = table[table["algorithm"] == "dp_gd"].iloc[0]
    assert gd["vs_spider"] == pytest.approx(50.0)


def test_summary_row_and_recommendation_are_read_from_the_rows(table):
    (row,) = summary_rows(table)
    assert row[:5] == ["alpha_sosp", "`hard_valley`", "10", "0.5", "0.05"]
    assert row[5] == "dp_sgd, 2x [2, 2] fewer than dp_gd"
    assert row[6] == "1e+04 (50 passes); gaussian_spider 100x [100, 100]"
    assert row[7] == "0.357x"  # 5e5 / 1.4e6 gradient evaluations
    assert row[8] == "2e+04 (400 passes); gaussian_spider 50x [50, 50]"
    assert row[9] == "5.71x"  # 8e6 / 1.4e6
    line = recommendation(table)
    assert line.startswith("dp_sgd needs fewer samples than the best Spider at 1 of 1 points "
                           "(interval above 1; the Spider needs 100-100x more) (the answer does "
                           "not flip on this grid), at "
                           "0.357-0.357x the Spider's gradient evaluations; dp_gd")
    assert line.endswith("n* is the oracle's (the first n whose best iterate, judged by the exact "
                         "population metric, reaches the target), not samples to the algorithm's "
                         "own output.")


def test_a_spider_that_needs_fewer_samples_is_counted_as_such():
    cells = pd.DataFrame(planted())
    cells.loc[cells["algorithm"] == "gaussian_spider", "n_star"] /= 1000  # 1e3 f: the Spider wins
    cells.loc[cells["algorithm"] == "gaussian_spider", "samples_to_target"] /= 1000
    t = practitioners_table(atlas_table(cells, n_boot=200), cells, n_boot=200)
    line = recommendation(t)
    assert "dp_sgd needs fewer samples than the best Spider at 0 of 1 points" in line
    assert "more at 1 (10-10x)" in line


def test_an_n_star_found_at_the_first_n_is_an_upper_bound():
    cells = pd.DataFrame(planted(first_n=True))
    t = practitioners_table(atlas_table(cells, n_boot=200), cells)
    assert bool(t[t["algorithm"] == "dp_sgd"]["upper_bound"].iloc[0])
    assert summary_rows(t)[0][6].startswith("<= 1e+04 (50 passes)")


def test_the_command_csv_round_trip_and_the_readme_block(tmp_path, capsys):
    store = write_store(tmp_path / "p.sqlite", planted())
    csv = tmp_path / "p.csv"
    assert main(["practitioners", store, "-o", str(csv), "--boot", "200"]) == 0
    capsys.readouterr()
    assert main(["practitioners", str(csv)]) == 0
    printed = capsys.readouterr().out  # the export: one row per point and algorithm
    assert "| alpha_sosp | hard_valley | 10 | 0.5 | 0.05 | dp_sgd | 1e+04 [9e+03, 1.1e+04] | 50 | 5e+05 |" \
        in printed
    assert "alpha_sosp: dp_sgd needs fewer samples than the best Spider at 1 of 1 points" \
        in printed.replace("Recommendation (alpha_sosp): ", "alpha_sosp: ")
    from bench.cli.practitioners import BEGIN, END, practitioners_rows, readme_block

    readme = tmp_path / "README.md"
    readme.write_text(f"top\n{BEGIN}\nold\n{END}\nbottom\n")
    assert main(["practitioners", str(csv), "--update-readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("top\n") and text.endswith("bottom\n") and "old" not in text
    block = readme_block(practitioners_rows([str(csv)], 2000, None))
    assert block.strip() in text
    assert "| alpha_sosp | `hard_valley` | 10 | 0.5 | 0.05 | dp_sgd, 2x [2, 2] fewer than dp_gd" in text


def test_bad_input_gets_one_line(tmp_path, capsys):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    for argv, msg in ((["practitioners", str(tmp_path / "none.sqlite")], "no such file"),
                      (["practitioners", str(bad)], "not a practitioners CSV"),
                      (["practitioners", str(bad), "--maps", str(tmp_path)], "--maps is invalid"),
                      (["practitioners", str(bad), "--boot", "10"], "--boot=10 is invalid")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1, err


def test_the_readme_block_is_the_committed_csv():
    """README's practitioners block is what `dprates practitioners reports/practitioners.csv`
    makes (`make readme-claims` rewrites it; this fails when the two disagree)."""
    from pathlib import Path

    from bench.cli.practitioners import BEGIN, END, _maps_written, practitioners_rows, readme_block

    root = Path(__file__).resolve().parents[1]
    text = (root / "README.md").read_text(encoding="utf-8")
    block = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    table = practitioners_rows([str(root / "reports" / "practitioners.csv")], 2000, None)
    assert block == readme_block(table, _maps_written(None, str(root / "README.md"))).strip()
    assert set(table["metric"]) == {"alpha_sosp", "grad_norm"}
    assert {10.0, 100.0} <= set(table["d"]) and set(table["eps"]) == {0.1, 1.0}


def test_the_block_names_the_maps_only_where_they_were_written(tmp_path):
    """Issue 73: the block said "The maps: reports/atlas_practitioners/" with no map written."""
    from pathlib import Path

    from bench.cli.practitioners import MAPS_DIR, _maps_written, readme_block

    readme = tmp_path / "README.md"
    readme.write_text("x")
    assert _maps_written(None, str(readme)) is None
    (tmp_path / MAPS_DIR).mkdir(parents=True)
    assert _maps_written(None, str(readme)) is None  # a folder without maps
    (tmp_path / MAPS_DIR / "atlas_alpha_sosp_hard_valley.png").write_bytes(b"png")
    assert _maps_written(None, str(readme)) == MAPS_DIR
    assert _maps_written("elsewhere", None) is None  # --maps given, no map drawn there
    assert _maps_written("elsewhere", None, [Path("elsewhere/atlas_x.png")]) == "elsewhere"
    cells = pd.DataFrame(planted())
    table = practitioners_table(atlas_table(cells, n_boot=200), cells, n_boot=200)
    assert "The maps" not in readme_block(table)
    assert readme_block(table, "out/maps").rstrip().endswith("The maps: out/maps/.")


def test_the_exports_a_design_doc_takes(capsys):
    """Issue 73, item 5: markdown, LaTeX (booktabs) and CSV, one row per design point and
    algorithm, one number per cell, the table first and its notes after."""
    from pathlib import Path

    from bench.cli.practitioners import practitioners_rows

    csv_path = str(Path(__file__).resolve().parents[1] / "reports" / "practitioners.csv")
    table = practitioners_rows([csv_path], 2000, None)
    assert main(["practitioners", csv_path]) == 0
    md = capsys.readouterr().out
    assert md.startswith("| metric | instance | d | eps | target | algorithm | samples n* [95% CI] |")
    rows = [r for r in md.splitlines() if r.startswith("| alpha_sosp") or r.startswith("| grad_norm")]
    assert len(rows) == len(table)
    assert md.index("|---") < md.index("the oracle's n*") < md.index("Recommendation (alpha_sosp)")
    assert main(["practitioners", csv_path, "--format", "latex"]) == 0
    tex = capsys.readouterr().out
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert tex.index("\\toprule") < tex.index("the oracle's n*")
    assert main(["practitioners", csv_path, "--format", "csv"]) == 0
    back = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert len(back) == len(table) and back["value"].dtype.kind == "f"
