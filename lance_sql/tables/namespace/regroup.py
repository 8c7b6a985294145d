"""Reorder a batch so each partition's rows are contiguous, in one pass per column.

A counting-sort scatter reads each column once (``pc.take`` per partition reads the
source once per partition), on threads; each partition is then a zero-copy slice.
Fixed-width and utf8/binary columns without NULLs are scattered natively; anything else
falls back to ``pc.take`` with the same permutation (identical results).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.spec.arrow_types import scalar_kind, supports

_kernels = None


def _compiled():  # type: ignore[no-untyped-def]
    """Compile (or load from numba's cache) the kernels on first use."""
    global _kernels
    if _kernels is not None:
        return _kernels
    from udfs._kernels_proxy import ensure_numba

    ensure_numba()  # numba must capture the builtin operator functions (see there)
    from numba import njit

    @njit(nogil=True, cache=True)
    def destinations(codes, starts):  # type: ignore[no-untyped-def]
        cursor = starts.copy()
        dest = np.empty(len(codes), np.int64)
        first = np.full(len(starts), -1, np.int64)  # source row of each group's first row
        for i in range(len(codes)):
            c = codes[i]
            if first[c] < 0:
                first[c] = i
            dest[i] = cursor[c]
            cursor[c] += 1
        return dest, first

    @njit(nogil=True, cache=True)
    def scatter_fixed(src, dest, out):  # type: ignore[no-untyped-def]
        # src/out are 2-D uint8 views (rows x value width) or 1-D typed arrays
        for i in range(len(dest)):
            out[dest[i]] = src[i]

    @njit(nogil=True, cache=True)
    def scatter_offsets(offsets, dest, out_offsets):  # type: ignore[no-untyped-def]
        n = len(dest)
        lengths = np.empty(n, out_offsets.dtype)
        for i in range(n):
            lengths[dest[i]] = offsets[i + 1] - offsets[i]
        out_offsets[0] = 0
        for j in range(n):
            out_offsets[j + 1] = out_offsets[j] + lengths[j]

    @njit(nogil=True, cache=True)
    def scatter_bytes(offsets, data, dest, out_offsets, out_data, lo, hi):  # type: ignore[no-untyped-def]
        for i in range(lo, hi):
            start = offsets[i]
            end = offsets[i + 1]
            at = out_offsets[dest[i]]
            out_data[at : at + (end - start)] = data[start:end]

    _kernels = (destinations, scatter_fixed, scatter_offsets, scatter_bytes)
    return _kernels


def _binary_like(t: pa.DataType) -> bool:
    return scalar_kind(t) in ("string", "binary")  # (not views: no offsets buffer)


def _has_nulls(arr: pa.Array) -> bool:
    return arr.null_count > 0


class _Order:
    """The gather permutation, built only if some column needs the ``take`` fallback."""

    def __init__(self, dest: np.ndarray) -> None:
        self._dest = dest
        self._order: pa.Array | None = None

    def get(self) -> pa.Array:
        if self._order is None:
            order = np.empty_like(self._dest)
            order[self._dest] = np.arange(len(self._dest), dtype=np.int64)
            self._order = pa.array(order)
        return self._order


def _scatter_column(
    arr: pa.Array, dest: np.ndarray, order: _Order, pool: ThreadPoolExecutor | None
) -> pa.Array:
    t = arr.type
    _, scatter_fixed, scatter_offsets, scatter_bytes = _compiled()
    if _has_nulls(arr):
        return pc.take(arr, order.get(), boundscheck=False)
    n = len(arr)
    if supports("fixed_width", t):
        width = t.bit_width // 8
        buf = arr.buffers()[1]
        src = np.frombuffer(buf, np.uint8, count=(arr.offset + n) * width, offset=0)
        src = src[arr.offset * width :]
        out = np.empty(n * width, np.uint8)
        if width in (1, 2, 4, 8):
            dt = np.dtype(f"u{width}")
            scatter_fixed(src.view(dt), dest, out.view(dt))
        else:
            scatter_fixed(src.reshape(n, width), dest, out.reshape(n, width))
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(out)])
    if _binary_like(t):
        odt = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) else np.int32
        bufs = arr.buffers()
        offsets = np.frombuffer(bufs[1], odt, count=arr.offset + n + 1)[arr.offset :]
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        out_offsets = np.empty(n + 1, odt)
        scatter_offsets(offsets, dest, out_offsets)
        out_data = np.empty(int(out_offsets[-1]), np.uint8)
        if pool is None or n < 100_000:
            scatter_bytes(offsets, data, dest, out_offsets, out_data, 0, n)
        else:  # the costliest column: copy its two halves on two threads
            half = n // 2
            job = pool.submit(scatter_bytes, offsets, data, dest, out_offsets, out_data, half, n)
            scatter_bytes(offsets, data, dest, out_offsets, out_data, 0, half)
            job.result()
        return pa.Array.from_buffers(
            t, n, [None, pa.py_buffer(out_offsets), pa.py_buffer(out_data)]
        )
    return pc.take(arr, order.get(), boundscheck=False)


def regroup(
    batch: pa.RecordBatch, codes: np.ndarray, counts: np.ndarray, threads: int = 2
) -> tuple[pa.RecordBatch, np.ndarray]:
    """``batch`` with rows ordered by ``codes`` (dense group numbers, stable), group ``g``
    holding ``counts[g]`` rows, and each group's first source row (-1: empty group)."""
    destinations = _compiled()[0]
    starts = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    dest, first = destinations(codes.astype(np.int64, copy=False), starts)
    order = _Order(dest)
    columns = [batch.column(i) for i in range(batch.num_columns)]
    if threads > 1 and batch.num_rows >= 200_000:  # below that a pool costs more than it saves
        # Variable-width columns cost the most: this thread copies them (half of each
        # on a pool thread); the pool scatters the rest meanwhile.
        heavy = {i for i, c in enumerate(columns) if _binary_like(c.type)}
        with ThreadPoolExecutor(threads) as pool:
            jobs = {
                i: pool.submit(_scatter_column, c, dest, order, None)
                for i, c in enumerate(columns)
                if i not in heavy
            }
            done = {i: _scatter_column(columns[i], dest, order, pool) for i in sorted(heavy)}
            out = [done[i] if i in done else jobs[i].result() for i in range(len(columns))]
    else:
        out = [_scatter_column(c, dest, order, None) for c in columns]
    return pa.RecordBatch.from_arrays(out, schema=batch.schema), first
