"""The spec's well-known partition transforms, vectorized (definitions: ``docs/hashing.md``).

Each equals DataFusion evaluating the spec's derived expression (:func:`derived_expression`),
except that results keep the source type where the spec says "same as source" (DataFusion
widens; the value always fits, since ``|x - x % W| <= |x|``). Array in, Array out;
ChunkedArray in, ChunkedArray out (same chunking).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

from udfs._kernels_proxy import kernels as _kernels
from udfs.canonical import _buffer_values
from udfs.errors import UnsupportedTypeError
from udfs.hashing import as_arrow, murmur3, murmur3_multi

_INT32_MAX = 2**31 - 1


def _per_chunk(
    values: pa.Array | pa.ChunkedArray, fn: Callable[[pa.Array], pa.Array], result_type: Any
) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([fn(c) for c in values.chunks], result_type)
    return fn(values)


def _with_validity(source: pa.Array, arrow_type: pa.DataType, data: np.ndarray) -> pa.Array:
    """An array of ``arrow_type`` from fixed-width ``data``, NULL where ``source`` is NULL."""
    buffers = [None, pa.py_buffer(np.ascontiguousarray(data))]
    if source.null_count:
        buffers[0] = source.is_valid().buffers()[1]
    return pa.Array.from_buffers(arrow_type, len(source), buffers, null_count=source.null_count)


def identity(values: Any) -> pa.Array | pa.ChunkedArray:
    """The source value unchanged."""
    return as_arrow(values)


# --- year / month / day / hour ---------------------------------------------------------


def _date_part(name: str, values: Any, *, in_day: bool = False) -> pa.Array | pa.ChunkedArray:
    """``date_part(name, x)``; ``in_day`` for a part within a day (hour), 0 on dates."""
    arr = as_arrow(values)
    t = arr.type
    if pat.is_null(t):
        return pa.nulls(len(arr), pa.int32())
    is_date = pat.is_date32(t) or pat.is_date64(t)
    is_time = pat.is_time32(t) or pat.is_time64(t)
    if not (is_date or pat.is_timestamp(t) or (is_time and in_day)):
        raise UnsupportedTypeError(name, t, "expects a date or timestamp")
    if is_date and in_day:
        # DataFusion: date_part('hour', <date>) is 0 (midnight), NULL for NULL; pyarrow
        # has no hour(date), so the date is read as the timestamp of its midnight.
        arr = arr.cast(pa.timestamp("ms"))
    return getattr(pc, name)(arr).cast(pa.int32())


def year(values: Any) -> pa.Array | pa.ChunkedArray:
    """``date_part('year', x)`` as int32 (local time for time-zone-aware timestamps)."""
    return _date_part("year", values)


def month(values: Any) -> pa.Array | pa.ChunkedArray:
    """``date_part('month', x)`` (1-12) as int32."""
    return _date_part("month", values)


def day(values: Any) -> pa.Array | pa.ChunkedArray:
    """``date_part('day', x)`` (day of month, 1-31) as int32."""
    return _date_part("day", values)


def hour(values: Any) -> pa.Array | pa.ChunkedArray:
    """``date_part('hour', x)`` (0-23) as int32; 0 for dates, like DataFusion."""
    return _date_part("hour", values, in_day=True)


# --- bucket / multi_bucket ----------------------------------------------------------


def _check_positive(name: str, key: str, value: Any, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: {key} must be a positive integer, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: {key} must be at most {maximum}, got {value!r}")
    return int(value)


def _bucket_of_hashes(hashes: pa.Array, n: int) -> pa.Array:
    h = _buffer_values(hashes, np.int32).astype(np.int64)
    buckets = (np.abs(h) % n).astype(np.int32)
    return _with_validity(hashes, pa.int32(), buckets)


def bucket(values: Any, num_buckets: int) -> pa.Array | pa.ChunkedArray:
    """``abs(murmur3(x)) % N`` with ``abs`` in 64 bits, int32; NULL for NULL."""
    n = _check_positive("bucket", "num_buckets", num_buckets, _INT32_MAX)
    return _per_chunk(murmur3(values), lambda h: _bucket_of_hashes(h, n), pa.int32())


def multi_bucket(columns: Sequence[Any], num_buckets: int) -> pa.Array | pa.ChunkedArray:
    """``abs(murmur3_multi(x0, x1, ...)) % N``; NULL only when every column is NULL."""
    n = _check_positive("multi_bucket", "num_buckets", num_buckets, _INT32_MAX)
    return _per_chunk(murmur3_multi(columns), lambda h: _bucket_of_hashes(h, n), pa.int32())


# --- truncate ---------------------------------------------------------------------


def _truncate_ints(arr: pa.Array, width: int) -> pa.Array:
    t = arr.type
    values = _buffer_values(arr, t.to_pandas_dtype())
    if pat.is_uint64(t):
        w = np.uint64(min(width, 2**64 - 1))
        result = values - values % w
    else:
        wide = values.astype(np.int64)
        if width > 2**63 - 1:
            result = np.zeros_like(wide)  # |x| < W: x % W == x
        else:
            result = wide - np.fmod(wide, np.int64(width))
    return _with_validity(arr, t, result.astype(values.dtype))


def _truncate_floats(arr: pa.Array, width: int) -> pa.Array:
    t = arr.type
    dtype = t.to_pandas_dtype()  # numpy's float16 too
    values = _buffer_values(arr, dtype)
    with np.errstate(invalid="ignore"):
        result = values - np.fmod(values, dtype(width))
    return _with_validity(arr, t, result.astype(dtype))


def _truncate_decimals(arr: pa.Array, width: int) -> pa.Array:
    """``x - (x % W)`` on the decimal *value* (W is ``W * 10**scale`` unscaled units;
    a negative scale would make it fractional: refused)."""
    t = arr.type
    if t.scale < 0:
        raise UnsupportedTypeError("truncate", t, "expects a decimal with a non-negative scale")
    width = width * 10**t.scale
    byte_width = t.byte_width
    raw = np.array(_buffer_values(arr, np.uint8, per_value=byte_width))  # a copy we modify
    if width < 2**32:
        _kernels.truncate_decimal(raw, byte_width, width)
    else:  # rare: widths beyond 32 bits use Python integers
        for i in range(len(arr)):
            chunk = raw[i * byte_width : (i + 1) * byte_width]
            v = int.from_bytes(chunk.tobytes(), "little", signed=True)
            r = abs(v) % width
            v = v - r if v >= 0 else v + r
            raw[i * byte_width : (i + 1) * byte_width] = np.frombuffer(
                v.to_bytes(byte_width, "little", signed=True), np.uint8
            )
    return _with_validity(arr, t, raw)


def _truncate_array(arr: pa.Array, width: int) -> pa.Array:
    t = arr.type
    if pat.is_dictionary(t):
        return pa.DictionaryArray.from_arrays(
            arr.indices, _truncate_array(arr.dictionary, width), ordered=t.ordered
        )
    if pat.is_null(t):
        return arr
    if pat.is_string(t) or pat.is_large_string(t):
        return pc.utf8_slice_codeunits(arr, 0, width)
    if pat.is_string_view(t):
        return pc.utf8_slice_codeunits(arr.cast(pa.large_string()), 0, width).cast(t)
    if pat.is_binary(t) or pat.is_large_binary(t):
        return pc.binary_slice(arr, 0, width)
    if pat.is_binary_view(t):
        return pc.binary_slice(arr.cast(pa.large_binary()), 0, width).cast(t)
    if pat.is_integer(t):
        return _truncate_ints(arr, width)
    if pat.is_floating(t):
        return _truncate_floats(arr, width)
    if pat.is_decimal128(t) or pat.is_decimal256(t):
        return _truncate_decimals(arr, width)
    raise UnsupportedTypeError("truncate", t, "expects a string, binary or number")


def truncate(values: Any, width: int) -> pa.Array | pa.ChunkedArray:
    """truncate[W]: ``left(x, W)`` for strings, W bytes for binaries, ``x - (x % W)`` else."""
    w = _check_positive("truncate", "width", width)
    arr = as_arrow(values)
    return _per_chunk(arr, lambda c: _truncate_array(c, w), arr.type)


# --- the spec's JSON transform object ---------------------------------------------------


def _get(transform: Any, key: str) -> Any:
    if isinstance(transform, Mapping):
        return transform.get(key)
    return getattr(transform, key, None)


def _one(kind: str, columns: list[Any]) -> Any:
    if len(columns) != 1:
        raise ValueError(f"transform {kind} needs exactly one source column, got {len(columns)}")
    return columns[0]


def _some(kind: str, columns: list[Any]) -> list[Any]:
    if not columns:
        raise ValueError(f"transform {kind} needs at least one source column")
    return columns


def _cols(n: int) -> str:
    return ", ".join(f"col{i}" for i in range(n))


_Apply = Callable[[list[Any], Any], Any]
_Derive = Callable[[Any, int], str]

#: The spec's transforms: type -> (apply to (source columns, transform object), the
#: derived DataFusion expression over ``col0, col1, ...`` given (transform object, arity)).
_TRANSFORMS: dict[str, tuple[_Apply, _Derive]] = {
    "identity": (lambda c, t: identity(_one("identity", c)), lambda t, n: "col0"),
    "year": (lambda c, t: year(_one("year", c)), lambda t, n: "date_part('year', col0)"),
    "month": (lambda c, t: month(_one("month", c)), lambda t, n: "date_part('month', col0)"),
    "day": (lambda c, t: day(_one("day", c)), lambda t, n: "date_part('day', col0)"),
    "hour": (lambda c, t: hour(_one("hour", c)), lambda t, n: "date_part('hour', col0)"),
    "bucket": (
        lambda c, t: bucket(_one("bucket", c), _get(t, "num_buckets")),
        lambda t, n: f"abs(murmur3(col0)) % {_get(t, 'num_buckets')}",
    ),
    "multi_bucket": (
        lambda c, t: multi_bucket(_some("multi_bucket", c), _get(t, "num_buckets")),
        lambda t, n: f"abs(murmur3_multi({_cols(n)})) % {_get(t, 'num_buckets')}",
    ),
    "truncate": (
        lambda c, t: truncate(_one("truncate", c), _get(t, "width")),
        lambda t, n: f"left(col0, {_get(t, 'width')}) or col0 - (col0 % {_get(t, 'width')})",
    ),
}
TRANSFORM_TYPES = tuple(_TRANSFORMS)


def _entry(transform: Any) -> tuple[_Apply, _Derive]:
    kind = _get(transform, "type")
    if kind not in _TRANSFORMS:
        raise ValueError(f"unknown transform type {kind!r}; expected one of {TRANSFORM_TYPES}")
    return _TRANSFORMS[kind]


def derived_expression(transform: Mapping[str, Any] | Any, num_columns: int = 1) -> str:
    """The spec's derived DataFusion expression of a transform (for messages and checks)."""
    return _entry(transform)[1](transform, num_columns)


def apply_transform(
    transform: Mapping[str, Any] | Any, columns: Sequence[Any]
) -> pa.Array | pa.ChunkedArray:
    """Apply a spec transform ``{"type": ..., "num_buckets": N, "width": W}`` (or an object
    with those attributes) to the source ``columns``, in ``source_ids`` order."""
    return _entry(transform)[0](list(columns), transform)
