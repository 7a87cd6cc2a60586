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


def test_readme_folder_map_names_every_package_and_only_real_paths():
    """README "Development" maps the folders: every package folder has its line, and every
    `folder/` or `module.py` the map names exists (a move that forgets the map fails here)."""
    import re

    root = ROOT
    text = (root / "README.md").read_text()
    section = text[text.index("## Development"):]
    section = section[:section.index("`make test` runs")]
    lines = [ln for ln in section.splitlines() if ln.startswith("- `")]
    named = {ln.split("`")[1].rstrip("/") for ln in lines}
    packages = {str(p.parent.relative_to(root)) for top in ("algorithms", "analysis", "bench", "problems")
                for p in (root / top).rglob("__init__.py") if ".venv" not in p.parts}
    by_folder = {ln.split("`")[1].rstrip("/"): ln for ln in lines}
    # a sub-package may be described on its parent's line as `name/`
    missing = {p for p in packages - named
               if f"`{p.rsplit('/', 1)[1]}/`" not in by_folder.get(p.rsplit("/", 1)[0], "")}
    assert missing == set(), f"folders missing from the README map: {missing}"
    for ln in lines:
        folder = ln.split("`")[1].rstrip("/")
        assert (root / folder).is_dir(), folder
        for mod in re.findall(r"`([a-z_]+(?:\.py|/))`", ln.split(":", 1)[1]):
            here = root / folder / mod
            assert here.exists() or any(root.glob(f"*/**/{mod}")), f"{folder}: {mod} does not exist"


def test_every_module_path_the_docs_name_resolves():
    """`algorithms.x.y`-style names in README.md and its guides (bench/, analysis/,
    algorithms/, problems/, reports/README.md) resolve to a module or an attribute of one (a
    move or split that leaves the docs behind fails here)."""
    import importlib

    bad = []
    for doc in (ROOT / "README.md", *(ROOT / d / "README.md" for d in
                                      ("bench", "analysis", "algorithms", "problems", "reports"))):
        text = doc.read_text()
        for name in sorted(set(re.findall(
                r"`((?:algorithms|analysis|bench|problems)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)", text))):
            parts = name.split(".")
            for i in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:i]))
                except ImportError:
                    continue
                try:
                    for attr in parts[i:]:
                        obj = getattr(obj, attr)
                except AttributeError:
                    bad.append(f"{doc.relative_to(ROOT)}: {name}")
                break
            else:
                bad.append(f"{doc.relative_to(ROOT)}: {name}")
    assert not bad, bad
