"""Outside algorithms and problems: plugins.

A plugin is a Python module that registers classes with `algorithms.register` /
`problems.register` (both work as class decorators) when it is imported. Three ways in:
* a spec's top-level `plugins = ["my_algorithms.py", "mypackage.plugin"]` (a path, relative
  to the spec's directory, or an importable module name);
* `--plugin PATH_OR_MODULE` (repeatable) on every command that resolves names;
* the entry-point group `dprates.plugins` of installed packages (loaded by every command).
Sweep workers (loky or Dask) import the same plugins before they run a cell, and each stored
cell records which plugins (module, version or file digest) were loaded. A plugin that fails
to import, registers a name that clashes with a built-in, or registers a class missing a
required method ends the command with one line naming the plugin and the problem (exit 2),
before anything runs.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ENTRY_POINT_GROUP = "dprates.plugins"


class PluginError(ValueError):
    """A plugin that cannot be used (the message names it and says why)."""


@dataclass
class PluginInfo:
    entry: str  # as given: a module name or an absolute path
    module: str
    version: str
    algorithms: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


_LOADED: dict[str, PluginInfo] = {}


def _is_path(entry: str) -> bool:
    return entry.endswith(".py") or "/" in entry or "\\" in entry


def resolve(entry: str, base: Path | None = None) -> str:
    """An absolute path for a path entry (relative to `base`, default the working directory);
    a module name unchanged."""
    if not isinstance(entry, str) or not entry.strip():
        raise PluginError(f"plugin {entry!r} is invalid: give a .py path or a module name")
    if not _is_path(entry):
        return entry
    p = Path(entry).expanduser()
    if not p.is_absolute():
        p = (base or Path.cwd()) / p
    return str(p.resolve())


def _version(module: object, path: Path | None) -> str:
    v = getattr(module, "__version__", None)
    if isinstance(v, str):
        return v
    if path is not None:
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    top = getattr(module, "__name__", "").split(".")[0]
    try:
        from importlib.metadata import packages_distributions, version

        dists = packages_distributions().get(top, [])
        return version(dists[0]) if dists else "unknown"
    except Exception:  # metadata is best effort: the module name still identifies it
        return "unknown"


def _where(exc: BaseException, path: Path | None) -> str:
    """" (at FILE:LINE)" of the innermost frame of `exc`'s traceback in the plugin's own file
    (a file plugin), else in any file outside dprates and the standard library's import machinery
    (a module plugin); "" when none is found. A SyntaxError names its own file and line."""
    import traceback

    if isinstance(exc, SyntaxError) and exc.filename:
        return f" (at {exc.filename}:{exc.lineno})"
    frames = traceback.extract_tb(exc.__traceback__)
    if path is not None:
        mine = [f for f in frames if Path(f.filename).resolve() == path.resolve()]
    else:
        here = Path(__file__).resolve().parent
        mine = [f for f in frames if "importlib" not in f.filename
                and Path(f.filename).resolve().parent != here]
    return f" (at {mine[-1].filename}:{mine[-1].lineno})" if mine else ""


def load_plugin(entry: str, base: Path | None = None) -> PluginInfo:
    """Import one plugin (once per process) and report what it registered."""
    import algorithms
    import problems

    key = resolve(entry, base)
    if key in _LOADED:
        return _LOADED[key]
    before_a, before_p = set(algorithms.available()), set(problems.available())
    path = Path(key) if _is_path(key) else None
    try:
        if path is not None:
            if not path.is_file():
                raise PluginError(f"plugin {entry!r}: no such file {key}")
            name = f"dprates_plugin_{path.stem}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(name, None)
                raise
        else:
            name = key
            module = importlib.import_module(key)
    except PluginError:
        raise
    except ValueError as exc:  # raised by register(): a clash or a missing method
        raise PluginError(f"plugin {entry!r}: {exc}") from None
    except Exception as exc:
        raise PluginError(f"plugin {entry!r} failed to import: {type(exc).__name__}: {exc}"
                          + _where(exc, path)) from None
    info = PluginInfo(entry=key, module=name, version=_version(module, path),
                      algorithms=sorted(set(algorithms.available()) - before_a),
                      problems=sorted(set(problems.available()) - before_p))
    if not info.algorithms and not info.problems:
        raise PluginError(f"plugin {entry!r} registered nothing: decorate its classes with "
                          "@algorithms.register / @problems.register")
    _LOADED[key] = info
    return info


def load_plugins(entries: list[str] | tuple[str, ...], base: Path | None = None) -> list[PluginInfo]:
    return [load_plugin(e, base) for e in entries]


def load_entry_points() -> list[PluginInfo]:
    """Plugins of installed packages (entry-point group `dprates.plugins`)."""
    from importlib.metadata import entry_points

    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        out.append(load_plugin(ep.value.split(":")[0]))
    return out


def loaded() -> list[str]:
    """Every plugin entry loaded in this process (what sweep workers must load too)."""
    return list(_LOADED)


def provenance() -> str:
    """JSON list of the loaded plugins (module, version, what they registered), or ""."""
    if not _LOADED:
        return ""
    return json.dumps([{"entry": i.entry, "module": i.module, "version": i.version,
                        "algorithms": i.algorithms, "problems": i.problems}
                       for i in _LOADED.values()], sort_keys=True)
