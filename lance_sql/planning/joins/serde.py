"""Tagged JSON for partition and group-key values, so plans survive a trip to a task.

JSON has no bytes, decimals, dates or non-finite floats; those are written as
one-key objects (``{"$bytes": "00ff"}``) and restored exactly.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from typing import Any


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


__all__ = ["decode", "encode"]
