"""The ``__manifest`` rows one write commits, and the commit itself: an append commits
only the rows it changes, an overwrite (or an append whose commit needs them) all rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.namespace.layout import TABLE
from lance_sql.tables.namespace.manifest_commit import ancestors_of
from lance_sql.tables.namespace.manifest_delta import RowChanges
from lance_sql.tables.namespace.manifest_fragments import repinned
from lance_sql.tables.namespace.manifest_table import ManifestSnapshot, conform_rows
from lance_sql.tables.namespace.write_target import WriteTarget


def commit_write(
    snapshot: ManifestSnapshot,
    new_rows: Sequence[Mapping[str, Any]],
    targets: Sequence[WriteTarget],
    versions: Mapping[str, int],
    stats: Any,  # the write's WriteStats
    *,
    mode: str,
    keep_untouched: bool,
    storage_options: Mapping[str, str] | None,
    changes: RowChanges | None = None,
) -> ManifestSnapshot:
    """One ``__manifest`` commit of a write on ``snapshot`` (``new_rows``: rows it adds;
    ``versions``: object id -> table version committed; ``changes``: of other rows,
    committed with them)."""
    from lance_sql.tables.namespace.manifest_delta import commit_delta_or_rows

    schema = snapshot.lance_schema
    base = conform_rows(snapshot.rows, schema)
    new = conform_rows(pa.Table.from_pylist(list(new_rows), schema=_loose(schema)), schema)
    by_oid = {t.object_id: t for t in targets}
    props = changes.properties if changes is not None else None
    changed = None
    if mode == "append" and not props:
        existing = pa.array(sorted(t.object_id for t in targets if t.entry is not None), pa.utf8())
        sub = (
            base.filter(pc.is_in(base.column("object_id"), value_set=existing))
            if len(existing)
            else base[:0]
        )
        others = base.schema.empty_table()
        if changes is not None:  # the changed rows replace the rows read
            ours = pc.is_in(changes.rows.column("object_id"), value_set=existing)
            sub = pa.concat_tables([changes.rows.filter(ours), _without(sub, changes.rows)])
            others = changes.rows.filter(pc.invert(ours))
        table = repinned(pa.concat_tables([sub, new]) if new.num_rows else sub, versions)
        changed = stats.manifest_metadata(table, versions, by_oid, sub, True)
        changed = pa.concat_tables([changed, others]) if others.num_rows else changed

    def all_rows() -> pa.Table:
        rows = changes.apply(base) if changes is not None else base
        table = repinned(pa.concat_tables([rows, new]) if new.num_rows else rows, versions)
        if mode == "overwrite" and not keep_untouched:
            table = _keep_live(table, set(versions))
        return stats.manifest_metadata(table, versions, by_oid, rows, mode == "append")

    removed = changes.dropped if changes is not None else ()
    return commit_delta_or_rows(snapshot, changed, removed, all_rows, props, storage_options)


def _without(rows: pa.Table, other: pa.Table) -> pa.Table:
    """``rows`` without those whose object id ``other`` has a row for."""
    ids = other.column("object_id")
    return rows.filter(pc.invert(pc.is_in(rows.column("object_id"), value_set=ids)))


def _loose(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field nullable (for building rows dict by dict)."""
    return pa.schema([pa.field(f.name, f.type, True) for f in schema])


def _keep_live(table: pa.Table, tables: set[str]) -> pa.Table:
    """After an overwrite: only the written tables, their ancestors and spec version rows."""
    keep_ns = ancestors_of(list(tables))
    oids = table.column("object_id").to_pylist()
    types = table.column("object_type").to_pylist()
    mask = [
        (o in tables) if t == TABLE else (o in keep_ns or "$" not in o)
        for o, t in zip(oids, types, strict=True)
    ]
    return table.filter(pa.array(mask))
