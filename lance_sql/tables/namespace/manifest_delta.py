"""``__manifest`` commits given only the rows that change (their cost follows the change,
not the number of partitions), falling back to all rows when the commit needs them; and
the rows one write commits (:func:`commit_write`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.namespace.layout import TABLE
from lance_sql.tables.namespace.manifest_commit import (
    Change,
    ancestors_of,
    unique,
    with_ancestors,
)
from lance_sql.tables.namespace.manifest_fragments import Committed, repinned
from lance_sql.tables.namespace.manifest_table import (
    ManifestSnapshot,
    commit_rows,
    commit_update_rows,
    conform_rows,
)
from lance_sql.tables.namespace.write_target import WriteTarget


@dataclass
class RowChanges:
    """Changes of existing ``__manifest`` rows a write commits with its own rows (those of a
    :class:`.mutation.Mutation`: row deletes re-pin tables, overwrites drop them)."""

    rows: pa.Table  # the rows of the re-pinned tables, with their new pins and bounds
    dropped: set[str]  # object ids of the rows removed
    entries: dict[str, Any]  # object id -> its entry now (re-pinned; None: dropped)
    apply: Callable[[pa.Table], pa.Table]  # all rows of a version -> with these changes
    properties: dict[str, str] = field(default_factory=dict)  # root properties set too


def plan_delta(base: Committed, changed: pa.Table, removed: Collection[str] = ()) -> Change | None:
    """The :class:`Change` replacing or adding the rows of ``changed`` (by object id) in
    ``base`` and removing those of ``removed``; None when ids are not unique."""
    new_ids = changed.column("object_id")
    if not unique(new_ids):
        return None
    ids = new_ids.to_pylist()
    gone = sorted(set(removed) - set(ids))
    wanted = [*ids, *gone, *sorted(ancestors_of(ids) - set(ids) - set(gone))]
    # one pass over the ids of base: the rows of those ids, in row order
    old_ids = base.rows.column("object_id")
    mask = pc.is_in(old_ids, value_set=pa.array(wanted, pa.utf8()))
    at = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    found = dict(zip(old_ids.filter(mask).to_pylist(), at.tolist(), strict=True))
    if len(found) != len(at):
        return None  # an id on several rows
    keep = np.ones(base.rows.num_rows, bool)
    keep[[found[oid] for oid in (*ids, *gone) if oid in found]] = False
    added = [oid for oid in ids if oid not in found]
    return with_ancestors(base, keep, changed, added, found)


def commit_changed(
    snapshot: Any,
    changed: pa.Table,
    removed: Collection[str] = (),
    *,
    storage_options: Mapping[str, str] | None = None,
) -> Any | None:
    """Commit rows ``changed`` (re-pinned and new) and the removal of object ids ``removed``
    as one ``Update``; None when the commit needs all rows (raises as ``commit_rows``)."""
    if not (changed.num_rows or removed) or not snapshot.identity:
        return None  # (no identity: rows changed in memory, e.g. a mutation's drops)
    return commit_update_rows(
        snapshot,
        changed,
        snapshot.properties,
        storage_options,
        plan=lambda base, rows: plan_delta(base, rows, removed),
    )


def commit_delta_or_rows(
    snapshot: Any,
    changed: pa.Table | None,
    removed: Collection[str],
    all_rows: Callable[[], pa.Table],
    properties: Mapping[str, str] | None,
    storage_options: Mapping[str, str] | None,
) -> Any:
    """:func:`commit_changed` when there are no new root ``properties``, else (or when it
    cannot) all rows ``all_rows()``; ``changed`` None: all rows only."""
    if changed is not None and not properties:
        snap = commit_changed(snapshot, changed, removed, storage_options=storage_options)
        if snap is not None:
            return snap
    return commit_rows(
        snapshot, all_rows(), properties=properties or None, storage_options=storage_options
    )


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
    schema = snapshot.lance_schema
    base = conform_rows(snapshot.rows, schema)
    new = _rows_table(new_rows, schema)
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


def _rows_table(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """``rows`` (a missing key is NULL) as a table of exactly ``schema`` (a quarter of the
    cost of ``Table.from_pylist`` and a conform)."""
    arrays = [pa.array([r.get(f.name) for r in rows], f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


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
