"""Blob bytes of a namespace's rows: lazy ``BlobFile`` handles and materialized bytes.

A scan returns a blob column's descriptor, never the bytes. A row is identified by
``(partition_table, row_id)``: its table's object id and its Lance ``_rowid`` at the
pinned version, stable until the row is rewritten (update, merge, compaction).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import SchemaMismatchError, SpecError
from lance_sql.tables.blob_columns import blob_columns, read_schema
from lance_sql.tables.namespace.mutation import ROWID, table_rows
from lance_sql.tables.namespace.properties import DATA_STORAGE_VERSION_KEY
from lance_sql.tables.namespace.reader import map_columns

if TYPE_CHECKING:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

TABLE_COLUMN = "partition_table"
ROW_ID_COLUMN = "row_id"


def namespace_read_schema(schema: pa.Schema, properties: Mapping[str, str]) -> pa.Schema:
    """The stored namespace schema as read: blob columns as the descriptors of the
    namespace's file format (:data:`.properties.DATA_STORAGE_VERSION_KEY`)."""
    return read_schema(schema, properties.get(DATA_STORAGE_VERSION_KEY))


def blob_rows(
    ns: PartitionedNamespace,
    filter: pc.Expression | None = None,
    columns: Sequence[str] = (),
) -> pa.Table:
    """``(partition_table, row_id)`` of every row ``filter`` (a pyarrow expression over
    namespace columns, not blob columns) selects, with ``columns``."""
    wanted = list(dict.fromkeys(columns))
    unknown = [c for c in wanted if c not in ns.schema.names or c in blob_columns(ns.schema)]
    if unknown:
        raise SpecError(
            f"blob_rows: {unknown} are not non-blob namespace columns (columns: {ns.schema.names})",
            key="columns",
        )
    names = [n for n in ns.schema.names if n not in blob_columns(ns.schema)]
    out = []
    for entry in ns.tables():
        ds, tschema = ns._open(entry)
        # read only the columns asked for, unless a filter (which may need any) is given
        table = table_rows(
            ns.schema, entry.object_id, ds, tschema, wanted if filter is None else names
        )
        if filter is not None:
            table = table.filter(filter)
        ids = pa.array([entry.object_id] * table.num_rows, pa.string())
        picked = table.select(wanted).append_column(TABLE_COLUMN, ids)
        out.append(picked.append_column(ROW_ID_COLUMN, table.column(ROWID)))
    if not out:
        return pa.table({TABLE_COLUMN: pa.array([], pa.string()), ROW_ID_COLUMN: []})
    return pa.concat_tables(out)


def _blobs(ns: PartitionedNamespace, column: str, ids: Any, *, read: bool) -> list[Any]:
    """pylance's ``read_blobs`` (``read``) or ``take_blobs`` of ``column`` for ``ids``, one
    call per partition table, the results in the order of ``ids``."""
    if column not in blob_columns(ns.schema):
        raise SpecError(
            f"{column!r} is not a blob column of this namespace (blob columns: "
            f"{blob_columns(ns.schema)})",
            key="schema",
        )
    if isinstance(ids, pa.Table):
        tables, rows = ids.column(TABLE_COLUMN).to_pylist(), ids.column(ROW_ID_COLUMN).to_pylist()
        pairs = list(zip(tables, rows, strict=True))
    else:
        pairs = [tuple(p) for p in ids]
    entries = {e.object_id: e for e in ns.tables()}
    groups: dict[str, list[int]] = {}
    for object_id, row_id in pairs:
        if object_id not in entries:
            raise SpecError(f"{object_id!r} is not a partition table of this namespace", key="ids")
        groups.setdefault(object_id, []).append(int(row_id))
    found: dict[tuple[str, int], Any] = {}
    for object_id, rows in groups.items():
        ds, tschema = ns._open(entries[object_id])
        mapping = map_columns(ns.schema, tschema, object_id=object_id)
        source = mapping.sources[ns.schema.names.index(column)]
        if source is None:
            raise SchemaMismatchError(
                f"partition table {object_id!r} has no data for blob column {column!r}"
            )
        if read:
            got = ds.read_blobs(source, ids=rows, preserve_order=True)
        else:
            got = zip(rows, ds.take_blobs(source, ids=rows), strict=True)
        found.update({(object_id, int(r)): value for r, value in got})
    return [found[(o, int(r))] for o, r in pairs]


def take_blobs(ns: PartitionedNamespace, column: str, ids: Any) -> list[Any]:
    """pylance ``BlobFile`` handles (lazy, file-like) for ``ids`` (pairs, or a table as
    :func:`blob_rows` returns), in their order; a NULL blob gives None."""
    return _blobs(ns, column, ids, read=False)


def read_blobs(ns: PartitionedNamespace, column: str, ids: Any) -> list[bytes | None]:
    """The bytes of ``ids``' blobs (see :func:`take_blobs`), read in full, in their order."""
    return _blobs(ns, column, ids, read=True)


def with_blob_bytes(ns: Any, entry: Any, rows: pa.Table) -> pa.Table:
    """``rows`` of partition table ``entry`` (namespace columns + ``_rowid``) with each
    blob column's descriptors replaced by the bytes (what an update or a merge rewrites)."""
    names = [n for n in blob_columns(ns.schema) if n in rows.column_names]
    row_ids = rows.column(ROWID).to_pylist() if names else []
    sources: list[str | None] = [None] * len(names)
    if row_ids:
        ds, tschema = ns._open(entry)
        mapping = map_columns(ns.schema, tschema, object_id=entry.object_id)
        sources = [mapping.sources[ns.schema.names.index(n)] for n in names]
    for name, source in zip(names, sources, strict=True):
        values = [None] * len(row_ids)
        if source is not None:
            data = dict(ds.read_blobs(source, ids=row_ids, preserve_order=True))
            values = [data.get(r) for r in row_ids]
        rows = rows.set_column(
            rows.column_names.index(name), name, pa.array(values, pa.large_binary())
        )
    return rows
