"""Namespace field ids of partition-table columns, and the types a namespace column may hold.

Lance's own ids stop matching once a column is dropped anywhere, so each table column
records its namespace field id under :data:`NS_FIELD_ID_KEY`; an unmarked table is read
by Lance ids and marked on its first write. Details: docs/namespaces.md, "Field ids".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pyarrow as pa

from lance_sql.errors import PartitionSchemaError
from lance_sql.format.schema import map_child_fields
from lance_sql.spec.arrow_json import FIELD_ID_KEY, field_id_of, field_ids
from lance_sql.tables.blob_columns import is_blob_field, is_blob_v2_type

NS_FIELD_ID_KEY = "lance_sql:namespace_field_id"
LAST_FIELD_ID_KEY = "lance_sql:last_field_id"


def is_marked(table_schema: pa.Schema) -> bool:
    return any(field_id_of(f, NS_FIELD_ID_KEY) is not None for f in table_schema)


def columns_by_namespace_id(table_schema: pa.Schema) -> dict[int, pa.Field]:
    """Top-level table columns keyed by the namespace field id they hold."""
    if is_marked(table_schema):
        return {m: f for f in table_schema if (m := field_id_of(f, NS_FIELD_ID_KEY)) is not None}
    return {fid: f for f in table_schema if (fid := field_id_of(f)) is not None}


def marked_field(name: str, ns_field: pa.Field, *, nullable: bool | None = None) -> pa.Field:
    """A table column ``name`` holding ``ns_field``: namespace type, marker, no Lance id."""
    md = {k: v for k, v in (ns_field.metadata or {}).items() if k != FIELD_ID_KEY.encode()}
    fid = field_id_of(ns_field)
    if fid is not None:
        md[NS_FIELD_ID_KEY.encode()] = str(fid).encode()
    return pa.field(
        name,
        _strip_ids(ns_field.type),
        ns_field.nullable if nullable is None else nullable,
        md or None,
    )


def table_schema_for(ns_schema: pa.Schema) -> pa.Schema:
    """The schema a new partition table is created with: namespace columns, marked."""
    return pa.schema([marked_field(f.name, f) for f in ns_schema])


def _strip_ids(t: pa.DataType) -> pa.DataType:
    """``t`` without ``lance:field_id`` on nested children (Lance assigns its own)."""

    def strip(f: pa.Field) -> pa.Field:
        md = {k: v for k, v in (f.metadata or {}).items() if k != FIELD_ID_KEY.encode()}
        return pa.field(f.name, _strip_ids(f.type), f.nullable, md or None)

    return map_child_fields(t, strip)


# -- field-id assignment ----------------------------------------------------------------------


def last_field_id(schema: pa.Schema, spec_source_ids: Iterable[int] = ()) -> int:
    """The highest field id ever assigned: recorded, in the schema, or used by a spec."""
    recorded = (schema.metadata or {}).get(LAST_FIELD_ID_KEY.encode())
    candidates = [-1, *field_ids(schema), *spec_source_ids]
    if recorded is not None and recorded.strip().isdigit():
        candidates.append(int(recorded))
    return max(candidates)


def with_last_field_id(schema: pa.Schema, last: int) -> pa.Schema:
    """``schema`` recording ``last`` when its own ids do not show it (a dropped column had it)."""
    md = dict(schema.metadata or {})
    md.pop(LAST_FIELD_ID_KEY.encode(), None)
    if last > max([-1, *field_ids(schema)]):
        md[LAST_FIELD_ID_KEY.encode()] = str(last).encode()
    return pa.schema(list(schema), md or None)


# -- types ------------------------------------------------------------------------------------


def shape(t: pa.DataType) -> pa.DataType:
    """``t`` with nested children named alike and nullable (what a stored type must equal)."""

    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return t  # as given: a stored type has no list views
    named = pa.types.is_struct(t)
    return map_child_fields(t, lambda f: pa.field(f.name if named else "_", shape(f.type), True))


def same_type(a: pa.DataType, b: pa.DataType) -> bool:
    """True when a column of type ``a`` holds values of namespace type ``b`` unchanged."""
    return a.equals(b) or shape(a).equals(shape(b))


def evolved_type(a: pa.DataType, b: pa.DataType) -> bool:
    """True when a table column of type ``a`` reads as namespace type ``b``: the same type,
    or structs (also inside lists) whose common fields, matched by name, are (nested
    evolution: a field one side lacks reads as NULL or is not read)."""
    if same_type(a, b):
        return True
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        theirs = {b.field(i).name: b.field(i).type for i in range(b.num_fields)}
        return all(
            evolved_type(a.field(i).type, theirs[a.field(i).name])
            for i in range(a.num_fields)
            if a.field(i).name in theirs
        )
    if same_list_kind(a, b) and getattr(a, "list_size", 0) == getattr(b, "list_size", 0):
        return evolved_type(a.value_type, b.value_type)
    return False


_LISTS = (pa.types.is_fixed_size_list, pa.types.is_large_list, pa.types.is_list)


def list_kind(t: pa.DataType) -> Callable[[pa.DataType], bool] | None:
    """The ``pa.types`` test of ``t``'s list kind (fixed-size, large, plain); None: no list."""
    return next((k for k in _LISTS if k(t)), None)


def same_list_kind(a: pa.DataType, b: pa.DataType) -> bool:
    """``a`` and ``b`` are lists of one kind (their items may differ)."""
    kind = list_kind(a)
    return kind is not None and kind(b)


def check_column_type(
    object_id: str, column: str, table_type: pa.DataType, ns_field: pa.Field
) -> None:
    """Refuse a partition-table column whose type is not the namespace column's (a blob
    column may hold any of pylance's blob forms)."""
    if is_blob_field(ns_field) and (is_blob_v2_type(table_type) or table_type == pa.large_binary()):
        return
    if not evolved_type(table_type, ns_field.type):
        raise PartitionSchemaError(
            table=object_id,
            column=ns_field.name,
            table_column=column,
            expected=ns_field.type,
            actual=table_type,
        )


def canonical_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with view variants stored as their canonical types (metadata kept)."""
    return pa.schema(
        [pa.field(f.name, _replace_views(f.type), f.nullable, f.metadata) for f in schema],
        schema.metadata,
    )


def _replace_views(t: pa.DataType) -> pa.DataType:
    if pa.types.is_list_view(t):
        t = pa.list_(t.value_field)
    elif pa.types.is_large_list_view(t):
        t = pa.large_list(t.value_field)
    t = {pa.string_view(): pa.utf8(), pa.binary_view(): pa.binary()}.get(t, t)
    return map_child_fields(t, lambda f: f.with_type(_replace_views(f.type)))
