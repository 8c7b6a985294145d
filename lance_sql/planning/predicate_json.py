"""Edge: the predicate IR <-> plain JSON values, exactly (for plans shipped to tasks).

A :class:`~.scan_plan.ScanPlan` travels from a driver to its tasks as JSON.
Rendering its filter as SQL text and parsing it back is lossy (zoned
timestamps become ``arrow_cast(...)`` calls, an :class:`~.predicates.Unsupported`
leaf renders as ``TRUE``), so the bound IR itself is serialised. IR nodes are
frozen dataclasses, so one walk serves every node kind: a node becomes an
object naming its class with one entry per dataclass field; an Arrow type
travels as an Arrow IPC schema (base64), a term form by its name, and a
literal value in storage form through the tagged JSON of
:mod:`.plan_json` (decimals, bytes, NaN, infinities and -0.0 survive).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
from typing import Any

import pyarrow as pa

from lance_sql.errors import PlanningError
from lance_sql.planning.plan_json import decode, encode
from lance_sql.spec import predicates as ir
from lance_sql.spec.predicates import Predicate
from lance_sql.spec.transforms import term_form
from lance_sql.spec.transforms.base import TermForm

_NODES = {
    cls.__name__: cls
    for cls in (
        ir.Column,
        ir.TransformTerm,
        ir.Literal,
        ir.Compare,
        ir.InList,
        ir.IsNull,
        ir.StartsWith,
        ir.And,
        ir.Or,
        ir.Not,
        ir.Const,
        ir.Unsupported,
    )
}

#: literal values the tagged JSON restores exactly
_VALUES = (bool, int, float, str, bytes, decimal.Decimal, datetime.date, datetime.time)


def _out(v: Any) -> Any:
    if isinstance(v, pa.DataType):
        schema = pa.schema([pa.field("t", v)]).serialize().to_pybytes()
        return {"$arrow": base64.b64encode(schema).decode()}
    if isinstance(v, TermForm):
        return {"$term": v.name}
    if dataclasses.is_dataclass(v) and type(v).__name__ in _NODES:
        fields = {f.name: _out(getattr(v, f.name)) for f in dataclasses.fields(v)}
        return {"$node": type(v).__name__, **fields}
    if isinstance(v, tuple):
        return [_out(x) for x in v]
    if v is None or isinstance(v, _VALUES):
        return encode(v)
    raise PlanningError(f"literal value {v!r} ({type(v).__name__}) has no JSON form")


def _in(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_in(x) for x in v)
    if not isinstance(v, dict):
        return v
    if "$node" in v:
        cls = _NODES[v["$node"]]
        return cls(**{k: _in(x) for k, x in v.items() if k != "$node"})
    if "$arrow" in v:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(v["$arrow"]))).field("t").type
    if "$term" in v:
        return term_form(v["$term"])
    return decode(v)


def to_json_value(pred: Predicate) -> dict[str, Any]:
    """``pred`` as nested dicts/lists of JSON values (exact; see the module docstring)."""
    return _out(pred)  # type: ignore[no-any-return]


def from_json_value(obj: dict[str, Any]) -> Predicate:
    """The inverse of :func:`to_json_value`."""
    try:
        return _in(obj)  # type: ignore[no-any-return]
    except (KeyError, IndexError, TypeError, ValueError, pa.ArrowException) as e:
        raise PlanningError(f"serialised predicate does not decode: {e!r}") from e
