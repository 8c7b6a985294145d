"""Tables with fixed-size list columns (vectors) through DataFusion's Substrait round trip.

DataFusion 55's producer refuses a ``FixedSizeList`` anywhere in a scanned schema;
its consumer accepts a base schema holding a subset of the table's columns. So
while :func:`producing`, tables answer with :func:`stand_in_schema`, and
:func:`drop_stand_ins` removes unused stand-ins from each read (a read that uses
one raises ``NotImplementedError``: the plan runs as DataFusion built it).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from substrait import algebra_pb2, plan_pb2

from lance_sql.format.schema import map_child_fields
from lance_sql.tables.substrait_schema import (
    field_references,
    messages,
    nested_names,
    referenced_positions,
)

#: Name of the one field of a stand-in struct (never a real column's field name).
MARKER = "__lance_sql_fixed_size_list"

_state = threading.local()


@contextlib.contextmanager
def producing() -> Iterator[None]:
    """Lance tables show DataFusion's Substrait producer stand-in schemas on this thread."""
    previous = getattr(_state, "on", False)
    _state.on = True
    try:
        yield
    finally:
        _state.on = previous


def schema_for_datafusion(schema: pa.Schema) -> pa.Schema:
    """``schema``, or its stand-in form while :func:`producing` (never raises: that panics)."""
    if not getattr(_state, "on", False):
        return schema
    try:
        return stand_in_schema(schema)
    except Exception:  # the producer then fails as before, and the plan runs as built
        return schema


def stand_in_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every fixed-size list (at any depth) replaced by a marked stand-in."""
    fields = [f.with_type(_stand_in(f.type)) for f in schema]
    if all(new.type.equals(f.type) for new, f in zip(fields, schema, strict=True)):
        return schema
    return pa.schema(fields, metadata=schema.metadata)


def _stand_in(t: pa.DataType) -> pa.DataType:
    if pa.types.is_fixed_size_list(t):
        return pa.struct([pa.field(MARKER, pa.list_(_stand_in_field(t.value_field)))])
    return map_child_fields(t, _stand_in_field)


def _stand_in_field(f: pa.Field) -> pa.Field:
    return f.with_type(_stand_in(f.type))


def drop_stand_ins(plan: plan_pb2.Plan) -> None:
    """Remove unused stand-in columns from every read of ``plan`` (in place); see the module."""
    for msg in list(messages(plan)):
        if isinstance(msg, algebra_pb2.ReadRel) and msg.HasField("base_schema"):
            _drop(msg)


def column_spans(schema: Any) -> list[tuple[int, int]]:
    """(first name, end) of each top-level column of a Substrait ``NamedStruct``: its names
    are listed depth first (struct children after their field)."""
    spans, at = [], 0
    for t in schema.struct.types:
        end = at + 1 + nested_names(t)
        spans.append((at, end))
        at = end
    return spans


def _drop(read: Any) -> None:
    names = list(read.base_schema.names)
    types = list(read.base_schema.struct.types)
    spans = column_spans(read.base_schema)
    marked = {i for i, (a, b) in enumerate(spans) if MARKER in names[a:b]}
    if not marked:
        return
    if read.HasField("projection"):
        used = {item.field for item in read.projection.select.struct_items}
    else:
        used = set(range(len(types)))
    for part in ("filter", "best_effort_filter"):
        if read.HasField(part):
            used |= referenced_positions(getattr(read, part))
    if marked & used:
        column = names[spans[min(marked & used)][0]]
        raise NotImplementedError(
            f"the plan reads fixed-size list column {column!r}, which DataFusion 55's Substrait "
            "round trip cannot carry"
        )
    keep = [i for i in range(len(types)) if i not in marked]
    new_index = {old: new for new, old in enumerate(keep)}
    kept_names = [n for i in keep for n in names[spans[i][0] : spans[i][1]]]
    kept_types = [types[i] for i in keep]
    del read.base_schema.names[:]
    read.base_schema.names.extend(kept_names)
    del read.base_schema.struct.types[:]
    read.base_schema.struct.types.extend(kept_types)
    if read.HasField("projection"):
        for item in read.projection.select.struct_items:
            item.field = new_index[item.field]
    for part in ("filter", "best_effort_filter"):
        if read.HasField(part):
            for ref in field_references(getattr(read, part)):
                if ref.HasField("root_reference"):
                    ref.direct_reference.struct_field.field = new_index[
                        ref.direct_reference.struct_field.field
                    ]
