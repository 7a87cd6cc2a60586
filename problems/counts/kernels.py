"""Compiled kernels of the counts stream (numba): the same random numbers as numpy, 20x faster.

`problems.counts.stream.CountsStream` defines its data through numpy: a node's draw comes from a
`numpy.random.Philox` generator whose counter is set to the node's address, and splits,
leaf arrangements and roots are numpy's `hypergeometric`, `permuted` and `binomial`. The
per-node cost of that definition is Python's (setting a generator's state, one numpy call per
coordinate), about 30 us per node where the arithmetic is a few hundred ns. The kernels here
compute the *same numbers*, bit for bit, in compiled code:

* `problems.counts.philox`: Philox4x64-10 (Salmon et al. 2011, "Parallel random numbers: as easy as 1, 2,
  3"), numpy's counter / buffer / 32-bit-half conventions, on a 13-word state array;
* (there too) `random_interval`, `next_double`: numpy's bounded integers by masked rejection and its
  53-bit doubles;
* `hypergeometric`: numpy's sampler (sequential draws below 10, else Stadlober's ratio of
  uniforms HRUA, "The ratio of uniforms approach for generating discrete random variates",
  J. Comput. Appl. Math. 31, 1990) with numpy's log-factorial (a table below 126, Stirling
  above), operation for operation so that every rounding is the same;
* `split_half`: a node's split, numpy's `hypergeometric` up to 2^29 records and the
  large-population sampler of `problems.counts.large_hypergeometric` above (version 4);
* `multivariate_hypergeometric_marginals`: numpy's method="marginals" (one hypergeometric per
  atom, the complement when more than half is drawn);
* `permute_rows`: numpy's `permuted(..., axis=1)` on rows of 0..size-1 (Fisher-Yates from the
  last position, `random_interval`);
* `walk`: `CountsStream.prefix_counts`'s walk from the block's root to the leaf, with the
  cached path in arrays; `walk_between`: the per-coordinate walks of counts stream version 3
  (`problems.counts.coordinates`), one scalar path per coordinate, in one compiled call.

Exactness is tested against numpy itself (tests/test_counts_kernels.py: raw Philox words, the
samplers on random arguments incl. both HRUA branches and the 32/64-bit interval paths, and
whole streams against the numpy reference stream). Generic functions over counts arrays
(`split_binary`, `split_categorical`) are exported for other exact-counts code (e.g. a
first-order step in counts mode) that wants one compiled split without the stream.
"""

from __future__ import annotations

import math

import numpy as np

from problems.counts.large_hypergeometric import LARGE_POPULATION, hypergeometric_large
from problems.counts.logfactorial import hrua_accepts, hrua_hat, hrua_unfold
from problems.counts.logfactorial import logfactorial as _logfactorial
from problems.counts.philox import cached_njit, next_double, philox_seek, random_interval


@cached_njit
def _hyp_sample(st, good, bad, sample):
    total = good + bad
    if sample > total // 2:
        computed = total - sample
    else:
        computed = sample
    rem_total, rem_good = total, good
    while computed > 0 and rem_good > 0 and rem_total > rem_good:
        rem_total -= 1
        if random_interval(st, rem_total) < rem_good:
            rem_good -= 1
        computed -= 1
    if rem_total == rem_good:
        rem_good -= computed
    if sample > total // 2:
        return rem_good
    return good - rem_good


@cached_njit
def _hyp_hrua(st, good, bad, sample):
    computed, mingb, maxgb, a, h, b = hrua_hat(good, bad, sample)
    m = np.int64(math.floor(np.float64(computed + 1) * (mingb + 1) / (good + bad + 2)))
    g = (_logfactorial(m) + _logfactorial(mingb - m) + _logfactorial(computed - m)
         + _logfactorial(maxgb - computed + m))
    while True:
        U = next_double(st)
        V = next_double(st)
        X = a + h * (V - 0.5) / U
        if X < 0.0 or X >= b:
            continue
        K = np.int64(math.floor(X))
        gp = (_logfactorial(K) + _logfactorial(mingb - K) + _logfactorial(computed - K)
              + _logfactorial(maxgb - computed + K))
        if hrua_accepts(U, g - gp):
            return hrua_unfold(K, good, bad, sample, computed)


@cached_njit
def hypergeometric(st, good, bad, sample):
    """numpy's `Generator.hypergeometric(good, bad, sample)` (arguments < 1e9, as numpy)."""
    if sample >= 10 and sample <= good + bad - 10:
        return _hyp_hrua(st, good, bad, sample)
    return _hyp_sample(st, good, bad, sample)


@cached_njit
def split_half(st, c, size):
    """The ones among the first half of a node of `size` records holding c of them: numpy's
    hypergeometric up to LARGE_POPULATION records (every node of counts stream version 3),
    the large-population sampler above (version 4's nodes of 2^30 .. 2^50 records)."""
    if size > LARGE_POPULATION:
        return hypergeometric_large(st, c, size - c, size >> 1)
    return hypergeometric(st, c, size - c, size >> 1)


@cached_njit
def multivariate_hypergeometric_marginals(st, colors, nsample, out):
    """numpy's `multivariate_hypergeometric(colors, nsample, method="marginals")` into out."""
    total = np.int64(0)
    for c in colors:
        total += c
    out[:] = 0
    if total == 0 or nsample == 0:
        return
    more_than_half = nsample > total // 2
    if more_than_half:
        nsample = total - nsample
    num_to_sample, remaining = nsample, total
    n = len(colors)
    j = 0
    while num_to_sample > 0 and j + 1 < n:
        remaining -= colors[j]
        r = hypergeometric(st, colors[j], remaining, num_to_sample)
        out[j] = r
        num_to_sample -= r
        j += 1
    if num_to_sample > 0:
        out[n - 1] = num_to_sample
    if more_than_half:
        for k in range(n):
            out[k] = colors[k] - out[k]


@cached_njit
def permute_rows(st, rows, size):
    """numpy's `permuted(broadcast_to(arange(size), (rows, size)), axis=1)`."""
    out = np.empty((rows, size), dtype=np.int64)
    for j in range(rows):
        for i in range(size):
            out[j, i] = i
        for i in range(size - 1, 0, -1):
            k = random_interval(st, i)
            t = out[j, i]
            out[j, i] = out[j, k]
            out[j, k] = t
    return out


@cached_njit
def split_binary(st, counts, size, out):
    """BinaryCoordinates.split: counts of the first size/2 records of a node of `size`
    records holding `counts` (per coordinate, in order; empty / full coordinates draw nothing)."""
    half = size >> 1
    for j in range(len(counts)):
        c = counts[j]
        if 0 < c < size:
            out[j] = hypergeometric(st, c, size - c, half)
        elif c:
            out[j] = half
        else:
            out[j] = 0


@cached_njit
def split_categorical(st, counts, size, present, out):
    """Categorical.split: multivariate hypergeometric over the atoms present (scratch
    `present` of len(counts)); one atom present splits deterministically."""
    n = 0
    for i in range(len(counts)):
        out[i] = 0
        if counts[i] != 0:
            present[n] = i
            n += 1
    if n == 1:
        out[present[0]] = size >> 1
    elif n > 1:
        colors = np.empty(n, dtype=np.int64)
        for t in range(n):
            colors[t] = counts[present[t]]
        drawn = np.empty(n, dtype=np.int64)
        multivariate_hypergeometric_marginals(st, colors, size >> 1, drawn)
        for t in range(n):
            out[present[t]] = drawn[t]
    return n


@cached_njit
def shuffle_1d(st, values):
    """numpy's `permutation` of a 1-d int64 array (Fisher-Yates from the last position,
    `random_interval`), in place."""
    for i in range(len(values) - 1, 0, -1):
        k = random_interval(st, i)
        t = values[i]
        values[i] = values[k]
        values[k] = t


#: Layout kinds of the walk.
BINARY, CATEGORICAL = 0, 1


@cached_njit
def _bit_length(v):
    n = 0
    while v > 0:
        v >>= 1
        n += 1
    return n


@cached_njit
def _arrange(kind, st, counts, size, leaf_arr, present):
    """Arrange a leaf as the layouts' `arrange` does: BinaryCoordinates marks, per
    coordinate, the records whose rank in a random row permutation is below the count;
    Categorical permutes the atoms' records."""
    if kind == BINARY:
        ranks = permute_rows(st, len(counts), size)
        for j in range(len(counts)):
            c = counts[j]
            for i in range(size):
                leaf_arr[j, i] = 1 if ranks[j, i] < c else 0
    else:
        pos = 0
        for i in range(len(counts)):
            for _ in range(counts[i]):
                leaf_arr[0, pos] = i
                pos += 1
        shuffle_1d(st, leaf_arr[0, :size])


@cached_njit
def walk(kind, st, levels, leaf_levels, block, offset, prev_offset, pidx, pvalid, pnode,
         pbefore, pleft, phas, leaf_meta, leaf_arr, out, present, tag):
    """`CountsStream.prefix_counts` below the block's root (see there), into `out`.

    `tag` is added to the level word of every node's Philox counter: 0 for `CountsStream`,
    a coordinate's own tag for `problems.counts.coordinates` (one tree per coordinate).

    Path arrays, per level l (leaf_levels <= l <= levels): pvalid[l], pidx[l] (node index),
    pnode[l] (its counts), pbefore[l] (counts before it), pleft[l] / phas[l] (its left half
    once split). leaf_meta = (block, index, valid) of the arranged leaf in leaf_arr.
    Returns the number of nodes drawn.
    """
    drawn = 0
    level = max(leaf_levels, _bit_length(prev_offset ^ offset))
    while level < levels:  # nodes at >= this level may be shared with the previous path
        if pvalid[level] and pidx[level] == offset >> level:
            break
        level += 1
    while True:
        index = pidx[level]
        r = offset - (index << level)
        if r == 0:
            out[:] = pbefore[level]
            return drawn
        if level == leaf_levels:
            if not (leaf_meta[2] == 1 and leaf_meta[0] == block and leaf_meta[1] == index):
                philox_seek(st, index, level + tag, block)
                _arrange(kind, st, pnode[level], 1 << level, leaf_arr, present)
                leaf_meta[0], leaf_meta[1], leaf_meta[2] = block, index, 1
                drawn += 1
            out[:] = pbefore[level]
            if kind == BINARY:
                for j in range(leaf_arr.shape[0]):
                    acc = 0
                    for i in range(r):
                        acc += leaf_arr[j, i]
                    out[j] += acc
            else:
                for i in range(r):
                    out[leaf_arr[0, i]] += 1
            return drawn
        if not phas[level]:
            philox_seek(st, index, level + tag, block)
            if kind == BINARY:
                split_binary(st, pnode[level], 1 << level, pleft[level])
            else:
                split_categorical(st, pnode[level], 1 << level, present, pleft[level])
            phas[level] = True
            drawn += 1
        child = level - 1
        if r < 1 << child:
            pidx[child] = 2 * index
            pnode[child] = pleft[level]
            pbefore[child] = pbefore[level]
        else:
            pidx[child] = 2 * index + 1
            pnode[child] = pnode[level] - pleft[level]
            pbefore[child] = pbefore[level] + pleft[level]
        phas[child] = False
        pvalid[child] = True
        level = child


@cached_njit
def _walk_one(st, levels, leaf_levels, block, offset, j, tag, prev_offset, pidx, pnode, pbefore,
              pleft, pvalid, phas, meta, leaf_arr, ranks):
    """`walk` for one binary coordinate j with its path in row j of 2-d arrays (scalars per
    level, no per-node views): the same nodes, the same draws (split: one hypergeometric;
    leaf: `permute_rows` of one row). Returns (prefix count, nodes drawn)."""
    drawn = 0
    level = max(leaf_levels, _bit_length(prev_offset ^ offset))
    while level < levels:  # nodes at >= this level may be shared with the previous path
        if pvalid[j, level] and pidx[j, level] == offset >> level:
            break
        level += 1
    while True:
        index = pidx[j, level]
        r = offset - (index << level)
        if r == 0:
            return pbefore[j, level], drawn
        if level == leaf_levels:
            if not (meta[j, 6] == 1 and meta[j, 4] == block and meta[j, 5] == index):
                philox_seek(st, index, level + tag, block)
                size = 1 << level
                for i in range(size):
                    ranks[i] = i
                for i in range(size - 1, 0, -1):
                    k = random_interval(st, i)
                    t = ranks[i]
                    ranks[i] = ranks[k]
                    ranks[k] = t
                c = pnode[j, level]
                for i in range(size):
                    leaf_arr[j, i] = 1 if ranks[i] < c else 0
                meta[j, 4], meta[j, 5], meta[j, 6] = block, index, 1
                drawn += 1
            acc = pbefore[j, level]
            for i in range(r):
                acc += leaf_arr[j, i]
            return acc, drawn
        if not phas[j, level]:
            philox_seek(st, index, level + tag, block)
            c, size = pnode[j, level], 1 << level
            if 0 < c < size:
                pleft[j, level] = split_half(st, c, size)
            elif c:
                pleft[j, level] = size >> 1
            else:
                pleft[j, level] = 0
            phas[j, level] = True
            drawn += 1
        child = level - 1
        if r < 1 << child:
            pidx[j, child] = 2 * index
            pnode[j, child] = pleft[j, level]
            pbefore[j, child] = pbefore[j, level]
        else:
            pidx[j, child] = 2 * index + 1
            pnode[j, child] = pnode[j, level] - pleft[j, level]
            pbefore[j, child] = pbefore[j, level] + pleft[j, level]
        phas[j, child] = False
        pvalid[j, child] = True
        level = child


@cached_njit
def _walk_coordinate(j, m, levels, leaf_levels, root, before, tags, st, meta, path, flags,
                     leaf_arr, ranks):
    """Coordinate j's prefix count at m into meta[j, 3] (a fresh path from the block's root,
    root[j] with before[j] records' counts before it, when m is in another block)."""
    block = m >> levels
    top = levels
    pidx, pnode, pbefore, pleft = path[0], path[1], path[2], path[3]
    pvalid, phas = flags[0], flags[1]
    if meta[j, 0] != block:
        pvalid[j, :] = False
        pvalid[j, top], phas[j, top] = True, False
        pidx[j, top], pnode[j, top], pbefore[j, top] = 0, root[j], before[j]
        meta[j, 0] = block
    offset = m - (block << levels)
    value, drawn = _walk_one(st, levels, leaf_levels, block, offset, j, tags[j], meta[j, 1], pidx,
                             pnode, pbefore, pleft, pvalid, phas, meta, leaf_arr, ranks)
    meta[j, 1], meta[j, 2], meta[j, 3] = offset, m, value
    return drawn


@cached_njit
def walk_between(lo, hi, start, stop, levels, leaf_levels, roots, tags, st, meta, path, flags,
                 leaf_arr, ranks, out):
    """Counts of records [start, stop) of coordinates lo..hi-1 into out[lo:hi], each on its
    own path (`problems.counts.coordinates`): meta[j] = (path block, last offset, last m,
    its prefix count, leaf block, leaf index, leaf valid); path = (node index, counts, counts
    before, left-half counts) and flags = (valid, split) per coordinate and level; node
    counters tagged tags[j]. A coordinate whose last read is not at `start` walks there first.
    roots = (root counts of start's block, counts before it, the same for stop's block).
    Returns the number of nodes drawn."""
    drawn = 0
    for j in range(lo, hi):
        if meta[j, 2] != start:
            drawn += _walk_coordinate(j, start, levels, leaf_levels, roots[0], roots[1], tags, st,
                                      meta, path, flags, leaf_arr, ranks)
        begin = meta[j, 3]
        drawn += _walk_coordinate(j, stop, levels, leaf_levels, roots[2], roots[3], tags, st,
                                  meta, path, flags, leaf_arr, ranks)
        out[j] = meta[j, 3] - begin
    return drawn


__all__ = ["BINARY", "CATEGORICAL", "hypergeometric", "multivariate_hypergeometric_marginals",
           "permute_rows", "shuffle_1d", "split_binary", "split_categorical", "walk", "walk_between"]
