"""Per-partition column bounds (Iceberg-style statistics) kept in ``__manifest``.

Bounds name the exact version, branch and location they describe and are used only when
those equal the row's pins, so a commit that moves ``read_version`` without rewriting
them makes them unusable, never wrong (docs/format.md, "Column bounds in ``__manifest``
metadata"). Evaluating predicates against them: :mod:`lance_sql.planning.bounds_skipping`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.spec.arrow_json import field_id_of
from lance_sql.spec.arrow_types import SUPPORTED, scalar_kind
from lance_sql.tables.namespace import key_filters as kf

BOUNDS_KEY = "lance_sql.bounds"
MAX_COLUMNS = 32
STRING_PREFIX = 32


@dataclass(frozen=True)
class ColumnBounds:
    """Bounds of one column: ``lo``/``hi`` None when no non-NULL, non-NaN value exists."""

    type: str
    lo: Any
    hi: Any
    nulls: int
    nan: bool = False


@dataclass(frozen=True)
class TableBounds:
    """Bounds of a partition table at one (version, branch, location)."""

    version: int
    branch: str | None
    location: str | None
    columns: Mapping[int, ColumnBounds]
    #: Pointers to key filter files by field id (:mod:`.key_filters`), same validity.
    key_filters: Mapping[int, kf.KeyFilterRef] = field(default_factory=dict)


# ------------------------------------------------------------------------ types


def kind_of(t: pa.DataType) -> str | None:
    """How bounds of an Arrow type are encoded: "int" (integers, dates and timestamps as
    their storage integers), "float", "decimal", "string"; None: no bounds."""
    kind = scalar_kind(t)
    if kind not in SUPPORTED["bounds"]:
        return None
    return {"date32": "int", "timestamp": "int", "string_view": "string"}.get(kind, kind)


# ---------------------------------------------------------------------- compute


def bounded_fields(schema: pa.Schema) -> list[tuple[int, pa.Field]]:
    """(field id, field) of the first :data:`MAX_COLUMNS` top-level supported columns."""
    out = []
    for f in schema:
        fid = field_id_of(f)
        if fid is None or kind_of(f.type) is None:
            continue
        out.append((fid, f))
        if len(out) == MAX_COLUMNS:
            break
    return out


def column_bounds(arr: pa.Array | pa.ChunkedArray, t: pa.DataType) -> ColumnBounds | None:
    """Bounds of ``arr`` (of type ``t``), or None for an unsupported type."""
    kind = kind_of(t)
    if kind is None:
        return None
    nulls = int(arr.null_count)
    if kind == "float":
        return _float_bounds(arr, t, nulls)
    if kind == "string" and pa.types.is_string_view(t):
        arr = arr.cast(pa.large_string())
    elif kind == "int" and not pa.types.is_integer(t):  # dates and timestamps: storage ints
        arr = arr.cast(_storage(t))
    mm = pc.min_max(arr)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is None or hi is None:
        return ColumnBounds(str(t), None, None, nulls)
    if kind == "string":
        lo, hi = truncate_lower(lo), truncate_upper(hi)
    return ColumnBounds(str(t), lo, hi, nulls)


def _float_bounds(arr: pa.Array | pa.ChunkedArray, t: pa.DataType, nulls: int) -> ColumnBounds:
    """Float bounds with numpy's NaN-skipping ``fmin``/``fmax`` (faster than ``min_max``)."""
    import numpy as np

    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    lo = hi = None
    nan = False
    for chunk in chunks:
        if chunk.null_count:
            chunk = chunk.drop_null()
        if not len(chunk):
            continue
        values = chunk.to_numpy(zero_copy_only=False)
        nan = nan or bool(np.isnan(values).any())
        c_lo, c_hi = float(np.fmin.reduce(values)), float(np.fmax.reduce(values))
        if math.isnan(c_lo):  # only NaNs
            continue
        lo = c_lo if lo is None else min(lo, c_lo)
        hi = c_hi if hi is None else max(hi, c_hi)
    if lo is None or hi is None:
        return ColumnBounds(str(t), None, None, nulls, nan)
    # a zero lower bound is -0.0 and a zero upper bound 0.0: both orders of zeros covered
    return ColumnBounds(str(t), -0.0 if lo == 0.0 else lo, 0.0 if hi == 0.0 else hi, nulls, nan)


def _storage(t: pa.DataType) -> pa.DataType:
    if pa.types.is_date32(t):
        return pa.int32()
    return pa.int64()  # timestamps


def table_bounds(
    rows: pa.Table, schema: pa.Schema, version: int, branch: str | None, location: str | None
) -> TableBounds:
    """Bounds of ``rows`` (columns named as in the namespace ``schema``)."""
    cols: dict[int, ColumnBounds] = {}
    for fid, f in bounded_fields(schema):
        if f.name not in rows.column_names:
            continue
        b = column_bounds(rows.column(f.name), f.type)
        if b is not None:
            cols[fid] = b
    return TableBounds(version, branch, location, cols)


def truncate_lower(s: str) -> str:
    return s[:STRING_PREFIX]


def truncate_upper(s: str) -> str:
    """A string >= ``s``: its first :data:`STRING_PREFIX` characters with the last one
    incremented (``s`` itself when short, or when no character can be incremented)."""
    if len(s) <= STRING_PREFIX:
        return s
    chars = list(s[:STRING_PREFIX])
    while chars:
        c = ord(chars.pop()) + 1
        if 0xD800 <= c <= 0xDFFF:
            c = 0xE000
        if c <= 0x10FFFF:
            return "".join(chars) + chr(c)
    return s


# ------------------------------------------------------------------------ merge


def merge(a: TableBounds, b: TableBounds, version: int) -> TableBounds:
    """Bounds of the union of the rows ``a`` and ``b`` describe, at ``version``.

    Columns missing on one side (or typed differently) are dropped.
    """
    cols: dict[int, ColumnBounds] = {}
    for fid, x in a.columns.items():
        y = b.columns.get(fid)
        if y is None or y.type != x.type:
            continue
        cols[fid] = ColumnBounds(
            x.type,
            _pick(min, x.lo, y.lo, lower=True),
            _pick(max, x.hi, y.hi, lower=False),
            x.nulls + y.nulls,
            x.nan or y.nan,
        )
    return TableBounds(version, b.branch, b.location, cols)


def _pick(fn: Any, x: Any, y: Any, *, lower: bool) -> Any:
    if x is None:
        return y
    if y is None:
        return x
    out = fn(x, y)
    if isinstance(out, float) and out == 0.0:  # keep the widened zero of either side
        return -0.0 if lower else 0.0
    return out


# --------------------------------------------------------------------- encoding


def _enc(v: Any) -> Any:
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(v, Decimal):
        return str(v)
    return v


def _dec(v: Any, kind: str) -> Any:
    if v is None:
        return None
    if kind == "float":
        if v == "inf":
            return math.inf
        if v == "-inf":
            return -math.inf
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ValueError(f"bad float bound {v!r}")
        return float(v)
    if kind == "decimal":
        return Decimal(v)
    if kind == "int":
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"bad integer bound {v!r}")
        return v
    if not isinstance(v, str):
        raise ValueError(f"bad string bound {v!r}")
    return v


def to_json(b: TableBounds) -> dict[str, Any]:
    cols = {}
    for fid, c in b.columns.items():
        entry: dict[str, Any] = {"type": c.type, "nulls": c.nulls}
        if c.lo is not None:
            entry["min"] = _enc(c.lo)
        if c.hi is not None:
            entry["max"] = _enc(c.hi)
        if c.nan:
            entry["nan"] = True
        cols[str(fid)] = entry
    out = {"version": b.version, "branch": b.branch, "location": b.location, "columns": cols}
    if b.key_filters:
        out[kf.KEY] = kf.refs_to_json(b.key_filters)
    return out


def from_json(obj: Any) -> TableBounds | None:
    """Decode :func:`to_json` output; None for anything malformed (never raises)."""
    try:
        version = obj["version"]
        if not isinstance(version, int) or isinstance(version, bool):
            return None
        cols: dict[int, ColumnBounds] = {}
        for key, c in obj["columns"].items():
            kind = _kind_of_name(c["type"])
            if kind is None:
                continue
            lo, hi = _dec(c.get("min"), kind), _dec(c.get("max"), kind)
            nulls = c.get("nulls")
            if (lo is None) != (hi is None) or type(nulls) is not int or nulls < 0:
                continue  # malformed: this column has no bounds
            cols[int(key)] = ColumnBounds(c["type"], lo, hi, nulls, bool(c.get("nan", False)))
        refs = kf.refs_from_json(obj.get(kf.KEY))
        return TableBounds(version, obj.get("branch"), obj.get("location"), cols, refs)
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError):
        return None


def _kind_of_name(name: str) -> str | None:
    if name in ("float", "double"):
        return "float"
    if name.startswith("decimal"):
        return "decimal"
    if name in ("string", "large_string", "string_view"):
        return "string"
    if name.startswith(("int", "uint", "date32", "timestamp")):
        return "int"
    return None


def parse_metadata(text: str | None) -> dict[str, Any] | None:
    """The ``metadata`` JSON object of a ``__manifest`` row (None when not an object)."""
    if text is None:
        return {}
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def bounds_of_metadata(text: str | None) -> TableBounds | None:
    """The bounds stored in a row's ``metadata`` text (None: none or malformed)."""
    obj = parse_metadata(text)
    return from_staged_text(obj.get(BOUNDS_KEY)) if obj else None


def referenced_key_filters(metadata: str | None) -> set[str]:
    """File names of the key filters a ``__manifest`` row's ``metadata`` points to."""
    bounds = bounds_of_metadata(metadata)
    return set() if bounds is None else {r.file for r in bounds.key_filters.values()}


def with_bounds(text: str | None, bounds: TableBounds | None) -> str | None:
    """``metadata`` text with :data:`BOUNDS_KEY` set to ``bounds`` (removed when None);
    metadata that is not a JSON object is kept for None, else replaced."""
    obj = parse_metadata(text)
    if obj is None:
        if bounds is None:
            return text
        obj = {}
    obj = dict(obj)
    if bounds is None:
        if BOUNDS_KEY not in obj:
            return text
        del obj[BOUNDS_KEY]
    else:
        obj[BOUNDS_KEY] = json.dumps(to_json(bounds), separators=(",", ":"), allow_nan=False)
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def usable(
    bounds: TableBounds | None,
    read_version: int | None,
    read_branch: str | None,
    read_tag: str | None,
    location: str | None,
) -> bool:
    """Whether ``bounds`` describe the table a reader of this row reads."""
    return (
        bounds is not None
        and read_version is not None
        and read_tag is None
        and bounds.version == read_version
        and bounds.branch == read_branch
        and bounds.location == location
    )


def staged_text(bounds: TableBounds | None) -> str | None:
    """JSON text of the bounds of staged rows (a distributed writer's task), or None."""
    return None if bounds is None else json.dumps(to_json(bounds), allow_nan=False)


def from_staged_text(text: str | None) -> TableBounds | None:
    """:func:`staged_text` (or the text stored under :data:`BOUNDS_KEY`) back (None for
    None or anything malformed)."""
    if not isinstance(text, str):
        return None
    try:
        return from_json(json.loads(text))
    except ValueError:
        return None
