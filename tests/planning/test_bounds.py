"""Unit tests of the column-bounds algebra (planning/bounds_skipping.py,
tables/namespace/bounds.py).

Each case states a table's bounds and a predicate; "skip" means the bounds prove
that no row can make the predicate TRUE. Every skip claimed here is checked
against a brute force over concrete rows inside the bounds (DataFusion
evaluates the predicate over them), so the algebra and SQL agree.
"""

from __future__ import annotations

import datetime
import json
import math
from decimal import Decimal

import datafusion
import pyarrow as pa
import pytest

from lance_sql.planning.bounds_skipping import compile_skip, skip_mask
from lance_sql.planning.planner import to_predicate
from lance_sql.tables.namespace import bounds as tb

FID = b"lance:field_id"


def _f(name: str, t: pa.DataType, fid: int) -> pa.Field:
    return pa.field(name, t, metadata={FID: str(fid).encode()})


SCHEMA = pa.schema(
    [
        _f("i", pa.int64(), 0),
        _f("f", pa.float64(), 1),
        _f("s", pa.string(), 2),
        _f("d", pa.date32(), 3),
        _f("ts", pa.timestamp("us", tz="UTC"), 4),
        _f("dec", pa.decimal128(10, 2), 5),
        _f("u8", pa.uint8(), 6),
        _f("b", pa.bool_(), 7),
    ]
)


def _bounds(rows: pa.Table) -> tb.TableBounds:
    return tb.table_bounds(rows, SCHEMA, 1, None, "loc")


def _rows(**cols: list) -> pa.Table:
    n = len(next(iter(cols.values())))
    arrays = {}
    for f in SCHEMA:
        arrays[f.name] = pa.array(cols.get(f.name, [None] * n), f.type)
    return pa.table(arrays, schema=SCHEMA)


def _skip(filter: str, rows: pa.Table) -> bool:
    pred = to_predicate(filter, SCHEMA)
    test = compile_skip(pred)
    b = tb.from_json(tb.to_json(_bounds(rows)))  # always through the stored form
    assert b is not None
    return bool(test is not None and test(b))


def _df_matches(filter: str, rows: pa.Table) -> int:
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [rows.to_batches()])
    return ctx.sql(f"SELECT count(*) AS n FROM t WHERE {filter}").to_arrow_table()["n"][0].as_py()


CASES = [
    # (filter, rows, expected skip)
    ("i = 5", _rows(i=[1, 3, None]), True),
    ("i = 3", _rows(i=[1, 3, None]), False),
    ("i = 2", _rows(i=[1, 3]), False),  # inside the range: maybe
    ("i < 1", _rows(i=[1, 3]), True),
    ("i <= 1", _rows(i=[1, 3]), False),
    ("i > 3", _rows(i=[1, 3]), True),
    ("i >= 3", _rows(i=[1, 3]), False),
    ("i <> 1", _rows(i=[1, 1]), False),  # != is never used
    ("i IN (4, 5, 0)", _rows(i=[1, 3]), True),
    ("i IN (4, 2)", _rows(i=[1, 3]), False),
    ("i IN (4, NULL)", _rows(i=[1, 3]), True),
    ("i NOT IN (1, 3)", _rows(i=[1, 3]), False),
    ("i IS NULL", _rows(i=[1, 3]), True),
    ("i IS NULL", _rows(i=[1, None]), False),
    ("i IS NOT NULL", _rows(i=[None, None]), True),
    ("i IS NOT NULL", _rows(i=[None, 2]), False),
    ("i = 1", _rows(i=[None, None]), True),
    ("i = 9 AND s = 'a'", _rows(i=[1], s=["a"]), True),
    ("i = 9 OR s = 'a'", _rows(i=[1], s=["a"]), False),
    ("i = 9 OR s = 'b'", _rows(i=[1], s=["a"]), True),
    ("NOT (i < 5)", _rows(i=[1, 3]), True),  # pushed to i >= 5 before binding
    ("NOT (i < 5 OR i > 100)", _rows(i=[1, 3]), True),
    ("NOT (i = 1)", _rows(i=[1, 1]), False),
    ("i + 1 = 100", _rows(i=[1, 3]), False),  # not a column comparison: maybe
    ("u8 = 300", _rows(u8=[1, 3]), True),
    ("u8 > 250", _rows(u8=[1, 3]), True),
    ("u8 < 0", _rows(u8=[1, 3]), True),
    # floats: -0.0 = 0.0, NaN never skipped
    ("f = 0.0", _rows(f=[-0.0, 1.0]), False),
    ("f = -0.0", _rows(f=[0.0, 1.0]), False),
    ("f < 0.0", _rows(f=[0.0, 1.0]), False),  # total order: -0.0 < 0.0 could hold
    ("f < -0.0", _rows(f=[0.0, 1.0]), False),
    ("f > 0.0", _rows(f=[-0.0, 0.0]), True),
    ("f > 1.0", _rows(f=[-0.0, 1.0]), True),
    ("f > 1.0", _rows(f=[-0.0, float("nan")]), False),
    ("f = 2.0", _rows(f=[float("nan"), 1.0]), False),
    ("f IS NULL", _rows(f=[float("nan"), 1.0]), False),
    ("f < -1e308", _rows(f=[float("-inf"), 1.0]), False),
    ("f > 1e308", _rows(f=[float("-inf"), 1.0]), True),
    ("f > 1e308", _rows(f=[float("inf"), 1.0]), False),
    ("f = CAST('NaN' AS DOUBLE)", _rows(f=[1.0]), False),
    # strings: byte order, truncation
    ("s = 'b'", _rows(s=["a", "c"]), False),
    ("s = 'd'", _rows(s=["a", "c"]), True),
    ("s < 'a'", _rows(s=["a", "c"]), True),
    ("s > 'c'", _rows(s=["a", "c"]), True),
    ("s > 'b'", _rows(s=["a", "c"]), False),
    ("s = 'Z'", _rows(s=["a", "é"]), True),  # 'Z' < 'a' in byte order
    ("s = 'ä'", _rows(s=["a", "é"]), False),
    ("s = 'ÿ'", _rows(s=["a", "é"]), True),
    ("s = 'ﬀ'", _rows(s=["a", "é"]), True),
    ("s LIKE 'b%'", _rows(s=["a", "az"]), True),
    ("s LIKE 'a%'", _rows(s=["0", "b"]), False),
    ("s LIKE 'c%'", _rows(s=["ca", "cz"]), False),
    ("s LIKE 'd%'", _rows(s=["ca", "cz"]), True),
    ("s = '" + "x" * 40 + "'", _rows(s=["x" * 39 + "a", "x" * 40]), False),
    ("s > '" + "x" * 40 + "'", _rows(s=["x" * 39 + "a", "x" * 40]), False),  # truncated max
    ("s > '" + "x" * 33 + "'", _rows(s=["a", "x" * 40]), False),
    ("s > 'y'", _rows(s=["a", "x" * 40]), True),
    ("s < '" + "x" * 31 + "'", _rows(s=["x" * 40, "z"]), True),
    ("s < '" + "x" * 32 + "'", _rows(s=["x" * 40, "z"]), True),
    ("s < '" + "x" * 35 + "'", _rows(s=["x" * 40, "z"]), False),  # truncated min: maybe
    # dates, timestamps, decimals
    (
        "d = DATE '2024-01-03'",
        _rows(d=[datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)]),
        True,
    ),
    (
        "d >= DATE '2024-01-02'",
        _rows(d=[datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)]),
        False,
    ),
    (
        "d > DATE '2024-01-02'",
        _rows(d=[datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)]),
        True,
    ),
    (
        "ts > TIMESTAMP '2024-01-01T00:00:01Z'",
        _rows(ts=[datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)]),
        True,
    ),
    (
        "ts = TIMESTAMP '2024-01-01T01:00:00+01:00'",
        _rows(ts=[datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)]),
        False,
    ),
    (
        "ts < TIMESTAMP '2024-01-01T00:00:00Z'",
        _rows(ts=[datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)]),
        True,
    ),
    ("dec = 1.25", _rows(dec=[Decimal("1.25"), Decimal("2.00")]), False),
    ("dec > 2", _rows(dec=[Decimal("1.25"), Decimal("2.00")]), True),
    ("dec < 1.25", _rows(dec=[Decimal("1.25"), Decimal("2.00")]), True),
    ("dec = 1.251", _rows(dec=[Decimal("1.25"), Decimal("2.00")]), True),
    ("b = true", _rows(b=[False]), False),  # booleans have no bounds
]


@pytest.mark.parametrize(("filter", "rows", "skip"), CASES, ids=[c[0][:40] for c in CASES])
def test_skip_against_sql(filter: str, rows: pa.Table, skip: bool) -> None:
    got = _skip(filter, rows)
    assert got == skip
    if got:  # a claimed skip must be true of the rows themselves
        assert _df_matches(filter, rows) == 0


def test_truncation_bounds_are_bounds() -> None:
    s = "a" * 50
    assert tb.truncate_lower(s) == "a" * 32
    assert tb.truncate_upper(s) == "a" * 31 + "b"
    assert tb.truncate_upper("\U0010ffff" * 40) == "\U0010ffff" * 40  # nothing to increment
    assert tb.truncate_upper("a" + "\U0010ffff" * 40) == "b"
    assert tb.truncate_upper("a" * 31 + "\ud7ff" + "z") == "a" * 31 + "\ue000"
    assert tb.truncate_upper("short") == "short"


def test_encoding_round_trips_exactly() -> None:
    rows = _rows(
        i=[-(2**63), 2**63 - 1],
        f=[float("-inf"), 5e-324],
        s=["", "\U0001f600" * 3],
        dec=[Decimal("-99999999.99"), Decimal("0.01")],
        u8=[0, 255],
    )
    b = _bounds(rows)
    back = tb.from_json(tb.to_json(b))
    assert back == b
    assert back.columns[1].lo == -math.inf
    text = tb.with_bounds('{"other": 1}', b)
    assert '"other":1' in text
    assert tb.bounds_of_metadata(text) == b
    assert tb.bounds_of_metadata(tb.with_bounds(text, None)) is None
    assert tb.with_bounds("not json", None) == "not json"


def test_zero_bounds_are_widened() -> None:
    b = _bounds(_rows(f=[0.0, 0.0]))
    lo, hi = b.columns[1].lo, b.columns[1].hi
    assert lo == 0.0 and math.copysign(1, lo) < 0
    assert hi == 0.0 and math.copysign(1, hi) > 0


def test_merge_is_union_and_drops_mismatches() -> None:
    a = _bounds(_rows(i=[1, 5], f=[1.0, None], s=["m", "n"]))
    b = _bounds(_rows(i=[-3, 2], f=[float("nan"), 2.0], s=[None, None]))
    m = tb.merge(a, b, 9)
    assert m.version == 9
    assert (m.columns[0].lo, m.columns[0].hi, m.columns[0].nulls) == (-3, 5, 0)
    assert (m.columns[1].lo, m.columns[1].hi, m.columns[1].nan, m.columns[1].nulls) == (
        1.0,
        2.0,
        True,
        1,
    )
    assert (m.columns[2].lo, m.columns[2].hi, m.columns[2].nulls) == ("m", "n", 2)
    other = tb.TableBounds(1, None, "loc", {0: tb.ColumnBounds("int32", 0, 1, 0)})
    assert 0 not in tb.merge(a, other, 2).columns


def test_malformed_bounds_are_ignored() -> None:
    for text in (
        '{"lance_sql.bounds": 3}',
        '{"lance_sql.bounds": {"version": 1, "columns": {}}}',  # not a string property
        '{"lance_sql.bounds": "{"}',
        json.dumps({"lance_sql.bounds": '{"version": "1", "columns": {}}'}),
        json.dumps(
            {"lance_sql.bounds": '{"version": 1, "columns": {"0": {"type": "int64", "min": "1"}}}'}
        ),
        json.dumps({"lance_sql.bounds": '{"version": 1, "columns": {"x": {"type": "int64"}}}'}),
    ):
        b = tb.bounds_of_metadata(text)
        assert b is None or not b.columns  # nothing usable either way
    for column in (  # a malformed column is dropped, never read as "only NULLs"
        '{"type": "int64", "nulls": 0, "min": 1}',
        '{"type": "int64", "nulls": 0, "max": 1}',
        '{"type": "int64", "min": 1, "max": 2}',
        '{"type": "int64", "nulls": -1, "min": 1, "max": 2}',
        '{"type": "int64", "nulls": true, "min": 1, "max": 2}',
    ):
        inner = '{"version": 1, "columns": {"0": ' + column + "}}"
        text = json.dumps({"lance_sql.bounds": inner})
        assert tb.bounds_of_metadata(text).columns == {}
    for text in (
        "[1]",
        "{",
    ):
        assert tb.bounds_of_metadata(text) is None


def _manifest_rows(metas: list[str | None], versions: list[int | None], **extra: list) -> pa.Table:
    n = len(metas)
    return pa.table(
        {
            "object_id": [f"v1$t{i}$dataset" for i in range(n)],
            "object_type": ["table"] * n,
            "location": extra.get("location", ["loc"] * n),
            "metadata": metas,
            "read_version": pa.array(versions, pa.uint64()),
            "read_branch": pa.array(extra.get("read_branch", [None] * n), pa.string()),
            "read_tag": pa.array(extra.get("read_tag", [None] * n), pa.string()),
        }
    )


def test_bounds_used_only_for_the_version_they_describe() -> None:
    text = tb.with_bounds("{}", _bounds(_rows(i=[1, 3])))  # version 1, location "loc"
    pred = to_predicate("i = 7", SCHEMA)
    rows = _manifest_rows(
        [text] * 6 + [None, "{}"],
        [1, 2, None, 1, 1, 1, 1, 1],
        location=["loc", "loc", "loc", "other", "loc", "loc", "loc", "loc"],
        read_branch=[None, None, None, None, "b", None, None, None],
        read_tag=[None, None, None, None, None, "t", None, None],
    )
    mask = skip_mask(pred, rows)
    assert mask is not None
    assert mask.tolist() == [True, False, False, False, False, False, False, False]


def test_no_skip_without_the_needed_columns() -> None:
    text = tb.with_bounds("{}", _bounds(_rows(i=[1, 3])))
    rows = _manifest_rows([text], [1]).drop_columns(["read_tag"])
    assert skip_mask(to_predicate("i = 7", SCHEMA), rows) is None


def test_type_change_disables_a_column() -> None:
    text = tb.with_bounds("{}", _bounds(_rows(i=[1, 3])))
    wider = pa.schema([_f("i", pa.decimal128(20, 0), 0)])
    pred = to_predicate("i = 7", wider)
    assert skip_mask(pred, _manifest_rows([text], [1])).tolist() == [False]
