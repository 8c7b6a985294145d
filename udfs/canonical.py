"""Canonical bytes: what each Arrow value hashes as (the table is in ``docs/hashing.md``).

Values map straight from the Arrow buffers (values under NULL slots too, masked later)
to ``Words`` (one int64 per value, hashed as 8 little-endian bytes) or ``Bytes``
(``offsets`` into ``data``). Dictionaries are not mapped here: callers hash the
dictionary once and take by index, or decode first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from udfs._kernels_proxy import kernels as _kernels
from udfs.errors import UnsupportedTypeError

_CANONICAL_NAN = np.int64(0x7FF8000000000000)
_MICROS_PER = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": None}
_MS_PER_DAY = 86_400_000


@dataclass(frozen=True)
class Words:
    """One integer per value, hashed as the value widened to int64 (8 bytes LE)."""

    values: np.ndarray


@dataclass(frozen=True)
class Bytes:
    """Variable-length canonical bytes: value i is ``data[offsets[i]:offsets[i+1]]``."""

    offsets: np.ndarray
    data: np.ndarray


Canonical = Words | Bytes | None  # None: the null type (every value NULL)


def is_supported(arrow_type: pa.DataType) -> bool:
    """Whether murmur3 defines canonical bytes for ``arrow_type`` (dictionaries included)."""
    if pat.is_dictionary(arrow_type):
        return is_supported(arrow_type.value_type)
    return arrow_type.id in _KIND_BY_ID


# Arrow type ids are per type class (every timestamp unit/zone shares one id), so
# one representative per class maps ids to kinds: a dict lookup per call instead of
# a chain of predicates (this runs once per DataFusion batch).
_KINDS: dict[str, tuple[pa.DataType, ...]] = {
    "null": (pa.null(),),
    "bool": (pa.bool_(),),
    "int": (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()),
    "uint64": (pa.uint64(),),  # its 8 LE bytes, reinterpreted
    "float": (pa.float16(), pa.float32(), pa.float64()),
    "decimal": (pa.decimal128(1, 0), pa.decimal256(1, 0)),
    "date32": (pa.date32(),),
    "date64": (pa.date64(),),
    "temporal": (pa.time32("s"), pa.time64("us"), pa.timestamp("us"), pa.duration("us")),
    "var32": (pa.string(), pa.binary()),
    "var64": (pa.large_string(), pa.large_binary()),
    "view": (pa.string_view(), pa.binary_view()),
    "fixed": (pa.binary(1),),
}
_KIND_BY_ID = {t.id: kind for kind, types in _KINDS.items() for t in types}


def _buffer_values(arr: pa.Array, dtype: np.dtype | type, per_value: int = 1) -> np.ndarray:
    """The data buffer of a fixed-width array as numpy, honouring the slice offset."""
    n = len(arr)
    buf = arr.buffers()[1]
    if buf is None or n == 0:
        return np.zeros(n * per_value, dtype=dtype)
    start = arr.offset * per_value
    return np.frombuffer(buf, dtype=dtype, count=start + n * per_value)[start:]


def _bool_values(arr: pa.Array) -> np.ndarray:
    n = len(arr)
    buf = arr.buffers()[1]
    if buf is None or n == 0:
        return np.zeros(n, dtype=np.uint8)
    bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + n]


def _to_micros(values: np.ndarray, unit: str) -> np.ndarray:
    factor = _MICROS_PER[unit]
    if factor is None:
        return values // 1000  # numpy floor division: ns before 1970 round down
    if factor == 1:
        return values
    return values * np.int64(factor)


def canonical_float_bits(values: np.ndarray) -> np.ndarray:
    """float -> float64 with -0.0 made 0.0 and every NaN the canonical quiet NaN, as int64."""
    f = values.astype(np.float64)  # always a copy we may modify
    f[f == 0.0] = 0.0
    bits = f.view(np.int64)
    bits[np.isnan(f)] = _CANONICAL_NAN
    return bits


def canonical(arr: pa.Array, function: str = "murmur3") -> Canonical:
    """Map a (non-dictionary, non-chunked) array to its canonical form."""
    t = arr.type
    kind = _KIND_BY_ID.get(t.id)
    if kind == "null":
        return None
    if kind == "bool":
        return Words(_bool_values(arr))
    if kind == "int":
        return Words(_buffer_values(arr, t.to_pandas_dtype()))
    if kind == "uint64":
        return Words(_buffer_values(arr, np.int64))  # the 8 LE bytes, reinterpreted
    if kind == "float":
        return Words(canonical_float_bits(_buffer_values(arr, t.to_pandas_dtype())))
    if kind == "decimal":
        width = t.byte_width
        raw = _buffer_values(arr, np.uint8, per_value=width)
        offsets, data = _kernels.decimal_to_bytes(np.ascontiguousarray(raw), width)
        return Bytes(offsets, data)
    if kind == "date32":
        return Words(_buffer_values(arr, np.int32))
    if kind == "date64":
        return Words(_buffer_values(arr, np.int64) // _MS_PER_DAY)
    if kind == "temporal":
        dtype = np.int32 if t.bit_width == 32 else np.int64
        return Words(_to_micros(_buffer_values(arr, dtype).astype(np.int64, copy=False), t.unit))
    if kind in ("var32", "var64"):
        n = len(arr)
        bufs = arr.buffers()
        off_dtype = np.int32 if kind == "var32" else np.int64
        if bufs[1] is None or n == 0:
            return Bytes(np.zeros(n + 1, dtype=off_dtype), np.zeros(0, dtype=np.uint8))
        offsets = np.frombuffer(bufs[1], dtype=off_dtype, count=arr.offset + n + 1)[arr.offset :]
        data = (
            np.frombuffer(bufs[2], dtype=np.uint8)
            if bufs[2] is not None and bufs[2].size
            else np.zeros(0, dtype=np.uint8)
        )
        return Bytes(offsets, data)
    if kind == "view":
        target = pa.large_string() if pat.is_string_view(t) else pa.large_binary()
        return canonical(arr.cast(target), function)
    if kind == "fixed":
        width = t.byte_width
        raw = _buffer_values(arr, np.uint8, per_value=width)
        offsets = np.arange(len(arr) + 1, dtype=np.int64) * width
        return Bytes(offsets, np.ascontiguousarray(raw))
    raise UnsupportedTypeError(function, t)


def valid_mask(arr: pa.Array) -> np.ndarray | None:
    """A numpy bool array of non-NULL slots, or None when there are no NULLs."""
    if arr.null_count == 0:
        return None
    return arr.is_valid().to_numpy(zero_copy_only=False)
