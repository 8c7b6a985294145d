"""Hypothesis strategies: Arrow arrays of every type in the NOTES 2.1 table.

Arrays come with NULLs and, half of the time, as a slice with a non-zero
offset of a longer array (the slice path is where buffer arithmetic goes wrong).
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

TIMEZONES = [None, "UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "+05:30"]

_INT_RANGES = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
    pa.uint8(): (0, 2**8 - 1),
    pa.uint16(): (0, 2**16 - 1),
    pa.uint32(): (0, 2**32 - 1),
    pa.uint64(): (0, 2**64 - 1),
}
# timestamps in s are multiplied by 10**6: keep them in datetime's range
_TS_RANGE = {
    "s": (-62_000_000_000, 250_000_000_000),
    "ms": (-(2**62) // 1000, 2**62 // 1000),
    "us": (-(2**62), 2**62),
    "ns": (-(2**63), 2**63 - 1),
}


def _with_nulls(values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), values)


def _decimal_values(precision: int, scale: int) -> st.SearchStrategy:
    bound = 10**precision - 1
    exact = decimal.Context(prec=200)
    return st.integers(-bound, bound).map(lambda u: decimal.Decimal(u).scaleb(-scale, exact))


@st.composite
def type_and_values(draw: st.DrawFn) -> tuple[pa.DataType, st.SearchStrategy]:
    kind = draw(
        st.sampled_from(
            [
                "int", "bool", "float", "decimal128", "decimal256", "date32", "date64", "time32",
                "time64", "timestamp", "duration", "string", "binary", "fixed", "dictionary",
            ]
        )
    )  # fmt: skip
    if kind == "int":
        t = draw(st.sampled_from(list(_INT_RANGES)))
        lo, hi = _INT_RANGES[t]
        return t, st.integers(lo, hi)
    if kind == "bool":
        return pa.bool_(), st.booleans()
    if kind == "float":
        width = draw(st.sampled_from([16, 32, 64]))
        t = {16: pa.float16(), 32: pa.float32(), 64: pa.float64()}[width]
        floats = st.floats(width=width, allow_nan=True, allow_infinity=True)
        if width == 16:
            floats = floats.map(np.float16)
        return t, floats
    if kind in ("decimal128", "decimal256"):
        max_p = 38 if kind == "decimal128" else 76
        p = draw(st.integers(1, max_p))
        s = draw(st.integers(0, p))
        t = pa.decimal128(p, s) if kind == "decimal128" else pa.decimal256(p, s)
        return t, _decimal_values(p, s)
    if kind == "date32":
        return pa.date32(), st.integers(-(2**31), 2**31 - 1)
    if kind == "date64":
        return pa.date64(), st.integers(-(10**8), 10**8)
    if kind == "time32":
        unit = draw(st.sampled_from(["s", "ms"]))
        top = 86_400 if unit == "s" else 86_400_000
        return pa.time32(unit), st.integers(0, top - 1)
    if kind == "time64":
        unit = draw(st.sampled_from(["us", "ns"]))
        top = 86_400 * (10**6 if unit == "us" else 10**9)
        return pa.time64(unit), st.integers(0, top - 1)
    if kind == "timestamp":
        unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
        tz = draw(st.sampled_from(TIMEZONES))
        lo, hi = _TS_RANGE[unit]
        return pa.timestamp(unit, tz), st.integers(lo, hi)
    if kind == "duration":
        unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
        lo, hi = _TS_RANGE[unit]
        return pa.duration(unit), st.integers(lo, hi)
    if kind == "string":
        t = draw(st.sampled_from([pa.string(), pa.large_string(), pa.string_view()]))
        return t, st.text(max_size=40)
    if kind == "binary":
        t = draw(st.sampled_from([pa.binary(), pa.large_binary(), pa.binary_view()]))
        return t, st.binary(max_size=40)
    if kind == "fixed":
        width = draw(st.integers(1, 20))
        return pa.binary(width), st.binary(min_size=width, max_size=width)
    index = draw(st.sampled_from([pa.int8(), pa.int32(), pa.uint16(), pa.int64()]))
    value = draw(st.sampled_from([pa.string(), pa.int64(), pa.binary()]))
    values = {
        pa.string(): st.sampled_from(["a", "US", "", "é", "long value"]),
        pa.int64(): st.integers(-5, 5),
        pa.binary(): st.sampled_from([b"", b"\x00", b"abc"]),
    }[value]
    return pa.dictionary(index, value), values


def _build(t: pa.DataType, values: list) -> pa.Array:
    if pa.types.is_dictionary(t):
        return pa.array(values, t.value_type).dictionary_encode().cast(t)
    if pa.types.is_date64(t):
        raw = [None if v is None else v * 86_400_000 + (v % 7) * 1000 for v in values]
        return pa.array(raw, pa.int64()).cast(t)
    if pa.types.is_date32(t) or pa.types.is_temporal(t):
        width = pa.int32() if t.bit_width == 32 else pa.int64()
        return pa.array(values, width).cast(t)
    if pa.types.is_float16(t):
        return pa.array(np.array([0 if v is None else v for v in values], np.float16),
                        mask=np.array([v is None for v in values], bool))  # fmt: skip
    return pa.array(values, t)


@st.composite
def arrays(draw: st.DrawFn, max_size: int = 30) -> pa.Array:
    """An array of a random supported type, with NULLs, sometimes a sliced view."""
    t, values = draw(type_and_values())
    items = draw(st.lists(_with_nulls(values), max_size=max_size))
    arr = _build(t, items)
    if draw(st.booleans()) and len(arr) > 1:
        start = draw(st.integers(1, len(arr) - 1))
        length = draw(st.integers(0, len(arr) - start))
        arr = arr.slice(start, length)
    return arr


@st.composite
def same_length_arrays(draw: st.DrawFn, max_columns: int = 4) -> list[pa.Array]:
    n = draw(st.integers(0, 20))
    out = []
    for _ in range(draw(st.integers(1, max_columns))):
        t, values = draw(type_and_values())
        items = draw(st.lists(_with_nulls(values), min_size=n + 3, max_size=n + 3))
        offset = draw(st.integers(0, 3))
        out.append(_build(t, items).slice(offset, n))
    return out
