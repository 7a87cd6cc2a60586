"""The house (issue 31): no circle of imports among the package's modules, data one way
(bench -> analysis -> algorithms -> problems), and no room far over ~400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("problems", "algorithms", "analysis", "bench")  # each may import only those before it


def _modules() -> dict[str, Path]:
    out = {}
    for top in PACKAGES:
        for p in (ROOT / top).rglob("*.py"):
            rel = p.relative_to(ROOT).with_suffix("")
            out[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = p
    return out


def _imports(path: Path, mods: dict[str, Path]) -> set[str]:
    """Every module of ours `path` imports, at top level or inside a function (lazy)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in mods}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {n for n in (node.module, *(f"{node.module}.{a.name}" for a in node.names))
                    if n in mods}
    return out


def test_no_circle_of_imports_and_packages_point_one_way():
    mods = _modules()
    graph = {m: _imports(p, mods) - {m} for m, p in mods.items()}
    for m, deps in graph.items():
        for d in deps:
            assert PACKAGES.index(d.split(".")[0]) <= PACKAGES.index(m.split(".")[0]), (m, d)
    # a module importing its own package's __init__ (or the other way) is not a circle of
    # modules; every other cycle is
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for d in graph[m]:
            if m.startswith(d + ".") or d.startswith(m + "."):
                continue
            if state.get(d) == 1:
                raise AssertionError("import circle: " + " -> ".join([*stack[stack.index(d):], d]))
            if d not in state:
                visit(d, [*stack, d])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [m])


def test_no_module_far_over_400_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in _modules().values()}
    assert {k: v for k, v in sizes.items() if v > 450} == {}
