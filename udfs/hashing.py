"""``murmur3`` and ``murmur3_multi`` over Arrow arrays (definitions: ``docs/hashing.md``).

An ``Array`` gives an ``Array``, a ``ChunkedArray`` a ``ChunkedArray`` with the same
chunking; ``murmur3_multi`` with any chunked input is chunked at the union of all
inputs' chunk boundaries. Sequences and numpy arrays are converted with ``pa.array``.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from udfs._kernels_proxy import kernels as _kernels
from udfs.canonical import Bytes, Words, _buffer_values, canonical, is_supported, valid_mask
from udfs.errors import UnsupportedTypeError

_INT32 = pa.int32()
_WORKERS = max(1, min(os.cpu_count() or 1, 8))
_PARALLEL_MIN_ROWS = 1 << 18
_EXECUTOR: list[ThreadPoolExecutor] = []
_EXECUTOR_LOCK = threading.Lock()


def as_arrow(values: Any) -> pa.Array | pa.ChunkedArray:
    """Accept Arrow arrays as they are; convert anything else with ``pa.array``."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if isinstance(values, pa.Scalar):
        return pa.array([values.as_py()], values.type)
    return pa.array(values)


def _empty_hashes(n: int) -> np.ndarray:
    """A uint32 output array from pyarrow's memory pool: numpy would ``mmap`` fresh pages per
    batch (costlier than the hash), and a pool buffer is freed by DataFusion without the GIL."""
    return np.frombuffer(pa.allocate_buffer(4 * n), dtype=np.uint32)


def _int32_array(hashes: np.ndarray, valid: pa.Array | None) -> pa.Array:
    """Wrap kernel output (uint32) as an int32 array, taking validity from ``valid``."""
    base = hashes.base
    if isinstance(base, pa.Buffer) and base.size == hashes.nbytes:
        data = base  # from _empty_hashes: no Python owner
    else:
        data = pa.py_buffer(hashes)  # uint32 bits are the int32 values
    if valid is None:
        return pa.Array.from_buffers(_INT32, len(hashes), [None, data], null_count=0)
    return pa.Array.from_buffers(_INT32, len(hashes), [valid.buffers()[1], data], null_count=-1)


_WARM: set[tuple[Any, ...]] = set()
_WARM_LOCK = threading.Lock()


def _warm(kernel: Any, *args: np.ndarray) -> None:
    """Run ``kernel`` once under a lock before threads share it: numba's first compile or
    cache load of a signature is not thread-safe (two threads raced to "ValueError:
    generator already executing" in a fresh process). ``args`` is a one-value slice."""
    key = (id(kernel), *(a.dtype.str for a in args))
    if key in _WARM:
        return
    with _WARM_LOCK:
        if key not in _WARM:
            kernel(*args)
            _WARM.add(key)


#: Arrays of at most this many values are hashed in Python: planning hashes a filter's
#: few literals (``bucket(17)``) without importing numba.
_PYTHON_MAX_ROWS = 16


def murmur3_bytes(data: bytes) -> int:
    """MurmurHash3 x86 32-bit, seed 0, of ``data``, as uint32 (the kernels' result)."""
    m, h, n, c1, c2 = 0xFFFFFFFF, 0, len(data), 0xCC9E2D51, 0x1B873593
    body = n - n % 4
    for i in range(0, body, 4):
        k = int.from_bytes(data[i : i + 4], "little") * c1 & m
        k = ((k << 15) | (k >> 17)) & m
        h ^= k * c2 & m
        h = ((h << 13) | (h >> 19)) & m
        h = (h * 5 + 0xE6546B64) & m
    if n % 4:
        k = int.from_bytes(data[body:], "little") * c1 & m
        k = ((k << 15) | (k >> 17)) & m
        h ^= k * c2 & m
    h ^= n
    h = (h ^ (h >> 16)) * 0x85EBCA6B & m
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & m
    return h ^ (h >> 16)


def _hash_range_python(form: Words | Bytes, out: np.ndarray, start: int, stop: int) -> None:
    """:func:`_hash_range` in Python, for a few values (same results as the kernels)."""
    for i in range(start, stop):
        if isinstance(form, Words):
            data = (int(form.values[i]) & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
        else:
            data = form.data[int(form.offsets[i]) : int(form.offsets[i + 1])].tobytes()
        out[i] = murmur3_bytes(data)


def _hash_range(form: Words | Bytes, out: np.ndarray, start: int, stop: int) -> None:
    if stop <= start:
        return
    if stop - start <= _PYTHON_MAX_ROWS:
        _hash_range_python(form, out, start, stop)
        return
    if isinstance(form, Words):
        values = form.values[start:stop]
        _warm(_kernels.hash_int_values, values[:1], out[start : start + 1])
        _kernels.hash_int_values(values, out[start:stop])
    else:
        data = np.ascontiguousarray(form.data)  # the kernel's word loads need stride 1
        offsets = form.offsets[start : stop + 1]
        _warm(_kernels.hash_bytes, offsets[:2], data, out[start : start + 1])
        _kernels.hash_bytes(offsets, data, out[start:stop])


def _executor() -> ThreadPoolExecutor:
    with _EXECUTOR_LOCK:
        if not _EXECUTOR:
            _EXECUTOR.append(ThreadPoolExecutor(_WORKERS, thread_name_prefix="udfs-murmur3"))
        return _EXECUTOR[0]


def _hash_canonical(form: Words | Bytes, n: int) -> np.ndarray:
    """Hash every value. Large arrays are split over the cores (kernels release the GIL);
    small ones (DataFusion's batches) run in the calling thread."""
    out = _empty_hashes(n)
    parts = min(_WORKERS, n // _PARALLEL_MIN_ROWS)
    if parts < 2:
        _hash_range(form, out, 0, n)
        return out
    cuts = [n * k // parts for k in range(parts + 1)]
    futures = [
        _executor().submit(_hash_range, form, out, a, b) for a, b in itertools.pairwise(cuts)
    ]
    for future in futures:
        future.result()
    return out


#: Integer types whose buffer *is* the canonical form (widened to int64 inside the kernel).
_PLAIN_INTEGERS = {
    t.id: np.dtype(t.to_pandas_dtype())
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32())
}
_PLAIN_INTEGERS[pa.uint64().id] = np.dtype(np.int64)  # its 8 LE bytes, reinterpreted


def _murmur3_plain_integers(arr: pa.Array, dtype: np.dtype) -> pa.Array:
    """The fast path for integer arrays (the common case in SQL, one call per batch): the
    general path's result, hashed straight into the output buffer."""
    n = len(arr)
    values = _buffer_values(arr, dtype)
    if n >= 2 * _PARALLEL_MIN_ROWS or n <= _PYTHON_MAX_ROWS:
        hashes = _hash_canonical(Words(values), n)
    else:
        hashes = _empty_hashes(n)
        if n:
            _warm(_kernels.hash_int_values, values[:1], hashes[:1])
        _kernels.hash_int_values(values, hashes)
    return _int32_array(hashes, arr.is_valid() if arr.null_count else None)


def _murmur3_array(arr: pa.Array) -> pa.Array:
    t = arr.type
    plain = _PLAIN_INTEGERS.get(t.id)
    if plain is not None:
        return _murmur3_plain_integers(arr, plain)
    if pat.is_dictionary(t):
        if not is_supported(t.value_type):
            raise UnsupportedTypeError("murmur3", t)
        hashed_dictionary = _murmur3_array(arr.dictionary)
        return hashed_dictionary.take(arr.indices)
    form = canonical(arr, "murmur3")
    n = len(arr)
    if form is None:
        return pa.nulls(n, pa.int32())
    hashes = _hash_canonical(form, n)
    return _int32_array(hashes, arr.is_valid() if arr.null_count else None)


def murmur3(values: Any) -> pa.Array | pa.ChunkedArray:
    """murmur3 of every value: int32, NULL for NULL. Array in, Array out; chunked stays chunked."""
    arr = values if isinstance(values, pa.Array) else as_arrow(values)
    if isinstance(arr, pa.ChunkedArray):
        if not is_supported(arr.type):
            raise UnsupportedTypeError("murmur3", arr.type)
        return pa.chunked_array([_murmur3_array(c) for c in arr.chunks], pa.int32())
    return _murmur3_array(arr)


def _boundaries(columns: Sequence[pa.Array | pa.ChunkedArray]) -> list[int]:
    cuts: set[int] = set()
    for col in columns:
        if isinstance(col, pa.ChunkedArray):
            pos = 0
            for chunk in col.chunks:
                pos += len(chunk)
                cuts.add(pos)
    return sorted(c for c in cuts if c > 0)


def _piece(col: pa.Array | pa.ChunkedArray, start: int, length: int) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        sliced = col.slice(start, length)
        if sliced.num_chunks == 1:
            return sliced.chunk(0)
        if sliced.num_chunks == 0:
            return pa.array([], col.type)
        return pa.concat_arrays(sliced.chunks)  # unreachable with common boundaries
    return col.slice(start, length)


def _murmur3_multi_arrays(columns: Sequence[pa.Array], n: int) -> pa.Array:
    state_h = np.zeros(n, dtype=np.uint64)
    state_tail = np.zeros(n, dtype=np.uint64)
    state_tail_len = np.zeros(n, dtype=np.int64)
    state_len = np.zeros(n, dtype=np.int64)
    any_valid = np.zeros(n, dtype=np.bool_)
    all_rows = np.ones(n, dtype=np.bool_)
    for col in columns:
        if pat.is_dictionary(col.type):
            col = col.dictionary_decode()
        form = canonical(col, "murmur3_multi")
        if form is None:
            continue
        mask = valid_mask(col)
        valid = all_rows if mask is None else mask
        any_valid |= valid
        if isinstance(form, Words):
            values = form.values.astype(np.int64, copy=False)
            _kernels.feed_words(state_h, state_tail, state_tail_len, state_len, values, valid)
        else:
            _kernels.feed_bytes(
                state_h, state_tail, state_tail_len, state_len, form.offsets, form.data, valid
            )
    out = _empty_hashes(n)
    _kernels.finish_streams(state_h, state_tail, state_tail_len, state_len, out)
    if bool(any_valid.all()):
        return _int32_array(out, None)
    return _int32_array(out, pa.array(any_valid))


def murmur3_multi(columns: Sequence[Any]) -> pa.Array | pa.ChunkedArray:
    """murmur3 over the concatenated canonical bytes of the non-NULL arguments of each row.

    NULL only where every argument is NULL. All columns must have the same length.
    """
    if isinstance(columns, (pa.Array, pa.ChunkedArray)) or not len(columns):
        raise ValueError("murmur3_multi needs a non-empty sequence of columns")
    cols = [as_arrow(c) for c in columns]
    for col in cols:
        if not is_supported(col.type):
            raise UnsupportedTypeError("murmur3_multi", col.type)
    n = len(cols[0])
    for i, col in enumerate(cols):
        if len(col) != n:
            raise ValueError(f"murmur3_multi: column {i} has {len(col)} values, column 0 has {n}")
    if not any(isinstance(c, pa.ChunkedArray) for c in cols):
        return _murmur3_multi_arrays(cols, n)
    chunks = []
    start = 0
    for end in _boundaries(cols):
        pieces = [_piece(c, start, end - start) for c in cols]
        chunks.append(_murmur3_multi_arrays(pieces, end - start))
        start = end
    return pa.chunked_array(chunks, pa.int32())
