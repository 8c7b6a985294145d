"""Blob columns: the forms a blob column takes, and the descriptor a scan returns for it.

A blob column is the ``lance.blob.v2`` extension type or a ``large_binary`` field with
``lance-encoding:blob = "true"``. A scan returns a descriptor struct per row (V2 in
format 2.2+, V1 ``position, size`` before), never the bytes; lance-sql presents exactly
that type (:func:`read_schema`). A namespace stores the ``large_binary`` form.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lance_sql.errors import SchemaMismatchError

BLOB_KEY = b"lance-encoding:blob"
BLOB_V2_NAME = "lance.blob.v2"
#: Field metadata marking a descriptor column lance-sql presents (its data is not the bytes).
DESCRIPTOR_KEY = b"lance_sql:blob_descriptor"

V2_DESCRIPTOR = pa.struct(
    [
        pa.field("kind", pa.uint8(), False),
        pa.field("position", pa.uint64(), False),
        pa.field("size", pa.uint64(), False),
        pa.field("blob_id", pa.uint32(), False),
        pa.field("blob_uri", pa.string(), False),
    ]
)
V1_DESCRIPTOR = pa.struct([pa.field("position", pa.uint64()), pa.field("size", pa.uint64())])


def is_blob_v2_type(t: pa.DataType) -> bool:
    return isinstance(t, pa.BaseExtensionType) and t.extension_name == BLOB_V2_NAME


def has_blob_metadata(f: pa.Field) -> bool:
    return (f.metadata or {}).get(BLOB_KEY, b"").lower() == b"true"


def is_blob_field(f: pa.Field) -> bool:
    """A blob column in any of its forms: V2 type, blob metadata, or a presented descriptor."""
    return is_blob_v2_type(f.type) or has_blob_metadata(f) or DESCRIPTOR_KEY in (f.metadata or {})


def descriptor_type(file_version: str | None) -> pa.DataType:
    """The descriptor a blob column of a ``file_version`` table scans as (None: pylance's 2.2)."""
    if file_version is not None and file_version.strip().lower() in ("2.0", "2.1", "legacy"):
        return V1_DESCRIPTOR
    return V2_DESCRIPTOR


def stored_field(f: pa.Field) -> pa.Field:
    """A blob column as a namespace stores it: ``large_binary`` with the blob metadata."""
    md = {k: v for k, v in (f.metadata or {}).items() if k != DESCRIPTOR_KEY}
    md[BLOB_KEY] = b"true"
    return pa.field(f.name, pa.large_binary(), f.nullable, md)


def stored_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every top-level blob column in its stored form."""
    if not any(is_blob_field(f) for f in schema):
        return schema
    return pa.schema([stored_field(f) if is_blob_field(f) else f for f in schema], schema.metadata)


def _presented(f: pa.Field, t: pa.DataType) -> pa.Field:
    md = {k: v for k, v in (f.metadata or {}).items() if k != BLOB_KEY}
    md[DESCRIPTOR_KEY] = b"true"
    return pa.field(f.name, t, f.nullable, md)


def read_schema(schema: pa.Schema, file_version: str | None = None) -> pa.Schema:
    """A namespace schema as its scans present it: each blob column as its descriptor."""
    if not any(has_blob_metadata(f) or is_blob_v2_type(f.type) for f in schema):
        return schema
    t = descriptor_type(file_version)
    blob = [has_blob_metadata(f) or is_blob_v2_type(f.type) for f in schema]
    out = [_presented(f, t) if b else f for f, b in zip(schema, blob, strict=True)]
    return pa.schema(out, schema.metadata)


def dataset_read_schema(schema: pa.Schema) -> pa.Schema:
    """A pylance dataset's schema as its scans return it (V2 and V1 blob descriptors)."""
    if not any(has_blob_metadata(f) or is_blob_v2_type(f.type) for f in schema):
        return schema
    out = []
    for f in schema:
        if is_blob_v2_type(f.type):
            f = _presented(f, V2_DESCRIPTOR)
        elif has_blob_metadata(f) and pa.types.is_large_binary(f.type):
            f = _presented(f, V1_DESCRIPTOR)
        out.append(f)
    return pa.schema(out, schema.metadata)


def plain_read_schema(schema: pa.Schema) -> pa.Schema:
    """:func:`dataset_read_schema` without any metadata (a partition table's scan schema)."""
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in dataset_read_schema(schema)])


def holds_blob(given: pa.DataType) -> bool:
    """Whether a column of type ``given`` may be written into a blob column (its bytes)."""
    return is_blob_v2_type(given) or given in (
        pa.binary(),
        pa.large_binary(),
        pa.binary_view(),
        pa.null(),
    )


def blob_bytes(col: Any, column: str, source: str) -> Any:
    """The bytes of a blob column's input as ``large_binary`` (what a namespace writes)."""
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array(
            [blob_bytes(c, column, source) for c in col.chunks], type=pa.large_binary()
        )
    if is_blob_v2_type(col.type):
        storage = col.storage
        names = [storage.type.field(i).name for i in range(storage.type.num_fields)]
        if "uri" in names and storage.field("uri").null_count != len(storage):
            raise SchemaMismatchError(
                f"{source}: column {column!r} holds external blob URIs; a namespace stores "
                "blob bytes: read the objects and write their bytes instead"
            )
        data = storage.field("data") if "data" in names else pa.nulls(len(storage))
        return data.cast(pa.large_binary())
    return col.cast(pa.large_binary())


def blob_columns(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if is_blob_field(f)]
