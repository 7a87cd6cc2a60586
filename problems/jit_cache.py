"""Compiled once per machine: a plugin's numba functions and the code that calls them, cached
on disk across processes (issue 72, item 3).

A declared loss (`problems.compiled_loss`) or profile (`problems.jit_profile`) brings plain
`numba.njit` functions. Compiled per process, a sweep's every worker paid for them again in its
first cell (+2.8 s for a loss reading many record coordinates). Two things are cached here:

* the plugin's own functions: `enable_disk_cache` turns on numba's cache for a dispatcher
  before its first compile. numba keys that cache on the defining file's content (a sha256
  stamp), the function's name and line, and numba's version and the CPU; the module's name
  is added (`PluginFunctionCache`).
* the code that calls them (row loops, C wrappers for the compiled steps): `load_generated`
  writes it as a small module of its own, named by a digest of the template and of the user
  function's file content, name and line, into `cache_dir()`, and runs it with the user's
  function bound to the global `fn`; its functions use numba's `cache=True`. Their cache
  index then holds signatures of plain arrays and pointers only. The compiled_loss row loops
  once took the user's function as an argument instead, and a cached specialization keyed on
  a dispatcher type fails in a later process whose dispatcher is gone (numba: "underlying
  object has vanished"); a global callee is linked into the caller's code and is no part of
  its key, so that failure cannot happen here.

What is not seen: like numba's own cache, a change in a file the plugin's file imports its
compiled helpers from (not the file itself) does not invalidate the entries; edit the plugin's
file (or clear `cache_dir()`) after such a change. `DPRATES_JIT_CACHE=off` turns both caches
off (everything is compiled per process, as before); `DPRATES_JIT_CACHE=DIR` moves the
generated modules to DIR.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numba
from numba.core.caching import FunctionCache
from numba.core.registry import CPUDispatcher

#: The environment variable: "off" (no disk caches), or the generated modules' directory.
CACHE_ENV = "DPRATES_JIT_CACHE"
#: Part of every generated module's digest: bump when the generation itself changes.
GENERATION = 1


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "").strip().lower() not in ("off", "0", "no", "false")


def cache_dir() -> Path:
    """Where the generated modules live: $DPRATES_JIT_CACHE, else numba's NUMBA_CACHE_DIR
    /dprates, else $XDG_CACHE_HOME (default ~/.cache)/dprates/jit."""
    own = os.environ.get(CACHE_ENV, "").strip()
    if own and enabled():
        return Path(own).expanduser()
    if numba.config.CACHE_DIR:
        return Path(numba.config.CACHE_DIR) / "dprates"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dprates" / "jit"


def source_digest(fn: Any) -> str | None:
    """sha256 of the file that defines `fn` (a dispatcher or a Python function), its module's
    name, its name and first line; None where it has no readable source file (defined by exec, say)
    or is a closure (its cells, not its file, say what it computes)."""
    py = getattr(fn, "py_func", fn)
    if getattr(py, "__closure__", None) is not None:
        return None
    try:
        path = inspect.getfile(py)
        data = Path(path).read_bytes()
    except (TypeError, OSError):
        return None
    h = hashlib.sha256(data)
    # the module's name too: a cached caller's code names its callee's module, which a later
    # process must be able to import (numba rebuilds the callee's environment from it)
    h.update(f"\0{py.__module__}\0{py.__qualname__}\0{py.__code__.co_firstlineno}".encode())
    return h.hexdigest()


class PluginFunctionCache(FunctionCache):
    """numba's per-function disk cache (stamped by the file's content) with two changes for
    plugins: the module's name is part of every entry's key, since cached code names its
    module and a later process imports that name to rebuild it (the same file loaded as a
    path plugin and as a package module has two names), and an entry that cannot be loaded
    anyway is a miss (compiled again), never an error of the run."""

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        return (*super()._index_key(sig, codegen), self._py_func.__module__)

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        try:
            return super().load_overload(sig, target_context)
        except Exception:  # a module gone, a truncated file: compile instead
            return None


def enable_disk_cache(fn: Any) -> bool:
    """Turn on the disk cache (`PluginFunctionCache`) for a plugin's `numba.njit` function
    (True where it is on). Call before the function's first compile: overloads compiled
    earlier are not written."""
    if not enabled() or not isinstance(fn, CPUDispatcher) or source_digest(fn) is None:
        return False
    try:
        # what numba's own Dispatcher.enable_caching does, with the cache class above
        fn._cache = PluginFunctionCache(fn.py_func)
    except RuntimeError:  # numba finds no writable place for this file's cache
        return False
    return True


#: Generated modules unused this long are removed (with numba's files for them): a plugin
#: loaded from a temporary path (tests, one-off runs) leaves modules no later run names.
PRUNE_AFTER_DAYS = 30
_PRUNED: set[Path] = set()


def _prune(directory: Path) -> None:
    """Once per process and directory: remove generated modules not used (their mtime, set at
    every use) for PRUNE_AFTER_DAYS, and numba's index and data files for them."""
    if directory in _PRUNED:
        return
    _PRUNED.add(directory)
    cutoff = time.time() - PRUNE_AFTER_DAYS * 86400
    for path in directory.glob("dprates_jit_*.py"):
        try:
            if path.stat().st_mtime < cutoff:
                for entry in (directory / "__pycache__").glob(f"{path.stem}.*"):
                    entry.unlink(missing_ok=True)
                path.unlink(missing_ok=True)
        except OSError:  # another process pruned it first
            continue


def _write_once(path: Path, text: str) -> None:
    """Write `text` to `path` unless it holds it already (then mark it used); atomically
    (workers of one sweep may write the same module at once)."""
    if path.is_file() and path.read_text() == text:
        os.utime(path)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _run_module(name: str, path: Path | None, source: str, fn: Any, cache: bool) -> ModuleType:
    module = ModuleType(name)
    module.__dict__.update(fn=fn, CACHE=cache)
    if path is None:  # no file: exec'd (numba compiles it all the same, without a cache)
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(fn=fn, CACHE=cache)
    # importable by its name: numba's cached code names its module, and a later process
    # rebuilds the module's environment by importing that name
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


_MODULES: dict[tuple, ModuleType] = {}


def load_generated(fn: Any, source: str) -> ModuleType:
    """`source` (a template whose numba functions read the globals `fn`, the user's function,
    and `CACHE`, whether to pass cache=True) run as a module with `fn` bound; from a file in
    `cache_dir()` named by the template and `fn`'s `source_digest` where the cache is on and
    the function has a source file, else exec'd and compiled in this process. Once per
    process, function and template."""
    key = (fn, source)
    if key in _MODULES:
        return _MODULES[key]
    digest = source_digest(fn) if enabled() else None
    module = None
    if digest is not None:
        h = hashlib.sha256(f"{GENERATION}\0{digest}\0{source}".encode()).hexdigest()[:32]
        name = f"dprates_jit_{h}"
        path = cache_dir() / f"{name}.py"
        try:
            _write_once(path, f"# generated by problems.jit_cache for {digest}\n{source}")
            _prune(path.parent)
            module = _run_module(name, path, source, fn, True)
        except Exception:  # an unwritable directory, an entry numba cannot
            # load (a callee's module gone): compiled in this process, as without a cache (a
            # function that does not compile raises again below, to the caller)
            sys.modules.pop(name, None)
            module = None
    if module is None:
        module = _run_module(f"dprates_jit_local_{id(fn):x}", None, source, fn, False)
    _MODULES[key] = module
    return module


__all__ = ["CACHE_ENV", "cache_dir", "enable_disk_cache", "enabled", "load_generated",
           "source_digest"]
