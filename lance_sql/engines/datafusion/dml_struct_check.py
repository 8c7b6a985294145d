"""SQL INSERT, UPDATE and MERGE never drop struct fields the table lacks.

DataFusion's cast to a narrower struct drops fields without a word; ``ns.append``
refuses such data, and :func:`refuse_dropped_fields` gives SQL the same refusal
before anything runs.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lance_sql.errors import SchemaMismatchError
from lance_sql.tables.namespace.schema_rule import extra_fields


def _cast_column(expr: Any) -> str | None:
    """The column name under ``Alias(Cast(Column))`` or ``Cast(Column)``; else None."""
    node = expr.to_variant()
    if type(node).__name__ == "Alias":
        node = node.expr().to_variant()
    if type(node).__name__ not in ("Cast", "TryCast"):
        return None
    inner = node.expr().to_variant()
    return str(inner.name()) if type(inner).__name__ == "Column" else None


def check_insert_structs(ctx: Any, source: Any, schema: pa.Schema, name: str) -> None:
    """Refuse an INSERT whose SELECT gives a struct with fields the table lacks."""
    plan = source.to_variant()
    if type(plan).__name__ != "Projection" or not source.inputs():
        return
    exprs = list(plan.projections())
    if len(exprs) != len(schema) or not any(pa.types.is_nested(f.type) for f in schema):
        return
    given = ctx.create_dataframe_from_logical_plan(source.inputs()[0]).schema()
    for expr, f in zip(exprs, schema, strict=True):
        column = _cast_column(expr)
        if column is None or column not in given.names:
            continue
        refuse_dropped_fields(given.field(column).type, f, f"INSERT into {name!r}")


def refuse_dropped_fields(given: pa.DataType, column: pa.Field, what: str) -> None:
    """Refuse a value of type ``given`` for ``column`` whose cast would drop struct fields."""
    if extra := extra_fields(given, column.type):
        raise SchemaMismatchError(
            f"{what}: the new value of column {column.name!r} ({given}) carries fields {extra} "
            f"its type {column.type} lacks; add them first (add_columns) or leave them out"
        )
