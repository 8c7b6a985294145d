"""Which source types each transform accepts, and the result type it yields."""

from __future__ import annotations

import pyarrow as pa

from lance_sql.spec.partition_field import BUCKET_TRANSFORMS, Transform
from udfs.canonical import is_supported


def _is_hashable(t: pa.DataType) -> bool:
    """Types murmur3 has canonical bytes for (design notes 2.1; decided in udfs.canonical)."""
    return is_supported(t) and not pa.types.is_null(t)


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def is_nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t) or pa.types.is_dictionary(t)


def accepts_source(transform: str, t: pa.DataType) -> bool:
    if transform == "identity":
        return not is_nested(t)
    if transform in ("year", "month", "day"):
        return pa.types.is_date(t) or pa.types.is_timestamp(t)
    if transform == "hour":
        return pa.types.is_timestamp(t)
    if transform in BUCKET_TRANSFORMS:
        return _is_hashable(t)
    if transform == "truncate":
        return _is_string(t) or pa.types.is_integer(t) or pa.types.is_decimal(t)
    return False


def expected_result_type(transform: Transform, source_types: list[pa.DataType]) -> pa.DataType:
    """The result type the spec prescribes for ``transform`` over these sources."""
    if transform.type in ("identity", "truncate"):
        return source_types[0]
    return pa.int32()
