"""Detect a damaged ``__manifest`` (a foreign writer kept only its base columns) and rebuild
it from the partition tables in ONE commit. Details: docs/namespaces.md, "Foreign
writers, damaged ``__manifest``, repair"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from lance_sql.errors import LanceSqlError, ManifestDamagedError
from lance_sql.format.metadata import open_metadata
from lance_sql.spec.arrow_json import source_fields
from lance_sql.tables.namespace.layout import NAMESPACE, TABLE, resolve_location, spec_version_of
from lance_sql.tables.namespace.manifest_table import (
    ManifestSnapshot,
    commit_rows,
    conform_rows,
    manifest_schema,
    mirror_properties,
    read_manifest,
)
from lance_sql.tables.namespace.partition_rows import partition_values
from lance_sql.tables.namespace.properties import parse_properties
from lance_sql.tables.namespace.reader import PartitionTable, open_partition_table, partition_units
from lance_sql.tables.namespace.spec import SPEC_KEY_PREFIX, PartitionSpec, all_fields

_HISTORY_LIMIT = 64  # earlier __manifest versions looked at to tell "lost" from "never had"


def _root_keys(keys: Iterable[str | bytes] | None) -> set[str]:
    """The root property names among ``keys`` (schema metadata's bytes, or properties)."""
    names = {k.decode("utf-8", "replace") if isinstance(k, bytes) else k for k in keys or ()}
    return {k for k in names if k == "schema" or k.startswith(SPEC_KEY_PREFIX)}


def missing_parts(
    snapshot: ManifestSnapshot,
    specs: Mapping[int, PartitionSpec],
    *,
    storage_options: Mapping[str, str] | None = None,
) -> list[str]:
    """What a partitioned ``__manifest`` lost (empty when whole): any partition column, and
    ``read_version`` or the schema-metadata root properties only when an earlier version
    had them (they are optional for other implementations)."""
    names = set(snapshot.lance_schema.names)
    out = []
    cols = [f.column_name for f in all_fields(specs) if f.column_name not in names]
    if cols:
        out.append(f"partition columns {cols}")
    no_pins = "read_version" not in names
    no_md = not _root_keys(snapshot.lance_schema.metadata)
    if no_pins or no_md:
        had_pins, had_md = _history(snapshot, storage_options)
        if no_pins and had_pins:
            out.append("the read_version column (table pins)")
        if no_md and had_md:
            out.append("the root properties in the schema metadata")
    return out


def _history(
    snapshot: ManifestSnapshot, storage_options: Mapping[str, str] | None
) -> tuple[bool, bool]:
    """(an earlier version had read_version, an earlier version had root schema metadata)."""
    import lance

    opts = dict(storage_options) if storage_options else None
    had_pins = had_md = False
    first = max(1, snapshot.version - _HISTORY_LIMIT)
    for v in range(snapshot.version - 1, first - 1, -1):
        try:
            schema = lance.dataset(snapshot.uri, version=v, storage_options=opts).schema
        except (OSError, ValueError):
            continue  # cleaned up
        had_pins = had_pins or "read_version" in schema.names
        had_md = had_md or bool(_root_keys(schema.metadata))
        if had_pins and had_md:
            break
    return had_pins, had_md


def check_manifest(
    snapshot: ManifestSnapshot,
    specs: Mapping[int, PartitionSpec],
    *,
    storage_options: Mapping[str, str] | None = None,
) -> None:
    """Refuse a ``__manifest`` that lost partition columns, pins or root schema metadata."""
    missing = missing_parts(snapshot, specs, storage_options=storage_options)
    if missing:
        raise ManifestDamagedError(
            f"__manifest version {snapshot.version} lost {'; '.join(missing)} (it was "
            "probably rewritten by a writer that does not know partitioned namespaces, such "
            "as pylance's DirectoryNamespace); run `lance-sql repair ROOT` or "
            "PartitionedNamespace.repair(root) to rebuild them from the partition tables",
            path=snapshot.uri,
            missing=missing,
        )


def repair_manifest(
    root: str, *, storage_options: Mapping[str, str] | None = None
) -> ManifestSnapshot:
    """Rebuild partition columns, pins and root schema metadata in one ``__manifest`` commit."""
    snapshot = read_manifest(root, storage_options=storage_options)
    schema, specs = parse_properties(snapshot.properties)
    fields = all_fields(specs)
    mschema = manifest_schema(fields)
    rows = conform_rows(snapshot.rows, mschema)
    oids = rows.column("object_id").to_pylist()
    kinds = rows.column("object_type").to_pylist()
    locations = rows.column("location").to_pylist()
    values: dict[str, list[Any]] = {
        f.column_name: rows.column(f.column_name).to_pylist() for f in fields
    }
    pins = rows.column("read_version").to_pylist()
    by_prefix: dict[str, tuple[int, tuple[Any, ...]]] = {}  # namespace id -> (spec, values)
    for i, (oid, kind) in enumerate(zip(oids, kinds, strict=True)):
        n = spec_version_of(oid)
        if kind != TABLE or n is None or n not in specs:
            continue
        spec = specs[n]
        version, found = _table_values(root, oid, locations[i], schema, spec, storage_options)
        pins[i] = version
        if found is None:  # an empty table: keep whatever values the row still has
            found = tuple(values[f.column_name][i] for f in spec.fields)
        for f, v in zip(spec.fields, found, strict=True):
            values[f.column_name][i] = v
        parts = oid.split("$")
        for level in range(1, len(parts) - 1):
            by_prefix.setdefault("$".join(parts[: level + 1]), (n, found[:level]))
    for i, (oid, kind) in enumerate(zip(oids, kinds, strict=True)):
        if kind != NAMESPACE or oid not in by_prefix:
            continue
        n, found = by_prefix[oid]
        for f, v in zip(specs[n].fields, found, strict=False):
            values[f.column_name][i] = v
    arrays = {
        "read_version": pa.array(pins, pa.uint64()),
        **{f.column_name: pa.array(values[f.column_name], f.result_type) for f in fields},
    }
    for name, arr in arrays.items():
        idx = mschema.get_field_index(name)
        rows = rows.set_column(idx, mschema.field(idx), arr)
    keys = _root_keys(snapshot.properties)
    properties = {k: v for k, v in snapshot.properties.items() if k in keys}
    snap = commit_rows(
        snapshot, rows, schema=mschema, properties=properties, storage_options=storage_options
    )
    return mirror_properties(snap, properties, storage_options=storage_options)


def _table_values(
    root: str,
    object_id: str,
    location: str | None,
    schema: pa.Schema,
    spec: PartitionSpec,
    storage_options: Mapping[str, str] | None,
) -> tuple[int, tuple[Any, ...] | None]:
    """(latest version, the one partition value tuple of the table's rows, or None if empty)."""
    if location is None:
        raise LanceSqlError(f"partition table {object_id!r} has no location: cannot repair it")
    uri = resolve_location(root, location, object_id)
    entry = PartitionTable(object_id, location, uri, spec_version_of(object_id), None, None, None)
    ds = open_partition_table(entry, storage_options=storage_options)
    tschema = open_metadata(uri, ds.version, storage_options=storage_options).schema
    sources = source_fields(schema)
    tops = sorted(
        {sources[s][0].split(".")[0] for f in spec.fields for s in f.source_ids if s in sources}
    )
    (unit,) = partition_units(entry, (ds, tschema), schema, rows_per_unit=1 << 62)
    uniques: list[pa.Array | None] = [None] * len(spec.fields)
    for batch in unit.to_batches(tops or None):
        if not batch.num_rows:
            continue
        for j, arr in enumerate(partition_values(batch, spec, schema)):  # (sources by name)
            u = arr.unique()
            prev = uniques[j]
            uniques[j] = u if prev is None else pa.concat_arrays([prev, u]).unique()
    if any(u is None for u in uniques):
        return int(ds.version), None
    for f, u in zip(spec.fields, uniques, strict=True):
        assert u is not None
        if len(u) != 1:
            raise LanceSqlError(
                f"partition table {object_id!r} holds rows of {len(u)} different values of "
                f"partition field {f.field_id!r} ({u.to_pylist()[:5]}...): not one partition, "
                "cannot repair its __manifest row"
            )
    return int(ds.version), tuple(u[0].as_py() for u in uniques if u is not None)
