"""Calendar arithmetic for projecting time ranges: local-time tuples and zone offset bounds.

A lexicographic tuple of (year, month, day) fields is monotonic in time for naive
values; for a zoned column local time jumps back at DST, so ranges are bounded with the
zone's extreme UTC offsets (widened by :data:`ZONE_MARGIN_US`); see ``docs/pruning.md``.
"""

from __future__ import annotations

import datetime
import re
import struct
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from lance_sql.spec.arrow_types import PER_SECOND
from lance_sql.spec.arrow_types import datafusion_type_name as datafusion_type_name
from lance_sql.spec.predicates import Column, Compare, Literal, Predicate, and_, or_

US_PER_SECOND = 1_000_000
US_PER_DAY = 86_400 * US_PER_SECOND
#: Safety margin added to a named zone's offset bounds (tz database versions differ).
ZONE_MARGIN_US = 3600 * US_PER_SECOND
_EPOCH = datetime.datetime(1970, 1, 1)

#: The time transforms, coarsest first: the order of a lexicographic tuple.
TIME_CHAIN = ("year", "month", "day", "hour")


def to_micros(value: int, source_type: pa.DataType) -> int:
    """A date32 / timestamp storage value as microseconds since the epoch (floor for ns)."""
    if pa.types.is_date32(source_type):
        return value * US_PER_DAY
    return value * US_PER_SECOND // PER_SECOND[source_type.unit]


def naive_tuple(micros: int, depth: int) -> tuple[int, ...] | None:
    """(year, month, day, hour)[:depth] of a naive time in µs; None outside years 1..9999."""
    try:
        dt = _EPOCH + datetime.timedelta(microseconds=micros)
    except OverflowError:
        return None
    return (dt.year, dt.month, dt.day, dt.hour)[:depth]


def period_start(values: tuple[int, ...]) -> int:
    """First µs since the epoch of the naive period (year[, month[, day[, hour]]])."""
    defaults = (1, 1, 1, 0)  # year is always given
    year, month, day, hour = (*values, *defaults[len(values) :])
    start = datetime.datetime(year, month, day, hour)
    return (start - _EPOCH) // datetime.timedelta(microseconds=1)


_FIXED = re.compile(r"^([+-])(\d{2}):?(\d{2})$")


@lru_cache(maxsize=256)
def offset_bounds(tz: str | None) -> tuple[int, int] | None:
    """(min, max) UTC offset in µs that local times in ``tz`` may have; None if unknown.

    Named zones: the extremes of their TZif offsets, widened by :data:`ZONE_MARGIN_US`.
    """
    if tz is None or tz.upper() in ("UTC", "Z", "ETC/UTC", "GMT", "ETC/GMT"):
        return (0, 0)
    match = _FIXED.match(tz)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        off = sign * (int(match.group(2)) * 3600 + int(match.group(3)) * 60) * US_PER_SECOND
        return (off, off)
    offsets = _tzif_offsets(tz)
    if not offsets:
        return None
    return (
        min(offsets) * US_PER_SECOND - ZONE_MARGIN_US,
        max(offsets) * US_PER_SECOND + ZONE_MARGIN_US,
    )


def _tzif_path(tz: str) -> Path | None:
    if ".." in tz or tz.startswith("/"):
        return None
    import zoneinfo

    for base in zoneinfo.TZPATH:
        candidate = Path(base) / tz
        if candidate.is_file():
            return candidate
    try:
        import importlib.resources

        parts = tz.split("/")
        package = ".".join(["tzdata", "zoneinfo", *parts[:-1]])
        resource = importlib.resources.files(package).joinpath(parts[-1])
        if resource.is_file():
            return Path(str(resource))
    except (ModuleNotFoundError, FileNotFoundError, TypeError):
        return None
    return None


def _tzif_offsets(tz: str) -> list[int]:
    """Every UTC offset (seconds) in a TZif file's local-time-type records (RFC 8536)."""
    path = _tzif_path(tz)
    if path is None:
        return []
    data = path.read_bytes()
    if data[:4] != b"TZif":
        return []
    offsets: list[int] = []
    pos = 0
    for time_size in (4, 8):
        if data[pos : pos + 4] != b"TZif":
            break
        version = data[pos + 4]
        isut, isstd, leap, timecnt, typecnt, charcnt = struct.unpack(
            ">6l", data[pos + 20 : pos + 44]
        )
        body = pos + 44
        types_at = body + timecnt * time_size + timecnt
        for i in range(typecnt):
            (utoff,) = struct.unpack(">l", data[types_at + 6 * i : types_at + 6 * i + 4])
            offsets.append(utoff)
        pos = types_at + typecnt * 6 + charcnt + leap * (time_size + 4) + isstd + isut
        if version < 0x32:  # version 1 has no 64-bit block
            break
    return offsets


def lexicographic(fields: list[Column], values: tuple[int, ...], op: str) -> Predicate:
    """``(f1, ..., fk) op (v1, ..., vk)`` over int32 partition columns, lexicographically."""
    lits = [Literal(int(v), pa.int32()) for v in values]
    if op == "=":
        return and_(*(Compare(f, "=", v) for f, v in zip(fields, lits, strict=True)))
    if op == "!=":
        return or_(*(Compare(f, "!=", v) for f, v in zip(fields, lits, strict=True)))
    base = ">" if op in (">=", ">") else "<"
    pred: Predicate = Compare(fields[-1], op, lits[-1])
    for f, v in zip(reversed(fields[:-1]), reversed(lits[:-1]), strict=True):
        pred = or_(Compare(f, base, v), and_(Compare(f, "=", v), pred))
    return pred
