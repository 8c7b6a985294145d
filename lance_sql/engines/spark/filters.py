"""Spark pushed filters -> one pyarrow expression that prunes and is applied in every scan.

Only exact conversions are kept (the rest go back to Spark); both drop rows whose filter
is NULL or false (``Not(EqualTo(a, 1))`` drops NULL ``a``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


class Unsupported(Exception):
    """This filter has no exact pyarrow form; Spark keeps it."""


def _column(attribute: Sequence[str], schema: pa.Schema) -> tuple[pc.Expression, pa.DataType]:
    if len(attribute) != 1 or attribute[0] not in schema.names:
        raise Unsupported(f"nested or unknown column {'.'.join(attribute)}")
    name = attribute[0]
    return pc.field(name), schema.field(name).type


def _literal(value: Any, dtype: pa.DataType) -> pc.Expression:
    if value is None:
        raise Unsupported("NULL literal")
    try:
        return pc.scalar(pa.scalar(value, type=dtype))
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise Unsupported(f"literal {value!r} does not fit {dtype}") from e


def convert(f: Any, schema: pa.Schema) -> pc.Expression:
    """One Spark filter -> an exact pyarrow expression, or raise :class:`Unsupported`."""
    kind = type(f).__name__
    if kind == "Not":
        return ~convert(f.child, schema)
    if kind in ("And", "Or"):  # not sent by pyspark 4.3, accepted if they ever arrive
        left, right = convert(f.left, schema), convert(f.right, schema)
        return (left & right) if kind == "And" else (left | right)
    col, dtype = _column(f.attribute, schema)
    if kind == "IsNull":
        return col.is_null()
    if kind == "IsNotNull":
        return col.is_valid()
    if kind == "EqualNullSafe":
        return col.is_null() if f.value is None else col == _literal(f.value, dtype)
    ops = {
        "EqualTo": lambda a, b: a == b,
        "GreaterThan": lambda a, b: a > b,
        "GreaterThanOrEqual": lambda a, b: a >= b,
        "LessThan": lambda a, b: a < b,
        "LessThanOrEqual": lambda a, b: a <= b,
    }
    if kind in ops:
        return ops[kind](col, _literal(f.value, dtype))
    if kind == "In":
        values = [v for v in f.value if v is not None]
        if len(values) != len(f.value) or not values:
            raise Unsupported("IN with NULL or no values")
        return pc.is_in(col, value_set=pa.array(values, type=dtype))
    if kind in ("StringStartsWith", "StringEndsWith", "StringContains"):
        if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            raise Unsupported(f"{kind} on {dtype}")
        fn = {
            "StringStartsWith": "starts_with",
            "StringEndsWith": "ends_with",
            "StringContains": "match_substring",
        }[kind]
        return pc.Expression._call(fn, [col], pc.MatchSubstringOptions(f.value))
    raise Unsupported(f"filter {kind}")


def split(filters: Sequence[Any], schema: pa.Schema) -> tuple[pc.Expression | None, list[Any]]:
    """(AND of the converted filters or None, the filters Spark must still evaluate)."""
    done: list[pc.Expression] = []
    rest: list[Any] = []
    for f in filters:
        try:
            done.append(convert(f, schema))
        except Unsupported:
            rest.append(f)
    return (functools.reduce(operator.and_, done) if done else None), rest
