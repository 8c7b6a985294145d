"""One row-level change of a namespace (``delete``, ``overwrite``, ``update``, ``merge``,
``compact``): touched tables get their new versions first, then ``__manifest`` is
committed ONCE with only the rows that change. On a conflict :func:`run` plans the
operation again on the newer snapshot; the failed attempt's table versions stay
unreferenced and are restored over (protocol: :mod:`.writer`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import CommitConflictError, UnsupportedFeatureError
from lance_sql.tables.float_filters import FloatRewriteError, with_sql_float_semantics
from lance_sql.tables.namespace.bounds_rows import carried_forward, touched_rows, with_key_filters
from lance_sql.tables.namespace.manifest_delta import RowChanges, commit_delta_or_rows
from lance_sql.tables.namespace.manifest_fragments import repinned
from lance_sql.tables.namespace.manifest_table import (
    ManifestSnapshot,
    conform_rows,
    refreshed,
    snapshot_entries,
)
from lance_sql.tables.namespace.nested_evolution import read_as
from lance_sql.tables.namespace.reader import PartitionTable, map_columns, table_field_ids
from lance_sql.tables.namespace.write_layout import carry_namespaces
from lance_sql.tables.namespace.write_target import head_after, table_conflicts, table_head
from lance_sql.tables.namespace.writer import NamespaceWriter

ROWID = "_rowid"
_ID_CHUNK = 50_000  # row ids per delete commit predicate


class Mutation:
    """Collects the changes of one operation against the latest snapshot of ``ns``."""

    def __init__(self, ns: Any) -> None:
        ns._check_writable()
        # ns.refresh(), without re-reading __manifest's rows when nothing was committed since
        latest = refreshed(ns.snapshot, storage_options=ns.storage_options)
        if latest is not ns.snapshot:
            ns._set_snapshot(latest)
        self.ns = ns
        self.snapshot: ManifestSnapshot = ns.snapshot
        self.storage_options = ns.storage_options
        self.versions: dict[str, int] = {}  # object_id -> new pinned version
        self.dropped: set[str] = set()
        self.inserts: list[pa.Table] = []
        self.properties: dict[str, str] = {}  # root properties committed with the rows
        self._heads: dict[str, Any] = {}
        self._filters: dict[int, tuple[pc.Expression, pc.Expression | None]] = {}
        # object_id -> whether every new version of the table only lost rows (deletes,
        # compaction): its column bounds then stay valid (bounds_rows.carried_forward)
        self._subset: dict[str, bool] = {}
        # object_id -> (version, key filter pointers) to add to its bounds (.key_filters)
        self.key_filters: dict[str, tuple[int, dict[int, Any]]] = {}

    @functools.cached_property
    def entries(self) -> dict[str, PartitionTable]:
        """The partition tables of the snapshot (every spec version's field values) by
        object id, built on first use (an operation that visits them all)."""
        fids = [f.field_id for f in self.ns.all_fields()]
        return {e.object_id: e for e in snapshot_entries(self.snapshot, fids)}

    def version_pinned(self) -> list[PartitionTable]:
        """The tables namespace-wide maintenance (compaction, indexes) writes: those pinned
        to a version (a branch or tag pin is left as it is)."""
        return [e for e in self.entries.values() if not (e.read_branch or e.read_tag)]

    # -- reading ----------------------------------------------------------------------------
    def head(self, entry: PartitionTable) -> Any:
        """The table's dataset at its newest version, which is the pinned one (restored)."""
        ds = self._heads.get(entry.object_id)
        if ds is not None:
            return ds
        _check_version_pin(entry)
        ds = table_head(entry, self.storage_options, max_retries=0)
        self._heads[entry.object_id] = ds
        return ds

    def rows(
        self,
        entry: PartitionTable,
        columns: list[str] | None = None,
        pushdown: pc.Expression | None = None,
    ) -> pa.Table:
        """Rows of ``entry`` (namespace names and types) plus ``_rowid``; ``pushdown`` may
        pre-filter inside Lance (it must keep every row the caller's exact filter keeps).
        Read at the pinned version, or from the head when this operation already changed
        the table. Thread-safe."""
        _check_version_pin(entry)
        head = self._heads.get(entry.object_id)
        if head is not None:
            ds = head
            tschema = table_field_ids(entry, ds.version, storage_options=self.storage_options)
        else:
            ds, tschema = self.ns._open(entry)
        flt = None if pushdown is None else self._lance_filter(pushdown)
        return table_rows(self.ns.schema, entry.object_id, ds, tschema, columns, flt)

    def _lance_filter(self, pushdown: pc.Expression) -> pc.Expression | None:
        """``pushdown`` with SQL float semantics for Lance (None: not expressible)."""
        done = self._filters.get(id(pushdown))
        if done is not None and done[0] is pushdown:
            return done[1]
        try:
            flt = with_sql_float_semantics(pushdown, self.ns.schema, columns_only=True)
        except FloatRewriteError:
            flt = None
        self._filters[id(pushdown)] = (pushdown, flt)  # holds pushdown: its id stays unique
        return flt

    def count(self, entry: PartitionTable) -> int:
        """Rows of ``entry`` at its pinned version (metadata only; nothing is restored)."""
        if entry.object_id in self._heads:
            return int(self._heads[entry.object_id].count_rows())
        return int(self.ns._open(entry)[0].count_rows())

    # -- changes ----------------------------------------------------------------------------
    def delete_rowids(self, entry: PartitionTable, rowids: pa.Array | pa.ChunkedArray) -> int:
        """Lance row deletes of ``rowids`` (from :meth:`rows`) in ``entry``; returns the count."""
        ids = pc.unique(rowids).to_pylist() if len(rowids) else []
        if not ids:
            return 0
        if len(ids) >= self.count(entry):
            self.drop(entry)
            return len(ids)
        ds = self.head(entry)
        for start in range(0, len(ids), _ID_CHUNK):
            chunk = ids[start : start + _ID_CHUNK]
            before = ds.version
            with table_conflicts(entry, "a delete"):
                ds.delete(f"{ROWID} IN ({','.join(map(str, chunk))})", conflict_retries=0)
            ds = head_after(entry, before, "a delete", self.storage_options)
        self._heads[entry.object_id] = ds
        self.versions[entry.object_id] = ds.version
        self._subset.setdefault(entry.object_id, True)
        return len(ids)

    def set_version(self, entry: PartitionTable, ds: Any, *, same_rows: bool = False) -> None:
        """Record ``ds`` (a new version of ``entry``'s table) as its pin; ``same_rows``: it
        holds no row the pinned one lacks (compaction), so column bounds stay valid."""
        self._heads[entry.object_id] = ds
        self.versions[entry.object_id] = int(ds.version)
        self._subset[entry.object_id] = same_rows and self._subset.get(entry.object_id, True)

    def drop(self, entry: PartitionTable) -> None:
        """Remove the partition table from ``__manifest`` (its files are not touched)."""
        self.dropped.add(entry.object_id)
        self.versions.pop(entry.object_id, None)

    def insert(self, rows: pa.Table) -> None:
        """Rows (namespace schema) to append in the same commit."""
        if rows.num_rows:
            self.inserts.append(rows)

    @property
    def changed(self) -> bool:
        return bool(self.versions or self.dropped or self.inserts or self.properties)

    # -- commit ------------------------------------------------------------------------------
    def row_changes(self) -> RowChanges:
        """The changes of existing ``__manifest`` rows (new pins, bounds carried forward,
        dropped tables), read from the rows of the tables they touch only."""
        rows = conform_rows(self.snapshot.rows, self.snapshot.lance_schema)
        entries: dict[str, Any] = dict.fromkeys(self.dropped)
        for oid, v in self.versions.items():
            entries[oid] = dataclasses.replace(self.entries[oid], read_version=v)
        return RowChanges(
            self._changed(touched_rows(rows, self.versions)[1]) if self.versions else rows[:0],
            set(self.dropped),
            entries,
            self._changed,
            {**self.snapshot.properties, **self.properties} if self.properties else {},
        )

    def _changed(self, rows: pa.Table) -> pa.Table:
        """``rows`` (``__manifest`` rows) with this mutation's pins and drops applied."""
        moves = {
            o: (self.entries[o].read_version, v)
            for o, v in self.versions.items()
            if self._subset.get(o) and o in self.entries
        }
        live = {o: kv for o, kv in self.key_filters.items() if self.versions.get(o) == kv[0]}
        rows = with_key_filters(carried_forward(rows, moves), live)
        return repinned(rows, self.versions, self.dropped)

    def commit(self, stages: Sequence[Any] = ()) -> ManifestSnapshot:
        """Write inserted rows (or adopt the staged files ``stages``), then commit
        ``__manifest`` once with only the rows that change; returns the new snapshot."""
        staged = any(st.partitions for st in stages)
        if not (self.changed or staged):
            return self.snapshot
        changes = self.row_changes()
        if not (self.inserts or staged):
            return self._commit_rows(changes)
        writer = NamespaceWriter(
            self.snapshot,
            self.ns._schema,  # the stored form (blob columns take bytes)
            self.ns.current_spec,
            mode="append",
            storage_options=self.storage_options,
            changes=changes,
        )
        snap = writer.commit_stages(stages, self.inserts)
        return self._commit_rows(changes) if snap is self.snapshot else snap

    def _commit_rows(self, changes: RowChanges) -> ManifestSnapshot:
        snap = commit_delta_or_rows(
            self.snapshot,
            changes.rows,
            changes.dropped,
            lambda: changes.apply(conform_rows(self.snapshot.rows, self.snapshot.lance_schema)),
            changes.properties,
            self.storage_options,
        )
        if snap.version == self.snapshot.version + 1:
            carry_namespaces(self.snapshot, snap)  # (only table rows were dropped or re-pinned)
        return snap


def table_rows(
    schema: pa.Schema,
    object_id: str,
    ds: Any,
    tschema: Any,
    columns: Sequence[str] | None = None,
    flt: pc.Expression | None = None,
) -> pa.Table:
    """Rows of partition table ``object_id`` (its dataset ``ds``, field ids ``tschema``) as
    namespace ``schema``'s ``columns`` (names and types; a column the table lacks is NULL)
    plus ``_rowid``. ``flt``: a Lance filter that may pre-filter (namespace names: used only
    when the table's columns are the namespace's)."""
    mapping = map_columns(schema, tschema, object_id=object_id)
    wanted = schema.names if columns is None else columns
    src = dict(zip(schema.names, mapping.sources, strict=True))
    read = [s for n in wanted if (s := src[n]) is not None]
    flt = flt if mapping.identity else None
    try:
        table = ds.to_table(columns=read, with_row_id=True, filter=flt)
    except (OSError, ValueError, TypeError, NotImplementedError, pa.ArrowException):
        if flt is None:
            raise
        # Lance refused the pushed filter (no Substrait form...): the caller's exact
        # filter runs on the rows anyway, so read them all
        table = ds.to_table(columns=read, with_row_id=True)
    cols, names = [], []
    for n in wanted:
        f = schema.field(n)
        s = src[n]
        col = table.column(s) if s is not None else pa.nulls(table.num_rows, f.type)
        cols.append(read_as(col, f.type))  # renamed nested fields by their old names
        names.append(n)
    cols.append(table.column(ROWID))
    names.append(ROWID)
    return pa.Table.from_arrays(cols, names=names)


def _check_version_pin(entry: PartitionTable) -> None:
    if entry.read_tag or entry.read_branch:
        pin = f"tag {entry.read_tag!r}" if entry.read_tag else f"branch {entry.read_branch!r}"
        raise UnsupportedFeatureError(
            f"partition table {entry.object_id!r} is pinned to {pin}: row operations and "
            "compaction write only tables pinned to a version",
            path=entry.uri,
        )


T = TypeVar("T")
RETRIES = 4


def run(ns: Any, build: Callable[[Mutation], T], *, retries: int = RETRIES) -> T:
    """Stage an operation into a fresh :class:`Mutation` (``build``) and commit it; on a
    conflict replan on the newer snapshot (a failed attempt is invisible, so replaying is
    safe); after ``retries`` the conflict is raised."""
    import random
    import time

    for attempt in range(retries + 1):
        try:
            m = Mutation(ns)
            result = build(m)
            if m.changed:
                ns._set_snapshot(m.commit())
            return result
        except CommitConflictError:
            if attempt == retries:
                raise
            time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
    raise AssertionError("unreachable")
