"""Counts streams version 3 and 4 for product layouts: one counts tree per coordinate, read lazily.

On a product layout (`BinaryCoordinates`: m independent two-point coordinates) the counts of
different coordinates are independent, so each coordinate can have a counts tree of its own:
the construction of `problems.counts.stream.CountsStream` (block roots, dyadic hypergeometric
splits keyed by node, leaves arranged at once), with every node's Philox counter tagged by
the coordinate (`TAG_STRIDE` x (j + 1) added to the level word, so no two coordinates, and no
coordinate and the block roots, share a counter). The block roots stay one draw for all
coordinates per superblock (their counts are independent across coordinates already).

Why: a batch's counts are then a fixed function of (seed, coordinate, records covered), and a
consumer that needs only some coordinates reads only those. A Spider's O2 on the separable
problems reads the counts of the two noise factors (the <g, x> term cancels in a gradient
difference), 2 of d + 2 coordinates; its O1 reads them all, each coordinate's path catching up
from where it was last read (about log2 of the records since then). Per step the walk costs
O(coordinates read x log2 batch) hypergeometric draws instead of O((d + 2) x log2 batch).

Exact: each coordinate's counts are distributed as those of `CountsStream` over a
one-coordinate layout (the same construction; its own counters and the shared root draw make
the numbers differ), coordinates are independent (distinct counters of one Philox key: a
coordinate's level words lie in [TAG_STRIDE (j + 1), TAG_STRIDE (j + 1) + BLOCK_LEVELS], so
they meet no other coordinate's, no version-2 node's (< 64) and no root draw's (0)), and
`ReferenceCoordinateCountsStream` recomputes every read with the numpy walk of one
`ReferenceCountsStream` per coordinate (tests/test_counts_coordinates.py holds the two equal,
number for number, and the law, independence and prefix consistency on their own).

Version 4 (`counts_stream`'s default) is the same construction in one block of 2^TOP_LEVELS
records per coordinate instead of blocks of 2^29 (its splits above 2^29 records by the
large-population sampler, `problems.counts.large_hypergeometric`): a take of any size walks
about log2(size) nodes per coordinate read, where version 3 also draws every superblock's
64 x (d + 2) block roots it passes.

The version (`problems.counts.stream.STREAM_VERSION`) is one number for both layouts: a store
of atoms-layout counts cells made by version 2 holds the same data as version 3 would, but is
refused all the same (rerun it into a new store).
"""

from __future__ import annotations

import hashlib

import numpy as np

from problems.counts import kernels as _kernels
from problems.counts.layouts import BinaryCoordinates, CountsBatch, CountsLayout
from problems.counts.philox import STATE_WORDS
from problems.counts.stream import (
    BLOCK_LEVELS,
    BLOCKS_PER_SUPER,
    KEY_WORD_V4,
    STREAM_VERSION,
    TOP_LEVELS,
    CountsStream,
    ReferenceCountsStream,
    compiled_kind,
    require_supported_version,
)

#: A coordinate's node counters add TAG_STRIDE * (j + 1) to the level word (levels < 64).
TAG_STRIDE = 64
assert TAG_STRIDE > TOP_LEVELS  # one coordinate's level words never reach the next's


class CoordinateCountsStream(CountsStream):
    """Exact, prefix-consistent counts of a product layout, one tree per coordinate (module
    docstring). `take(k)` returns a lazy `CountsBatch`: `batch.counts_of(cols)` walks only
    those coordinates, `batch.counts` all of them."""

    #: Version 4's blocks of 2^TOP_LEVELS: splits above 2^29 records take the large-population
    #: sampler (`problems.counts.kernels.split_half`; `BinaryCoordinates.split` in the reference).
    max_block_levels = TOP_LEVELS
    max_block_levels_why = "the root's Binomial(2^levels, p) is exact below 2^53"

    def __init__(self, layout: CountsLayout, seed: int | np.random.SeedSequence,
                 budget: int | None = None, **kw) -> None:
        if not isinstance(layout, BinaryCoordinates):
            raise ValueError(f"layout {type(layout).__name__} is invalid for a per-coordinate "
                             "counts stream: must be BinaryCoordinates (a product layout)")
        super().__init__(layout, seed, budget, **kw)
        m = layout.shape[0]
        self._all = np.arange(m, dtype=np.int64)
        self.tags = TAG_STRIDE * (self._all + 1)
        # Per coordinate: path block, last offset, last m read, its prefix count, leaf block,
        # leaf index, leaf valid (the compiled walk's; the reference uses columns 2 and 3).
        self._meta = np.zeros((m, 7), dtype=np.int64)
        self._meta[:, 0] = -1
        self._seed, self._budget_arg, self._kw = seed, budget, kw
        if not self.compiled:
            self._children = [_ReferenceCoordinate(self, j) for j in range(m)]

    # -- the compiled paths: row j of every array is coordinate j's path ------------------
    def _init_path(self) -> None:
        rows, m = self.levels + 1, self.layout.shape[0]
        self._st = np.zeros(STATE_WORDS, dtype=np.uint64)
        self._st[4:6] = self._bitgen.state["state"]["key"]
        self._path = np.zeros((4, m, rows), dtype=np.int64)  # index, counts, before, left
        self._flags = np.zeros((2, m, rows), dtype=np.bool_)  # valid, split
        self._leaf_arr = np.zeros((m, 1 << self.leaf_levels), dtype=np.uint8)
        self._ranks = np.zeros(1 << self.leaf_levels, dtype=np.int64)
        self._out = np.zeros(m, dtype=np.int64)
        # Rows: start block's root counts and counts before it, the same for the stop block;
        # _roots_of says which blocks the rows hold (a take that crosses into the next block
        # finds its start block's pair in the stop rows: a copy, not a second draw and sum).
        self._roots = np.zeros((4, m), dtype=np.int64)
        self._roots_of = [-1, -1]

    def _block_root(self, block: int, out: np.ndarray) -> None:
        """(root counts of a block, counts before it), per coordinate, into out's two rows."""
        s, b_in = divmod(block, self.per_super)
        cum = self._superblock(s)
        np.subtract(cum[b_in + 1], cum[b_in], out=out[0])
        np.add(self._before_super(s), cum[b_in], out=out[1])

    def _between(self, start: int, stop: int, lo: int, hi: int) -> np.ndarray:
        """Counts of records [start, stop) of coordinates lo..hi-1 (module docstring)."""
        if not self.compiled:
            begin = np.array([self._child_prefix(j, start) for j in range(lo, hi)], dtype=np.int64)
            end = np.array([self._child_prefix(j, stop) for j in range(lo, hi)], dtype=np.int64)
            return end - begin
        roots, held = self._roots, self._roots_of
        first, last = start >> self.levels, stop >> self.levels
        if first != held[0]:
            held[0] = -1  # until the rows are written (an exception inside leaves no stale pair)
            if first == held[1]:
                roots[0:2] = roots[2:4]
            else:
                self._block_root(first, roots[0:2])
            held[0] = first
        if last != held[1]:
            held[1] = -1
            if last == first:
                roots[2:4] = roots[0:2]
            else:
                self._block_root(last, roots[2:4])
            held[1] = last
        self.nodes_drawn += _kernels.walk_between(
            lo, hi, start, stop, self.levels, self.leaf_levels, roots, self.tags, self._st, self._meta,
            self._path, self._flags, self._leaf_arr, self._ranks, self._out)
        return self._out[lo:hi].copy()

    def _child_prefix(self, j: int, m: int) -> int:
        if self._meta[j, 2] != m:
            self._meta[j, 2], self._meta[j, 3] = m, self._children[j].prefix_counts(m)[0]
        return int(self._meta[j, 3])

    def prefix_counts(self, m: int) -> np.ndarray:
        """Counts of records [0, m) of every coordinate: a fixed function of (seed, m)."""
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
            raise ValueError(f"m={m!r} is invalid: must be an integer >= 0")
        self._between(int(m), int(m), 0, len(self._all))
        return self._meta[:, 3].copy()

    def counts_between(self, start: int, stop: int, cols: slice | None) -> np.ndarray:
        """Counts of records [start, stop) of coordinates `cols` (a slice; None: all)."""
        m = len(self._all)
        lo, hi, step = (0, m, 1) if cols is None else cols.indices(m)
        if step != 1:
            raise ValueError(f"cols={cols!r} is invalid: must be a slice with step 1")
        return self._between(start, stop, lo, hi)

    def take(self, k: int) -> CountsBatch:
        """The next k unused records as a lazy batch (nothing is drawn until it is read)."""
        k = self._check_request(k)
        start = self.used
        self.used = start + k
        return CountsBatch(k, source=self, span=(start, self.used))

    @property
    def cache_nbytes(self) -> int:
        """Bytes held by the caches: every coordinate's path (one node per level and its
        leaf), one superblock's cumulative root counts, one total per superblock passed."""
        if self.compiled:
            path = sum(a.nbytes for a in (self._path, self._flags, self._leaf_arr, self._meta,
                                           self._ranks, self._out, self._st))
            path += self._roots.nbytes
        else:
            path = sum(c.cache_nbytes for c in self._children)
        sup = 0 if self._super_cum is None else self._super_cum.nbytes
        return path + sup + self._before_run[1].nbytes + sum(t.nbytes for t in self._super_totals)

    def digest(self, records: int = 64) -> str:
        """A short hash of the counts of the first `records` records (a pairing check), from a
        fresh twin: the consumer's paths stay where they are."""
        twin = type(self)(self.layout, self._seed, self._budget_arg, **self._kw)
        counts = twin.prefix_counts(int(min(records, self.budget)))
        return hashlib.sha256(counts.astype(np.int64).tobytes()).hexdigest()[:16]


class ReferenceCoordinateCountsStream(CoordinateCountsStream):
    """`CoordinateCountsStream` with every coordinate's walk in numpy (one
    `ReferenceCountsStream` per coordinate, its counters tagged): the tests' reference."""

    compiled = False


class _ReferenceCoordinate(ReferenceCountsStream):
    """Coordinate j of a `ReferenceCoordinateCountsStream`: the numpy walk over a one-coordinate
    layout, node counters tagged, block roots read from the parent's (shared) draw."""

    max_block_levels = CoordinateCountsStream.max_block_levels  # its parent's blocks
    max_block_levels_why = CoordinateCountsStream.max_block_levels_why

    def __init__(self, parent: CoordinateCountsStream, j: int) -> None:
        layout = BinaryCoordinates(parent.layout.p[j:j + 1])
        super().__init__(layout, parent._seed, parent._budget_arg, key_word=parent.key_word,
                         block_levels=parent.levels,
                         blocks_per_super=parent.per_super, leaf_levels=parent.leaf_levels)
        self._parent, self._j, self._tag = parent, j, int(parent.tags[j])

    def _seek(self, *words: int) -> np.random.Generator:  # node words: (index, level, block)
        index, level, block = words
        return super()._seek(index, level + self._tag, block)

    def _superblock(self, s: int) -> np.ndarray:
        return self._parent._superblock(s)[:, self._j:self._j + 1]

    def _before_super(self, s: int) -> np.ndarray:
        return self._parent._before_super(s)[self._j:self._j + 1]


def counts_stream(layout: CountsLayout, seed: int | np.random.SeedSequence,
                  budget: int | None = None, version: int = STREAM_VERSION, **kw) -> CountsStream:
    """The counts stream a problem's counts mode reads. On a product layout the compiled walk
    serves, one tree per coordinate: version 4 (the default) in blocks of 2^TOP_LEVELS records on
    a Philox key of its own, version 3 in blocks of 2^29 grouped 64 to a superblock
    (`problems.counts.stream`; `CoordinateCountsStream`'s own defaults are version 3's); else
    `CountsStream` (atoms, or a layout subclass with its own draws; the same in 3 and 4)."""
    require_supported_version(version)
    if compiled_kind(layout) == _kernels.BINARY:
        if version >= 4:
            kw = {"block_levels": TOP_LEVELS, "blocks_per_super": 1, "key_word": KEY_WORD_V4, **kw}
        else:
            kw = {"block_levels": BLOCK_LEVELS, "blocks_per_super": BLOCKS_PER_SUPER, **kw}
        return CoordinateCountsStream(layout, seed, budget, **kw)
    return CountsStream(layout, seed, budget, **kw)


__all__ = ["TAG_STRIDE", "CoordinateCountsStream", "ReferenceCoordinateCountsStream", "counts_stream"]
