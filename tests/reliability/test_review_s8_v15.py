"""Adversarial review (session 8, V15): issue #15's guarantees on today's main.

Part 1 re-runs every repro of issue #15's "Why" section under four SPJ modes:
``on`` (defaults), ``off``, ``zero`` (``spj_small_side_rows = 0``: every
compatible join storage-partitioned) and ``declined`` (thresholds so low that
the per-join decision keeps every join plain). Each answer and output schema
must equal plain DataFusion's over memory tables of the same rows (DuckDB
where DataFusion itself is suspect).

Then the findings of the hunt (``test_review_s8_v15_hunt.py``): ``date_trunc``
equality did not prune time fields that form no chain (fixed), and
apache/datafusion#21246 reaches two different namespaces and Lance datasets
(a DataFusion 55 bug; lance-sql names the padded side of an outer join apart).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
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
from issue15_tables import CUSTOMERS, DAY0, EVENTS, issue15_tables

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
SMALL = issue15_tables()
TABLES = {"orders": ORDERS, "customers": CUSTOMERS, "events": EVENTS, **SMALL}


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[str, str]:
    return build_roots(tmp_path_factory.mktemp("v15"))


def build_roots(tmp: Path) -> dict[str, str]:
    """The namespaces of :data:`TABLES` (also used by the hunt module)."""
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


# -- apache/datafusion#21246 beyond self-joins -----------------------

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


# Namespaces: join statistics swap the RIGHT JOIN's inputs into the LEFT JOIN it equals;
# without them, and over these Lance datasets (whose plan keeps its shape), plain
# DataFusion 55 gives wrong rows and lance-sql's names of the padded side keep them right.
@pytest.mark.parametrize(
    "source, join_stats",
    [
        ("namespace, spj off", True),
        ("namespace, identity spec", True),
        ("namespace, spj off", False),
        ("lance", True),
    ],
)
def test_datafusion_21246_two_tables_sharing_column_names(
    tmp_path: Path, source: str, join_stats: bool
) -> None:
    data = {"l": L21246, "r": R21246}
    ctx = lance_sql.SessionContext(spj=source != "namespace, spj off")
    ctx.join_stats_enabled = join_stats
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
