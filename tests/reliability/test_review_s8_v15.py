"""Adversarial review (session 8, V15): issue #15's guarantees on today's main.

Part 1 re-runs every repro of issue #15's "Why" section under four SPJ modes:
``on`` (defaults), ``off``, ``zero`` (``spj_small_side_rows = 0``: every
compatible join storage-partitioned) and ``declined`` (thresholds so low that
the per-join decision keeps every join plain). Each answer and output schema
must equal plain DataFusion's over memory tables of the same rows (DuckDB
where DataFusion itself is suspect).

Part 2 hunts for wrong rows where session 7's code (the per-join SPJ
decision, residual elimination, the plan cache, key filters) meets #15's:
decisions flipping between two runs of one DataFrame, appends / overwrites /
deletes between two collects, residual elimination under SPJ groups and outer
joins, key filters under semi/anti joins with NULL keys, EXPLAIN of every join
type with the decision on.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import io
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import datafusion
import duckdb
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from datafusion import col, lit
from datafusion import functions as f

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.errors import UnsafeLocationError
from lance_sql.tables.namespace.namespace import PartitionedNamespace

MODES = ["on", "off", "zero", "declined"]


def _write(root: Path, table: pa.Table, spec: list[dict[str, Any]]) -> str:
    ns = PartitionedNamespace.create(str(root), table.schema, spec)
    ns.append(table)
    return str(root)


def _lance(roots: dict[str, str], mode: str = "on") -> lance_sql.SessionContext:
    ctx = lance_sql.SessionContext(spj=mode != "off")
    if mode == "zero":
        ctx.spj_small_side_rows = 0
    if mode == "declined":  # every input is "small" against a "large" one: plain joins
        ctx.spj_small_side_rows = 10**9
        ctx.spj_large_side_rows = 0
    for name, root in roots.items():
        ctx.register_namespace(name, root)
    return ctx


def _plain(tables: dict[str, pa.Table]) -> datafusion.SessionContext:
    ctx = datafusion.SessionContext()
    for name, table in tables.items():
        ctx.register_record_batches(name, [table.to_batches()])
    return ctx


def _duck(tables: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return con


def _rows(df: Any) -> Counter:
    table = df.to_arrow_table()
    return Counter(zip(*(c.to_pylist() for c in table.columns), strict=True))


def _same_schema(got: pa.Schema, want: pa.Schema) -> None:
    assert got.names == want.names, (got, want)
    assert got.types == want.types, (got, want)


def _approx_equal(got: Counter, want: Counter) -> None:
    assert sum(got.values()) == sum(want.values())
    for a, b in zip(sorted(got.elements()), sorted(want.elements()), strict=True):
        assert a == pytest.approx(b, rel=1e-15), (got, want)


def _explain(ctx: Any, sql: str) -> str:
    return "\n".join(ctx.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist())


def _used(df: Any) -> int:
    return len(df.lance_rewrite().used)


# ---------------------------------------------------------------------------------------
# Part 1: issue #15's "Why" repros under every SPJ mode
# ---------------------------------------------------------------------------------------

ORDERS = pa.table(
    {
        "order_id": pa.array(range(120), pa.int64()),
        "customer_id": pa.array(
            [None if i % 17 == 0 else (i * 7) % 45 for i in range(120)], pa.int64()
        ),
        "amount": pa.array([i / 4 for i in range(120)], pa.float64()),
        "s": pa.array([["a", "b", "c"][i % 3] for i in range(120)], pa.string()),
    }
)
CUSTOMERS = pa.table(
    {
        "id": pa.array([None, *range(40)], pa.int64()),
        "segment": pa.array([f"s{i % 3}" for i in range(41)], pa.string()),
    }
)
DAY0 = dt.datetime(2025, 1, 25)
EVENTS = pa.table(
    {
        "ts": pa.array(
            [DAY0 + dt.timedelta(days=i // 3, hours=(i * 5) % 24) for i in range(60)],
            pa.timestamp("us"),
        ),
        "k": pa.array([i % 7 for i in range(60)], pa.int64()),
    }
)
SMALL = {
    "a_ns": pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "k": pa.array([10, 20], pa.int64()),
            "x": pa.array([1, 2], pa.int64()),
            "c": pa.array([True, False], pa.bool_()),
        }
    ),
    "b_ns": pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "k": pa.array([10, 20], pa.int64()),
            "x": pa.array([1, 2], pa.int64()),
            "b": pa.array([True, None], pa.bool_()),
        }
    ),
    "big_l": pa.table(
        {
            "k": pa.array([i % 4 for i in range(64)], pa.int64()),
            "v": pa.array([4_611_686_018_427_387_000 + i for i in range(64)], pa.int64()),
        }
    ),
    "big_r": pa.table({"k": pa.array(range(4), pa.int64())}),
}
TABLES = {"orders": ORDERS, "customers": CUSTOMERS, "events": EVENTS, **SMALL}


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("v15")
    identity = [{"source": "k", "transform": "identity"}]
    bucket4 = [{"source": "k", "transform": "bucket", "num_buckets": 4}]
    out = {
        "orders": _write(
            tmp / "orders",
            ORDERS,
            [{"source": "customer_id", "transform": "bucket", "num_buckets": 16}],
        ),
        "customers": _write(
            tmp / "customers",
            CUSTOMERS,
            [{"source": "id", "transform": "bucket", "num_buckets": 8}],
        ),
        "events": _write(
            tmp / "events",
            EVENTS,
            [{"source": "ts", "transform": t} for t in ("year", "month", "day")],
        ),
    }
    for name, table in SMALL.items():
        out[name] = _write(tmp / name, table, identity if name.endswith("_ns") else bucket4)
    return out


@pytest.fixture(scope="module")
def plain() -> datafusion.SessionContext:
    return _plain(TABLES)


def _plus1(x: pa.Array) -> pa.Array:
    return pc.add(x, 1)


PLUS1 = datafusion.udf(_plus1, [pa.int64()], pa.int64(), "immutable", "plus1")

JOIN = "FROM orders o JOIN customers c ON o.customer_id = c.id"
#: (item, query, must SPJ be used in modes on/zero)
SQL_REPROS = [
    ("EXCLUDE", f"SELECT * EXCLUDE(amount) {JOIN}", True),
    ("REPLACE", f"SELECT * REPLACE(o.order_id + 1 AS order_id) {JOIN}", True),
    (
        "TINYINT cast",
        f"SELECT CAST(o.order_id AS TINYINT) AS t, CAST(c.id AS TINYINT) {JOIN}",
        True,
    ),
    ("INT UNSIGNED", f"SELECT CAST(o.order_id AS INT UNSIGNED) AS u, c.segment {JOIN}", True),
    (
        "self-join SELECT *",
        "SELECT * FROM orders a JOIN orders b ON a.customer_id = b.customer_id "
        "WHERE a.order_id < 30",
        True,
    ),
    (
        "upper-case alias",
        "SELECT O.order_id, C.segment FROM orders O JOIN customers C ON O.customer_id = C.id",
        True,
    ),
    ("user UDF", f"SELECT plus1(o.order_id) AS p {JOIN} WHERE plus1(c.id) > 3", True),
    ("$1 placeholders", f"SELECT o.order_id {JOIN} WHERE o.amount > $1 AND c.segment <> $2", True),
    (
        "RIGHT JOIN + WHERE",
        "SELECT a.id, b.id, c.id FROM a_ns a JOIN b_ns b ON a.k = b.k "
        "RIGHT JOIN b_ns c ON c.k = b.k WHERE a.x = 1",
        True,
    ),
    (
        "EXISTS with parentheses",
        "SELECT a.id FROM a_ns a WHERE EXISTS (SELECT 1 FROM b_ns b "
        "WHERE a.k = b.k AND (b.b IS NOT DISTINCT FROM true) AND (a.c))",
        True,
    ),
    (
        "avg(int64) ~4.6e18",
        "SELECT avg(l.v) AS m, sum(l.v % 1000) AS s FROM big_l l JOIN big_r r ON l.k = r.k",
        True,
    ),
    (
        "avg(int64) grouped",
        "SELECT r.k, avg(l.v) AS m FROM big_l l JOIN big_r r ON l.k = r.k GROUP BY r.k",
        True,
    ),
    (
        "s='a' AND s='b' AND x>0",
        "SELECT * FROM orders WHERE s = 'a' AND s = 'b' AND amount > 0",
        False,
    ),
    (
        "s='a' AND s='b' in a join",
        f"SELECT o.order_id {JOIN} WHERE o.s = 'a' AND o.s = 'b' AND c.id > 0",
        False,
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", range(len(SQL_REPROS)))
def test_issue_15_sql_repros(roots, plain, index: int, mode: str) -> None:
    _item, sql, spj = SQL_REPROS[index]
    params = {"1": 10.0, "2": "s0"} if "$1" in sql else None
    ctx = _lance(roots, mode)
    ctx.register_udf(PLUS1)
    if "plus1" in sql:
        plain.register_udf(PLUS1)
    df, want = ctx.sql(sql, param_values=params), plain.sql(sql, param_values=params)
    _same_schema(df.schema(), want.schema())
    got = _rows(df)
    if "avg" in sql:  # float sums in another order: equal to 1 ulp, near the exact mean
        _approx_equal(got, _rows(want))
        _approx_equal(got, Counter(_duck(TABLES).sql(sql).fetchall()))
    else:
        assert got == _rows(want)
        duck_sql = sql.replace("$1", "10.0").replace("$2", "'s0'")
        if (
            "EXCLUDE" not in sql
            and "REPLACE" not in sql
            and "plus1" not in sql
            and ("UNSIGNED" not in sql and "TINYINT" not in sql)
        ):
            assert got == Counter(_duck(TABLES).sql(duck_sql).fetchall())
    if spj and mode in ("on", "zero"):
        assert _used(df) >= 1, _explain(ctx, sql)
    if mode in ("off", "declined"):
        assert _used(df) == 0


@pytest.mark.parametrize("mode", MODES)
def test_explain_self_join_with_equal_columns_never_crashes(roots, plain, mode: str) -> None:
    sql = (
        "SELECT count(*) FROM orders a JOIN orders b ON a.customer_id = b.customer_id "
        "WHERE a.amount = 1 AND b.amount = 2"
    )
    ctx = _lance(roots, mode)
    text = _explain(ctx, sql)
    assert "StoragePartitionedJoin" in text or "storage-partitioned join: not used" in text
    assert _rows(ctx.sql(sql)) == _rows(plain.sql(sql))
    # the TPC-H q7 shape: one table scanned twice with different filters, a plain scan too
    sql2 = (
        "SELECT count(*) FROM orders a, orders b WHERE a.order_id = b.order_id "
        "AND a.s = 'a' AND b.s = 'b'"
    )
    _explain(ctx, sql2)
    assert _rows(ctx.sql(sql2)) == _rows(plain.sql(sql2))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
def test_dataframe_join(roots, plain, how: str, mode: str) -> None:
    def join(c: Any) -> Any:
        return c.table("orders").join(
            c.table("customers"), left_on="customer_id", right_on="id", how=how
        )

    ctx = _lance(roots, mode)
    df = join(ctx)
    assert _used(df) == (1 if mode in ("on", "zero") else 0)
    _same_schema(df.schema(), join(plain).schema())
    assert _rows(df) == _rows(join(plain))


@pytest.mark.parametrize("mode", MODES)
def test_dataframe_date_trunc_prunes(roots, plain, mode: str) -> None:
    day = DAY0 + dt.timedelta(days=9)
    stamp = lit(pa.scalar(day, pa.timestamp("us")))

    def api(c: Any) -> Any:
        return c.table("events").filter(f.date_trunc("day", col("ts")) == stamp)

    ctx = _lance(roots, mode)
    with capture_scans() as records:
        got = _rows(api(ctx))
    read = [re.search(r"partition_tables=(\d+)/(\d+)", r.plan.description) for r in records]
    assert [(m.group(1), m.group(2)) for m in read if m] == [("1", "20")]
    assert got == _rows(api(plain))


@pytest.mark.parametrize("mode", MODES)
def test_dataframe_and_views_see_appends(tmp_path: Path, mode: str) -> None:
    spec = [{"source": "k", "transform": "bucket", "num_buckets": 4}]
    l0 = pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": pa.array([10, 20, 30], pa.int64())})
    r0 = pa.table({"k": pa.array([1, 2, 5], pa.int64()), "w": pa.array([1, 2, 5], pa.int64())})
    l1 = pa.table({"k": pa.array([5, 6, 1], pa.int64()), "v": pa.array([50, 60, 11], pa.int64())})
    r1 = pa.table({"k": pa.array([6, 7], pa.int64()), "w": pa.array([6, 7], pa.int64())})
    roots = {"l": _write(tmp_path / "l", l0, spec), "r": _write(tmp_path / "r", r0, spec)}
    ctx = _lance(roots, mode)
    sql = "SELECT l.k, l.v, r.w FROM l JOIN r ON l.k = r.k"
    frames = {
        "sql": ctx.sql(sql),
        "api": ctx.table("l").join(ctx.table("r"), on="k").select("k", "v", "w"),
    }
    ctx.sql(f"CREATE VIEW vw AS {sql}").collect()
    for df in frames.values():
        _rows(df)
    PartitionedNamespace.open(roots["l"]).append(l1)
    PartitionedNamespace.open(roots["r"]).append(r1)
    want = _plain({"l": pa.concat_tables([l0, l1]), "r": pa.concat_tables([r0, r1])})
    expected = _rows(want.sql(sql))
    for df in frames.values():
        assert _rows(df) == expected
    assert _rows(ctx.sql("SELECT * FROM vw")) == expected


HASHED = pa.table(
    {
        "i8": pa.array([1, None, -1], pa.int8()),
        "i16": pa.array([1, None, -300], pa.int16()),
        "i32": pa.array([1, 34, None], pa.int32()),
        "i64": pa.array([1, -1, None], pa.int64()),
        "u8": pa.array([1, 255, None], pa.uint8()),
        "u32": pa.array([1, 2**32 - 1, None], pa.uint32()),
        "u64": pa.array([1, 2**64 - 1, None], pa.uint64()),
        "b": pa.array([True, False, None]),
        "f32": pa.array([1.25, -0.0, None], pa.float32()),
        "f64": pa.array([1.25, float("nan"), None]),
        "d32": pa.array([dt.date(2025, 12, 10), None, dt.date(1900, 1, 1)]),
        "ts": pa.array([dt.datetime(2025, 3, 9, 7, 30), None, dt.datetime(1969, 1, 1)]),
        "s": pa.array(["US", "", None]),
        "ls": pa.array(["US", "", None], pa.large_string()),
        "bin": pa.array([b"abc", None, b""]),
    }
)


def test_murmur3_of_every_hashing_type_sql_and_dataframe(tmp_path: Path) -> None:
    import udfs

    root = _write(tmp_path / "h", HASHED, [{"source": "i64", "transform": "identity"}])
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("h", root)
    want = {name: udfs.murmur3(HASHED.column(name)).to_pylist() for name in HASHED.column_names}

    def by_i64(table: pa.Table, column: str) -> dict:
        return dict(
            zip(table.column("i64").to_pylist(), table.column(column).to_pylist(), strict=True)
        )

    expected = {
        name: dict(zip(HASHED.column("i64").to_pylist(), want[name], strict=True)) for name in want
    }
    for name in HASHED.column_names:
        got = ctx.sql(f"SELECT i64, murmur3({name}) AS m FROM h").to_arrow_table()
        assert by_i64(got, "m") == expected[name], name
        m3 = ctx.udf("murmur3")
        got = ctx.table("h").select(col("i64"), m3(col(name)).alias("m")).to_arrow_table()
        assert by_i64(got, "m") == expected[name], name
    multi = udfs.murmur3_multi(list(HASHED.columns)).to_pylist()
    args = ", ".join(HASHED.column_names)
    got = ctx.sql(f"SELECT i64, murmur3_multi({args}) AS m FROM h").to_arrow_table()
    assert by_i64(got, "m") == dict(zip(HASHED.column("i64").to_pylist(), multi, strict=True))
    m3m = ctx.udf("murmur3_multi")
    got = (
        ctx.table("h")
        .select(col("i64"), m3m(*(col(n) for n in HASHED.column_names)).alias("m"))
        .to_arrow_table()
    )
    assert by_i64(got, "m") == dict(zip(HASHED.column("i64").to_pylist(), multi, strict=True))


def _escaping(tmp_path: Path) -> lance_sql.SessionContext:
    spec = [{"source": "k", "transform": "bucket", "num_buckets": 4}]
    rows = pa.table({"k": pa.array(range(20), pa.int64()), "v": pa.array(range(20), pa.int64())})
    root = _write(tmp_path / "esc", rows, spec)
    other = _write(tmp_path / "ok", rows, spec)
    lance.dataset(f"{root}/__manifest").update(
        {"location": "'../../escape'"}, where="object_type = 'table'"
    )
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", root)
    ctx.register_namespace("m", other)
    return ctx


def _run(df: Any, method: str) -> Any:
    if method == "execute_stream":
        return list(df.execute_stream())
    if method == "show":
        with contextlib.redirect_stdout(io.StringIO()):
            return df.show()
    return getattr(df, method)()


@pytest.mark.parametrize(
    "method", ["collect", "to_arrow_table", "show", "to_pandas", "count", "execute_stream"]
)
def test_typed_errors_from_sql_and_every_dataframe_method(tmp_path: Path, method: str) -> None:
    ctx = _escaping(tmp_path)
    frames = [
        ctx.sql("SELECT k, v FROM n WHERE v > 3"),
        ctx.sql("SELECT n.k, m.v FROM n JOIN m ON n.k = m.k"),
        ctx.table("n").filter(col("v") > lit(3)),
        ctx.table("n").join(ctx.table("m"), on="k"),
    ]
    for df in frames:
        with pytest.raises(UnsafeLocationError, match="escape"):
            _run(df, method)


# ---------------------------------------------------------------------------------------
# Part 2: where session 7's code (SPJ decision, plan cache, residual elimination, key
# filters) meets issue #15's guarantees
# ---------------------------------------------------------------------------------------

JOIN_TYPES = [
    "JOIN",
    "LEFT JOIN",
    "RIGHT JOIN",
    "FULL JOIN",
    "LEFT SEMI JOIN",
    "LEFT ANTI JOIN",
    "RIGHT SEMI JOIN",
    "RIGHT ANTI JOIN",
]
SUBQUERY_JOINS = [
    "SELECT o.order_id FROM orders o WHERE EXISTS "
    "(SELECT 1 FROM customers c WHERE c.id = o.customer_id)",
    "SELECT o.order_id FROM orders o WHERE NOT EXISTS "
    "(SELECT 1 FROM customers c WHERE c.id = o.customer_id)",
    "SELECT o.order_id FROM orders o WHERE o.customer_id IN (SELECT id FROM customers)",
    "SELECT o.order_id FROM orders o WHERE o.customer_id NOT IN (SELECT id FROM customers)",
    "SELECT o.order_id, c.segment FROM orders o, customers c WHERE o.customer_id = c.id",
]


def _join_sql(join: str) -> str:
    sel = "c.id" if join.startswith("RIGHT S") or join.startswith("RIGHT A") else "o.order_id"
    return f"SELECT {sel} FROM orders o {join} customers c ON o.customer_id = c.id"


@pytest.mark.parametrize("mode", MODES)
def test_explain_of_every_join_type_states_the_decision(roots, plain, mode: str) -> None:
    ctx = _lance(roots, mode)
    for sql in [_join_sql(j) for j in JOIN_TYPES] + SUBQUERY_JOINS:
        text = _explain(ctx, sql)
        used = text.count("StoragePartitionedJoin:")
        reasons = re.findall(r"storage-partitioned join: not used \((.*)", text)
        assert used + len(reasons) == 1, (mode, sql, text)
        if mode == "off":
            assert reasons[0].startswith("turned off")
        elif "NOT IN" in sql:
            assert "NOT IN subquery" in reasons[0]
        elif mode in ("on", "zero"):
            assert used == 1, (mode, sql, text)
        else:
            assert "the smaller input is small" in reasons[0], (sql, text)
        assert _rows(ctx.sql(sql)) == _rows(plain.sql(sql)), (mode, sql)


KS = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _kv(ks: list[int | None], vs: list[int | None]) -> pa.Table:
    return pa.table({"k": pa.array(ks, pa.int64()), "v": pa.array(vs, pa.int64())})


def _empty_or(table: pa.Table) -> list[pa.RecordBatch]:
    return table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]


FLIP_SQL = [
    "SELECT l.k, l.v, r.v AS rv FROM l JOIN r ON l.k = r.k",
    "SELECT r.k AS rk, count(*) AS n, sum(l.v) AS s FROM l RIGHT JOIN r ON l.k = r.k GROUP BY r.k",
    "SELECT * FROM l a JOIN l b ON a.k = b.k",
    "SELECT l.k FROM l WHERE l.k NOT IN (SELECT k FROM r)",
    "SELECT l.k FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.k = l.k AND r.v > 2)",
    "SELECT count(*) AS n FROM l FULL JOIN r ON l.k = r.k AND r.v > 1",
]
API_HOWS = ["inner", "left", "full", "anti"]


def _api_frames(c: Any) -> list[Any]:
    frames = [c.table("l").join(c.table("r"), on="k", how=h) for h in API_HOWS]
    agg = (
        c.table("l").join(c.table("r"), on="k").aggregate([col("k")], [f.count(lit(1)).alias("n")])
    )
    return [*frames, agg]


@pytest.mark.parametrize("mode", ["on", "flip", "off"])
def test_one_dataframe_across_appends_deletes_overwrites_and_new_specs(
    tmp_path: Path, mode: str
) -> None:
    """DataFrames built once over empty namespaces; between runs the data changes, the
    SPJ decision flips (``flip``: 15 / 30 rows) and a new spec changes the bucket count."""
    spec = [{"source": "k", "transform": "bucket", "num_buckets": 4}]
    nss = {n: PartitionedNamespace.create(str(tmp_path / n), KS, spec) for n in ("l", "r")}
    ctx = _lance({n: str(tmp_path / n) for n in nss}, "off" if mode == "off" else "on")
    if mode == "flip":
        ctx.spj_small_side_rows, ctx.spj_large_side_rows = 15, 30
    sql_frames = [ctx.sql(q) for q in FLIP_SQL]
    api_frames = _api_frames(ctx)
    data = {"l": _kv([], []), "r": _kv([], [])}
    steps: list[tuple[str, str, Any]] = [
        ("l", "append", _kv([1, 2, 3, None], [1, 2, 3, 4])),
        ("r", "append", _kv([1, 1, 5, None], [1, 2, 3, 4])),
        ("l", "append", _kv(list(range(40)), list(range(40)))),
        ("r", "delete", 1),
        ("r", "overwrite", _kv([2, 3, 3], [7, 8, 9])),
        ("l", "spec", _kv([2, 2, 9], [0, 0, 0])),
        ("r", "append", _kv(list(range(50)), list(range(50)))),
        ("l", "delete", None),
    ]
    decisions = set()
    for who, kind, arg in [("", "", None), *steps]:
        if kind == "append" or kind == "spec":
            if kind == "spec":
                nss[who].add_spec([{"source": "k", "transform": "bucket", "num_buckets": 8}])
            nss[who].append(arg)
            data[who] = pa.concat_tables([data[who], arg])
        elif kind == "delete":
            where = "k IS NULL" if arg is None else f"k = {arg}"
            nss[who].delete(where)
            keep = (
                pc.is_valid(data[who]["k"])
                if arg is None
                else pc.fill_null(pc.not_equal(data[who]["k"], arg), True)
            )
            data[who] = data[who].filter(keep)
        elif kind == "overwrite":
            nss[who].overwrite(arg)
            data[who] = arg
        want = datafusion.SessionContext()
        for name, table in data.items():
            want.register_record_batches(name, [_empty_or(table)])
        for sql, df in zip(FLIP_SQL, sql_frames, strict=True):
            assert _rows(df) == _rows(want.sql(sql)), (kind, sql)
        for df, expected in zip(api_frames, _api_frames(want), strict=True):
            assert _rows(df) == _rows(expected), kind
        decisions.add(_used(sql_frames[0]))
    if mode == "flip":
        assert decisions == {0, 1}  # the decision did change between runs of one DataFrame


RSCHEMA = pa.schema([("k", pa.int64()), ("p", pa.int32()), ("v", pa.int64()), ("s", pa.string())])
#: bucket on the join key (SPJ), identity on nullable p and s (residual elimination)
RSPEC = [
    {"source": "k", "transform": "bucket", "num_buckets": 4},
    {"source": "p", "transform": "identity"},
    {"source": "s", "transform": "identity"},
]


def _random_rows(rng: random.Random, n: int) -> pa.Table:
    def maybe(x: Any, p: float = 0.15) -> Any:
        return None if rng.random() < p else x

    return pa.table(
        {
            "k": pa.array([maybe(rng.randrange(8), 0.1) for _ in range(n)], pa.int64()),
            "p": pa.array([maybe(rng.randrange(3), 0.2) for _ in range(n)], pa.int32()),
            "v": pa.array([maybe(rng.randrange(6), 0.1) for _ in range(n)], pa.int64()),
            "s": pa.array([rng.choice(["a", "b", None]) for _ in range(n)], pa.string()),
        },
        schema=RSCHEMA,
    )


def _condition(rng: random.Random, a: str) -> str:
    n3, n6, n8 = rng.randrange(3), rng.randrange(6), rng.randrange(8)
    return rng.choice(
        [
            f"{a}.p = {n3}",
            f"{a}.p IN ({n3}, {rng.randrange(3)})",
            f"{a}.p <> {n3}",
            f"NOT ({a}.p = 1)",
            f"{a}.p IS NULL",
            f"{a}.p IS NOT NULL",
            f"({a}.p IS DISTINCT FROM {n3})",  # (sqlparser binds AND into its right side)
            f"coalesce({a}.p, 9) = 9",
            f"({a}.p = 1 OR {a}.p IS NULL)",
            f"{a}.p NOT IN (0, NULL)",
            f"({a}.p > 0) IS NOT TRUE",
            f"({a}.p = {n3} OR {a}.v = 1)",
            f"{a}.v = {n6}",
            f"{a}.v IN ({n6}, NULL)",
            f"{a}.k = {n8}",
            f"{a}.k IN ({n8}, {rng.randrange(8)})",
            f"{a}.k IS NULL",
            f"{a}.s = 'a'",
            f"{a}.s <> 'a'",
            f"{a}.s IS NULL",
            f"({a}.s = 'b' AND {a}.p = {n3})",
        ]
    )


def _random_query(rng: random.Random) -> str:
    shape = rng.choice(["join", "join", "agg", "exists", "not exists", "in", "not in", "chain"])
    conds = [_condition(rng, rng.choice("ab")) for _ in range(rng.randrange(3))]
    where = " AND ".join(conds)
    if shape in ("join", "agg", "chain"):
        join = rng.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
        on = "a.k = b.k"
        if rng.random() < 0.4:
            on += " AND " + _condition(rng, rng.choice("ab"))
        tail = f" WHERE {where}" if where else ""
        if shape == "agg":
            return (
                f"SELECT b.p AS bp, count(*) AS n, sum(a.v) AS sv FROM l a {join} r b "
                f"ON {on}{tail} GROUP BY b.p"
            )
        if shape == "chain":
            join2 = rng.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN"])
            return (
                f"SELECT a.k AS ak, b.v AS bv, c.p AS cp FROM l a {join} r b ON {on} "
                f"{join2} l c ON c.k = b.k{tail}"
            )
        return (
            "SELECT a.k AS ak, a.p AS ap, a.v AS av, b.k AS bk, b.p AS bp, b.v AS bv "
            f"FROM l a {join} r b ON {on}{tail}"
        )
    conds = [c for c in conds if re.match(r"[(]?(NOT [(])?(coalesce[(])?a[.]", c)]
    tail = "".join(f" AND {c}" for c in conds)
    inner = " AND " + _condition(rng, "b") if rng.random() < 0.6 else ""
    if shape in ("exists", "not exists"):
        return (
            f"SELECT a.k, a.v FROM l a WHERE {shape.upper()} "
            f"(SELECT 1 FROM r b WHERE b.k = a.k{inner}){tail}"
        )
    sub = f"SELECT b.k FROM r b WHERE true{inner}"
    return f"SELECT a.k, a.v FROM l a WHERE a.k {shape.upper()} ({sub}){tail}"


def _random_differential(tmp_path: Path, seed: int, queries: int, modes: list[str]) -> None:
    rng = random.Random(seed)
    data = {n: _random_rows(rng, rng.randrange(5, 30)) for n in ("l", "r")}
    nss = {}
    for name, table in data.items():
        ns = PartitionedNamespace.create(str(tmp_path / f"{seed}{name}"), RSCHEMA, RSPEC)
        ns.append(table)
        for column in ("v", "k"):  # key filters: Bloom filters of a scalar index
            if rng.random() < 0.5:
                ns.create_scalar_index(column, "BTREE")
        nss[name] = ns
    roots = {n: str(ns.root) for n, ns in nss.items()}
    contexts = {m: _lance(roots, m) for m in modes}
    sqls = [_random_query(rng) for _ in range(queries)]
    frames = {(m, q): contexts[m].sql(q) for m in modes for q in sqls}
    for step in range(2):
        want = _plain(data)
        duck = _duck(data)
        for (mode, sql), df in frames.items():
            got, expected = _rows(df), _rows(want.sql(sql))
            if got != expected:  # apache/datafusion#21246 can hit the oracle itself
                expected = Counter(duck.sql(sql).fetchall())
            assert got == expected, (seed, step, mode, sql)
            assert _rows(contexts[mode].sql(sql)) == got, (seed, step, mode, sql)
        if step == 0:  # between the runs: rows appended, a partition deleted
            name = rng.choice(["l", "r"])
            extra = _random_rows(rng, rng.randrange(1, 20))
            nss[name].append(extra)
            nss[name].delete("p = 1")
            table = pa.concat_tables([data[name], extra])
            data[name] = table.filter(pc.fill_null(pc.not_equal(table["p"], 1), True))


@pytest.mark.parametrize("seed", range(3))
def test_residuals_and_key_filters_under_joins(tmp_path: Path, seed: int) -> None:
    _random_differential(tmp_path, 8000 + seed, 6, ["on", "off"])


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(60))
def test_residuals_and_key_filters_under_joins_slow(tmp_path: Path, seed: int) -> None:
    _random_differential(tmp_path, 9000 + seed, 10, ["on", "zero", "off"])


# -- date_trunc equality pruning on time fields that form no chain ------------------------


def _tables_read(df: Any) -> list[tuple[int, int]]:
    with capture_scans() as records:
        df.to_arrow_table()
    found = [re.search(r"partition_tables=(\d+)/(\d+)", r.plan.description) for r in records]
    return [(int(m.group(1)), int(m.group(2))) for m in found if m]


@pytest.mark.parametrize("fields", [("year", "day"), ("day",), ("month", "hour")])
def test_date_trunc_equality_prunes_without_a_time_chain(tmp_path: Path, fields) -> None:
    """Was 20/20 tables read: only a (year, month, day) chain took date_trunc terms."""
    spec = [{"source": "ts", "transform": t} for t in fields]
    root = _write(tmp_path / "ev", EVENTS, spec)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("events", root)
    plain = _plain({"events": EVENTS})
    total = len(PartitionedNamespace.open(root).tables())
    for where in (
        "date_trunc('day', ts) = TIMESTAMP '2025-02-03 00:00:00'",
        "CAST(ts AS DATE) = DATE '2025-02-03'",
        "date_trunc('hour', ts) = TIMESTAMP '2025-02-03 05:00:00'",
    ):
        sql = f"SELECT * FROM events WHERE {where}"
        read = _tables_read(ctx.sql(sql))
        assert read and read[0][0] < total, (fields, where, read)
        assert _rows(ctx.sql(sql)) == _rows(plain.sql(sql))
    df = ctx.table("events").filter(
        f.date_trunc("day", col("ts")) == lit(pa.scalar(DAY0, pa.timestamp("us")))
    )
    assert _tables_read(df)[0][0] < total


TIME_FIELDS = ["year", "month", "day", "hour"]


def _time_case(
    seed: int, tz: str | None, fields: list[str], tmp_path: Path
) -> tuple[str, pa.Table]:
    rng = random.Random(seed)
    base = dt.datetime(2025, 3, 29, 20)  # across the DST change in Europe/Paris
    stamps = [
        None
        if rng.random() < 0.05
        else base + dt.timedelta(minutes=rng.randrange(0, 60 * 24 * 40, 7))
        for _ in range(60)
    ]
    ts = pa.array(stamps, pa.timestamp("us"))
    if tz is not None:
        ts = pc.assume_timezone(ts, "UTC").cast(pa.timestamp("us", tz))
    table = pa.table({"ts": ts, "i": pa.array(range(60), pa.int64())})
    root = _write(tmp_path / f"t{seed}", table, [{"source": "ts", "transform": t} for t in fields])
    return root, table


@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
@pytest.mark.parametrize("seed", range(4))
def test_date_trunc_terms_match_memory_tables(tmp_path: Path, tz: str | None, seed: int) -> None:
    rng = random.Random(seed)
    fields = [t for t in TIME_FIELDS if rng.random() < 0.5] or ["day"]
    root, table = _time_case(seed, tz, fields, tmp_path)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    plain = _plain({"t": table})
    cast = "" if tz is None else f" AT TIME ZONE '{tz}'"
    values = [v for v in table.column("ts").to_pylist() if v is not None]
    for _ in range(12):
        unit = rng.choice(["year", "month", "day", "hour"])
        picks = [rng.choice(values) for _ in range(rng.randrange(1, 3))]
        lits = []
        for v in picks:
            v = v.replace(tzinfo=None) if tz is None else v.astimezone(dt.UTC).replace(tzinfo=None)
            shift = dt.timedelta(minutes=rng.choice([0, 0, 1, 60 * 24]))
            lits.append(f"TIMESTAMP '{v + shift:%Y-%m-%d %H:%M:%S}'")
        if tz is not None:
            lits = [f"arrow_cast({x}, 'Timestamp(Microsecond, Some(\"UTC\"))')" for x in lits]
        term = f"date_trunc('{unit}', ts)"
        trunc_lits = [f"date_trunc('{unit}', {x}{cast})" if rng.random() < 0.7 else x for x in lits]
        where = (
            f"{term} = {trunc_lits[0]}"
            if len(trunc_lits) == 1
            else f"{term} IN ({', '.join(trunc_lits)})"
        )
        sql = f"SELECT i FROM t WHERE {where}"
        assert _rows(ctx.sql(sql)) == _rows(plain.sql(sql)), (fields, tz, sql)


# -- aggregates moved into SPJ groups (partial / eager aggregation) ------------------------

AGG_CALLS = [
    "count(*)",
    "count(l.i8)",
    "count(DISTINCT r.g)",
    "sum(l.i8)",
    "sum(l.big)",
    "avg(l.i8)",
    "avg(l.big)",
    "min(r.g)",
    "max(l.ts)",
    "sum(l.d)",
    "avg(l.d)",
    "bool_and(l.b)",
    "bool_or(r.b)",
    "min(l.f)",
    "count(DISTINCT l.i8)",
    "sum(l.i8) FILTER (WHERE r.b)",
    "count(*) FILTER (WHERE l.g = 'x')",
    "sum(DISTINCT l.i8)",
    "bit_xor(r.i8)",
    "sum(l.i8 * r.i8)",
]


def _agg_rows(rng: random.Random, n: int) -> pa.Table:
    def maybe(x: Any, p: float = 0.15) -> Any:
        return None if rng.random() < p else x

    big = [2**62, 2**62 + 1, -(2**62), 9_000_000_000_000_000_000]
    return pa.table(
        {
            "k": pa.array([maybe(rng.randrange(5), 0.05) for _ in range(n)], pa.int64()),
            "g": pa.array([maybe(rng.choice("xyz")) for _ in range(n)], pa.string()),
            "i8": pa.array([maybe(rng.randrange(-128, 128)) for _ in range(n)], pa.int8()),
            "big": pa.array([maybe(rng.choice(big)) for _ in range(n)], pa.int64()),
            "d": pa.array(
                [maybe(decimal.Decimal(rng.randrange(-(10**6), 10**6)) / 100) for _ in range(n)],
                pa.decimal128(20, 2),
            ),
            "f": pa.array([maybe(rng.choice([0.1, -0.0, 1e300, 2.5])) for _ in range(n)]),
            "b": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
            "ts": pa.array(
                [
                    maybe(dt.datetime(2025, 1, 1) + dt.timedelta(hours=rng.randrange(999)))
                    for _ in range(n)
                ],
                pa.timestamp("us", "UTC"),
            ),
        }
    )


def _rounded(rows: Counter) -> list[tuple]:
    return sorted(
        (tuple(round(x, 6) if isinstance(x, float) else x for x in r) for r in rows.elements()),
        key=repr,
    )


@pytest.mark.parametrize("seed", range(3))
def test_aggregates_in_spj_groups_match_plain(tmp_path: Path, seed: int) -> None:
    rng = random.Random(7100 + seed)
    data = {n: _agg_rows(rng, rng.randrange(5, 40)) for n in ("l", "r")}
    roots = {
        n: _write(
            tmp_path / n,
            t,
            [{"source": "k", "transform": "bucket", "num_buckets": 2 + 2 * (n == "l")}],
        )
        for n, t in data.items()
    }
    forced, off, plain = _lance(roots, "zero"), _lance(roots, "off"), _plain(data)
    for _ in range(8):
        calls = rng.sample(AGG_CALLS, rng.randrange(1, 4))
        group = rng.choice(["", "r.g", "l.k", "r.g, l.i8 % 3", "date_trunc('day', l.ts)"])
        items = ([group] if group else []) + [f"{a} AS a{i}" for i, a in enumerate(calls)]
        join = rng.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
        sql = f"SELECT {', '.join(items)} FROM l {join} r ON l.k = r.k"
        if rng.random() < 0.4:
            sql += f" WHERE r.i8 > {rng.randrange(-50, 50)} OR l.g IS NULL"
        if group:
            sql += f" GROUP BY {group}"
        want = plain.sql(sql)
        for ctx in (forced, off):
            df = ctx.sql(sql)
            _same_schema(df.schema(), want.schema())
            assert _rounded(_rows(df)) == _rounded(_rows(want)), sql
        assert _used(forced.sql(sql)) == 1, sql


# -- apache/datafusion#21246 (README known limits) beyond self-joins -----------------------

L21246 = pa.table(
    {"k": pa.array([4], pa.int64()), "p": pa.array([1], pa.int32()), "v": pa.array([3], pa.int64())}
)
R21246 = pa.table(
    {
        "k": pa.array([4, 7], pa.int64()),
        "p": pa.array([2, 0], pa.int32()),
        "v": pa.array([1, 0], pa.int64()),
    }
)
SQL21246 = (
    "SELECT b.p, a.v FROM l a RIGHT JOIN r b ON a.k = b.k "
    "WHERE (b.p = 0 OR b.v = 1 AND a.p = 1) AND b.v + b.k > 0"
)


@pytest.mark.xfail(
    strict=True,
    reason="DataFusion 55 (apache/datafusion#21246, fixed upstream by #25259): the FilterExec kept "
    "over b (b.v + b.k > 0 is not pushed into the scan) also gets a.p = 1, resolved by name on "
    "b.p; two different namespaces, SPJ off or not applicable; DuckDB gives 2 rows",
)
@pytest.mark.parametrize("source", ["namespace, spj off", "namespace, identity spec", "lance"])
def test_datafusion_21246_two_tables_sharing_column_names(tmp_path: Path, source: str) -> None:
    data = {"l": L21246, "r": R21246}
    ctx = lance_sql.SessionContext(spj=source != "namespace, spj off")
    for name, table in data.items():
        if source == "lance":
            uri = str(tmp_path / f"{name}.lance")
            lance.write_dataset(table, uri)
            ctx.register_lance(name, uri)
        else:
            field = "k" if source == "namespace, spj off" else "p"
            spec = [{"source": field, "transform": "identity"}]
            ctx.register_namespace(name, _write(tmp_path / name, table, spec))
    want = Counter(_duck(data).sql(SQL21246).fetchall())
    assert want == Counter({(0, None): 1, (2, 3): 1})
    assert _rows(ctx.sql(SQL21246)) == want
