"""join_arrow: one group's join with Acero over row numbers, checked against DuckDB's join."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.engines.spark.join import output_schema, read_columns
from lance_sql.engines.spark.join_arrow import arrow_join_supports, join_group

duckdb = pytest.importorskip("duckdb")

HOWS = ["inner", "left", "right", "full", "semi", "anti"]
_DUCK_HOW = {
    "inner": "INNER JOIN",
    "left": "LEFT JOIN",
    "right": "RIGHT JOIN",
    "full": "FULL OUTER JOIN",
    "semi": "SEMI JOIN",
    "anti": "ANTI JOIN",
}


def _canon(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, float) and v == 0.0:
        return 0.0  # -0.0 and 0.0 print alike
    if isinstance(v, dict):
        return tuple(sorted((k, _canon(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_canon(x) for x in v)
    return v


def _sorted_rows(table: pa.Table) -> list[tuple]:
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return sorted((tuple(_canon(v) for v in row) for row in zip(*cols, strict=True)), key=repr)


def _ours(left: pa.Table, right: pa.Table, on: list[tuple[str, str]], how: str, rows: int) -> Any:
    out = output_schema(left.schema, right.schema, how)
    lcols, rcols = read_columns(left.schema, right.schema, on, how)
    assert arrow_join_supports(left.schema, right.schema, on, how)
    batches = list(join_group(left.select(lcols), right.select(rcols), on, how, out, rows))
    assert all(b.num_rows <= rows for b in batches)
    return pa.Table.from_batches(batches, schema=out) if batches else out.empty_table()


def _duck(left: pa.Table, right: pa.Table, on: list[tuple[str, str]], how: str) -> pa.Table:
    cond = " AND ".join(f'a."{lk}" = b."{rk}"' for lk, rk in on)
    if how in ("semi", "anti"):
        cols = ", ".join(f'a."{c}"' for c in left.column_names)
    else:
        cols = ", ".join(
            [f'a."{c}"' for c in left.column_names] + [f'b."{c}"' for c in right.column_names]
        )
    con = duckdb.connect()
    con.register("l", left)
    con.register("r", right)
    return con.sql(f"SELECT {cols} FROM l a {_DUCK_HOW[how]} r b ON {cond}").to_arrow_table()


def _sides() -> tuple[pa.Table, pa.Table]:
    left = pa.table(
        {
            "k": pa.array([1, 2, 2, None, 5, 7, 0], pa.int64()),
            "f": pa.array([0.0, -0.0, float("nan"), 1.5, None, 2.5, 3.0]),
            "s": pa.array(["a", "b", None, "b", "e", "a", ""]),
            "items": pa.array([[1], [2, 3], None, [], [5], [6], [7]], pa.list_(pa.int32())),
        }
    )
    right = pa.table(
        {
            "k": pa.array([2, 2, None, 5, 9, 1], pa.int32()),  # another integer width
            "f": pa.array([-0.0, float("nan"), 1.5, None, 7.0, 0.0]),
            "s": pa.array(["b", "b", "x", None, "e", "a"], pa.large_string()),
            "st": pa.array([{"a": i} for i in range(6)], pa.struct([("a", pa.int64())])),
        }
    )
    return left, right


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("on", [[("k", "k")], [("f", "f")], [("s", "s")], [("k", "k"), ("s", "s")]])
def test_join_group_equals_duckdb(how: str, on: list[tuple[str, str]]) -> None:
    """NULL keys never match; -0.0 = 0.0 and NaN = NaN (Spark's join semantics, DuckDB's too)."""
    left, right = _sides()
    got = _ours(left, right, on, how, rows=2)
    rcols = read_columns(left.schema, right.schema, on, how)[1]
    want = _duck(left, right.select(rcols) if how in ("semi", "anti") else right, on, how)
    assert _sorted_rows(got) == _sorted_rows(want)


def test_duckdb_float_key_semantics_are_sparks() -> None:
    """The oracle itself: DuckDB matches -0.0 with 0.0 and NaN with NaN, as Spark's join does."""
    left, right = _sides()
    want = _duck(left.select(["f"]), right.select(["f"]), [("f", "f")], "inner")
    got = sorted(repr(_canon(v)) for v in want.column(0).to_pylist())
    assert got == sorted(["0.0"] * 4 + ["1.5", "'NaN'"])


@pytest.mark.parametrize("how", HOWS)
def test_empty_sides(how: str) -> None:
    left, right = _sides()
    for lt, rt in (
        (left.slice(0, 0), right),
        (left, right.slice(0, 0)),
        (left.slice(0, 0), right.slice(0, 0)),
    ):
        got = _ours(lt, rt, [("k", "k")], how, rows=100)
        want = _duck(lt, rt.select(["k"]) if how in ("semi", "anti") else rt, [("k", "k")], how)
        assert _sorted_rows(got) == _sorted_rows(want)


def test_unsupported_key_pairs_go_to_sparks_join() -> None:
    """Keys whose types differ beyond integer width and sign, float width or string kind are
    not joined here (partitioned_join runs Spark's own join of the two reads instead)."""
    a = pa.schema(
        [("k", pa.timestamp("us", "UTC")), ("d", pa.decimal128(10, 2)), ("v", pa.string_view())]
    )
    b = pa.schema([("k", pa.date32()), ("d", pa.decimal128(12, 3)), ("v", pa.string_view())])
    for col in ("k", "d", "v"):
        assert not arrow_join_supports(a, b, [(col, col)], "inner")
    assert arrow_join_supports(a, a, [("k", "k"), ("d", "d")], "full")
    u = pa.schema([("k", pa.uint64())])
    i = pa.schema([("k", pa.int64())])
    assert arrow_join_supports(u, i, [("k", "k")], "inner")  # as Spark: DECIMAL(20,0) = BIGINT
    assert arrow_join_supports(u, u, [("k", "k")], "inner")


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("rtype", [pa.int64(), pa.int8(), pa.uint32(), pa.uint64()])
def test_uint64_keys_with_other_integers_equal_duckdb(how: str, rtype: pa.DataType) -> None:
    """A uint64 key beyond int64's range never equals a negative key of the other side."""
    left = pa.table({"k": pa.array([1, 2, 2, None, 5, 2**64 - 1, 2**63], pa.uint64())})
    right = pa.table({"k": pa.array([2, None, 5, 9, 2, 1, 127], rtype), "m": range(7)})
    if pa.types.is_signed_integer(rtype):
        right = right.set_column(0, "k", pa.array([2, None, 5, 9, 2, -1, -128], rtype))
    got = _ours(left, right, [("k", "k")], how, rows=3)
    want = _duck(left, right.select(["k"]) if how in ("semi", "anti") else right, [("k", "k")], how)
    assert _sorted_rows(got) == _sorted_rows(want)


def test_semi_and_anti_read_only_the_right_keys() -> None:
    left, right = _sides()
    assert read_columns(left.schema, right.schema, [("k", "k"), ("s", "s")], "semi") == (
        left.column_names,
        ["k", "s"],
    )
    assert read_columns(left.schema, right.schema, [("k", "k")], "inner")[1] == right.column_names
