"""Hypothesis strategies for the differential pruning tests: schemas, specs, rows, predicates.

Values concentrate on the places pruning gets wrong: integer-type boundaries,
negative numbers (truncate rounds toward zero), dates before 1970, year
boundaries, and instants around DST changes in the zones tested.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pyarrow as pa
from hypothesis import strategies as st

from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.predicates import (
    NULL_BOOL,
    Column,
    Compare,
    InList,
    IsNull,
    Literal,
    Not,
    Predicate,
    StartsWith,
    TransformTerm,
    and_,
    or_,
)
from lance_sql.spec.transforms import term_form
from lance_sql.tables.namespace.spec import PartitionSpec

ZONES = ["UTC", "Europe/Paris", "America/New_York", "+05:30"]
US = 1_000_000
HOUR = 3600 * US


def _us(*args: int) -> int:
    return (dt.datetime(*args) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


# instants (UTC µs) where something interesting happens
TIME_ANCHORS = [
    0,
    _us(1969, 12, 31, 23),
    _us(1900, 1, 1),
    _us(2024, 12, 31, 23),
    _us(2025, 1, 1),
    _us(2025, 3, 30, 1),  # Paris spring forward
    _us(2025, 10, 26, 1),  # Paris fall back
    _us(2025, 3, 9, 7),  # New York spring forward
    _us(2025, 11, 2, 6),  # New York fall back
    _us(2025, 12, 31, 22, 30),
    _us(2026, 2, 28, 23),
]
DAY_ANCHORS = [0, -1, -365, -719162 + 693595, 20089, 20088, 20453, 20454, 20432, 20544]


@dataclass
class Example:
    schema: pa.Schema
    rows: pa.Table
    specs: dict[int, PartitionSpec]


KINDS = ["int32", "int64", "date32", "ts", "tstz", "utf8"]


def arrow_type(kind: str, tz: str | None) -> pa.DataType:
    return {
        "int32": pa.int32(),
        "int64": pa.int64(),
        "date32": pa.date32(),
        "ts": pa.timestamp("us"),
        "tstz": pa.timestamp("us", tz),
        "utf8": pa.string(),
    }[kind]


def value_strategy(t: pa.DataType) -> st.SearchStrategy:
    if pa.types.is_integer(t):
        lo, hi = (-(2**31), 2**31 - 1) if t.bit_width == 32 else (-(2**63), 2**63 - 1)
        return st.one_of(
            st.integers(-25, 25),
            st.sampled_from([lo, hi, lo + 1, hi - 1, 2**31 - 1, -(2**31)]).filter(
                lambda v: lo <= v <= hi
            ),
            st.integers(lo, hi),
        )
    if pa.types.is_date32(t):
        return st.one_of(
            st.builds(lambda a, d: a + d, st.sampled_from(DAY_ANCHORS), st.integers(-40, 40)),
            st.integers(-200_000, 200_000),
        )
    if pa.types.is_timestamp(t):
        return st.one_of(
            st.builds(
                lambda a, d: a + d,
                st.sampled_from(TIME_ANCHORS),
                st.sampled_from([0, 1, -1, HOUR, -HOUR, 30 * 60 * US, 2 * HOUR, 86400 * US])
                | st.integers(-3 * 86400 * US, 3 * 86400 * US),
            ),
            st.integers(_us(1800, 1, 1), _us(2200, 1, 1)),
        )
    return st.text(alphabet="abc", max_size=4)


@st.composite
def schemas(draw: st.DrawFn) -> pa.Schema:
    n = draw(st.integers(2, 4))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=n, max_size=n))
    fields = []
    for i, kind in enumerate(kinds):
        tz = draw(st.sampled_from(ZONES)) if kind == "tstz" else None
        fields.append(
            pa.field(
                f"c{i}", arrow_type(kind, tz), metadata={b"lance:field_id": str(i + 1).encode()}
            )
        )
    return pa.schema(fields)


def _field_choices(t: pa.DataType) -> list[str]:
    if pa.types.is_integer(t):
        return ["identity", "bucket", "truncate", "expression"]
    if pa.types.is_date32(t):
        return ["identity", "year", "month", "day", "bucket", "chain"]
    if pa.types.is_timestamp(t):
        return ["identity", "year", "month", "day", "hour", "bucket", "chain"]
    return ["identity", "bucket", "truncate"]


@st.composite
def specs_for(draw: st.DrawFn, schema: pa.Schema) -> dict[int, PartitionSpec]:
    out = {}
    n_specs = draw(st.integers(1, 3))
    for spec_id in range(1, n_specs + 1):
        fields: list[PartitionField] = []
        n_fields = draw(st.integers(1, 3))
        for j in range(n_fields):
            col_index = draw(st.integers(0, len(schema) - 1))
            col = schema.field(col_index)
            fid = col_index + 1
            name = f"s{spec_id}f{j}"
            kind = draw(st.sampled_from([*_field_choices(col.type), "multi_bucket"]))
            if kind == "identity":
                fields.append(PartitionField(name, (fid,), col.type, Transform("identity")))
            elif kind in ("year", "month", "day", "hour"):
                fields.append(PartitionField(name, (fid,), pa.int32(), Transform(kind)))
            elif kind == "chain":
                depth = draw(st.integers(2, 4 if pa.types.is_timestamp(col.type) else 3))
                for k in ("year", "month", "day", "hour")[:depth]:
                    fields.append(PartitionField(f"{name}{k}", (fid,), pa.int32(), Transform(k)))
            elif kind == "bucket":
                n = draw(st.sampled_from([1, 2, 3, 4, 8, 16]))
                fields.append(
                    PartitionField(name, (fid,), pa.int32(), Transform("bucket", num_buckets=n))
                )
            elif kind == "truncate":
                w = draw(st.integers(1, 7) if pa.types.is_integer(col.type) else st.integers(1, 3))
                fields.append(
                    PartitionField(name, (fid,), col.type, Transform("truncate", width=w))
                )
            elif kind == "expression":
                fields.append(PartitionField(name, (fid,), pa.int64(), expression="col0 % 3"))
            else:  # multi_bucket over two columns
                other = draw(st.integers(1, len(schema)))
                n = draw(st.sampled_from([2, 4, 8]))
                fields.append(
                    PartitionField(
                        name, (fid, other), pa.int32(), Transform("multi_bucket", num_buckets=n)
                    )
                )
        out[spec_id] = PartitionSpec(spec_id, tuple(fields))
    return out


@st.composite
def examples(draw: st.DrawFn) -> Example:
    schema = draw(schemas())
    n_rows = draw(st.integers(1, 30))
    columns = []
    for f in schema:
        pool = draw(st.lists(value_strategy(f.type), min_size=1, max_size=6))
        values = draw(
            st.lists(st.one_of(st.none(), st.sampled_from(pool)), min_size=n_rows, max_size=n_rows)
        )
        columns.append(pa.array(values, type=f.type))
    rows = pa.Table.from_arrays(columns, schema=schema)
    return Example(schema, rows, draw(specs_for(schema)))


# ------------------------------------------------------------------- predicates


def storage_values(rows: pa.Table, name: str) -> list:
    """Column values in storage form (days / units since the epoch for temporal types)."""
    col = rows.column(name)
    t = col.type
    if pa.types.is_date32(t):
        col = col.cast(pa.int32())
    elif pa.types.is_timestamp(t):
        col = col.cast(pa.int64())
    return col.to_pylist()


def _fits(value: int, t: pa.DataType) -> bool:
    bits = t.bit_width
    return -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)


def _literal_for(draw: st.DrawFn, t: pa.DataType, pool: list) -> Literal:
    """A literal near the column's values; sometimes of another (coercible) type."""
    base = draw(
        st.one_of(st.sampled_from([v for v in pool if v is not None] or [0]), value_strategy(t))
    )
    if isinstance(base, str) or pa.types.is_string(t):
        return Literal(str(base), pa.string())
    shift = draw(st.sampled_from([0, 0, 0, 1, -1]))
    value = int(base) + shift
    if pa.types.is_integer(t):
        form = draw(st.sampled_from(["same", "int64", "float"]))
        if not -(2**63) <= value < 2**63:
            return Literal(float(value), pa.float64())  # what DataFusion makes of such text
        if form == "same" and not _fits(value, t):
            form = "int64"
        if form == "float":
            return Literal(value + draw(st.sampled_from([0.0, 0.5, -0.5])), pa.float64())
        return Literal(value, t if form == "same" else pa.int64())
    if pa.types.is_date32(t):
        form = draw(st.sampled_from(["same", "same", "int", "string"]))
        if form == "int":
            return Literal(value, pa.int64())
        if form == "string" and -719162 < value < 2932896:
            return Literal(
                (dt.date(1970, 1, 1) + dt.timedelta(days=value)).isoformat(), pa.string()
            )
        return Literal(value, pa.date32())
    # timestamps
    form = draw(st.sampled_from(["same", "same", "date", "text"]))
    if form == "date":
        return Literal(value // (86400 * US), pa.date32())
    if form == "text" and _us(1, 1, 1) < value < _us(9999, 1, 1) and t.tz in (None, "UTC"):
        text = (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)).isoformat(sep=" ")
        return Literal(None, pa.timestamp("ns"), text=text)
    return Literal(value, t)


@st.composite
def leaves(draw: st.DrawFn, ex: Example) -> Predicate:
    if draw(st.integers(0, 11)) == 0:
        return NULL_BOOL  # ``x = 1 OR NULL``: never TRUE, nor is NOT NULL
    f = draw(st.sampled_from(list(ex.schema)))
    t = f.type
    col = Column(f.name)
    pool = storage_values(ex.rows, f.name)
    forms = ["cmp", "cmp", "cmp", "in", "null"]
    if pa.types.is_string(t):
        forms += ["starts", "trunc_term"]
    if pa.types.is_date32(t) or pa.types.is_timestamp(t):
        forms += ["part_term", "part_term", "trunc_date"]
    if pa.types.is_integer(t) or pa.types.is_string(t):
        forms += ["bucket_term"]
    form = draw(st.sampled_from(forms))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
    if form == "cmp":
        return Compare(col, op, _literal_for(draw, t, pool))
    if form == "in":
        values = tuple(_literal_for(draw, t, pool) for _ in range(draw(st.integers(1, 3))))
        return InList(col, values, draw(st.booleans()))
    if form == "null":
        return IsNull(col, draw(st.booleans()))
    if form == "starts":
        return StartsWith(
            col, draw(st.text(alphabet="abc", min_size=1, max_size=3)), draw(st.booleans())
        )
    if form == "trunc_term":
        w = draw(st.integers(1, 3))
        return Compare(
            TransformTerm(term_form("truncate"), (col,), param=w),
            op,
            Literal(draw(st.text(alphabet="abc", max_size=3)), pa.string()),
        )
    if form == "part_term":
        unit = draw(st.sampled_from(["year", "month", "day", "hour"]))
        span = {
            "year": st.integers(1795, 2205),
            "month": st.integers(0, 13),
            "day": st.integers(0, 32),
            "hour": st.integers(-1, 24),
        }[unit]
        if draw(st.booleans()):
            vals = tuple(
                Literal(v, pa.int64()) for v in draw(st.lists(span, min_size=1, max_size=3))
            )
            return InList(TransformTerm(term_form(unit), (col,)), vals)
        return Compare(TransformTerm(term_form(unit), (col,)), op, Literal(draw(span), pa.int64()))
    if form == "trunc_date":
        value = draw(st.sampled_from([v for v in pool if v is not None] or [0]))
        if pa.types.is_date32(t):
            return Compare(
                TransformTerm(
                    term_form("date_trunc"),
                    (col,),
                    unit=draw(st.sampled_from(["year", "month"])),
                    as_date=False,
                ),
                op,
                Literal(value * 86400 * 10**9, pa.timestamp("ns")),
            )
        unit = draw(st.sampled_from(["year", "month", "day", "hour", "cast"]))
        if unit == "cast":
            return Compare(
                TransformTerm(term_form("date_trunc"), (col,), unit="day", as_date=True),
                op,
                Literal(value // (86400 * US), pa.date32()),
            )
        trunc = draw(st.booleans())
        if trunc:  # an aligned literal: the start of the value's period (naive calendar)
            d = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)
            d = {
                "year": d.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0),
                "month": d.replace(day=1, hour=0, minute=0, second=0, microsecond=0),
                "day": d.replace(hour=0, minute=0, second=0, microsecond=0),
                "hour": d.replace(minute=0, second=0, microsecond=0),
            }[unit]
            value = (d - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        return Compare(
            TransformTerm(term_form("date_trunc"), (col,), unit=unit), op, Literal(value, t)
        )
    # bucket_term
    kind = draw(st.sampled_from(["bucket", "hash_mod", "murmur3"]))
    if kind == "murmur3":
        return Compare(
            TransformTerm(term_form("murmur3"), (col,)),
            "=",
            Literal(draw(st.integers(-(2**31), 2**31 - 1)), pa.int64()),
        )
    n = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    r = draw(st.integers(-n, n))
    if draw(st.booleans()):
        return InList(
            TransformTerm(term_form(kind), (col,), param=n),
            (Literal(r, pa.int64()), Literal(abs(r), pa.int64())),
        )
    return Compare(TransformTerm(term_form(kind), (col,), param=n), op, Literal(r, pa.int64()))


def predicates(ex: Example, depth: int = 3) -> st.SearchStrategy[Predicate]:
    leaf = leaves(ex)
    if depth == 0:
        return leaf
    sub = predicates(ex, depth - 1)
    return st.one_of(
        leaf,
        leaf,
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: and_(*xs)),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: or_(*xs)),
        sub.map(Not),
    )
