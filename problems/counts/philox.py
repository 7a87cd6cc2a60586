"""Philox4x64-10 in compiled code (numba), bit for bit numpy's `numpy.random.Philox`: its
counter / buffer / 32-bit-half conventions on a 13-word state array, and numpy's bounded
integers (masked rejection) and 53-bit doubles on top of it (Salmon et al. 2011, "Parallel
random numbers: as easy as 1, 2, 3"). The counts stream's samplers (`problems.counts.kernels`)
draw from it."""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_U = np.uint64
_M0, _M1 = _U(0xD2E7470EE14C6C93), _U(0xCA5A826395121157)
_W0, _W1 = _U(0x9E3779B97F4A7C15), _U(0xBB67AE8584CAA73B)
_MASK32 = _U(0xFFFFFFFF)
_S32 = _U(32)
_ONE = _U(1)
_ZERO = _U(0)

# State words: counter 0-3, key 4-5, buffer 6-9, buffer_pos 10, has_uint32 11, uinteger 12.
STATE_WORDS = 13

cached_njit = numba.njit(cache=True, nogil=True)
_inline = numba.njit(cache=True, nogil=True, inline="always")  # the generator's hot calls


@intrinsic
def _mulhi(typingctx, a, b):
    """High 64 bits of the 128-bit product a * b (one machine multiply; numba has no uint128)."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        wide = ir.IntType(128)
        prod = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        return builder.trunc(builder.lshr(prod, ir.Constant(wide, 64)), ir.IntType(64))

    return sig, codegen


@numba.njit(inline="always")
def _mulhilo(a, b):
    return _mulhi(a, b), a * b


@cached_njit
def philox_block(st):
    """Philox4x64-10 of counter st[0:4] with key st[4:6] into the buffer st[6:10]."""
    c0, c1, c2, c3 = st[0], st[1], st[2], st[3]
    k0, k1 = st[4], st[5]
    for i in range(10):
        if i > 0:
            k0 = k0 + _W0
            k1 = k1 + _W1
        hi0, lo0 = _mulhilo(_M0, c0)
        hi1, lo1 = _mulhilo(_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    st[6], st[7], st[8], st[9] = c0, c1, c2, c3


@cached_njit
def philox_seek(st, w1, w2, w3):
    """Counter (0, w1, w2, w3), empty buffers: as `CountsStream._seek` sets numpy's state."""
    st[0] = _ZERO
    st[1] = _U(w1)
    st[2] = _U(w2)
    st[3] = _U(w3)
    st[10] = _U(4)
    st[11] = _ZERO
    st[12] = _ZERO


@_inline
def next_uint64(st):
    pos = st[10]
    if pos < _U(4):
        st[10] = pos + _ONE
        return st[6 + np.int64(pos)]
    st[0] += _ONE
    if st[0] == _ZERO:
        st[1] += _ONE
        if st[1] == _ZERO:
            st[2] += _ONE
            if st[2] == _ZERO:
                st[3] += _ONE
    philox_block(st)
    st[10] = _ONE
    return st[6]


@_inline
def next_uint32(st):
    if st[11] != _ZERO:
        st[11] = _ZERO
        return st[12]
    v = next_uint64(st)
    st[11] = _ONE
    st[12] = v >> _S32
    return v & _MASK32


@_inline
def next_double(st):
    return np.float64(next_uint64(st) >> _U(11)) * (1.0 / 9007199254740992.0)


@_inline
def random_interval(st, mx):
    """A uniform integer in [0, mx] (numpy's masked rejection; 32-bit draws below 2^32)."""
    if mx == 0:
        return np.int64(0)
    umax = _U(mx)
    mask = umax
    mask |= mask >> _U(1)
    mask |= mask >> _U(2)
    mask |= mask >> _U(4)
    mask |= mask >> _U(8)
    mask |= mask >> _U(16)
    mask |= mask >> _S32
    if umax <= _MASK32:
        while True:
            v = next_uint32(st) & mask
            if v <= umax:
                return np.int64(v)
    while True:
        v = next_uint64(st) & mask
        if v <= umax:
            return np.int64(v)


__all__ = ["STATE_WORDS", "next_double", "next_uint32", "next_uint64", "philox_block", "philox_seek",
           "random_interval"]
