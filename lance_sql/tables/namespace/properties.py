"""The namespace's root properties: ``schema`` (JsonArrowSchema with field ids) and one
``partition_spec_v<N>`` per spec version, read, validated and prepared for storing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lance_sql.errors import SpecError
from lance_sql.spec.arrow_json import (
    assign_field_ids,
    field_id_of,
    field_ids,
    loads_limited,
    schema_from_json,
)
from lance_sql.tables.blob_columns import stored_schema
from lance_sql.tables.namespace.field_map import canonical_schema, last_field_id, with_last_field_id
from lance_sql.tables.namespace.spec import PartitionSpec, parse_spec_key, validate_evolution

SCHEMA_KEY = "schema"
#: Root property: the Lance file format version of partition tables created from now on
#: (``"2.0"``, ``"2.1"`` or ``"2.2"``; absent: pylance's default). Existing tables keep theirs.
DATA_STORAGE_VERSION_KEY = "lance_sql.data_storage_version"
DATA_STORAGE_VERSIONS = ("2.0", "2.1", "2.2")


class NotPartitionedError(SpecError):
    """``__manifest`` has no ``partition_spec_v{N}``: a plain directory namespace."""


def parse_properties(
    properties: Mapping[str, str],
) -> tuple[pa.Schema, dict[int, PartitionSpec]]:
    """The namespace schema and every spec version from ``__manifest`` root properties."""
    spec_keys = {k: n for k in properties if (n := parse_spec_key(k)) is not None}
    if not spec_keys:
        raise NotPartitionedError(
            "__manifest has no partition_spec_v<N> property: not a partitioned namespace",
            key="partition_spec_v1",
        )
    if SCHEMA_KEY not in properties:
        raise SpecError("partitioned namespace has no 'schema' property", key=SCHEMA_KEY)
    schema = schema_from_json(properties[SCHEMA_KEY], key=SCHEMA_KEY)
    field_ids(schema, key=SCHEMA_KEY)
    specs: dict[int, PartitionSpec] = {}
    for key, n in sorted(spec_keys.items(), key=lambda kv: kv[1]):
        specs[n] = PartitionSpec.from_json(
            loads_limited(properties[key], key=key),
            schema=schema,
            key=key,
            expected_id=n,
            allow_missing_sources=True,  # a removed source column reads as NULL (spec)
        )
    validate_evolution(specs)
    return schema, specs


#: Column names Lance reserves for its own row metadata: a table with one cannot be written.
LANCE_RESERVED = frozenset(
    ("_rowid", "_rowaddr", "_rowoffset", "_row_created_at_version", "_row_last_updated_at_version")
)


def checked_file_version(value: str | None) -> str | None:
    """``value`` checked as a Lance file format version for new partition tables."""
    if value is None or value in DATA_STORAGE_VERSIONS:
        return value
    raise SpecError(
        f"data_storage_version {value!r} is not one of {', '.join(DATA_STORAGE_VERSIONS)}",
        key=DATA_STORAGE_VERSION_KEY,
    )


def check_column_name(name: str) -> None:
    """Refuse a top-level column name no partition table could store (SpecError): Lance
    would refuse empty, dotted and reserved names only at the first write."""
    if not name or "." in name or name in LANCE_RESERVED:
        why = "a reserved Lance column name" if name in LANCE_RESERVED else "empty or has a '.'"
        raise SpecError(
            f"column name {name!r} cannot be stored in a Lance table: {why}", key=SCHEMA_KEY
        )


def normalize_schema(schema: pa.Schema | Mapping[str, Any] | str) -> pa.Schema:
    """The namespace schema to store: field ids (depth-first from 0 when none are given),
    view types as their canonical types, and the last assigned field id recorded."""
    if isinstance(schema, pa.Schema):
        schema = stored_schema(schema)  # blob columns as large_binary + blob metadata
        out = (
            schema if all(field_id_of(f) is not None for f in schema) else assign_field_ids(schema)
        )
    else:
        out = schema_from_json(schema, key=SCHEMA_KEY)
        if all(field_id_of(f) is None for f in out):
            out = assign_field_ids(out)
    for name in out.names:
        check_column_name(name)
    ids = field_ids(out, key=SCHEMA_KEY)
    out = canonical_schema(out)
    return with_last_field_id(out, last_field_id(out, ids))
