"""An independent, per-value reference of NOTES 2.1, in plain Python.

Written from the canonical-bytes table only (never from the implementation):
each value becomes bytes with ``struct`` / ``int.to_bytes`` and is hashed with
``mmh3.hash`` (C, seed 0, signed). Slow on purpose; tests compare the
vectorized ``udfs`` functions against it.
"""

from __future__ import annotations

import decimal
import math
import struct
from typing import Any

import mmh3
import pyarrow as pa
import pyarrow.types as pat

_TO_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1}


def _micros(raw: int, unit: str) -> int:
    if unit == "ns":
        return raw // 1000  # Python floors, as the table says
    return raw * _TO_MICROS[unit]


def _int64(v: int) -> bytes:
    return struct.pack("<q", v)


def _decimal_bytes(unscaled: int) -> bytes:
    # Java BigInteger.toByteArray(): bitLength() // 8 + 1 bytes, big-endian two's complement
    bit_length = (unscaled if unscaled >= 0 else ~unscaled).bit_length()
    return unscaled.to_bytes(bit_length // 8 + 1, "big", signed=True)


def canonical_values(arr: pa.Array) -> list[bytes | None]:
    """Canonical bytes of every value of ``arr`` (None for NULL)."""
    t = arr.type
    if pat.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    raw: list[Any]
    if pat.is_timestamp(t) or pat.is_time(t) or pat.is_duration(t):
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        raw = arr.cast(storage).to_pylist()
        return [None if v is None else _int64(_micros(v, t.unit)) for v in raw]
    if pat.is_date32(t):
        raw = arr.cast(pa.int32()).to_pylist()
        return [None if v is None else _int64(v) for v in raw]
    if pat.is_date64(t):
        raw = arr.cast(pa.int64()).to_pylist()
        return [None if v is None else _int64(v // 86_400_000) for v in raw]
    out: list[bytes | None] = []
    for v in arr.to_pylist():
        if v is None:
            out.append(None)
        elif pat.is_boolean(t):
            out.append(_int64(1 if v else 0))
        elif pat.is_uint64(t):
            out.append(struct.pack("<Q", v))
        elif pat.is_integer(t):
            out.append(_int64(v))
        elif pat.is_floating(t):
            f = float(v)
            if math.isnan(f):
                out.append(bytes.fromhex("000000000000f87f"))
            else:
                out.append(struct.pack("<d", 0.0 if f == 0.0 else f))
        elif pat.is_decimal(t):
            with decimal.localcontext() as exact:
                exact.prec = 200  # the default 28 digits would round decimal256 values
                unscaled = int(decimal.Decimal(v).scaleb(t.scale))
            out.append(_decimal_bytes(unscaled))
        elif isinstance(v, str):
            out.append(v.encode("utf-8"))
        elif isinstance(v, bytes):
            out.append(v)
        else:
            raise TypeError(f"reference: no canonical bytes for {t}")
    return out


def murmur3_reference(arr: pa.Array) -> list[int | None]:
    return [None if b is None else mmh3.hash(b, 0, signed=True) for b in canonical_values(arr)]


def murmur3_multi_reference(arrays: list[pa.Array]) -> list[int | None]:
    columns = [canonical_values(a) for a in arrays]
    out: list[int | None] = []
    for row in zip(*columns, strict=True):
        present = [b for b in row if b is not None]
        out.append(mmh3.hash(b"".join(present), 0, signed=True) if present else None)
    return out
