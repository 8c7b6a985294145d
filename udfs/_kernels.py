"""Compiled MurmurHash3 (x86, 32-bit, seed 0) kernels over canonical bytes.

numba, because a per-value Python loop or a numpy formulation is several times slower;
every kernel is ``nogil`` so DataFusion can call them from several partitions at once.
Arithmetic is in ``uint64`` masked to 32 bits (numba's mixed ``uint32`` promotion is
easy to get wrong). ``feed_*`` / ``finish`` keep a per-row state for ``murmur3_multi``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_C1 = np.uint64(0xCC9E2D51)
_C2 = np.uint64(0x1B873593)
_M32 = np.uint64(0xFFFFFFFF)
_N = np.uint64(0xE6546B64)
_F1 = np.uint64(0x85EBCA6B)
_F2 = np.uint64(0xC2B2AE35)


@njit(nogil=True, cache=True, inline="always")
def _rotl(x, r):
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _M32


@njit(nogil=True, cache=True, inline="always")
def _mix_k(k):
    k = (k * _C1) & _M32
    k = _rotl(k, 15)
    return (k * _C2) & _M32


@njit(nogil=True, cache=True, inline="always")
def _mix_h(h, k):
    h ^= _mix_k(k)
    h = _rotl(h, 13)
    return (h * np.uint64(5) + _N) & _M32


@njit(nogil=True, cache=True, inline="always")
def _finish(h, tail, tail_len, length):
    if tail_len > 0:
        h ^= _mix_k(tail)
    h ^= np.uint64(length) & _M32
    h ^= h >> np.uint64(16)
    h = (h * _F1) & _M32
    h ^= h >> np.uint64(13)
    h = (h * _F2) & _M32
    h ^= h >> np.uint64(16)
    return h


@njit(nogil=True, cache=True)
def hash_int_values(values, out):
    """out[i] = murmur3 of the 8 little-endian bytes of ``values[i]`` widened to int64."""
    for i in range(values.shape[0]):
        w = np.uint64(np.int64(values[i]))
        h = _mix_h(np.uint64(0), w & _M32)
        h = _mix_h(h, w >> np.uint64(32))
        out[i] = np.uint32(_finish(h, np.uint64(0), 0, 8))


@intrinsic
def _load_u32(typingctx, data, p):
    """The 4 bytes of uint8 ``data`` at ``p`` as one unaligned little-endian load
    (LLVM does not merge four byte loads here: a third of the string hash's time)."""
    if not (
        isinstance(data, types.Array)
        and data.ndim == 1
        and data.layout == "C"
        and data.dtype == types.uint8
    ):
        return None
    sig = types.uint64(data, p)

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        address = builder.gep(array.data, [args[1]])
        word = builder.load(builder.bitcast(address, ir.IntType(32).as_pointer()), align=1)
        return builder.zext(word, ir.IntType(64))

    return sig, codegen


@njit(nogil=True, cache=True)
def hash_bytes(offsets, data, out):
    """out[i] = murmur3 of ``data[offsets[i]:offsets[i+1]]`` (C-contiguous ``data``).

    The 0-3 byte tail is read as one masked word when 4 bytes are left (no branch on
    short strings); ``_mix_k(0) == 0``, so an empty tail needs no test.
    """
    size = data.shape[0]
    for i in range(out.shape[0]):
        start = np.int64(offsets[i])
        end = np.int64(offsets[i + 1])
        n = end - start
        h = np.uint64(0)
        p = start
        stop = start + (n & ~np.int64(3))
        while p < stop:
            h = _mix_h(h, _load_u32(data, p))
            p += 4
        rem = end - stop
        if p + 4 <= size:
            tail = _load_u32(data, p) & ((np.uint64(1) << np.uint64(8 * rem)) - np.uint64(1))
        else:
            tail = np.uint64(0)
            for j in range(rem):
                tail |= np.uint64(data[p + j]) << np.uint64(8 * j)
        out[i] = np.uint32(_finish(h, tail, 1, n))


@njit(nogil=True, cache=True)
def decimal_to_bytes(raw, width):
    """Canonical bytes of the ``n * width``-byte ``raw`` little-endian integers: (offsets, data),
    each the shortest big-endian two's complement (Java's ``BigInteger.toByteArray()``)."""
    n = raw.shape[0] // width
    lengths = np.empty(n, np.int64)
    for i in range(n):
        base = i * width
        k = width - 1
        while k > 0:
            top = raw[base + k]
            nxt = raw[base + k - 1]
            if (top == 0 and nxt < 0x80) or (top == 0xFF and nxt >= 0x80):
                k -= 1
            else:
                break
        lengths[i] = k + 1
    offsets = np.empty(n + 1, np.int64)
    offsets[0] = 0
    for i in range(n):
        offsets[i + 1] = offsets[i] + lengths[i]
    data = np.empty(offsets[n], np.uint8)
    for i in range(n):
        base = i * width
        pos = offsets[i]
        for j in range(lengths[i]):
            data[pos + j] = raw[base + lengths[i] - 1 - j]
    return offsets, data


@njit(nogil=True, cache=True, inline="always")
def _feed_byte(h, tail, tail_len, b):
    tail |= np.uint64(b) << np.uint64(8 * tail_len)
    tail_len += 1
    if tail_len == 4:
        h = _mix_h(h, tail)
        tail = np.uint64(0)
        tail_len = 0
    return h, tail, tail_len


@njit(nogil=True, cache=True)
def feed_words(state_h, state_tail, state_tail_len, state_len, values, valid):
    """Append the 8 LE bytes of int64 ``values[i]`` to row i's stream where ``valid[i]``."""
    for i in range(values.shape[0]):
        if not valid[i]:
            continue
        w = np.uint64(values[i])
        h = state_h[i]
        tail = state_tail[i]
        tl = state_tail_len[i]
        if tl == 0:
            h = _mix_h(h, w & _M32)
            h = _mix_h(h, w >> np.uint64(32))
        else:
            for j in range(8):
                h, tail, tl = _feed_byte(h, tail, tl, (w >> np.uint64(8 * j)) & np.uint64(0xFF))
        state_h[i] = h
        state_tail[i] = tail
        state_tail_len[i] = tl
        state_len[i] += 8


@njit(nogil=True, cache=True)
def feed_bytes(state_h, state_tail, state_tail_len, state_len, offsets, data, valid):
    """Append ``data[offsets[i]:offsets[i+1]]`` to row i's stream where ``valid[i]``."""
    for i in range(valid.shape[0]):
        if not valid[i]:
            continue
        start = np.int64(offsets[i])
        end = np.int64(offsets[i + 1])
        h = state_h[i]
        tail = state_tail[i]
        tl = state_tail_len[i]
        for p in range(start, end):
            h, tail, tl = _feed_byte(h, tail, tl, data[p])
        state_h[i] = h
        state_tail[i] = tail
        state_tail_len[i] = tl
        state_len[i] += end - start


@njit(nogil=True, cache=True)
def finish_streams(state_h, state_tail, state_tail_len, state_len, out):
    for i in range(out.shape[0]):
        out[i] = np.uint32(_finish(state_h[i], state_tail[i], state_tail_len[i], state_len[i]))


@njit(nogil=True, cache=True)
def truncate_decimal(raw, width, w):
    """In place on ``raw``: each ``width``-byte integer minus (value % w), the remainder with
    the value's sign (toward zero, as DataFusion's ``%``); ``w`` in [1, 2**32)."""
    n = raw.shape[0] // width
    limbs = width // 4
    mag = np.empty(limbs, np.uint64)
    for i in range(n):
        base = i * width
        neg = raw[base + width - 1] >= 0x80
        # magnitude as little-endian 32-bit limbs
        carry = np.uint64(1)
        for li in range(limbs):
            v = (
                np.uint64(raw[base + 4 * li])
                | (np.uint64(raw[base + 4 * li + 1]) << np.uint64(8))
                | (np.uint64(raw[base + 4 * li + 2]) << np.uint64(16))
                | (np.uint64(raw[base + 4 * li + 3]) << np.uint64(24))
            )
            if neg:
                v = (v ^ _M32) + carry
                carry = v >> np.uint64(32)
                v &= _M32
            mag[li] = v
        r = np.uint64(0)
        for li in range(limbs - 1, -1, -1):
            r = ((r << np.uint64(32)) | mag[li]) % np.uint64(w)
        # magnitude -= r
        borrow = r
        for li in range(limbs):
            v = mag[li]
            if v >= borrow:
                mag[li] = v - borrow
                borrow = np.uint64(0)
            else:
                mag[li] = v + (np.uint64(1) << np.uint64(32)) - borrow
                borrow = np.uint64(1)
        carry = np.uint64(1)
        for li in range(limbs):
            v = mag[li]
            if neg:
                v = (v ^ _M32) + carry
                carry = v >> np.uint64(32)
                v &= _M32
            for b in range(4):
                raw[base + 4 * li + b] = np.uint8((v >> np.uint64(8 * b)) & np.uint64(0xFF))
