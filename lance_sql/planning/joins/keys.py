"""Join keys: resolve column names to field ids and decide which values compare equal.

Two rows the join matches must get the same group key, which depends on both
sides' key *types*: int32 5 and int64 5 are equal, int 1 and float 1.0 hash
differently, decimals hash their unscaled value. Canonical values compare equal
exactly when the engine's equality would (or coarser: merging groups is safe,
splitting them never is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_sql.errors import PlanningError
from lance_sql.spec.arrow_json import source_fields
from lance_sql.spec.arrow_types import scalar_kind

_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": None}


@dataclass(frozen=True)
class KeyColumn:
    """One side of one join-key pair: its column path, field id and Arrow type."""

    name: str
    field_id: int
    type: pa.DataType


def resolve_key(schema: pa.Schema, name: str, side: str) -> KeyColumn:
    """The field id and type of join column ``name`` (a top-level name or dotted path)."""
    for fid, (path, field, repeated) in source_fields(schema).items():
        if path == name:
            if repeated:
                raise PlanningError(f"{side} join key {name!r} is inside a list or map")
            return KeyColumn(name, fid, field.type)
    if name in schema.names:
        raise PlanningError(f"{side} join key {name!r} has no lance:field_id in the schema")
    raise PlanningError(
        f"{side} join key {name!r} is not a column of the {side} schema "
        f"(columns: {', '.join(schema.names)})"
    )


def _base(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


#: the kinds of key (:func:`~lance_sql.spec.arrow_types.scalar_kind`) whose values compare
#: by one canonical form (:func:`canonical_values`), each with the family it compares in
_FAMILIES = {
    **{k: k for k in ("bool", "int", "float", "decimal", "string", "binary", "timestamp")},
    **{"time": "time", "duration": "duration", "float16": "float", "fixed_binary": "binary"},
    **{"string_view": "string", "binary_view": "binary", "date32": "date", "date64": "date"},
}


def value_family(t: pa.DataType) -> tuple[Any, ...] | None:
    """Types whose values compare by one canonical form; None when not supported."""
    t = _base(t)
    family = _FAMILIES.get(scalar_kind(t) or "")
    if family is None:
        return None
    return ("timestamp", t.tz is not None) if family == "timestamp" else (family,)


def hash_family(t: pa.DataType) -> tuple[Any, ...] | None:
    """Like :func:`value_family`, but decimals must share a scale (the hash is unscaled)."""
    fam = value_family(t)
    if fam == ("decimal",):
        return ("decimal", _base(t).scale)
    return fam


def truncate_family(t: pa.DataType) -> tuple[Any, ...] | None:
    """Families where truncate[W] composes exactly: integers, same-scale decimals, strings."""
    fam = hash_family(t)
    if fam is None or fam[0] not in ("int", "decimal", "string", "binary"):
        return None
    return fam


def canonical_values(values: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Partition values as hashable Python values that are equal when the values are.

    Integers and booleans -> int; floats -> float with -0.0 as 0.0 and every NaN
    as the string ``"NaN"``; dates -> days since epoch; timestamps, times and
    durations -> microseconds (an instant has one value whatever the unit);
    strings -> str; binaries -> bytes; decimals -> ``decimal.Decimal``.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    if pa.types.is_dictionary(t):
        values = values.dictionary_decode()
        t = values.type
    if pa.types.is_date64(t):
        values = values.cast(pa.date32(), safe=False)
        t = values.type
    if pa.types.is_date32(t):
        return values.cast(pa.int32()).to_pylist()
    if pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        unit = t.unit
        ticks = values.cast(pa.int64()) if not pa.types.is_time32(t) else values.cast(pa.int32())
        raw = ticks.to_pylist()
        factor = _MICROS[unit]
        if factor is None:
            return [None if v is None else v // 1000 for v in raw]
        return [None if v is None else v * factor for v in raw]
    if pa.types.is_boolean(t):
        return [None if v is None else int(v) for v in values.to_pylist()]
    if pa.types.is_floating(t):
        out: list[Any] = []
        for v in values.cast(pa.float64()).to_pylist():
            if v is None:
                out.append(None)
            elif math.isnan(v):
                out.append("NaN")
            else:
                out.append(v + 0.0)  # -0.0 + 0.0 == 0.0
        return out
    if pa.types.is_string_view(t):
        values = values.cast(pa.large_string())
    if pa.types.is_binary_view(t):
        values = values.cast(pa.large_binary())
    return values.to_pylist()
