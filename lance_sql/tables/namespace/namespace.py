"""``PartitionedNamespace``: create, write, evolve and read a partitioned namespace.

One object is one view at one ``__manifest`` version; writes start from the latest
``__manifest`` and move the object to the version they commit. A namespace opened at an
old ``version`` is read-only. See ``docs/namespaces.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import LanceSqlError, SpecError
from lance_sql.spec.arrow_json import dumps, schema_to_json
from lance_sql.spec.partition_field import PartitionField
from lance_sql.tables.namespace import blobs, evolution, indexes, runtime
from lance_sql.tables.namespace.filter_hook import filter_planner
from lance_sql.tables.namespace.layout import root_uri
from lance_sql.tables.namespace.manifest_fragments import table_versions
from lance_sql.tables.namespace.manifest_table import (
    ManifestSnapshot,
    conform_rows,
    create_manifest,
    manifest_schema,
    read_manifest,
    snapshot_entries,
    with_properties,
)
from lance_sql.tables.namespace.properties import (
    DATA_STORAGE_VERSION_KEY,
    SCHEMA_KEY,
    NotPartitionedError,
    checked_file_version,
    normalize_schema,
    parse_properties,
)
from lance_sql.tables.namespace.reader import PartitionTable, open_for_read, partition_units
from lance_sql.tables.namespace.repair import check_manifest, repair_manifest
from lance_sql.tables.namespace.spec import PartitionSpec, all_fields
from lance_sql.tables.namespace.spec_build import spec_of
from lance_sql.tables.namespace.write_layout import find_entry
from lance_sql.tables.namespace.write_methods import WriteMethods
from lance_sql.tables.path_kind import prepare_root
from lance_sql.tables.scan import ScanMetrics, ScanUnit


def _repair_root(
    root: str | os.PathLike[str], *, storage_options: Mapping[str, str] | None = None
) -> PartitionedNamespace:
    """Rebuild a damaged ``__manifest`` (see :mod:`.repair`); returns the namespace."""
    root_s = root_uri(root)
    snap = repair_manifest(root_s, storage_options=storage_options)
    return PartitionedNamespace(root_s, snap, storage_options=storage_options)


def first_snapshot(
    root: str, schema: pa.Schema, spec: Any, file_version: str | None = None
) -> ManifestSnapshot:
    """Version 0 of a new namespace's ``__manifest`` (not written): the root properties
    (``schema``, spec version 1 from any form :func:`.spec_build.spec_of` reads, the file
    version) and the namespace's own row."""
    parsed = spec_of(spec, schema)
    properties = {SCHEMA_KEY: dumps(schema_to_json(schema)), parsed.key: parsed.to_json_string()}
    if file_version is not None:
        properties[DATA_STORAGE_VERSION_KEY] = file_version
    mschema = manifest_schema(parsed.fields)
    return ManifestSnapshot(
        root=root,
        version=0,
        rows=evolution.spec_row(parsed, mschema),
        properties=properties,
        lance_schema=with_properties(mschema, properties),
    )


class PartitionedNamespace(WriteMethods):
    """A partitioned namespace at ``root``, viewed at one ``__manifest`` version."""

    def __init__(
        self,
        root: str,
        snapshot: ManifestSnapshot,
        *,
        storage_options: Mapping[str, str] | None = None,
        read_only: bool = False,
    ) -> None:
        self.root = root
        self.storage_options = dict(storage_options) if storage_options else None
        self.read_only = read_only
        self.metrics = ScanMetrics()
        self._set_snapshot(snapshot)

    def _set_snapshot(self, snapshot: ManifestSnapshot) -> None:
        old = getattr(self, "_snapshot", None)
        if old is not None and old.properties == snapshot.properties:  # (a commit of rows)
            schema, specs = self._schema, self._specs
        else:
            schema, specs = parse_properties(snapshot.properties)
        check_manifest(snapshot, specs, storage_options=self.storage_options)
        self._snapshot, self._schema, self._specs = snapshot, schema, specs  # stored form
        self._read_schema = blobs.namespace_read_schema(schema, snapshot.properties)
        self._entries: list[PartitionTable] | None = None
        # (uri, read_version, read_branch, read_tag) -> (pylance dataset, table schema with ids)
        self._opened: dict[tuple[Any, ...], tuple[Any, pa.Schema]] = {}

    # -- creation and opening -----------------------------------------------------------------
    @classmethod
    def create(
        cls,
        root: str | os.PathLike[str],
        schema: pa.Schema | Mapping[str, Any] | str,
        spec: PartitionSpec | Mapping[str, Any] | str | Sequence[Mapping[str, Any]],
        *,
        storage_options: Mapping[str, str] | None = None,
        data_storage_version: str | None = None,
        mode: str = "create",
    ) -> PartitionedNamespace:
        """Create a namespace at ``root`` with spec version 1.

        ``mode``: ``"create"`` refuses a root that already holds a namespace
        (:class:`NamespaceExistsError`); ``"exist_ok"`` opens and returns it
        unchanged (its schema and spec are kept as they are); ``"overwrite"``
        deletes it (every version) and creates a new one.

        ``schema``: a pyarrow schema (ids assigned depth-first from 0 when it has
        none) or JsonArrowSchema JSON. ``spec``: a PartitionSpec, its JSON, a list
        of convenient field dicts (see :func:`spec_build.build_spec`), or Iceberg-style
        text such as ``"days(ts), bucket(16, id)"`` (:mod:`.spec_text`).
        ``data_storage_version``: the Lance file format of the partition tables the
        namespace creates (``"2.0"``, ``"2.1"``, ``"2.2"``; default pylance's), kept in
        the root property :data:`.properties.DATA_STORAGE_VERSION_KEY`.
        """
        root_s = root_uri(root)
        existing = prepare_root(root_s, mode, storage_options)
        if existing:
            return cls.open(root_s, storage_options=storage_options)
        file_version = checked_file_version(data_storage_version)
        first = first_snapshot(root_s, normalize_schema(schema), spec, file_version)
        snap = create_manifest(
            root_s,
            first.lance_schema,
            first.properties,
            first.rows,
            storage_options=storage_options,
        )
        return cls(root_s, snap, storage_options=storage_options)

    @classmethod
    def open(
        cls,
        root: str | os.PathLike[str],
        *,
        version: int | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> PartitionedNamespace:
        """Open the namespace at ``root`` (latest ``__manifest``, or ``version``: read-only)."""
        root_s = root_uri(root)
        snap = read_manifest(root_s, version, storage_options=storage_options)
        return cls(root_s, snap, storage_options=storage_options, read_only=version is not None)

    repair = runtime.RootOrSelf(_repair_root)
    blob_rows, take_blobs, read_blobs = blobs.blob_rows, blobs.take_blobs, blobs.read_blobs

    def refresh(self) -> PartitionedNamespace:
        """Move this view to the latest ``__manifest`` version."""
        self._check_writable()
        self._set_snapshot(read_manifest(self.root, storage_options=self.storage_options))
        return self

    # -- model ----------------------------------------------------------------------------
    @property
    def manifest_version(self) -> int:
        return self._snapshot.version

    @property
    def snapshot(self) -> ManifestSnapshot:
        return self._snapshot

    @property
    def schema(self) -> pa.Schema:
        """The namespace schema as read (ids on every field; blobs as descriptors)."""
        return self._read_schema

    @property
    def specs(self) -> dict[int, PartitionSpec]:
        return dict(self._specs)

    @property
    def current_spec(self) -> PartitionSpec:
        return self._specs[max(self._specs)]

    def all_fields(self) -> list[PartitionField]:
        """Every partition field of every spec version (one per field id, first seen)."""
        return all_fields(self._specs)

    def tables(self) -> list[PartitionTable]:
        """The partition tables of this snapshot (locations checked against the root)."""
        if self._entries is None:
            fids = [f.field_id for f in self.all_fields()]
            self._entries = snapshot_entries(self._snapshot, fids)  # (memo per snapshot)
        return list(self._entries)

    def table_entry(self, object_id: str) -> PartitionTable | None:
        """The partition table ``object_id`` of this snapshot (None: not one), found by
        bisection: no pass over every table."""
        if self._entries is None:
            self.tables()
        return find_entry(self._entries or [], object_id)

    foreign_tables = runtime.foreign_tables
    describe = runtime.describe

    def partitions(self) -> pa.Table:
        """One row per partition table: ids, location, pins, and every partition column."""
        rows = self._snapshot.rows
        versions = table_versions(rows)  # (the spec version of each partition table row)
        keep = versions >= 0
        tables = conform_rows(rows.filter(pa.array(keep)), manifest_schema(self.all_fields()))
        cols = {
            "object_id": tables.column("object_id"),
            "location": tables.column("location"),
            "spec_version": pa.array(versions[keep], pa.int32()),
            "read_version": tables.column("read_version"),
            "read_branch": tables.column("read_branch"),
            "read_tag": tables.column("read_tag"),
        }
        for f in self.all_fields():
            cols[f.column_name] = tables.column(f.column_name)
        out = pa.table(cols)
        return out.sort_by("object_id") if out.num_rows else out

    # -- evolution (:mod:`.evolution`) ---------------------------------------------------------
    add_spec = evolution.add_spec
    rename_column = evolution.rename_column
    add_columns = evolution.add_columns
    drop_columns = evolution.drop_columns

    # -- indexes and search (:mod:`.indexes`; the search planner: :mod:`.filter_hook`) --------
    create_index = indexes.create_index
    drop_index = indexes.drop_index
    index_coverage = indexes.index_coverage
    optimize_indexes = indexes.optimize_indexes

    def create_scalar_index(
        self,
        column: str,
        index_type: str = "BTREE",
        *,
        name: str | None = None,
        replace: bool = False,
        **params: Any,
    ) -> indexes.NamespaceIndex:
        """Build a Lance scalar index on ``column`` in every partition table (one commit)."""
        return self.create_index(column, index_type, name=name, replace=replace, **params)

    def list_indexes(self) -> list[indexes.NamespaceIndex]:
        """The namespace's scalar indexes (as of this snapshot)."""
        return indexes.read_indexes(self._snapshot.properties)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        """Vector, full-text or hybrid search: see :func:`lance_sql.search` (docs/search.md)."""
        return filter_planner().search(self, *args, **kwargs)

    # -- reading ----------------------------------------------------------------------------
    def _open(self, entry: PartitionTable) -> tuple[Any, pa.Schema]:
        """(pylance dataset at the pinned version, its schema with field ids); cached."""
        key = (entry.uri, entry.read_version, entry.read_branch, entry.read_tag)
        cached = self._opened.get(key)
        if cached is None:
            # shared, process-wide by pinned version: never commit through it
            cached = open_for_read(entry, storage_options=self.storage_options)
            self._opened[key] = cached
        return cached

    def adopt_open_tables(self, other: PartitionedNamespace) -> None:
        """Reuse ``other``'s open partition tables (same pins read the same data)."""
        if other.root == self.root:
            for key, value in other._opened.items():
                self._opened.setdefault(key, value)

    def scan_units(
        self,
        partitions: Iterable[PartitionTable | str] | None = None,
        *,
        rows_per_unit: int = 4_000_000,
        schema: pa.Schema | None = None,
    ) -> list[ScanUnit]:
        """Scan units for ``partitions`` (object ids or entries; all when None), split by
        fragments above ``rows_per_unit`` rows. ``schema`` (default: the namespace's) is
        matched by field id, so one captured earlier survives renames and added columns.
        """
        out_schema = self._read_schema if schema is None else schema
        entries = self.tables()
        if partitions is not None:
            wanted = {p if isinstance(p, str) else p.object_id for p in partitions}
            unknown = wanted - {e.object_id for e in entries}
            if unknown:
                raise LanceSqlError(f"not partition tables of this namespace: {sorted(unknown)}")
            entries = [e for e in entries if e.object_id in wanted]
        units: list[ScanUnit] = []
        for entry in entries:
            units.extend(
                partition_units(
                    entry,
                    self._open(entry),
                    out_schema,
                    rows_per_unit=rows_per_unit,
                    storage_options=self.storage_options,
                    metrics=self.metrics,
                )
            )
        return units

    def _units_for(
        self, filter: pc.Expression | str | None, partitions: Iterable[Any] | None
    ) -> list[ScanUnit]:
        """Scan units of the tables the scan planner selects for ``filter`` (within
        ``partitions`` when given): the same tables SQL, DataFrames and ``plan_scan`` read."""
        if filter is not None:
            plan = filter_planner().scan_plan(self, filter)
            if plan is not None and not plan.selects_all:
                chosen = set(plan.object_ids)
                if partitions is not None:  # unknown ids stay: scan_units names them
                    given = {p if isinstance(p, str) else p.object_id for p in partitions}
                    chosen = (chosen & given) | (given - {e.object_id for e in self.tables()})
                partitions = sorted(chosen)
        return self.scan_units(partitions)

    def _read_filter(self, filter: pc.Expression | str | None) -> pc.Expression | None:
        """``filter`` as the pyarrow expression the scan units apply (SQL text converted by
        the planner)."""
        if filter is None or isinstance(filter, pc.Expression):
            return filter
        if isinstance(filter, str):
            return filter_planner().expression(self, filter)
        raise TypeError(
            f"filter of namespace {self.root!r}: give a pyarrow.compute.Expression or SQL "
            f"text, got {type(filter).__name__}"
        )

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        partitions: Iterable[Any] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Batches of the rows ``filter`` keeps, read from the partition tables it selects."""
        if columns is not None:
            missing = [c for c in columns if c not in self._schema.names]
            if missing:
                raise SpecError(f"no namespace column(s) {missing}", key=SCHEMA_KEY)
        rows = self._read_filter(filter)
        for unit in self._units_for(filter, partitions):
            yield from unit.to_batches(columns, rows)

    def to_table(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        partitions: Iterable[Any] | None = None,
    ) -> pa.Table:
        """All rows (of ``partitions``) with the namespace schema, projected and filtered;
        only the partition tables the scan planner selects for ``filter`` are read."""
        batches = list(self.to_batches(columns, filter, partitions=partitions))
        out_schema = (
            self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])
        )
        if not out_schema.names:
            n = sum(b.num_rows for b in batches)
            return pa.table({"_": pa.nulls(n)}).select([])
        return pa.Table.from_batches(batches, schema=out_schema)

    def count_rows(self, filter: pc.Expression | str | None = None) -> int:
        """Rows ``filter`` keeps, counted in the partition tables the scan planner selects."""
        rows = self._read_filter(filter)
        return sum(u.count_rows(rows) for u in self._units_for(filter, None))

    def __repr__(self) -> str:
        return (
            f"PartitionedNamespace({self.root!r}, manifest_version={self.manifest_version}, "
            f"specs={sorted(self._specs)})"
        )


__all__ = ["NotPartitionedError", "PartitionedNamespace", "first_snapshot", "parse_properties"]
