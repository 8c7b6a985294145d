"""Which Arrow types each lance-sql feature supports, decided in this one place.

:func:`scalar_kind` names the kind of a flat Arrow type; each feature supports a set
of kinds (:data:`SUPPORTED`). A type of no kind (nested, dictionary, null, extension)
is supported by none.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from lance_sql.errors import PlanningError

_KINDS: list[tuple[str, Callable[[pa.DataType], bool]]] = [
    ("int", pa.types.is_integer),
    ("float16", pa.types.is_float16),
    ("float", pa.types.is_floating),  # float32, float64
    ("decimal", pa.types.is_decimal),
    ("date32", pa.types.is_date32),
    ("date64", pa.types.is_date64),
    ("timestamp", pa.types.is_timestamp),
    ("time", pa.types.is_time),
    ("duration", pa.types.is_duration),
    ("interval", pa.types.is_interval),
    ("string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)),
    ("string_view", pa.types.is_string_view),
    ("binary", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t)),
    ("binary_view", pa.types.is_binary_view),
    ("fixed_binary", pa.types.is_fixed_size_binary),
    ("bool", pa.types.is_boolean),
]

#: The kinds of type each feature supports.
SUPPORTED: dict[str, frozenset[str]] = {
    # column bounds in ``__manifest`` (min/max comparable, JSON-encodable exactly)
    "bounds": frozenset(
        {"int", "float", "decimal", "date32", "timestamp", "string", "string_view"}
    ),
    # key filters: hashed keys DataFusion compares exactly (floats, decimals: bounds only)
    "key_filter": frozenset({"int", "date32", "timestamp", "string", "string_view"}),
    # join keys of the Arrow (Acero) hash join of the Spark engine's partition joins
    "join_key": frozenset(
        {"int", "float16", "float", "decimal", "date32", "date64", "timestamp"}
        | {"string", "binary", "fixed_binary", "bool"}
    ),
    # one fixed-width value buffer: rows regrouped by scattering bytes (booleans are bits)
    "fixed_width": frozenset(
        {"int", "float16", "float", "decimal", "date32", "date64", "timestamp"}
        | {"time", "duration", "interval", "fixed_binary"}
    ),
}


def scalar_kind(t: pa.DataType) -> str | None:
    """The kind of the flat Arrow type ``t`` (None: nested, dictionary, null, extension)."""
    for kind, test in _KINDS:
        if test(t):
            return kind
    return None


def supports(feature: str, t: pa.DataType) -> bool:
    """Whether ``feature`` (a key of :data:`SUPPORTED`) supports columns of type ``t``."""
    return scalar_kind(t) in SUPPORTED[feature]


_UNIT = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}
#: Ticks per second of each Arrow time unit.
PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def datafusion_type_name(t: pa.DataType) -> str:
    """The type name DataFusion's ``arrow_cast`` accepts for ``t``."""
    if pa.types.is_timestamp(t):
        tz = "None" if t.tz is None else f'Some("{t.tz}")'
        return f"Timestamp({_UNIT[t.unit]}, {tz})"
    if t == pa.date32():
        return "Date32"
    if pa.types.is_integer(t):  # int8 -> Int8, uint64 -> UInt64
        return str(t).replace("uint", "UInt").replace("int", "Int")
    if t == pa.float64():
        return "Float64"
    if isinstance(t, (pa.Decimal128Type, pa.Decimal256Type)):
        return f"Decimal{t.bit_width}({t.precision}, {t.scale})"
    raise PlanningError(f"no DataFusion cast target for type {t}")
