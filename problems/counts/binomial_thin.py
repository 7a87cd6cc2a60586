"""Poisson thinning of atom counts in compiled code: numpy's Binomial(c_i, q) draws, bit for bit.

A Poisson subsample at rate q of a data set held as atom counts keeps Binomial(c_i, q) of the
c_i copies of atom i (`problems.counts.dataset.thin`). numpy's `Generator.binomial(counts, q)`
spends ~50 ns an atom, most of it in its inversion sampler's set-up, exp(c log(1 - q)) and a
square root recomputed for every atom although q is the same for all of them and the counts take
few distinct values: private SpiderBoost's O2 step on the GLM (1,000 atoms) spent about half of
its ~115 us there, and the reference's seed001_empirical3_glm runs ~10^7 such steps.

`thin_counts` draws the same numbers from the same generator, operation for operation:
numpy's `random_binomial` (numpy/random/src/distributions/distributions.c) per atom, i.e. 0
for c = 0 or q = 0 without a draw; for min(q, 1 - q) c <= 30 its inversion sampler (with
p' = min(q, 1 - q), q' = 1 - p', qn = exp(c log q'), bound = min(c, c p' + 10 sqrt(c p' q' + 1)),
then U = next_double and the recursion px = ((c - X + 1) p' px) / (X q'), restarting past the
bound), and c - that draw when q > 1/2. Only the set-up is shared: log q' once a call, qn and
the bound once per distinct count (a table over the counts' range), the same floats numpy
computes for each atom; the doubles come from the bit generator's own C next_double, called by
address (passing a Generator into numba costs ~7 us a call). A call where some atom would take
numpy's other sampler (BTPE, p' c > 30) is numpy's own. The once-per-process check
`compiled_thin_matches_numpy` compares the kernel with numpy on counts and rates that reach
every branch it takes (and the generator's state after); where it fails, or the generator is
not a numpy Generator, numpy draws. tests/test_binomial_thin.py holds it equal to numpy over
random counts and rates, bit generators and both sides of q = 1/2.
"""

from __future__ import annotations

import ctypes
import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

#: Counts ranges up to this wide get a set-up table (else the set-up is per atom, as numpy's).
TABLE_MAX = 1 << 16

_jit = numba.njit(cache=True, nogil=True)


@intrinsic
def _next_double(typingctx, fn_addr, state_addr):
    """The bit generator's next_double(state) through its C function pointer (numpy's bitgen_t:
    the same double `Generator.random()` returns). Passing the Generator itself into numba
    costs ~7 us a call (three ctypes casts), more than the draws of a 1,000-atom thinning."""
    sig = types.float64(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.DoubleType(), [i8p])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, [builder.inttoptr(args[1], i8p)])

    return sig, codegen


@_jit
def _inversion(fn, state, n, p, q, qn, bound):
    """numpy's random_binomial_inversion after its set-up (q = 1 - p, qn = exp(n log q))."""
    x = 0
    px = qn
    u = _next_double(fn, state)
    while u > px:
        x += 1
        if x > bound:
            x = 0
            px = qn
            u = _next_double(fn, state)
        else:
            u -= px
            px = ((n - x + 1) * p * px) / (x * q)
    return x


@_jit
def _setup(n, p, q, log_q):
    """(qn, bound) of numpy's inversion set-up for n trials at success rate p (q = 1 - p)."""
    np_ = n * p
    return math.exp(n * log_q), min(float(n), np_ + 10.0 * math.sqrt(np_ * q + 1))


@_jit
def _thin_kernel(fn, state, counts, rate, lo, hi, out):
    """out[i] = numpy's Binomial(counts[i], rate) for i in order, drawing from the bit generator
    at `state` through `fn` (module docstring); every nonzero count must take the inversion
    sampler (min(rate, 1 - rate) * hi <= 30, `thin_counts` checks), lo <= hi bound the counts."""
    flip = rate > 0.5
    p = 1.0 - rate if flip else rate  # numpy's p' = min(rate, 1 - rate)
    q = 1.0 - p
    log_q = math.log(q)
    width = hi - lo + 1
    tabled = 0 < width <= TABLE_MAX
    qn_tab = np.full(width if tabled else 0, -1.0)
    bound_tab = np.empty(width if tabled else 0)
    for i in range(counts.shape[0]):
        n = counts[i]
        if n == 0 or rate == 0.0:
            out[i] = 0
            continue
        if tabled:
            k = n - lo
            if qn_tab[k] < 0.0:
                qn_tab[k], bound_tab[k] = _setup(n, p, q, log_q)
            qn, bound = qn_tab[k], bound_tab[k]
        else:
            qn, bound = _setup(n, p, q, log_q)
        x = _inversion(fn, state, n, p, q, qn, bound)
        out[i] = n - x if flip else x
    return out


def _addresses(rng: np.random.Generator) -> tuple[int, int]:
    """(next_double's address, the state's) of the generator's bit generator."""
    c = rng.bit_generator.ctypes
    return int(ctypes.cast(c.next_double, ctypes.c_void_p).value), int(c.state_address)


def _kernel(rng: np.random.Generator, counts: np.ndarray, rate: float) -> np.ndarray:
    out = np.empty_like(counts)
    if counts.size:
        _thin_kernel(*_addresses(rng), counts, rate, int(counts.min()), int(counts.max()), out)
    return out


_AGREES: dict[type, bool] = {}


def _same_state(a: object, b: object) -> bool:
    """Bit-generator states equal (their dicts hold arrays for some generators, e.g. Philox)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def compiled_thin_matches_numpy(bit_generator: type) -> bool:
    """Whether `_thin_kernel` draws numpy's binomials from this bit generator type in this
    process, checked once: counts with zeros, small, mid and huge values at rates on both
    sides of 1/2 (the flipped branch), tabled and untabled set-ups, and the generators' states
    after."""
    if bit_generator not in _AGREES:
        gen = np.random.default_rng(20261206)
        counts = [np.concatenate([[0, 1, 2, 3], gen.integers(0, 300, 997)]),
                  gen.integers(0, 40, 500), np.array([0, 5, 3 * 10**8, 7, 10**9, 0]),
                  gen.integers(90, 110, 1000), np.array([1, 2**20, 5, 0])]
        same = True
        for c in counts:
            c = c.astype(np.int64)
            for rate in (0.0, 1e-9, 1e-7, 1e-4, 0.003, 0.05, 0.2, 0.5, 0.7, 0.97, 1.0):
                if min(rate, 1 - rate) * int(c.max()) > 30:  # numpy's BTPE: not the kernel's
                    continue
                a = np.random.Generator(bit_generator(int(gen.integers(2**62))))
                b = np.random.Generator(type(a.bit_generator)(0))
                b.bit_generator.state = a.bit_generator.state
                got = _kernel(a, c, rate)
                same = same and np.array_equal(got, b.binomial(c, rate)) \
                    and _same_state(a.bit_generator.state, b.bit_generator.state)
        _AGREES[bit_generator] = bool(same)
    return _AGREES[bit_generator]


def thin_counts(counts: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """numpy's `rng.binomial(counts, rate)`, the same numbers and the same generator state after,
    compiled where `compiled_thin_matches_numpy` holds; numpy's own call (and its errors) for
    anything else: a rate outside [0, 1], negative counts, a generator that is not numpy's."""
    counts = np.asarray(counts)
    if (not isinstance(rate, (float, int)) or not 0.0 <= float(rate) <= 1.0
            or not isinstance(rng, np.random.Generator) or counts.dtype != np.int64
            or counts.ndim != 1 or counts.size == 0):
        return rng.binomial(counts, rate)
    lo, hi = int(counts.min()), int(counts.max())
    rate = float(rate)
    if lo < 0 or min(rate, 1.0 - rate) * hi > 30.0 \
            or not compiled_thin_matches_numpy(type(rng.bit_generator)):
        # negative counts: numpy's error; BTPE atoms: numpy's own sampler
        return rng.binomial(counts, rate)
    bg = rng.bit_generator
    addresses = _ADDRESSES.get(id(bg))
    if addresses is None or addresses[0] is not bg:
        if len(_ADDRESSES) >= 64:
            _ADDRESSES.clear()
        addresses = _ADDRESSES[id(bg)] = (bg, *_addresses(rng))
    out = np.empty_like(counts)
    _thin_kernel(addresses[1], addresses[2], counts, rate, lo, hi, out)
    return out


#: id(bit generator) -> (it, next_double's address, its state's): the ctypes casts once a run.
_ADDRESSES: dict[int, tuple] = {}
