"""The ``__manifest`` rows one write commits, and the commit itself.

An append commits only the rows it changes (its tables' rows re-pinned, with
new bounds, and its new rows: :func:`.manifest_delta.commit_changed`); an
overwrite, or an append whose commit needs them, commits all rows of the next
version (:func:`.manifest_table.commit_rows`).
"""

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
    from lance_sql.tables.namespace.manifest_delta import commit_changed
    from lance_sql.tables.namespace.manifest_table import commit_rows

    schema = snapshot.lance_schema
    base = conform_rows(snapshot.rows, schema)
    new = conform_rows(pa.Table.from_pylist(list(new_rows), schema=_loose(schema)), schema)
    by_oid = {t.object_id: t for t in targets}
    if mode == "append" and not (changes and changes.properties):
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
        removed = changes.dropped if changes is not None else ()
        snap = commit_changed(snapshot, changed, removed, storage_options=storage_options)
        if snap is not None:
            return snap
    if changes is not None:
        base = changes.apply(base)
    table = repinned(pa.concat_tables([base, new]) if new.num_rows else base, versions)
    if mode == "overwrite" and not keep_untouched:
        table = _keep_live(table, set(versions))
    rows = stats.manifest_metadata(table, versions, by_oid, base, mode == "append")
    props = changes.properties if changes is not None else None
    return commit_rows(snapshot, rows, properties=props, storage_options=storage_options)


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
