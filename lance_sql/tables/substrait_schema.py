"""The schema a pyarrow filter is serialised to Substrait against: only the columns it reads count.

``Expression.to_substrait(schema)`` converts *every* column, and pyarrow refuses some a
filter may never mention (structs whose fields carry metadata, fixed-size and large
lists, decimal256, duration). So the schema keeps names and positions, strips field
metadata, and replaces each such column by a stand-in of the nearest carried type;
:func:`stand_in_reads` finds filters that read a stand-in.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.format.schema import map_child_fields

R = TypeVar("R")


def _cached_when_hashable(fn: Callable[[Any], R]) -> Callable[[Any], R]:
    """``fn`` with an LRU cache by its argument; an unhashable (extension) type is not cached."""
    cached = functools.lru_cache(maxsize=256)(fn)

    def call(arg: Any) -> R:
        try:
            return cached(arg)
        except TypeError:  # the argument does not hash
            return fn(arg)

    return call


def substrait_schema(schema: pa.Schema) -> tuple[pa.Schema, frozenset[int]]:
    """(``schema`` as Substrait can carry it, positions of the columns given a stand-in type)."""
    return _build(pa.schema([pa.field(f.name, f.type, f.nullable) for f in schema]))


@_cached_when_hashable
def _build(schema: pa.Schema) -> tuple[pa.Schema, frozenset[int]]:
    fields = []
    changed = set()
    for i, f in enumerate(schema):
        plain = without_field_metadata(f.type)
        if not carried(plain):
            plain = _stand_in(plain)
            changed.add(i)
        fields.append(pa.field(f.name, plain, f.nullable))
    return pa.schema(fields), frozenset(changed)


def serialise(expr: pc.Expression, schema: pa.Schema) -> bytes:
    """``expr`` as Substrait with field positions of ``schema``; reading a column Substrait
    cannot carry raises ``pyarrow.ArrowNotImplementedError`` naming it."""
    stubbed, changed = substrait_schema(schema)
    buf = bytes(expr.to_substrait(stubbed))
    read = stand_in_reads(buf, changed)
    if read:
        f = schema.field(min(read))
        raise pa.ArrowNotImplementedError(
            f"filter {expr} reads column {f.name!r} of type {f.type}, which Substrait cannot carry"
        )
    return buf


def stand_in_reads(buf: bytes, changed: frozenset[int]) -> set[int]:
    """Positions in ``changed`` that the serialised expression ``buf`` reads."""
    if not changed:
        return set()
    from substrait import extended_expression_pb2

    message = extended_expression_pb2.ExtendedExpression()
    message.ParseFromString(buf)
    return referenced_positions(message) & changed


def messages(message: Any) -> Iterator[Any]:
    """``message`` and every protobuf message nested in it (a Substrait plan, relation, ...)."""
    stack = [message]
    while stack:
        msg = stack.pop()
        yield msg
        for desc, value in msg.ListFields():
            if desc.message_type is not None:
                stack.extend(value if desc.is_repeated else [value])


def field_references(message: Any) -> list[Any]:
    """Every column reference (``Expression.FieldReference``) in a Substrait message."""
    return [m for m in messages(message) if m.DESCRIPTOR.full_name == _FIELD_REFERENCE]


_FIELD_REFERENCE = "substrait.Expression.FieldReference"


def referenced_positions(message: object) -> set[int]:
    """Top-level field positions every column reference in a Substrait message reads."""
    return {ref.direct_reference.struct_field.field for ref in field_references(message)}


def nested_names(t: object) -> int:
    """How many names a field of Substrait type ``t`` adds after its own to a NamedStruct
    (depth first, also inside lists and map keys and values, as DataFusion writes them)."""
    kind = t.WhichOneof("kind")  # type: ignore[attr-defined]
    if kind == "struct":
        return sum(1 + nested_names(c) for c in t.struct.types)  # type: ignore[attr-defined]
    if kind == "list":
        return nested_names(t.list.type)  # type: ignore[attr-defined]
    if kind == "map":
        return nested_names(t.map.key) + nested_names(t.map.value)  # type: ignore[attr-defined]
    return 0


def arrow_nested_names(t: pa.DataType) -> int:
    """:func:`nested_names` of the Substrait type DataFusion writes for Arrow type ``t``."""
    if pa.types.is_struct(t):
        return sum(1 + arrow_nested_names(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return arrow_nested_names(t.value_type)
    if pa.types.is_map(t):
        return arrow_nested_names(t.key_type) + arrow_nested_names(t.item_type)
    return 0


def without_field_metadata(t: pa.DataType) -> pa.DataType:
    """``t`` with the metadata of every nested field removed."""
    return map_child_fields(t, _plain_field)


def _plain_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, without_field_metadata(f.type), f.nullable)


def _stand_in(t: pa.DataType) -> pa.DataType:
    if isinstance(t, pa.BaseExtensionType):
        t = without_field_metadata(t.storage_type)
    elif pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t):
        t = pa.list_(t.value_field)
    return t if carried(t) else pa.null()


def holds(t: pa.DataType, check: Callable[[pa.DataType], bool]) -> bool:
    """Whether ``t`` or a type nested in it (struct fields, list items, map keys and items,
    dictionary values) satisfies ``check``."""
    if check(t):
        return True
    if pa.types.is_struct(t):
        return any(holds(t.field(i).type, check) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return holds(t.key_type, check) or holds(t.item_type, check)
    return hasattr(t, "value_type") and holds(t.value_type, check)  # lists, dictionaries


@_cached_when_hashable
def carried(t: pa.DataType) -> bool:
    """Whether pyarrow's Substrait serialization carries columns of type ``t`` (probed once)."""
    try:
        pc.scalar(True).to_substrait(pa.schema([pa.field("x", t)]))
    except (pa.ArrowException, ValueError, TypeError):
        return False
    return True
