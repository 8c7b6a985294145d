"""The one schema rule every write path applies (Python, CLI import, Spark, SQL INSERT).

Every refusal is a :class:`SchemaMismatchError` naming the column. The rule:
docs/namespaces.md, "The schema rule of every write path".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from lance_sql.errors import SchemaMismatchError
from lance_sql.format.schema import map_child_fields
from lance_sql.tables.blob_columns import blob_bytes, holds_blob, is_blob_field

#: Gives, for a namespace field, the type a transport delivers it as (None: itself).
Encoding = Callable[[pa.Field], "pa.DataType | None"]


def representation(t: pa.DataType) -> pa.DataType:
    """``t`` with every representation detail removed (rule 4): dictionaries, large and view
    variants, list child names; struct field names and time zones are kept."""
    if pa.types.is_dictionary(t):
        return representation(t.value_type)
    if t in (pa.string_view(), pa.large_string()):
        return pa.utf8()
    if t in (pa.binary_view(), pa.large_binary()):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        t = pa.list_(t.value_field)
    named = pa.types.is_struct(t)
    return map_child_fields(
        t, lambda f: pa.field(f.name if named else "_", representation(f.type), True)
    )


def _instants(t: pa.DataType) -> pa.DataType:
    """``t`` with every zoned timestamp labelled UTC (a zone name does not change an instant)
    and maps not marked sorted (``t`` is a :func:`representation`)."""
    if pa.types.is_timestamp(t) and t.tz:
        return pa.timestamp(t.unit, "UTC")
    if pa.types.is_map(t):
        t = pa.map_(t.key_field, t.item_field)
    named = pa.types.is_struct(t)
    return map_child_fields(
        t, lambda f: pa.field(f.name if named else "_", _instants(f.type), True)
    )


def holds(given: pa.DataType, f: pa.Field, encoded: Encoding | None = None) -> bool:
    """Whether a column of type ``given`` may be written into namespace field ``f``."""
    if is_blob_field(f):
        return holds_blob(given)
    if given.equals(f.type) or _instants(representation(given)).equals(
        _instants(representation(f.type))
    ):
        return True
    if pa.types.is_null(given):  # an all-NULL column of no type (rule 6 checks nullability)
        return True
    if pa.types.is_nested(given) and _same_family(representation(given), representation(f.type)):
        return True
    enc = encoded(f) if encoded is not None else None
    if enc is None:
        return False
    return _instants(representation(given)).equals(_instants(representation(enc)))


_FAMILIES = (
    pa.types.is_signed_integer,
    pa.types.is_unsigned_integer,
    pa.types.is_floating,
)


def _same_family(a: pa.DataType, b: pa.DataType) -> bool:
    """Nested types of one structure whose leaves differ only in number width (Python infers
    int64/float64 inside lists and structs; a checked cast converts them)."""
    if a.equals(b):
        return True
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return a.num_fields == b.num_fields and all(
            a.field(i).name == b.field(i).name and _same_family(a.field(i).type, b.field(i).type)
            for i in range(a.num_fields)
        )
    if (pa.types.is_list(a) and pa.types.is_list(b)) or (
        pa.types.is_fixed_size_list(a) and pa.types.is_fixed_size_list(b)
    ):
        return _same_family(a.value_type, b.value_type)
    if pa.types.is_map(a) and pa.types.is_map(b):
        return _same_family(a.key_type, b.key_type) and _same_family(a.item_type, b.item_type)
    return any(is_kind(a) and is_kind(b) for is_kind in _FAMILIES)


def check_schema(
    given: pa.Schema | Iterable[pa.Field],
    schema: pa.Schema,
    *,
    encoded: Encoding | None = None,
    source: str = "the data",
) -> None:
    """Rules 1-5 on a schema alone (e.g. a Spark DataFrame's, on the driver, before any task)."""
    fields = list(given)
    names = set(schema.names)
    seen: set[str] = set()
    for g in fields:
        if g.name in seen:
            raise SchemaMismatchError(f"{source}: column {g.name!r} appears more than once")
        seen.add(g.name)
        if g.name not in names:
            raise SchemaMismatchError(
                f"{source}: column {g.name!r} is not in the namespace schema "
                f"(columns: {schema.names})"
            )
    by_name = {g.name: g for g in fields}
    for f in schema:
        g = by_name.get(f.name)
        if g is None:
            if not f.nullable:
                raise SchemaMismatchError(f"{source}: non-nullable column {f.name!r} is missing")
            continue
        if not holds(g.type, f, encoded):
            raise SchemaMismatchError(_type_message(source, f, g.type, encoded))


def extra_fields(given: pa.DataType, target: pa.DataType, path: str = "") -> list[str]:
    """Dotted paths of struct fields in ``given`` that ``target`` lacks (by name)."""
    if pa.types.is_struct(given) and pa.types.is_struct(target):
        names = {target.field(i).name: target.field(i).type for i in range(target.num_fields)}
        out = []
        for i in range(given.num_fields):
            f = given.field(i)
            where = f"{path}.{f.name}" if path else f.name
            if f.name not in names:
                out.append(where)
            else:
                out.extend(extra_fields(f.type, names[f.name], where))
        return out
    if pa.types.is_map(given) and pa.types.is_map(target):
        return extra_fields(given.item_type, target.item_type, f"{path}.value")
    nested = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)
    if any(k(given) for k in nested) and any(k(target) for k in nested):
        return extra_fields(given.value_type, target.value_type, f"{path}[]")
    return []


def _type_message(source: str, f: pa.Field, given: pa.DataType, encoded: Encoding | None) -> str:
    enc = encoded(f) if encoded is not None else None
    also = f" (or its encoding {enc})" if enc is not None and not enc.equals(f.type) else ""
    return (
        f"{source}: column {f.name!r} has type {given}, the namespace has {f.type}{also}; "
        "values are never converted between types: cast the column first"
    )


def conform(
    batch: pa.RecordBatch,
    schema: pa.Schema,
    *,
    encoded: Encoding | None = None,
    source: str = "the data",
) -> pa.RecordBatch:
    """``batch`` with exactly the namespace ``schema`` (rules 1-6), or SchemaMismatchError."""
    check_schema(batch.schema, schema, encoded=encoded, source=source)
    arrays = []
    for f in schema:
        idx = batch.schema.get_field_index(f.name)
        if idx < 0:
            arrays.append(pa.nulls(batch.num_rows, f.type))
            continue
        col = batch.column(idx)
        if not col.type.equals(f.type):
            col = _convert(col, f, source)
        if not f.nullable and col.null_count:
            raise SchemaMismatchError(
                f"{source}: column {f.name!r} is not nullable but has {col.null_count} NULL values"
            )
        arrays.append(col)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def cast_named(data: Any, schema: pa.Schema, source: str) -> Any:
    """``data`` (a Table or RecordBatch) with each column ``schema`` names cast to its type,
    for untyped input (text files); a failed cast is a SchemaMismatchError naming ``source``."""
    cols = []
    for name, col in zip(data.schema.names, data.columns, strict=True):
        target = schema.field(name).type if name in schema.names else None
        if target is not None and not col.type.equals(target):
            try:
                col = col.cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SchemaMismatchError(
                    f"{source}: column {name!r} ({col.type}) does not fit the namespace type "
                    f"{target}: {e}"
                ) from e
        cols.append(col)
    return type(data).from_arrays(cols, names=list(data.schema.names))


def _convert(col: Any, f: pa.Field, source: str) -> Any:
    """A checked conversion of an accepted representation or encoding to ``f.type``."""
    try:
        if is_blob_field(f):
            return blob_bytes(col, f.name, source)
        if pa.types.is_time(f.type) and pa.types.is_integer(col.type):
            return _time_from_us(col, f.type)
        return col.cast(f.type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaMismatchError(
            f"{source}: column {f.name!r} ({col.type}) does not fit the namespace type "
            f"{f.type}: {e}"
        ) from e


def _time_from_us(col: Any, t: pa.DataType) -> Any:
    """int64 microseconds since midnight (Spark's encoding of times) as time type ``t``."""
    import pyarrow.compute as pc

    us = col.cast(pa.int64())
    factor = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": None}[t.unit]
    if factor is None:
        raw = pc.multiply_checked(us, 1000)
    else:
        if factor > 1 and pc.any(pc.not_equal(pc.remainder(us, factor), 0)).as_py():
            raise pa.ArrowInvalid(f"microseconds do not fit unit {t.unit}")
        raw = pc.divide(us, factor) if factor > 1 else us
    return raw.cast(pa.int32() if t.bit_width == 32 else pa.int64()).cast(t)


def conform_all(
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    *,
    encoded: Encoding | None = None,
    source: str = "the data",
) -> Iterable[pa.RecordBatch]:
    """:func:`conform` over a stream of batches."""
    for batch in batches:
        yield conform(batch, schema, encoded=encoded, source=source)
