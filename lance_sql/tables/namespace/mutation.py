"""One row-level change of a namespace: table deletes, dropped tables and new rows, one commit.

The building block of ``delete``, ``overwrite`` (dynamic and by filter),
``update``, ``merge`` and ``compact``. It follows the write protocol of
:mod:`.writer`:

1. every touched partition table gets its new version first: Lance row deletes
   (deletion files, ``_rowid IN (...)``) or a compaction, each one commit on
   top of the version ``__manifest`` pins (a version left on top by a failed
   or foreign write is first undone with ``Restore``, as the writer does);
2. new rows go through a :class:`NamespaceWriter` (append mode, which routes
   each row to the partition of the current spec it belongs to) that starts
   from a copy of the ``__manifest`` snapshot in which the tables of step 1
   already carry their new versions and dropped tables are gone;
3. ``__manifest`` is committed ONCE, against the version read at the start.
   A concurrent ``__manifest`` commit fails the whole operation with
   :class:`CommitConflictError` (no rebase: a delete or an overwrite that
   raced another writer is not provably safe to replay). The table versions
   made in step 1 then stay unreferenced; the next writer restores over them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import CommitConflictError, UnsupportedFeatureError
from lance_sql.tables.namespace.bounds_rows import carried_forward, with_key_filters
from lance_sql.tables.namespace.layout import resolve_location, spec_version_of
from lance_sql.tables.namespace.manifest_fragments import repinned
from lance_sql.tables.namespace.manifest_table import (
    ManifestSnapshot,
    commit_rows,
    conform_rows,
    refreshed,
    remember_entries,
    snapshot_entries,
)
from lance_sql.tables.namespace.nested_evolution import read_as
from lance_sql.tables.namespace.reader import (
    PartitionTable,
    map_columns,
    open_partition_table,
    table_field_ids,
)
from lance_sql.tables.namespace.write_layout import carry_namespaces
from lance_sql.tables.namespace.write_target import table_conflicts
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
        fids = [f.field_id for f in ns.all_fields()]
        self._fids = fids
        self.entries = {e.object_id: e for e in snapshot_entries(self.snapshot, fids)}
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
        # field ids -> base_entries, computed once while committing (see _base_entries)
        self._committing: dict[tuple[str, ...], list[PartitionTable]] = {}

    # -- reading ----------------------------------------------------------------------------
    def head(self, entry: PartitionTable) -> Any:
        """The table's dataset at its newest version, which is the pinned one (restored)."""
        ds = self._heads.get(entry.object_id)
        if ds is not None:
            return ds
        import lance

        _check_version_pin(entry)
        opts = self.storage_options
        latest = PartitionTable(entry.object_id, entry.location, entry.uri, None, None, None, None)
        ds = open_partition_table(latest, storage_options=opts)
        pinned = entry.read_version if entry.read_version is not None else ds.version
        if ds.version != pinned:
            with table_conflicts(entry, f"the restore of version {pinned}"):
                ds = lance.LanceDataset.commit(
                    entry.uri,
                    lance.LanceOperation.Restore(pinned),
                    read_version=ds.version,
                    storage_options=opts,
                    max_retries=0,
                )
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

        Read at the pinned version through the shared open cache (the same rows
        and row ids the head has once restored: only tables that are written
        pay for opening the head), or from the head when this operation
        already changed the table. Safe to call from several threads.
        """
        _check_version_pin(entry)
        head = self._heads.get(entry.object_id)
        if head is not None:
            ds = head
            tschema = table_field_ids(entry, ds.version, storage_options=self.storage_options)
        else:
            ds, tschema = self.ns._open(entry)
        schema = self.ns.schema
        mapping = map_columns(schema, tschema, object_id=entry.object_id)
        wanted = schema.names if columns is None else columns
        src = dict(zip(schema.names, mapping.sources, strict=True))
        read = [s for n in wanted if (s := src[n]) is not None]
        flt = None
        if pushdown is not None and mapping.identity:
            flt = self._lance_filter(pushdown)
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

    def _lance_filter(self, pushdown: pc.Expression) -> pc.Expression | None:
        """``pushdown`` with SQL float semantics for Lance (None: not expressible), rewritten
        once per operation rather than once per partition table read."""
        done = self._filters.get(id(pushdown))
        if done is not None and done[0] is pushdown:
            return done[1]
        from lance_sql.tables.float_filters import FloatRewriteError, with_sql_float_semantics

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
            ds = _latest(ds, self.storage_options)
            if ds.version != before + 1:
                raise CommitConflictError(
                    f"partition table {entry.object_id!r} was written concurrently during a "
                    "delete; __manifest was not committed"
                )
        self._heads[entry.object_id] = ds
        self.versions[entry.object_id] = ds.version
        self._subset.setdefault(entry.object_id, True)
        return len(ids)

    def set_version(self, entry: PartitionTable, ds: Any, *, same_rows: bool = False) -> None:
        """Record ``ds`` (a new version of ``entry``'s table, e.g. compacted) as its pin.

        ``same_rows``: the new version holds no row the pinned one lacks (compaction,
        index changes), so the table's column bounds stay valid.
        """
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
    def base_snapshot(self) -> ManifestSnapshot:
        """The snapshot read at the start, with new pins applied and dropped tables removed."""
        rows = conform_rows(self.snapshot.rows, self.snapshot.lance_schema)
        moves = {
            o: (self.entries[o].read_version, v)
            for o, v in self.versions.items()
            if self._subset.get(o) and o in self.entries
        }
        live = {o: kv for o, kv in self.key_filters.items() if self.versions.get(o) == kv[0]}
        rows = with_key_filters(carried_forward(rows, moves), live)
        rows = repinned(rows, self.versions, self.dropped)
        properties = {**self.snapshot.properties, **self.properties}
        base = dataclasses.replace(self.snapshot, rows=rows, properties=properties)
        carry_namespaces(self.snapshot, base)  # only table rows were dropped or re-pinned
        return base

    def _base_entries(self, field_ids: list[str]) -> list[PartitionTable]:
        """:meth:`base_entries`, once per field id list while committing (the writer's and
        the entries handed to the new snapshot are the same list for a single spec)."""
        key = tuple(field_ids)
        done = self._committing.get(key)
        if done is None:
            done = self._committing[key] = self.base_entries(field_ids)
        return done

    def base_entries(self, field_ids: list[str]) -> list[PartitionTable]:
        """``table_entries`` of :meth:`base_snapshot` (values of ``field_ids`` only), derived
        from the entries read at the start instead of from the rows again."""
        out = []
        wanted = set(field_ids)
        for oid, e in self.entries.items():
            if oid in self.dropped:
                continue
            version = self.versions.get(oid, e.read_version)
            if version == e.read_version and wanted.issuperset(e.values):
                out.append(e)  # (the usual case: nothing to change)
                continue
            values = {fid: e.values[fid] for fid in field_ids if fid in e.values}
            out.append(dataclasses.replace(e, read_version=version, values=values))
        return out

    def commit(self) -> ManifestSnapshot:
        """Write inserted rows, then commit ``__manifest`` once; returns the new snapshot."""
        if not self.changed:
            return self.snapshot
        self._committing = {}
        base = self.base_snapshot()
        if not self.inserts:
            return self._commit_rows(base)
        writer = NamespaceWriter(
            base,
            self.ns._schema,  # the stored form (blob columns take bytes)
            self.ns.current_spec,
            mode="append",
            storage_options=self.storage_options,
            max_rebases=0,
            entries=self._base_entries([f.field_id for f in self.ns.current_spec.fields]),
        )
        try:
            for t in self.inserts:
                writer.write(t)
            snap = writer.commit()
        except BaseException:
            writer.abort()
            raise
        if snap is base:  # nothing was written after all: commit the row changes alone
            return self._commit_rows(base)
        self._remember_entries(snap, writer)
        return snap

    def _commit_rows(self, base: ManifestSnapshot) -> ManifestSnapshot:
        snap = commit_rows(base, base.rows, storage_options=self.storage_options)
        if snap.version != base.version + 1:
            return snap  # concurrent commits' rows are in too: nothing to hand on
        carry_namespaces(base, snap)  # the same rows
        if self._fids == [f.field_id for f in self.ns.all_fields()]:
            remember_entries(snap, self._fids, self._base_entries(self._fids))
        return snap

    def _remember_entries(self, snap: ManifestSnapshot, writer: Any) -> None:
        """Give ``snap`` (committed by ``writer`` on :meth:`base_snapshot`) its entries for
        the field ids read at the start: the base entries, re-pinned where the writer
        appended, plus the tables it created, so the next operation does not derive them
        from the rows again. Only where the rows read back are certain to hold exactly
        the values the writer wrote (partition columns of the spec's own types)."""
        spec = self.ns.current_spec
        rows = snap.rows
        if (
            writer.rebased
            or snap.version != writer.snapshot.version + 1
            or self._fids != [f.field_id for f in self.ns.all_fields()]
            or "location" not in snap.lance_schema.names
        ):
            return
        for pf in spec.fields:
            at = rows.schema.get_field_index(pf.column_name)
            if at < 0 or not rows.schema.field(at).type.equals(pf.result_type):
                return
        if any(f"partition_field_{fid}" not in rows.column_names for fid in self._fids):
            return
        versions = writer.committed_versions
        out = []
        for e in self._base_entries(self._fids):
            v = versions.get(e.object_id)
            out.append(e if v is None else dataclasses.replace(e, read_version=v))
        for t in writer.new_tables():
            if t.object_id not in versions:
                continue
            values: dict[str, Any] = dict.fromkeys(self._fids)
            values.update(zip([pf.field_id for pf in spec.fields], t.values, strict=True))
            out.append(
                PartitionTable(
                    object_id=t.object_id,
                    location=t.location,
                    uri=resolve_location(snap.root, t.location, t.object_id),
                    spec_version=spec_version_of(t.object_id),
                    read_version=versions[t.object_id],
                    read_branch=None,
                    read_tag=None,
                    values=values,
                )
            )
        remember_entries(snap, self._fids, out)


def _check_version_pin(entry: PartitionTable) -> None:
    if entry.read_tag or entry.read_branch:
        pin = f"tag {entry.read_tag!r}" if entry.read_tag else f"branch {entry.read_branch!r}"
        raise UnsupportedFeatureError(
            f"partition table {entry.object_id!r} is pinned to {pin}: row operations and "
            "compaction write only tables pinned to a version",
            path=entry.uri,
        )


def _latest(ds: Any, storage_options: dict[str, str] | None) -> Any:
    import lance

    return lance.dataset(ds.uri, storage_options=storage_options)


T = TypeVar("T")
RETRIES = 4


def run(ns: Any, build: Callable[[Mutation], T], *, retries: int = RETRIES) -> T:
    """Plan an operation (``build`` stages it into a fresh :class:`Mutation` of the latest
    snapshot) and commit it; on a conflict, plan it again on the newer snapshot.

    Nothing of a failed attempt is visible (its table versions stay unreferenced
    and are restored over), so replaying the whole operation on the latest
    ``__manifest`` is always safe; after ``retries`` the conflict is raised.
    """
    import random
    import time

    for attempt in range(retries + 1):
        try:
            m = Mutation(ns)
            result = build(m)
            if m.changed:
                finish(ns, m)
            return result
        except CommitConflictError:
            if attempt == retries:
                raise
            time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
    raise AssertionError("unreachable")


def finish(ns: Any, mutation: Mutation) -> int:
    """Commit ``mutation`` and move ``ns`` to the new snapshot; returns its version."""
    snap = mutation.commit()
    ns._set_snapshot(snap)
    return snap.version


def values_key(entry: PartitionTable, field_ids: list[str]) -> tuple[Any, ...]:
    from lance_sql.tables.namespace.partition_rows import keys_of

    values = entry.values
    return keys_of([values.get(fid) for fid in field_ids])


__all__ = [
    "ROWID",
    "Mutation",
    "finish",
    "run",
    "values_key",
]
