"""Every Arrow type pylance stores round-trips through ``SELECT *`` unchanged."""

from __future__ import annotations

import decimal

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_sql

N = 6


def _columns() -> dict[str, pa.Array]:
    def a(t: pa.DataType, values: list) -> pa.Array:
        return pa.array(values, t)

    d = decimal.Decimal
    cols = {
        "null": pa.nulls(N),
        "bool": a(pa.bool_(), [True, False, None, True, False, True]),
        "i8": a(pa.int8(), [1, -2, None, 127, -128, 0]),
        "i16": a(pa.int16(), [1, -2, None, 32767, -32768, 5]),
        "i32": a(pa.int32(), [1, -2, None, 2**31 - 1, -(2**31), 5]),
        "i64": a(pa.int64(), [1, -2, None, 2**63 - 1, -(2**63), 5]),
        "u8": a(pa.uint8(), [1, 2, None, 255, 4, 5]),
        "u16": a(pa.uint16(), [1, 2, None, 65535, 4, 5]),
        "u32": a(pa.uint32(), [1, 2, None, 2**32 - 1, 4, 5]),
        "u64": a(pa.uint64(), [1, 2, None, 2**64 - 1, 4, 5]),
        "f16": pa.array(np.array([1.5, 2, -0.0, -1.0, 0.5, 65504], dtype="float16")),
        "f32": a(pa.float32(), [1.5, None, 2.0, -1.0, float("inf"), 3.0]),
        "f64": a(pa.float64(), [1.5, None, 2.0, -1.0, -float("inf"), 1e300]),
        "d128": a(
            pa.decimal128(10, 2), [d("1.25"), None, d("-3.50"), d("0"), d("99999999.99"), d("1")]
        ),
        "d256": a(pa.decimal256(40, 3), [d("1.250"), None, d("-3.5"), d("0"), d("1e30"), d("2")]),
        "date32": a(pa.date32(), [0, 1, None, 20000, -5, 3]),
        "date64": a(pa.date64(), [0, 86_400_000, None, 3 * 86_400_000, 0, 0]),
        "time32s": a(pa.time32("s"), [0, 1, None, 86399, 4, 5]),
        "time32ms": a(pa.time32("ms"), [0, 1, None, 3, 4, 5]),
        "time64us": a(pa.time64("us"), [0, 1, None, 3, 4, 5]),
        "time64ns": a(pa.time64("ns"), [0, 1, None, 3, 4, 5]),
        "str": a(pa.string(), ["a", "", None, "ü€", "x", "y"]),
        "lstr": a(pa.large_string(), ["a", "", None, "ü", "x", "y"]),
        "bin": a(pa.binary(), [b"a", b"", None, b"\x00\xff", b"x", b"y"]),
        "lbin": a(pa.large_binary(), [b"a", b"", None, b"\x00", b"x", b"y"]),
        "fsb": a(pa.binary(3), [b"abc", b"def", None, b"ghi", b"jkl", b"mno"]),
        "list": a(pa.list_(pa.int32()), [[1, 2], [], None, [None, 3], [4], [5]]),
        "llist": a(pa.large_list(pa.string()), [["a"], [], None, [None], ["b"], ["c"]]),
        "fsl": a(pa.list_(pa.float32(), 2), [[1, 2], [3, 4], None, [5, 6], [7, 8], [9, 10]]),
        "struct": a(
            pa.struct([("x", pa.int32()), ("y", pa.string())]),
            [{"x": 1, "y": "a"}, None, {"x": None, "y": "b"}, {"x": 3}, {"x": 4, "y": "d"}, {}],
        ),
        "map": a(
            pa.map_(pa.string(), pa.int64()),
            [[("a", 1)], [], None, [("b", 2), ("c", None)], [("d", 4)], [("e", 5)]],
        ),
        "dict": pa.array(["a", "b", None, "a", "c", "b"]).dictionary_encode(),
        "nested": a(
            pa.list_(
                pa.struct([("k", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.bool_()))])
            ),
            [[{"k": [1], "m": [("t", True)]}], None, [], [{"k": None}], [{"k": [2, 3]}], [{}]],
        ),
    }
    for unit in ("s", "ms", "us", "ns"):
        cols[f"ts_{unit}"] = a(pa.timestamp(unit), [0, 1, None, 3, -4, 5])
        cols[f"tstz_{unit}"] = a(pa.timestamp(unit, "America/New_York"), [0, 1, None, 3, 4, 5])
        cols[f"tsutc_{unit}"] = a(pa.timestamp(unit, "UTC"), [0, 1, None, 3, 4, 5])
        cols[f"dur_{unit}"] = a(pa.duration(unit), [0, 1, None, 3, -4, 5])
    return cols


COLUMNS = _columns()


@pytest.fixture(scope="module")
def typed_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    table = pa.table({"id": pa.array(range(N), pa.int64()), **COLUMNS})
    uri = str(tmp_path_factory.mktemp("types") / "typed")
    lance.write_dataset(table, uri, max_rows_per_file=2)
    return uri


def _same(a: pa.Table, b: pa.Table) -> bool:
    # NaN-free data, so Table.equals is an exact value comparison
    return a.schema.equals(b.schema) and a.equals(b)


def test_every_type_round_trips(typed_uri: str) -> None:
    expected = lance.dataset(typed_uri).to_table().sort_by("id")
    written = pa.table({"id": pa.array(range(N), pa.int64()), **COLUMNS})
    assert expected.schema.equals(written.schema)  # pylance stores every type as given
    ctx = lance_sql.SessionContext()
    ctx.register_lance("t", typed_uri)
    got = ctx.sql("SELECT * FROM t").to_arrow_table().sort_by("id")
    for name in expected.column_names:
        assert got.schema.field(name).type == expected.schema.field(name).type, name
        assert got[name].equals(expected[name]), name
    assert _same(got, expected)


@pytest.mark.parametrize("name", ["u64", "d256", "tstz_ns", "map", "dict", "nested", "fsb"])
def test_single_columns_with_deleted_rows(typed_uri: str, tmp_path, name: str) -> None:
    uri = str(tmp_path / name)
    lance.write_dataset(pa.table({"id": pa.array(range(N), pa.int64()), name: COLUMNS[name]}), uri)
    lance.dataset(uri).delete("id IN (1, 4)")
    ctx = lance_sql.SessionContext()
    ctx.register_lance("t", uri)
    got = ctx.sql(f'SELECT id, "{name}" FROM t ORDER BY id').to_arrow_table()
    keep = pa.array([i not in (1, 4) for i in range(N)])
    expected = pa.table({"id": pa.array(range(N), pa.int64()), name: COLUMNS[name]}).filter(keep)
    assert got.column_names == ["id", name]
    assert got[name].type == expected[name].type
    assert got[name].to_pylist() == expected[name].to_pylist()


_LITERALS = {
    "bool": "= true",
    "str": "> 'a'",
    "lstr": "> 'a'",
    "bin": "> X'78'",
    "lbin": "> X'78'",
    "fsb": "> X'646566'",
    "date32": ">= DATE '1970-01-02'",
    "date64": ">= DATE '1970-01-02'",
    "d128": "> 1.25",
    "d256": "> 1.25",
    "f16": "> 1.5",
    "dict": "IN ('a', 'c')",
    "time64ns": "> arrow_cast(1, 'Time64(Nanosecond)')",
    "dur_us": "> INTERVAL '0.000002 second'",
}


def _predicate(name: str) -> str | None:
    if name in _LITERALS:
        return _LITERALS[name]
    if name.startswith(("ts_", "tstz_", "tsutc_")):
        return "> TIMESTAMP '1970-01-01 00:00:00'"
    if name[0] in "iu" and name[1:].isdigit():
        return "IN (1, 3, 5)"
    if name in ("f32", "f64"):
        return "> 0.75"
    return None


@pytest.mark.parametrize("name", sorted(n for n in COLUMNS if _predicate(n)))
def test_filters_on_every_type_match_datafusion(typed_uri: str, name: str) -> None:
    """Filters on each type give what DataFusion gives over an in-memory copy.

    The dataset holds decimal256, duration, time and large_list columns, which
    make pylance refuse every filter unless lance-sql serializes it itself.
    """
    ctx = lance_sql.SessionContext()
    ctx.register_lance("t", typed_uri)
    mem = lance_sql.SessionContext()
    mem.register_record_batches("t", [lance.dataset(typed_uri).to_table().to_batches()])
    for where in (f'"{name}" {_predicate(name)}', f'NOT ("{name}" {_predicate(name)})'):
        q = f"SELECT id FROM t WHERE {where} ORDER BY id"
        assert ctx.sql(q).to_pylist() == mem.sql(q).to_pylist(), where


def test_awkward_columns_do_not_stop_pushdown(typed_uri: str) -> None:
    ctx = lance_sql.SessionContext()
    ctx.register_lance("t", typed_uri)
    plan = "\n".join(
        ctx.sql("EXPLAIN SELECT id FROM t WHERE i64 > 1").to_arrow_table()["plan"].to_pylist()
    )
    assert "(in Lance)" in plan
    assert sorted(r["id"] for r in ctx.sql("SELECT id FROM t WHERE i64 > 1").to_pylist()) == [3, 5]
    assert ctx.lance_table("t").metrics.fallback_filters == 0
