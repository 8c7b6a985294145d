"""The spec's rules per transform type: source types and count, result type, default ids."""

from __future__ import annotations

import pyarrow as pa

from lance_sql.spec.partition_field import Transform
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
    if transform in ("bucket", "multi_bucket"):
        return _is_hashable(t)
    if transform == "truncate":
        return _is_string(t) or pa.types.is_integer(t) or pa.types.is_decimal(t)
    return False


def takes_sources(transform: str, count: int) -> bool:
    """Whether ``transform`` applies to ``count`` source columns."""
    return count >= 1 if transform == "multi_bucket" else count == 1


def default_field_id(transform: Transform, columns: str, taken: set[str]) -> str:
    """The field id a field of ``transform`` over ``columns`` gets when none is given."""
    t = transform
    if t.type == "identity":
        name = columns
    elif t.type in ("bucket", "multi_bucket"):
        name = f"{columns}_bucket_{t.num_buckets}"
    elif t.type == "truncate":
        name = f"{columns}_trunc_{t.width}"
    else:
        name = f"{columns}_{t.type}"
    # A default id must not be one an earlier field of another definition holds.
    if name in taken and t.type == "multi_bucket":
        name = f"{columns}_{t.type}_{t.num_buckets}"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def expected_result_type(transform: Transform, source_types: list[pa.DataType]) -> pa.DataType:
    """The result type the spec prescribes for ``transform`` over these sources."""
    if transform.type in ("identity", "truncate"):
        return source_types[0]
    return pa.int32()
