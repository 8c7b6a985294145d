"""Reading partition tables as parts of one namespace table.

Columns are matched to the namespace schema by field id (:mod:`.field_map`); a column a
table lacks reads as NULL. Filters are pushed into Lance with column positions
translated; a filter over a missing column runs in pyarrow on the NULL-completed rows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import FormatError
from lance_sql.format.metadata import open_metadata
from lance_sql.spec.arrow_json import FIELD_ID_KEY, field_id_of
from lance_sql.tables.blob_columns import plain_read_schema
from lance_sql.tables.dataset_cache import (
    PinnedCache,
    options_key,
    read_session,
    version_token,
)
from lance_sql.tables.float_filters import FloatRewriteError, with_sql_float_semantics
from lance_sql.tables.fragments_unit import LanceFragmentsUnit, filtered_batches, split_fragments
from lance_sql.tables.namespace.field_map import check_column_type, columns_by_namespace_id
from lance_sql.tables.namespace.layout import resolve_location, spec_version_of
from lance_sql.tables.namespace.nested_evolution import read_as, table_names
from lance_sql.tables.pylance_errors import pylance_errors
from lance_sql.tables.scan import (
    ScanMetrics,
    ScanUnit,
    projected_schema,
    with_sql_semantics,
)
from lance_sql.tables.substrait_schema import serialise


@dataclass(frozen=True)
class PartitionTable:
    """One ``table`` row of ``__manifest``: where it is and which version to read."""

    object_id: str
    location: str
    uri: str
    spec_version: int | None
    read_version: int | None
    read_branch: str | None
    read_tag: str | None
    values: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        pin = f"v{self.read_version}" if self.read_version is not None else "latest"
        branch = f" branch={self.read_branch}" if self.read_branch else ""
        return f"{self.object_id}@{f'tag={self.read_tag}' if self.read_tag else pin}{branch}"


def table_entries(
    rows: pa.Table, root: str, field_ids: Sequence[str], *, partitions_only: bool = True
) -> list[PartitionTable]:
    """The partition tables (``table`` rows under a ``v<N>`` namespace; every table when not
    ``partitions_only``) of a ``__manifest`` snapshot; unsafe locations are refused."""
    cols = {name: rows.column(name).to_pylist() for name in rows.column_names}
    n = rows.num_rows
    nulls = [None] * n
    out = []
    for i in range(n):
        if cols["object_type"][i] != "table":
            continue
        oid = cols["object_id"][i]
        version = spec_version_of(oid)
        if version is None and partitions_only:
            continue  # not under v<N>: another writer's table, not a partition table
        location = cols["location"][i]
        out.append(
            PartitionTable(
                object_id=oid,
                location=location,
                uri=resolve_location(root, location, oid),
                spec_version=version,
                read_version=cols.get("read_version", nulls)[i],
                read_branch=cols.get("read_branch", nulls)[i],
                read_tag=cols.get("read_tag", nulls)[i],
                values={
                    fid: cols[f"partition_field_{fid}"][i]
                    for fid in field_ids
                    if f"partition_field_{fid}" in cols
                },
            )
        )
    out.sort(key=lambda e: e.object_id)
    return out


def open_partition_table(
    entry: PartitionTable,
    *,
    storage_options: Mapping[str, str] | None = None,
    session: Any = None,
) -> Any:
    """A new pylance dataset of ``entry`` at its pinned version, branch or tag (writers
    commit through it); a missing table or pin raises NotFoundError naming the object."""
    import lance

    opts = dict(storage_options) if storage_options else None
    branch = entry.read_branch if not entry.read_tag else None
    at = entry.read_tag or (None if branch else entry.read_version)
    with _table_errors(entry, storage_options):
        ds = lance.dataset(entry.uri, version=at, storage_options=opts, session=session)
        return ds.checkout_version((branch, entry.read_version)) if branch else ds


#: Partition tables opened for reading, across namespace views and sessions:
#: ``(uri, read_version, read_branch, storage options)`` -> (dataset, table schema with ids).
_OPENED: PinnedCache[tuple[Any, pa.Schema]] = PinnedCache()


def open_for_read(
    entry: PartitionTable, *, storage_options: Mapping[str, str] | None = None
) -> tuple[Any, pa.Schema]:
    """(pylance dataset at ``entry``'s pin, its schema with field ids), cached by pinned
    version and shared by readers: never commit through it."""
    if entry.read_version is None or entry.read_tag:
        return _open_uncached(entry, storage_options)
    version = entry.read_version
    return _OPENED.get_or_open(
        (entry.uri, version, entry.read_branch, options_key(storage_options)),
        lambda: version_token(entry.uri, version, entry.read_branch, storage_options),
        lambda: _open_uncached(entry, storage_options),
        lambda hit: bool(hit[0].version == version),  # nobody moved the shared dataset
    )


def _table_errors(
    entry: PartitionTable, storage_options: Mapping[str, str] | None = None, **how: Any
) -> AbstractContextManager[None]:
    """Typed errors naming the partition table for the pylance calls inside (``how``: what
    :func:`pylance_errors` takes besides; with it, the pin is left out of the name)."""
    name = f"partition table {entry.object_id!r} at location {entry.location!r}"
    if how:
        return pylance_errors(name, entry.uri, **how)
    return pylance_errors(
        f"{name} ({entry.describe()})",
        entry.uri,
        version=None if entry.read_branch or entry.read_tag else entry.read_version,
        storage_options=storage_options,
    )


def _open_uncached(
    entry: PartitionTable, storage_options: Mapping[str, str] | None
) -> tuple[Any, pa.Schema]:
    ds = open_partition_table(entry, storage_options=storage_options, session=read_session())
    # pylance decodes the schema lazily: a damaged manifest fails (or panics) here
    with _table_errors(entry, storage_options):
        return ds, pylance_field_ids(ds)


def pylance_field_ids(ds: Any) -> pa.Schema:
    """``ds``'s Arrow schema with ``lance:field_id`` on every top-level field, from pylance
    (not parsing the manifest again); nested fields get no ids."""
    ids = {f.name(): str(f.id()).encode() for f in ds.lance_schema.fields()}
    key = FIELD_ID_KEY.encode()
    fields = [f.with_metadata({**(f.metadata or {}), key: ids[f.name]}) for f in ds.schema]
    return pa.schema(fields, metadata=ds.schema.metadata)


def table_field_ids(
    entry: PartitionTable, version: int, *, storage_options: Mapping[str, str] | None = None
) -> pa.Schema:
    """The partition table's Arrow schema with ``lance:field_id`` on every field."""
    return open_metadata(
        entry.uri, version, branch=entry.read_branch, storage_options=storage_options
    ).schema


@dataclass(frozen=True)
class ColumnMapping:
    """For each namespace column: the partition table column holding it, or None (NULL)."""

    ns_schema: pa.Schema
    table_schema: pa.Schema
    sources: tuple[str | None, ...]

    @functools.cached_property
    def identity(self) -> bool:
        """True when names and types coincide for every namespace column (cached)."""
        return all(
            src == f.name and self.table_schema.field(src).type.equals(f.type)
            for src, f in zip(self.sources, self.ns_schema, strict=True)
        )

    @property
    def read_schema(self) -> pa.Schema:
        """The schema the table's fragments are read with."""
        return self.ns_schema if self.identity else plain_read_schema(self.table_schema)


def map_columns(ns_schema: pa.Schema, table_schema: pa.Schema, *, object_id: str) -> ColumnMapping:
    """Match namespace columns to table columns by namespace field id (top level; unmarked
    tables use Lance's field ids); another type is a PartitionSchemaError."""
    by_id = columns_by_namespace_id(table_schema)
    sources: list[str | None] = []
    for f in ns_schema:
        fid = field_id_of(f)
        src = by_id.get(fid) if fid is not None else None
        if src is None and fid is None and f.name in table_schema.names:
            src = table_schema.field(f.name)
        if src is not None:
            check_column_type(object_id, src.name, table_names(src.type, f.type), f)
        sources.append(None if src is None else src.name)
    return ColumnMapping(ns_schema, table_schema, tuple(sources))


class PartitionTableUnit(ScanUnit):
    """Fragments of one partition table (``inner``, read with ``mapping.read_schema``),
    presented with the namespace schema."""

    def __init__(
        self, entry: PartitionTable, inner: LanceFragmentsUnit, mapping: ColumnMapping
    ) -> None:
        self.entry = entry
        self.mapping = mapping
        self._ns_schema = mapping.ns_schema
        self._src_of = dict(zip(self._ns_schema.names, mapping.sources, strict=True))
        self._inner = inner
        table_schema = inner.schema
        # The table schema with namespace names where mapped: the schema filters are
        # serialised against, so Substrait's positional references land on table columns.
        # Nested fields renamed since the table was written take their namespace names.
        ns_of = {src: f for src, f in zip(mapping.sources, mapping.ns_schema, strict=True) if src}
        unmapped = [
            pa.field(f"__lance_sql_unmapped_{i}", f.type) for i, f in enumerate(table_schema)
        ]
        self._virtual = pa.schema(
            [pa.field(n.name, table_names(f.type, n.type)) if (n := ns_of.get(f.name)) else u
             for f, u in zip(table_schema, unmapped, strict=True)]
        )  # fmt: skip

    @property
    def schema(self) -> pa.Schema:
        return self._ns_schema

    @property
    def estimated_rows(self) -> int | None:
        return self._inner.estimated_rows

    def describe(self) -> str:
        return f"{self.entry.describe()} {self._inner.describe()}"

    def __repr__(self) -> str:
        return f"PartitionTableUnit({self.describe()})"

    def starts_ahead(self, filter: pc.Expression | None) -> bool:
        return self._inner.starts_ahead(filter)

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        if filter is None:
            with self._pylance_errors():
                return self._inner.count_rows()
        return super().count_rows(filter)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        if self.mapping.identity:
            return self._typed_errors(self._inner.to_batches(columns, filter, batch_size))
        out_schema = projected_schema(self._ns_schema, columns)
        return self._typed_errors(self._mapped(out_schema, filter, batch_size))

    def read_small(self, columns: list[str]) -> list[pa.Table] | None:
        if not self.mapping.identity:
            return None
        with self._pylance_errors():
            return self._inner.read_small(columns)

    def read_table(self, columns: Sequence[str], filter: pc.Expression | None = None) -> pa.Table:
        if not self.mapping.identity or not columns:
            return super().read_table(columns, filter)
        with self._pylance_errors():
            return self._inner.read_table(columns, filter)

    def _typed_errors(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with self._pylance_errors():
            yield from batches

    def _pylance_errors(self) -> Any:
        """A damaged data file or manifest fails the scan typed, naming this partition table."""
        return _table_errors(self.entry, missing=FormatError)

    def _mapped(
        self, out_schema: pa.Schema, filter: pc.Expression | None, batch_size: int | None
    ) -> Iterator[pa.RecordBatch]:
        src_of = self._src_of
        translated = None
        if filter is not None:
            try:
                # A translated filter has positional field references, which the float
                # rewrite (tables/float_filters.py) cannot read: a filter comparing floats
                # is applied here, by name, with DataFusion's float semantics.
                if with_sql_float_semantics(filter, self._ns_schema) is not filter:
                    raise FloatRewriteError("float comparison: applied by name")
                translated = pc.Expression.from_substrait(serialise(filter, self._virtual))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, FloatRewriteError):
                yield from self._filtered_in_pyarrow(out_schema, filter, batch_size)
                return
        wanted = list(dict.fromkeys(s for n in out_schema.names if (s := src_of[n]) is not None))
        for batch in self._inner.to_batches(wanted, translated, batch_size):
            yield self._assemble(batch, out_schema, src_of)

    def _assemble(
        self, batch: pa.RecordBatch, out_schema: pa.Schema, src_of: Mapping[str, str | None]
    ) -> pa.RecordBatch:
        arrays = [
            read_as(batch.column(s), f.type)
            if (s := src_of[f.name])
            else pa.nulls(len(batch), f.type)
            for f in out_schema
        ]
        if not arrays:
            return batch.select([])
        return pa.RecordBatch.from_arrays(arrays, schema=out_schema)

    def _filtered_in_pyarrow(
        self, out_schema: pa.Schema, filter: pc.Expression, batch_size: int | None
    ) -> Iterator[pa.RecordBatch]:
        """The filter needs a column this table lacks: complete rows with NULLs, filter here."""
        src_of = self._src_of
        present = list(dict.fromkeys(s for s in self.mapping.sources if s is not None))
        exact = with_sql_semantics(filter, self._ns_schema)
        batches = self._inner.to_batches(present, None, batch_size)
        full = (self._assemble(b, self._ns_schema, src_of) for b in batches)
        yield from filtered_batches(full, exact, out_schema)


def partition_units(
    entry: PartitionTable,
    opened: tuple[Any, pa.Schema],
    schema: pa.Schema,
    *,
    rows_per_unit: int,
    storage_options: Mapping[str, str] | None = None,
    metrics: ScanMetrics | None = None,
    scan_options: dict[str, Any] | None = None,
) -> list[ScanUnit]:
    """Scan units of one opened partition table presenting ``schema``, several above
    ``rows_per_unit`` rows; stateless, so reused by every scan of the same pin."""
    ds, tschema = opened
    mapping = map_columns(schema, tschema, object_id=entry.object_id)
    sizes = [(f.fragment_id, f.count_rows()) for f in ds.get_fragments()]
    inner = split_fragments(
        ds,
        max(1, -(-sum(n for _, n in sizes) // rows_per_unit)),
        schema=mapping.read_schema,
        storage_options=dict(storage_options) if storage_options else None,
        metrics=metrics,
        fragment_rows=sizes,
        scan_options=scan_options,
    )
    return [PartitionTableUnit(entry, unit, mapping) for unit in inner]
