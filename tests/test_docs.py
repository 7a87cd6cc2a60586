"""The repository stands alone: every relative link in its Markdown resolves inside it, and no
file points at material a user's clone does not have."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
OUTSIDE = ("../shared", "DESIGN.md", "PITFALLS.md")


def _tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return [ROOT / p for p in out]


def test_every_relative_markdown_link_resolves_inside_the_repository():
    docs = _tracked("*.md")
    assert ROOT / "README.md" in docs
    checked = 0
    for doc in docs:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"^[a-z]+://|^mailto:|^#", target):
                continue
            path = (doc.parent / target.split("#")[0]).resolve()
            assert path.is_relative_to(ROOT), f"{doc.name}: {target} leaves the repository"
            assert path.exists(), f"{doc.name}: {target} does not exist"
            checked += 1
    assert checked >= 3  # README links the reference report, its CSV and a figure


def test_no_file_points_outside_the_repository():
    for path in _tracked("*.py", "*.md", "*.toml", "Makefile", ".ci/*"):
        if path == Path(__file__).resolve():
            continue
        text = path.read_text()
        for needle in OUTSIDE:
            assert needle not in text, f"{path.relative_to(ROOT)} mentions {needle}"


def test_data_flows_one_way_from_bench_to_analysis():
    """No module of `analysis` (nor of `algorithms` or `problems`) imports `bench`: bench reads
    stores and specs and hands DataFrames and declarations down (`analysis.declarations`)."""
    import ast

    offenders = []
    for package in ("analysis", "algorithms", "problems"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names
                              if n == "bench" or n.startswith("bench.")]
    assert not offenders, offenders
