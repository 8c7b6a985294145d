"""JSON of plans shipped to tasks: tagged values, the predicate IR, reading a plan back.

JSON has no bytes, decimals, dates or non-finite floats; values of those kinds
are one-key objects (``{"$bytes": "00ff"}``) restored exactly. A scan plan's
filter travels as its bound IR, not as SQL text: rendering is lossy (zoned
timestamps, Unsupported leaves render as ``TRUE``).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import json
import math
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lance_sql.errors import PlanningError
from lance_sql.spec import predicates as ir
from lance_sql.spec.predicates import Predicate
from lance_sql.spec.transforms import term_form
from lance_sql.spec.transforms.base import TermForm


def encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, dt.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"$time": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"$timedelta_us": value // dt.timedelta(microseconds=1)}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return {"$repr": str(value)}


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(decode(v) for v in value)
    if not isinstance(value, dict):
        return value
    if "$node" in value:
        cls = _NODES[value["$node"]]
        return cls(**{k: decode(x) for k, x in value.items() if k != "$node"})
    ((tag, raw),) = value.items()
    return _DECODERS.get(tag, lambda raw: raw)(raw)


_DECODERS = {
    "$float": float,
    "$bytes": base64.b64decode,
    "$decimal": decimal.Decimal,
    "$datetime": dt.datetime.fromisoformat,
    "$date": dt.date.fromisoformat,
    "$time": dt.time.fromisoformat,
    "$timedelta_us": lambda us: dt.timedelta(microseconds=us),
    "$arrow": lambda raw: pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw))).field("t").type,
    "$term": term_form,
}

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
_VALUES = (bool, int, float, str, bytes, decimal.Decimal, dt.date, dt.time)


def to_json_value(v: Any) -> Any:
    """A predicate (IR node) as nested dicts/lists of JSON values, exactly: each node an
    object naming its class, one entry per dataclass field."""
    if isinstance(v, pa.DataType):
        schema = pa.schema([pa.field("t", v)]).serialize().to_pybytes()
        return {"$arrow": base64.b64encode(schema).decode()}
    if isinstance(v, TermForm):
        return {"$term": v.name}
    if dataclasses.is_dataclass(v) and type(v).__name__ in _NODES:
        fields = {f.name: to_json_value(getattr(v, f.name)) for f in dataclasses.fields(v)}
        return {"$node": type(v).__name__, **fields}
    if isinstance(v, tuple):
        return [to_json_value(x) for x in v]
    if v is None or isinstance(v, _VALUES):
        return encode(v)
    raise PlanningError(f"literal value {v!r} ({type(v).__name__}) has no JSON form")


def from_json_value(obj: dict[str, Any]) -> Predicate:
    """The inverse of :func:`to_json_value`."""
    try:
        return decode(obj)  # type: ignore[no-any-return]
    except (KeyError, IndexError, TypeError, ValueError, pa.ArrowException) as e:
        raise PlanningError(f"serialised predicate does not decode: {e!r}") from e


def plan_object(data: str | bytes | Mapping[str, Any], fmt: str, what: str) -> Mapping[str, Any]:
    """The JSON object of a shipped plan (``data`` as text or already parsed), checked to be
    of format ``fmt``; a :class:`PlanningError` naming ``what`` otherwise."""
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise PlanningError(f"{what}: not valid JSON ({exc})") from exc
    if not isinstance(data, Mapping) or data.get("format") != fmt:
        found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise PlanningError(f"{what}: expected format {fmt!r}, got {found!r}")
    return data
