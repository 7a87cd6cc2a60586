"""The house (issue 31): no circle of imports among the package's modules, data one way
(bench -> analysis -> algorithms -> problems), no room far over ~400 lines; functions a reader
holds in mind (issue 75, item 3): none over 100 lines, and no module reaching for another's
private names."""

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


#: Functions over FUNCTION_MAX lines allowed (issue 75, item 3: none left), each held at its length
#: so none grows while it is split; a new one over the limit fails.
FUNCTION_MAX = 100
LONG_FUNCTIONS: dict[tuple[str, str], int] = {}


def test_no_function_over_100_lines_but_the_listed_ones_and_none_grows():
    """Functions a reader holds in mind: none over FUNCTION_MAX lines (decorators and docstring
    included) but LONG_FUNCTIONS, each at most its listed length."""
    long = {}
    for p in _modules().values():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_MAX:
                    long[(str(p.relative_to(ROOT)), node.name)] = n
    assert set(long) <= set(LONG_FUNCTIONS), sorted(set(long) - set(LONG_FUNCTIONS))
    grown = {k: (v, LONG_FUNCTIONS[k]) for k, v in long.items() if v > LONG_FUNCTIONS[k]}
    assert grown == {}


#: The product modules' imports of another product module's private name (`from X import _name`,
#: or `X._name` on an imported module X), each with its reason; a new one fails (issue 75, item
#: 3). Keys: (importing file, "module._name").
PRIVATE_IMPORTS: dict[tuple[str, str], str] = {}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_imports(path: Path, me: str, mods: dict[str, Path]) -> set[str]:
    """"module._name" for each private name of another module of ours that `path` (module `me`)
    imports (`from module import _name`, relative or absolute, at top level or in a function)
    or reads off a module it imported (`module._name`, `alias._name`)."""
    tree = ast.parse(path.read_text())
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found, alias = set(), {}  # alias: a name bound to a module of ours -> that module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for a in node.names:
                if f"{base}.{a.name}" in mods:
                    alias[a.asname or a.name] = f"{base}.{a.name}"
                elif base in mods and base != me and _is_private(a.name):
                    found.add(f"{base}.{a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in mods:
                    alias[a.asname] = a.name
                elif not a.asname:  # `import a.b.c` binds a; a.b.c._name is read off it
                    alias.setdefault(a.name.split(".")[0], a.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            chain, v = [], node.value
            while isinstance(v, ast.Attribute):
                chain.append(v.attr)
                v = v.value
            if isinstance(v, ast.Name) and v.id in alias:
                module = ".".join([alias[v.id], *reversed(chain)])
                if module in mods and module != me:
                    found.add(f"{module}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_names_but_the_listed_ones():
    """Zero imports of another module's private names, or a named exception with its reason
    (PRIVATE_IMPORTS). The pytest benchmarks under bench/benchmarks are tests, which may reach
    into a module (as tests/ does), and are not scanned."""
    mods = _modules()
    found = {(str(p.relative_to(ROOT)), name) for m, p in mods.items()
             if "benchmarks" not in p.relative_to(ROOT).parts
             for name in _private_imports(p, m, mods)}
    assert all(reason.strip() for reason in PRIVATE_IMPORTS.values())
    assert sorted(found - set(PRIVATE_IMPORTS)) == [], "new imports of a private name"
    assert sorted(set(PRIVATE_IMPORTS) - found) == [], "listed but gone: remove from PRIVATE_IMPORTS"
