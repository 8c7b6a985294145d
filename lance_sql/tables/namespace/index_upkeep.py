"""A namespace's index definitions (root property :data:`INDEXES_KEY`, a JSON list) and
building them in one partition table a write just committed (:func:`maintain_indexes`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from lance_sql.errors import LanceSqlError, SpecError
from lance_sql.tables.namespace import index_kinds as kinds
from lance_sql.tables.namespace.field_map import columns_by_namespace_id
from lance_sql.tables.namespace.reader import PartitionTable, open_partition_table, table_field_ids
from lance_sql.tables.namespace.write_target import head_after, table_conflicts

INDEXES_KEY = "lance_sql.indexes"


class NamespaceIndexError(LanceSqlError):
    """An index cannot be created, found or dropped; names the index, column and table."""

    def __init__(self, message: str, *, index: str | None = None, table: str | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.table = table


@dataclass(frozen=True)
class NamespaceIndex:
    """One index of a namespace (the same index in every partition table)."""

    name: str
    column: str  # the column's name when the index was created (``field_id`` is what counts)
    field_id: int
    index_type: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_indexes(properties: Mapping[str, str]) -> list[NamespaceIndex]:
    """The namespace's index definitions from its root properties (none when absent)."""
    raw = properties.get(INDEXES_KEY)
    if not raw:
        return []
    try:
        items = json.loads(raw)
        return [
            NamespaceIndex(
                str(d["name"]),
                str(d["column"]),
                int(d["field_id"]),
                str(d["index_type"]),
                dict(d.get("params") or {}),
            )
            for d in items
        ]
    except (ValueError, TypeError, KeyError) as exc:
        raise SpecError(f"invalid index definitions ({exc})", key=INDEXES_KEY) from exc


def indexes_property(indexes: list[NamespaceIndex]) -> dict[str, str]:
    """The root property recording ``indexes`` (sorted by name)."""
    items = [i.to_json() for i in sorted(indexes, key=lambda i: i.name)]
    return {INDEXES_KEY: json.dumps(items, sort_keys=True, separators=(",", ":"))}


def table_column(entry: PartitionTable, version: int, fid: int, opts: Any) -> str | None:
    """The partition table column holding namespace field ``fid`` (None: the table lacks it)."""
    tschema = table_field_ids(entry, version, storage_options=opts)
    f = columns_by_namespace_id(tschema).get(fid)
    return None if f is None else f.name


def index_names(ds: Any) -> set[str]:
    return {str(i.name) for i in ds.describe_indices()}


def one_commit(entry: PartitionTable, ds: Any, what: str, action: Any, opts: Any) -> Any:
    """Run ``action`` (one pylance index commit on ``ds``) and return the new head, which
    must directly follow ``ds`` (else pinning it could publish another writer's rows)."""
    before = int(ds.version)
    with table_conflicts(entry, what):
        try:
            action()
        except (OSError, ValueError, TypeError, RuntimeError) as exc:
            if isinstance(exc, OSError) and "onflict" in str(exc):
                raise
            said = re.sub(r",?\s*\S+\.rs:\d+:\d+", "", (str(exc).splitlines() or [""])[0])
            raise NamespaceIndexError(
                f"{what} failed in partition table {entry.object_id!r} "
                f"at location {entry.location!r}: {said}",
                table=entry.object_id,
            ) from exc
    return head_after(entry, before, what, opts)


def create_in(entry: PartitionTable, ds: Any, index: NamespaceIndex, column: str, opts: Any) -> Any:
    """The table head with ``index`` built, or None: a table too small for a vector index."""
    if kinds.too_small(index.index_type, index.params, int(ds.count_rows())):
        return None
    what = f"creating index {index.name!r} ({index.index_type}) on column {column!r}"
    return one_commit(
        entry,
        ds,
        what,
        lambda: kinds.build(ds, column, index.index_type, index.name, index.params),
        opts,
    )


def maintain_indexes(
    entry: PartitionTable,
    version: int,
    indexes: list[NamespaceIndex],
    *,
    rebuild: bool,
    storage_options: Mapping[str, str] | None,
) -> int:
    """Bring the indexes up to date in a table just committed at ``version``; returns the
    version to pin. ``rebuild``: the table is new or overwritten, build each one."""
    if not indexes:
        return version
    opts = dict(storage_options) if storage_options else None
    at = replace(entry, read_version=version, read_tag=None)
    if entry.read_branch:
        return version  # branch-pinned tables are not indexed (see create_scalar_index)
    ds = open_partition_table(at, storage_options=opts)
    have = set() if rebuild else index_names(ds)
    stale = []
    for index in indexes:
        if index.name in have:
            stale.append(index.name)
            continue
        col = table_column(at, int(ds.version), index.field_id, opts)
        if col is not None:
            ds = create_in(at, ds, index, col, opts) or ds
    if stale:
        what = f"adding new rows to index(es) {stale}"
        ds = one_commit(at, ds, what, lambda: ds.optimize.optimize_indices(index_names=stale), opts)
    return int(ds.version)
