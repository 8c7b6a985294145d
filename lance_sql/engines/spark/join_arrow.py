"""One join group joined inside a Spark task with Arrow's hash join (Acero).

Acero joins row numbers and the columns are gathered with ``take`` (it refuses lists
and structs as payload). Spark's semantics: a NULL key matches nothing, ``-0.0`` equals
``0.0``, NaN equals NaN, integers compare across widths and signs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.spec.arrow_types import supports

_ACERO_HOW = {
    "inner": "inner",
    "left": "left outer",
    "right": "right outer",
    "full": "full outer",
    "semi": "left semi",
    "anti": "left anti",
}


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _common_key_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type both sides' keys are compared as, or None when this module does not join them."""
    a, b = _value_type(a), _value_type(b)
    if not (supports("join_key", a) and supports("join_key", b)):
        return None
    if a.equals(b):
        return a
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        if not (pa.types.is_uint64(a) or pa.types.is_uint64(b)):
            return pa.int64()
        unsigned = pa.types.is_unsigned_integer(a) and pa.types.is_unsigned_integer(b)
        return pa.uint64() if unsigned else pa.decimal128(20, 0)  # Spark: DECIMAL(20,0)
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        return pa.float64()
    if {str(a), str(b)} <= {"string", "large_string"}:
        return pa.large_string()
    if {str(a), str(b)} <= {"binary", "large_binary"}:
        return pa.large_binary()
    return None


def arrow_join_supports(
    left: pa.Schema, right: pa.Schema, on: Sequence[tuple[str, str]], how: str
) -> bool:
    """Whether :func:`join_group` joins these keys (else the caller uses Spark's join)."""
    if how not in _ACERO_HOW:
        return False
    return all(
        _common_key_type(left.field(lk).type, right.field(rk).type) is not None for lk, rk in on
    )


def _key(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """``col`` as ``target``, float keys normalised as Spark compares them."""
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if not col.type.equals(target):
        col = col.cast(target)
    if pa.types.is_floating(target):
        nan = pa.scalar(float("nan"), target)
        col = pc.if_else(pc.is_nan(col), nan, pc.add(col, pa.scalar(0.0, target)))
    return col


def read_side(
    units: Sequence[Any], scan_filter: Any, schema: pa.Schema, columns: Sequence[str]
) -> pa.Table:
    """``columns`` of one side's units where its filter holds, as one contiguous table."""
    from lance_sql.planning.scan_filter import scan_batches

    want = pa.schema([schema.field(c) for c in columns])
    batches = [b for b in scan_batches(units, scan_filter, schema, list(columns)) if b.num_rows]
    if not batches:
        return want.empty_table()
    return pa.Table.from_batches(batches).cast(want).combine_chunks()


def _row_numbers(n: int) -> pa.Array:
    import numpy as np

    return pa.array(np.arange(n, dtype=np.int64))


def matching_rows(
    left: pa.Table, right: pa.Table, on: Sequence[tuple[str, str]], how: str
) -> tuple[pa.ChunkedArray, pa.ChunkedArray | None]:
    """Row numbers of the joined pairs (left, right; None for semi/anti); an unmatched
    preserved row has a NULL row number on the other side."""
    lcols: dict[str, Any] = {}
    rcols: dict[str, Any] = {}
    for i, (lk, rk) in enumerate(on):
        target = _common_key_type(left.schema.field(lk).type, right.schema.field(rk).type)
        assert target is not None, "arrow_join_supports() was not checked"
        lcols[f"l{i}"] = _key(left.column(lk), target)
        rcols[f"r{i}"] = _key(right.column(rk), target)
    lcols["__l"] = _row_numbers(left.num_rows)
    rcols["__r"] = _row_numbers(right.num_rows)
    pairs = pa.table(lcols).join(
        pa.table(rcols),
        keys=[f"l{i}" for i in range(len(on))],
        right_keys=[f"r{i}" for i in range(len(on))],
        join_type=_ACERO_HOW[how],
        coalesce_keys=False,
        use_threads=False,
    )
    return pairs.column("__l"), (pairs.column("__r") if how not in ("semi", "anti") else None)


def join_group(
    left: pa.Table,
    right: pa.Table,
    on: Sequence[tuple[str, str]],
    how: str,
    out: pa.Schema,
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    """The joined rows of one group as batches of at most ``batch_rows`` rows named as ``out``
    (``left`` / ``right``: the sides' columns in output order)."""
    lrows, rrows = matching_rows(left, right, on, how)
    lrows = lrows.combine_chunks()
    rrows = rrows.combine_chunks() if rrows is not None else None
    step = max(1, batch_rows)
    for start in range(0, len(lrows), step):
        li = lrows.slice(start, step)
        arrays = [c.take(li) for c in left.columns]
        if rrows is not None:
            ri = rrows.slice(start, step)
            arrays += [c.take(ri) for c in right.columns]
        arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
        yield pa.RecordBatch.from_arrays(arrays, names=out.names)
