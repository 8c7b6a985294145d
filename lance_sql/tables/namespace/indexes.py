"""Indexes on a namespace (scalar, text, vector): one Lance index per partition table.

Creating or dropping one commits the table versions and the root property
:data:`INDEXES_KEY` in ONE ``__manifest`` commit. The property lives in the schema metadata
only (a mirrored table metadata value would win with its old value). Docs: namespaces.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lance_sql.spec.arrow_json import field_id_of
from lance_sql.spec.arrow_types import supports
from lance_sql.tables.namespace import index_kinds as kinds
from lance_sql.tables.namespace import key_filters as kf
from lance_sql.tables.namespace.index_upkeep import (
    NamespaceIndex,
    NamespaceIndexError,
    create_in,
    index_names,
    indexes_property,
    maintain_indexes,
    one_commit,
    read_indexes,
    table_column,
)
from lance_sql.tables.namespace.mutation import Mutation, run

if TYPE_CHECKING:
    import pyarrow as pa

    from lance_sql.tables.namespace.namespace import PartitionedNamespace


def create_index(
    ns: PartitionedNamespace,
    column: str,
    index_type: str | None = None,
    *,
    name: str | None = None,
    replace: bool = False,
    **params: Any,
) -> NamespaceIndex:
    """Build ``index_type`` on ``column`` in every partition table; one ``__manifest`` commit.

    Later writes keep it up to date (docs/search.md). ``index_type``: any type pylance
    builds (default by the column's type); ``params`` go to pylance's ``create_index``
    (vector) or ``create_scalar_index``; ``min_rows`` (vector only): smaller tables are
    searched flat. Tables pinned to a branch or tag, or lacking the column, are left
    without it (uncovered in :func:`index_coverage`).
    """
    ns._check_writable()
    if column not in ns.schema.names:
        raise NamespaceIndexError(
            f"cannot index column {column!r}: the namespace has no top-level column of that "
            f"name (columns: {ns.schema.names})"
        )
    fid = field_id_of(ns.schema.field(column))
    assert fid is not None
    if index_type is None:
        index_type = kinds.default_type(ns.schema.field(column).type)
    index = NamespaceIndex(
        name or f"{column}_idx", column, fid, str(index_type).upper(), dict(params)
    )
    problem = kinds.type_problem(index.index_type, ns.schema.field(column).type)
    if problem:
        raise NamespaceIndexError(
            f"cannot build {index.index_type} on column {column!r}: {problem}", index=index.name
        )

    def build(m: Mutation) -> NamespaceIndex:
        current = {i.name: i for i in read_indexes(m.snapshot.properties)}
        if index.name in current and not replace:
            raise NamespaceIndexError(
                f"namespace index {index.name!r} already exists (on column "
                f"{current[index.name].column!r}); pass replace=True to rebuild it",
                index=index.name,
            )
        current[index.name] = index
        m.properties.update(indexes_property(list(current.values())))
        for entry in m.version_pinned():
            ds = m.head(entry)
            col = table_column(entry, ds.version, fid, m.storage_options)
            if col is None:
                continue
            new = create_in(entry, ds, index, col, m.storage_options)
            if new is None:
                continue
            m.set_version(entry, new, same_rows=True)  # an index changes no row
            t = new.schema.field(col).type
            if kinds.kind(index.index_type) == "scalar" and supports("key_filter", t):
                # the key filter of the newly indexed column (see :mod:`.key_filters`)
                version, opts = int(new.version), m.storage_options
                refs = kf.maintain(
                    entry.uri, version, [(fid, col, t)], None, None, storage_options=opts
                )
                m.key_filters.setdefault(entry.object_id, (version, {}))[1].update(refs)
        return index

    return run(ns, build)


def drop_index(ns: PartitionedNamespace, name: str) -> None:
    """Drop the namespace index ``name`` from every partition table; one ``__manifest`` commit."""

    def build(m: Mutation) -> None:
        current = {i.name: i for i in read_indexes(m.snapshot.properties)}
        if name not in current:
            raise NamespaceIndexError(
                f"the namespace has no index named {name!r} (indexes: {sorted(current)})",
                index=name,
            )
        del current[name]
        m.properties.update(indexes_property(list(current.values())))
        for entry in m.version_pinned():
            ds = m.head(entry)
            if name not in index_names(ds):
                continue
            what = f"dropping index {name!r}"
            m.set_version(
                entry,
                one_commit(entry, ds, what, lambda ds=ds: ds.drop_index(name), m.storage_options),
                same_rows=True,
            )

    run(ns, build)


def optimize_indexes(ns: PartitionedNamespace) -> int:
    """Build each missing index and index unindexed fragments in every table; one commit.
    Returns how many partition tables got a new version (writes already do this: this
    catches up tables skipped while small, or written by other tools)."""

    def build(m: Mutation) -> int:
        import lance

        current = read_indexes(m.snapshot.properties)
        changed = 0
        for entry in m.version_pinned() if current else []:
            ds = m.head(entry)
            have = index_names(ds)
            todo = [
                i
                for i in current
                if i.name not in have
                or int(ds.stats.index_stats(i.name).get("num_unindexed_fragments", 0))
            ]
            version = maintain_indexes(
                entry, int(ds.version), todo, rebuild=False, storage_options=m.storage_options
            )
            if version != int(ds.version):
                opts = m.storage_options
                m.set_version(
                    entry,
                    lance.dataset(entry.uri, version=version, storage_options=opts),
                    same_rows=True,
                )
                changed += 1
        return changed

    return run(ns, build)


def index_coverage(ns: PartitionedNamespace) -> pa.Table:
    """One row per (partition table, namespace index): indexed and unindexed rows at the
    pinned versions; ``present`` is False where the table has no such index."""
    import pyarrow as pa

    rows: list[dict[str, Any]] = []
    indexes = read_indexes(ns.snapshot.properties)
    for entry in ns.tables() if indexes else []:
        ds, _ = ns._open(entry)
        names = index_names(ds)
        total = int(ds.count_rows())
        for index in indexes:
            present = index.name in names
            stats = ds.stats.index_stats(index.name) if present else {}
            rows.append(
                {
                    "object_id": entry.object_id,
                    "index": index.name,
                    "present": present,
                    "rows": total,
                    "indexed_rows": int(stats.get("num_indexed_rows", 0)),
                    "unindexed_fragments": int(stats.get("num_unindexed_fragments", 0))
                    if present
                    else len(ds.get_fragments()),
                }
            )
    schema = pa.schema(
        [
            ("object_id", pa.utf8()),
            ("index", pa.utf8()),
            ("present", pa.bool_()),
            ("rows", pa.int64()),
            ("indexed_rows", pa.int64()),
            ("unindexed_fragments", pa.int64()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


__all__ = [
    "NamespaceIndex",
    "NamespaceIndexError",
    "create_index",
    "drop_index",
    "index_coverage",
    "optimize_indexes",
]
