"""Undo a test's plugin loads: later tests (in the same xdist worker) count the registries, load
the same guide plugins themselves, or store the process's loaded plugins with every cell."""

from __future__ import annotations

from pathlib import Path


def unload_plugins_under(path: str | Path) -> None:
    """Unregister every plugin file loaded from `path` (a file or a directory) and the
    algorithms and problems it registered."""
    import algorithms
    import problems
    from bench import plugins as registry

    for entry in [e for e in registry.loaded() if e.startswith(str(path))]:
        info = registry._LOADED.pop(entry)
        for name in info.algorithms:
            algorithms._REGISTRY.pop(name, None)
        for name in info.problems:
            problems._REGISTRY.pop(name, None)
