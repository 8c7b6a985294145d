"""Edge: the predicate IR <-> plain JSON values, exactly (for plans shipped to tasks).

A :class:`~.scan_plan.ScanPlan` travels from a driver to its tasks as JSON.
Rendering its filter as SQL text and parsing it back is lossy (zoned
timestamps become ``arrow_cast(...)`` calls, an :class:`~.predicates.Unsupported`
leaf renders as ``TRUE``), so the bound IR itself is serialised: every node,
every literal with its exact Arrow type (an Arrow IPC schema, base64) and its
value in storage form (ints, decimals as text, bytes as hex, floats by
``float.hex`` so NaN, infinities and -0.0 survive).
"""

from __future__ import annotations

import base64
import decimal
from typing import Any

import pyarrow as pa

from lance_sql.errors import PlanningError
from lance_sql.spec.predicates import (
    And,
    Column,
    Compare,
    Const,
    InList,
    IsNull,
    Literal,
    Not,
    Or,
    Predicate,
    StartsWith,
    Term,
    TransformTerm,
    Unsupported,
)
from lance_sql.spec.transforms import term_form


def _type_out(t: pa.DataType | None) -> str | None:
    if t is None:
        return None
    return base64.b64encode(pa.schema([pa.field("t", t)]).serialize().to_pybytes()).decode()


def _type_in(text: str | None) -> pa.DataType | None:
    if text is None:
        return None
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text))).field("t").type


def _value_out(v: object) -> list[Any]:
    if v is None:
        return ["null"]
    if isinstance(v, bool):
        return ["bool", v]
    if isinstance(v, int):
        return ["int", str(v)]
    if isinstance(v, float):
        return ["float", v.hex()]
    if isinstance(v, decimal.Decimal):
        return ["decimal", str(v)]
    if isinstance(v, str):
        return ["str", v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return ["bytes", bytes(v).hex()]
    raise PlanningError(f"literal value {v!r} ({type(v).__name__}) has no JSON form")


def _value_in(obj: list[Any]) -> object:
    tag = obj[0]
    if tag == "null":
        return None
    if tag == "bool":
        return bool(obj[1])
    if tag == "int":
        return int(obj[1])
    if tag == "float":
        return float.fromhex(obj[1])
    if tag == "decimal":
        return decimal.Decimal(obj[1])
    if tag == "str":
        return str(obj[1])
    if tag == "bytes":
        return bytes.fromhex(obj[1])
    raise PlanningError(f"unknown literal tag {tag!r} in a serialised predicate")


def _literal_out(lit: Literal) -> dict[str, Any]:
    out: dict[str, Any] = {"value": _value_out(lit.value), "type": _type_out(lit.type)}
    if lit.text is not None:
        out["text"] = lit.text
    return out


def _literal_in(obj: dict[str, Any]) -> Literal:
    return Literal(_value_in(obj["value"]), _type_in(obj["type"]), obj.get("text"))


def _column_out(c: Column) -> dict[str, Any]:
    out = {"name": c.name, "field_id": c.field_id, "type": _type_out(c.type)}
    if c.path:  # a field inside a struct column
        out["path"] = list(c.path)
    return out


def _column_in(obj: dict[str, Any]) -> Column:
    path = tuple(obj.get("path", ()))
    return Column(obj["name"], obj.get("field_id"), _type_in(obj.get("type")), path)


def _term_out(t: Term) -> dict[str, Any]:
    if isinstance(t, Column):
        return {"column": _column_out(t)}
    return {
        "transform": t.transform.name,
        "columns": [_column_out(c) for c in t.columns],
        "param": t.param,
        "unit": t.unit,
        "as_date": t.as_date,
        **({"from_date": True} if t.from_date else {}),
    }


def _term_in(obj: dict[str, Any]) -> Term:
    if "column" in obj:
        return _column_in(obj["column"])
    return TransformTerm(
        term_form(obj["transform"]),
        tuple(_column_in(c) for c in obj["columns"]),
        param=obj.get("param"),
        unit=obj.get("unit"),
        as_date=bool(obj.get("as_date")),
        from_date=bool(obj.get("from_date")),
    )


def to_json_value(pred: Predicate) -> dict[str, Any]:
    """``pred`` as nested dicts/lists of JSON values (exact; see the module docstring)."""
    if isinstance(pred, Const):
        return {"op": "const", "value": pred.value}
    if isinstance(pred, (And, Or)):
        return {
            "op": "and" if isinstance(pred, And) else "or",
            "children": [to_json_value(c) for c in pred.children],
        }
    if isinstance(pred, Not):
        return {"op": "not", "child": to_json_value(pred.child)}
    if isinstance(pred, Unsupported):
        return {"op": "unsupported", "description": pred.description, "columns": pred.columns}
    if isinstance(pred, Compare):
        return {
            "op": "compare",
            "cmp": pred.op,
            "term": _term_out(pred.term),
            "literal": _literal_out(pred.literal),
        }
    if isinstance(pred, InList):
        return {
            "op": "in",
            "term": _term_out(pred.term),
            "values": [_literal_out(v) for v in pred.values],
            "negated": pred.negated,
        }
    if isinstance(pred, IsNull):
        return {"op": "is_null", "term": _term_out(pred.term), "negated": pred.negated}
    if isinstance(pred, StartsWith):
        return {
            "op": "starts_with",
            "term": _term_out(pred.term),
            "prefix": pred.prefix,
            "negated": pred.negated,
        }
    raise TypeError(f"not a predicate: {pred!r}")


def from_json_value(obj: dict[str, Any]) -> Predicate:
    """The inverse of :func:`to_json_value`."""
    try:
        return _from(obj)
    except (KeyError, IndexError, TypeError, ValueError, pa.ArrowException) as e:
        raise PlanningError(f"serialised predicate does not decode: {e!r}") from e


def _from(obj: dict[str, Any]) -> Predicate:
    op = obj["op"]
    if op == "const":
        return Const(bool(obj["value"]))
    if op in ("and", "or"):
        children = tuple(_from(c) for c in obj["children"])
        return And(children) if op == "and" else Or(children)
    if op == "not":
        return Not(_from(obj["child"]))
    if op == "unsupported":
        return Unsupported(obj["description"], tuple(obj.get("columns") or ()))
    if op == "compare":
        return Compare(_term_in(obj["term"]), obj["cmp"], _literal_in(obj["literal"]))
    if op == "in":
        values = tuple(_literal_in(v) for v in obj["values"])
        return InList(_term_in(obj["term"]), values, bool(obj["negated"]))
    if op == "is_null":
        return IsNull(_term_in(obj["term"]), bool(obj["negated"]))
    if op == "starts_with":
        return StartsWith(_term_in(obj["term"]), obj["prefix"], bool(obj["negated"]))
    raise PlanningError(f"unknown predicate node {op!r} in a serialised predicate")


__all__ = ["from_json_value", "to_json_value"]
