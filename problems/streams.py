"""Lazy, prefix-consistent data streams (README: "Data modes" and the protocol, item 5).

Records are generated in fixed chunks of `CHUNK` records; chunk k comes from its own child
seed `SeedSequence(entropy, spawn_key=(*spawn_key, k))`. The first n records are therefore
identical whatever the budget and however the consumer takes them (one at a time, in odd
sizes, or all at once), and memory stays O(CHUNK x record_dim) however long the stream.
A stream hands out records in order, each at most once, and ends at its budget.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

#: Records per generated chunk. Part of the stream's definition: changing it changes the data.
CHUNK = 4096


class StreamExhausted(RuntimeError):
    """Raised when a consumer asks for more records than the stream's budget leaves."""


class StreamBase:
    used: int
    budget: float

    @property
    def remaining(self) -> float:
        """Records that can still be handed out (math.inf for an unbudgeted stream)."""
        return self.budget - self.used

    def __len__(self) -> int:
        if self.budget == float("inf"):
            raise TypeError("an unbudgeted stream has no length")
        return int(self.budget)

    def _check_request(self, k: int) -> int:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"k={k!r} is invalid: must be an integer >= 0")
        if k > self.remaining:
            raise StreamExhausted(
                f"asked for {k} records but only {self.remaining} of budget {self.budget} remain"
            )
        return int(k)


def parse_seed(seed: int | np.random.SeedSequence) -> tuple[object, tuple[int, ...]]:
    """(entropy, spawn_key) of a stream seed: an int >= 0 or a SeedSequence."""
    if isinstance(seed, np.random.SeedSequence):
        return seed.entropy, tuple(seed.spawn_key)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return int(seed), ()
    raise ValueError(f"seed={seed!r} is invalid: must be an integer >= 0 or a SeedSequence")


def parse_budget(budget: int | None) -> float:
    """A stream's budget: None (unbudgeted: inf) or an integer >= 1."""
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1
    ):
        raise ValueError(f"budget={budget!r} is invalid: must be None or an integer >= 1")
    return float("inf") if budget is None else int(budget)


class DataStream(StreamBase):
    """Records of a problem generated lazily from `seed` (an int or a SeedSequence)."""

    def __init__(
        self,
        draw: Callable[[int, np.random.Generator], np.ndarray],
        seed: int | np.random.SeedSequence,
        budget: int | None = None,
    ) -> None:
        self._entropy, self._spawn_key = parse_seed(seed)
        self._draw = draw
        self.budget = parse_budget(budget)
        self.used = 0
        self._chunk_index = -1
        self._chunk: np.ndarray | None = None

    def _load_chunk(self, k: int) -> np.ndarray:
        if k != self._chunk_index:
            ss = np.random.SeedSequence(self._entropy, spawn_key=(*self._spawn_key, k))
            self._chunk = self._draw(CHUNK, np.random.default_rng(ss))
            self._chunk_index = k
        assert self._chunk is not None
        return self._chunk

    def take(self, k: int) -> np.ndarray:
        """The next k unused records, shape (k, record_dim)."""
        k = self._check_request(k)
        start, stop = self.used, self.used + k
        parts = []
        pos = start
        while pos < stop:
            chunk_k, offset = divmod(pos, CHUNK)
            chunk = self._load_chunk(chunk_k)
            n_here = min(CHUNK - offset, stop - pos)
            parts.append(chunk[offset : offset + n_here])
            pos += n_here
        self.used = stop
        if not parts:
            return self._load_chunk(0)[:0]
        return parts[0].copy() if len(parts) == 1 else np.concatenate(parts)


class ArrayStream(StreamBase):
    """The stream interface over an in-memory data set (from `problem.sample`)."""

    def __init__(self, data: np.ndarray) -> None:
        if data.ndim != 2 or len(data) < 1:
            raise ValueError(f"data has shape {data.shape}: must be a 2-d array with >= 1 row")
        self._data = data
        self.budget = len(data)
        self.used = 0

    def take(self, k: int) -> np.ndarray:
        """The next k unused records."""
        k = self._check_request(k)
        out = self._data[self.used : self.used + k]
        self.used += k
        return out


def records_digest(records: np.ndarray) -> str:
    """A short hash of records (used to check that paired cells saw the same samples)."""
    return hashlib.sha256(np.ascontiguousarray(records, dtype=np.float64).tobytes()).hexdigest()[:16]
