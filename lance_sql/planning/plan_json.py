"""JSON of plans shipped to tasks: tagged values, and reading a plan's object back.

JSON has no bytes, decimals, dates or non-finite floats; partition and group-key
values of those kinds are written as one-key objects (``{"$bytes": "00ff"}``)
and restored exactly. :func:`plan_object` reads a scan or join plan's JSON.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
from collections.abc import Mapping
from typing import Any

from lance_sql.errors import PlanningError


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
}


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
