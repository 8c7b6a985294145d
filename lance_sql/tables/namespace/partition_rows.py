"""Rows in, rows per partition out: input batches checked and split by partition key.

The writer's first step: input conformed to the namespace schema, partition values
computed with :func:`udfs.apply_partition_field`, one zero-copy slice per key.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import SpecError
from lance_sql.spec.arrow_json import source_fields
from lance_sql.spec.transforms import apply_field
from lance_sql.tables.namespace.spec import PartitionSpec

# ---------------------------------------------------------------------------
# Input


def iter_batches(data: Any) -> Iterator[pa.RecordBatch]:
    """Batches of a Table, RecordBatch, RecordBatchReader or iterable of batches/tables."""
    if isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.RecordBatchReader):
        yield from data
    elif hasattr(data, "__arrow_c_stream__") and not isinstance(data, Iterable):
        yield from pa.RecordBatchReader.from_stream(data)
    elif isinstance(data, Iterable):
        for item in data:
            yield from iter_batches(item)
    else:
        raise TypeError(
            f"cannot write {type(data).__name__}: give a pyarrow Table, RecordBatch, "
            "RecordBatchReader or an iterable of RecordBatches"
        )


# ---------------------------------------------------------------------------
# Partition values and grouping


def partition_values(
    batch: pa.RecordBatch, spec: PartitionSpec, schema: pa.Schema
) -> list[pa.Array]:
    """One array of partition values per field of ``spec`` (via :mod:`udfs`)."""
    import udfs

    sources = source_fields(schema)
    out = []
    for i, pf in enumerate(spec.fields):
        cols = [_source_column(batch, sources, sid) for sid in pf.source_ids]
        if len(cols) == 1 and pa.types.is_null(cols[0].type):
            # the source column was removed: it reads as NULL, so does the partition value
            out.append(pa.nulls(batch.num_rows, pf.result_type))
            continue
        try:
            values = apply_field(pf, cols)
        except (udfs.ExpressionError, udfs.UnsupportedTypeError, ValueError, TypeError) as exc:
            raise SpecError(
                f"partition field {pf.field_id!r} cannot be computed: {exc}",
                key=f"{spec.key}.fields[{i}]",
            ) from exc
        out.append(values)
    return out


def _source_column(batch: pa.RecordBatch, sources: Mapping[int, Any], sid: int) -> pa.Array:
    found = sources.get(sid)
    if found is None:  # column removed: the spec says the source reads as NULL
        return pa.nulls(batch.num_rows)
    path = found[0].split(".")
    col = batch.column(path[0])
    for part in path[1:]:
        col = pc.struct_field(col, part)
    return col


# types whose values are their own keys (exact types: datetime subclasses date)
_PLAIN = frozenset({str, int, bool, bytes, type(None), _dt.date})


def keys_of(values: Sequence[Any]) -> tuple[Any, ...]:
    """:func:`_key` of each of ``values``, as a tuple."""
    return tuple([v if type(v) in _PLAIN else _key(v) for v in values])


def _key(value: Any) -> Any:
    """A hashable, equality-safe form of a partition value (NaN equals NaN).

    Zoned datetimes are keyed by their UTC instant: Python compares and hashes
    two aware datetimes of one zone by wall time (``fold`` ignored), which
    would merge the two instants of a repeated fall-back hour.
    """
    if type(value) in _PLAIN:  # (most keys: skip the checks below)
        return value
    if isinstance(value, float) and math.isnan(value):
        return ("__nan__",)
    if isinstance(value, _dt.datetime) and value.tzinfo is not None:
        return ("__instant__", value.astimezone(_dt.timezone.utc))
    return value


def _dense_codes(arr: pa.Array) -> tuple[np.ndarray, int]:
    """Codes ``0..size-1`` numbering the distinct values of ``arr`` (NULL is a value);
    small-range integers and dates without NULLs are offset directly."""
    if pa.types.is_date32(arr.type) or pa.types.is_date64(arr.type):
        arr = arr.view(pa.int32() if pa.types.is_date32(arr.type) else pa.int64())
    if pa.types.is_integer(arr.type) and arr.null_count == 0 and len(arr):
        values = arr.to_numpy(zero_copy_only=False)
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 1 << 16:
            return values.astype(np.int64) - lo, hi - lo + 1
    enc = pc.dictionary_encode(arr, null_encoding="encode")
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), max(len(enc.dictionary), 1)


def _group_codes(values: Sequence[pa.Array], n: int) -> np.ndarray | None:
    """Dense codes numbering the distinct partition value tuples; None for a single tuple."""
    if not values:
        return None
    codes: np.ndarray | None = None
    for arr in values:
        idx, size = _dense_codes(arr)
        codes = idx if codes is None else codes * size + idx
        if len(values) > 1:
            uniq, inverse = np.unique(codes, return_inverse=True)
            codes = inverse.astype(np.int64) if len(uniq) > 1 else np.zeros(n, np.int64)
    assert codes is not None
    if int(codes.max()) == 0 or (codes == codes[0]).all():
        return None
    return codes


def split_batch(
    batch: pa.RecordBatch, values: Sequence[pa.Array], *, threads: int = 2
) -> list[tuple[tuple[Any, ...], tuple[Any, ...], pa.RecordBatch]]:
    """Split ``batch`` by partition: ``(key, raw values, rows)`` per distinct value tuple,
    rows in input order, each a zero-copy slice of one reordering (:mod:`regroup`)."""
    from lance_sql.tables.namespace.regroup import regroup

    n = batch.num_rows
    if n == 0:
        return []
    codes = _group_codes(values, n)
    if codes is None:
        raw = tuple(arr[0].as_py() for arr in values)
        return [(keys_of(raw), raw, batch)]
    groups = int(codes.max()) + 1
    counts = np.bincount(codes, minlength=groups)
    grouped, firsts = regroup(batch, codes, counts, threads=threads)
    out = []
    start = 0
    for count, first in zip(counts.tolist(), firsts.tolist(), strict=True):
        if not count:
            continue
        raw = tuple(arr[first].as_py() for arr in values)
        out.append((keys_of(raw), raw, grouped.slice(start, count)))
        start += count
    return out


def partition_keys(values: Sequence[pa.Array], n: int) -> set[tuple[Any, ...]]:
    """The distinct partition keys (as :func:`split_batch` keys them) of ``n`` rows."""
    if n == 0:
        return set()
    codes = _group_codes(values, n)
    firsts = [0] if codes is None else np.unique(codes, return_index=True)[1].tolist()
    return {keys_of([arr[i].as_py() for arr in values]) for i in firsts}


def _has_struct(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return True
    return any(_has_struct(t.field(i).type) for i in range(t.num_fields))


def unsliced(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with no column at an offset where it holds a struct.

    pylance 14 panics writing a *slice* of a struct column ("assertion failed:
    end <= self.len()"), e.g. one partition's rows of a batch split by partition.
    """
    if not any(c.offset and _has_struct(c.type) for c in batch.columns):
        return batch
    return pc.take(batch, pa.array(range(batch.num_rows), pa.int64()), boundscheck=False)
