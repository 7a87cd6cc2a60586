"""One writer per store: a sweep holds an exclusive lock on `<store>.lock` while it writes.

Two sweeps writing one store interleave their cells and provenance (it happened after a Ctrl-C
missed a background sweep). SQLite would serialize the writes but not the plans: both sweeps
would run the same pending cells. The lock is `fcntl.flock` on a file beside the store, so the
kernel releases it when its holder dies (no stale locks after a crash or a kill -9); the file
holds the holder's pid and start time for the refusal's one line. The file is left in place
(emptied on release): unlinking a lock file races with a second process opening it.

On a system without `fcntl` (Windows) the lock is skipped, and `held` says so.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType


class StoreBusy(ValueError):
    """Another process holds the store's lock (its pid in the message)."""


def lock_path(store: str | Path) -> Path:
    store = Path(store)
    return store.with_name(store.name + ".lock")


class StoreLock:
    """Context manager: take `<store>.lock` exclusively or raise `StoreBusy` at once."""

    def __init__(self, store: str | Path) -> None:
        self.store = Path(store)
        self.path = lock_path(store)
        self._fh = None
        self.held = False

    def __enter__(self) -> StoreLock:
        try:
            import fcntl
        except ImportError:  # no flock: run unlocked (documented in the module docstring)
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fh = open(self.path, "a+")  # held open for the lock's lifetime
        except OSError as exc:
            raise StoreBusy(f"store {str(self.store)!r} cannot be locked: {exc.strerror} "
                            f"({self.path})") from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "pid unknown"
            fh.close()
            raise StoreBusy(
                f"store {str(self.store)!r} is being written by another sweep ({holder}): wait "
                f"for it to finish or stop it; two writers would run the same cells") from None
        except OSError as exc:  # a file system without flock (some NFS mounts)
            fh.close()
            raise StoreBusy(f"store {str(self.store)!r} cannot be locked on its file system: "
                            f"{exc.strerror}; sweep into a local directory") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        fh.flush()
        self._fh, self.held = fh, True
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fh is None:
            return
        import fcntl

        self._fh.seek(0)
        self._fh.truncate()
        self._fh.flush()
        fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
        self._fh.close()
        self._fh, self.held = None, False
