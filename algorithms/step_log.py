"""A run's per-step records and kept iterates in typed, growable columns (the Spiders' engine
and `TrajectoryBuilder`, which every other loop uses).

A run to alpha = 1e-3 on hard_valley takes ~2.6e6 steps and the crossover's deepest targets
1.5e7-3e7 (the ramp's 3.9e7). Held as Python lists (a pointer and, for most values, an int or
float object; one small array per kept iterate) a run's records cost ~275 bytes a step of
resident memory (measured): ~11 GB for a run of 3.9e7 steps, two such runs most of this
machine's memory. Here each column is one numpy array grown by doubling: the records take 42
bytes a step (oracle int8, escape bool, batch and samples int64, three float64), a kept iterate
8 d + 16, and the compiled O2 steps' buffers are copied in with one slice assignment a column.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: (name, dtype) of each per-step record of a Spider run, in `Trajectory.records` order.
STEP_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("oracle", np.int8), ("batch", np.int64), ("noise_std", np.float64),
    ("est_norm", np.float64), ("drift", np.float64), ("escape", np.bool_),
    ("samples", np.int64))
#: The records a first-order loop writes (its oracle is 1, its drift 0, it never escapes).
FIRST_ORDER_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("batch", np.int64), ("noise_std", np.float64), ("est_norm", np.float64),
    ("samples", np.int64))
FIRST_CAPACITY = 1024
PENDING = 1024  # rows appended one at a time, converted together


def iterate_columns(d: int) -> tuple[tuple[str, Any, tuple[int, ...]], ...]:
    """Columns of the kept iterates: x (a row of d floats), its step t and samples used."""
    return (("x", np.float64, (d,)), ("t", np.int64, ()), ("used", np.int64, ()))


class Columns:
    """Append-only rows of named, typed columns (a column may hold a fixed-shape row);
    `arrays()` hands them over trimmed, without a second copy. A value is converted to its
    column's dtype as numpy assignment does (the records' dtypes are fixed: `Trajectory`)."""

    def __init__(self, specs: tuple, capacity: int = FIRST_CAPACITY) -> None:
        self.names = tuple(s[0] for s in specs)
        self._shapes = [tuple(s[2]) if len(s) > 2 else () for s in specs]
        self._dtypes = [s[1] for s in specs]
        self._capacity = max(1, int(capacity))
        # Allocated at the first rows (a short run's columns then have exactly its rows).
        self._cols: list[np.ndarray] = []
        self._n = 0  # rows in the columns; `n` adds the pending ones
        # Rows appended one at a time wait in a list (a Python append, where seven numpy item
        # assignments cost ~3 us a step in the first-order loops) and move to the columns in
        # one conversion per column every PENDING rows.
        self._pending: list[tuple] = []
        self._row_columns = bool(self._shapes[0])
        if any(self._shapes[1:]):
            raise ValueError("only the first column may hold rows (an array a row)")

    @property
    def n(self) -> int:
        """Rows so far."""
        return self._n + len(self._pending)

    def _flush(self, exact: bool = False) -> None:
        rows, self._pending = self._pending, []
        if not rows:
            return
        k, width = len(rows), len(self._dtypes)
        if any(len(r) != width for r in rows):
            raise ValueError(f"a row without exactly {width} values (columns {self.names})")
        self._reserve(k, exact)
        a = self._n
        for i, col in enumerate(self._cols):
            col[a:a + k] = np.array([r[i] for r in rows], dtype=col.dtype)
        self._n = a + k

    def _reserve(self, k: int, exact: bool = False) -> None:
        need = self._n + k
        if not self._cols:
            cap = need if exact else max(need, self._capacity)
            self._cols = [np.empty((cap, *shape), dtype=dt)
                          for shape, dt in zip(self._shapes, self._dtypes, strict=True)]
            return
        cap = len(self._cols[0])
        if need > cap:
            cap = max(need, 2 * cap)
            for i, old in enumerate(self._cols):
                new = np.empty((cap, *self._shapes[i]), dtype=old.dtype)
                new[:self._n] = old[:self._n]
                self._cols[i] = new

    def append(self, *values: Any) -> None:
        """One row, a value per column (in `names` order). A row value (the first column's,
        an array) is copied now: the caller's array may change before it reaches its column."""
        if self._row_columns:
            v = values[0]
            values = (v.copy() if isinstance(v, np.ndarray) else np.array(v), *values[1:])
        pending = self._pending
        pending.append(values)
        if len(pending) >= PENDING:
            self._flush()

    def extend(self, k: int, *values: Any) -> None:
        """k rows: per column an array of k values (or rows), or one value for all k."""
        self._flush()
        self._reserve(k)
        a, b = self._n, self._n + k
        for col, v in zip(self._cols, values, strict=True):
            col[a:b] = v
        self._n = b

    def last(self, name: str) -> Any:
        """The last row's value of column `name` (a copy, in the column's dtype)."""
        i = self.names.index(name)
        if self._pending:
            return np.array(self._pending[-1][i], dtype=self._dtypes[i])[()]
        return self._cols[i][self._n - 1].copy()

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns, each shrunk in place to its n rows (no second copy of a long run's
        records). The log stays usable: it keeps the shrunk arrays, whose capacity is then
        full, so a later row moves every column to a new buffer and leaves the handed-out
        arrays as they were; asked again without new rows, it hands out the same arrays."""
        self._flush(exact=True)
        if not self._cols:
            self._reserve(0, exact=True)
        out = {}
        for i, (name, col, shape) in enumerate(zip(self.names, self._cols, self._shapes,
                                                   strict=True)):
            if len(col) != self._n:
                # Our own buffer: no view of it is alive (`last` copies, `extend` copies in).
                col.resize((self._n, *shape), refcheck=False)
            out[name] = self._cols[i] = col
        return out
