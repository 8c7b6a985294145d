"""murmur3 / murmur3_multi in lance_sql.SessionContext SQL: any type, any arity, any place."""

from __future__ import annotations

import datetime
import decimal
import threading

import numpy as np
import pyarrow as pa
import pytest

import lance_sql
import udfs
from lance_sql.engines.datafusion import functions, sql_dispatch


def _table() -> pa.Table:
    ts = [datetime.datetime(2025, 3, 9, 7, 30), None, datetime.datetime(1969, 12, 31, 23, 59)]
    return pa.table(
        {
            "i8": pa.array([1, None, -1], pa.int8()),
            "i32": pa.array([1, 34, None], pa.int32()),
            "i64": pa.array([1, -1, None], pa.int64()),
            "u64": pa.array([1, 2**64 - 1, None], pa.uint64()),
            "b": pa.array([True, False, None]),
            "f16": pa.array(np.array([1.25, -0.0, 2], np.float16)),
            "f32": pa.array([1.25, -0.0, None], pa.float32()),
            "f64": pa.array([1.25, float("nan"), None]),
            "dec": pa.array(
                [decimal.Decimal("1.25"), None, decimal.Decimal("-3.00")], pa.decimal128(10, 2)
            ),
            "dec256": pa.array(
                [decimal.Decimal(10**60), None, decimal.Decimal(-1)], pa.decimal256(70, 0)
            ),
            "d32": pa.array([datetime.date(2025, 12, 10), None, datetime.date(1900, 1, 1)]),
            "d64": pa.array(
                [datetime.date(2025, 12, 10), None, datetime.date(1900, 1, 1)], pa.date64()
            ),
            "t32": pa.array([1, None, 86399], pa.int32()).cast(pa.time32("s")),
            "t64": pa.array([1, None, 999], pa.int64()).cast(pa.time64("ns")),
            "ts_s": pa.array(ts, pa.timestamp("s")),
            "ts_ms_tz": pa.array(ts, pa.timestamp("ms", "UTC")).cast(
                pa.timestamp("ms", "Europe/Berlin")
            ),
            "ts_us_tz": pa.array(ts, pa.timestamp("us", "UTC")).cast(
                pa.timestamp("us", "America/New_York")
            ),
            "ts_ns": pa.array(ts, pa.timestamp("ns")),
            "dur": pa.array([1, None, -5], pa.int64()).cast(pa.duration("ms")),
            "s": pa.array(["US", "", None]),
            "ls": pa.array(["US", "", None], pa.large_string()),
            "vs": pa.array(["US", "a longer string view value", None], pa.string_view()),
            "bin": pa.array([b"abc", None, b""]),
            "lbin": pa.array([b"abc", None, b""], pa.large_binary()),
            "vbin": pa.array([b"abc", None, b"x" * 20], pa.binary_view()),
            "fsb": pa.array([b"abc", None, b"xyz"], pa.binary(3)),
            "dict": pa.array(["US", None, "US"]).dictionary_encode(),
            "lst": pa.array([[1], None, []]),
        }
    )


@pytest.fixture
def ctx() -> lance_sql.SessionContext:
    c = lance_sql.SessionContext()
    table = _table()
    # one partition of two batches (sliced, so the UDF sees offsets), row order kept
    c.register_record_batches("t", [table.slice(0, 2).to_batches() + table.slice(2).to_batches()])
    c.register_record_batches("u", [[pa.record_batch({"k": pa.array([1, 2, 3], pa.int32())})]])
    return c


def _one(ctx: lance_sql.SessionContext, sql: str) -> list:
    return ctx.sql(sql).to_arrow_table().column(0).to_pylist()


# --- NOTES vectors through SQL -------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("murmur3(1)", 1392991556),
        ("murmur3(CAST(1 AS INT))", 1392991556),
        ("murmur3(arrow_cast(1, 'Int8'))", 1392991556),
        ("murmur3(true)", 1392991556),
        ("murmur3(-1)", 1651860712),
        ("murmur3(CAST(34 AS INT))", 2017239379),
        ("murmur3('US')", -629525236),
        ("murmur3('')", 0),
        ("murmur3('abc')", -1277324294),
        ("murmur3(X'616263')", -1277324294),
        ("murmur3(1.25)", 824958840),
        ("murmur3(CAST(1.25 AS REAL))", 824958840),
        ("murmur3(0.0)", 1669671676),
        ("murmur3(-0.0)", 1669671676),
        ("murmur3(DATE '2025-12-10')", 591416496),
        ("murmur3_multi('US', CAST(1 AS INT))", -1158136343),
        ("murmur3_multi(1, 'US')", -1496155531),
        ("murmur3_multi(NULL, 'US')", -629525236),
        ("murmur3(NULL)", None),
        ("murmur3_multi(NULL, NULL)", None),
    ],
)
def test_notes_vectors_in_sql(
    ctx: lance_sql.SessionContext, expression: str, expected: int
) -> None:
    assert _one(ctx, f"SELECT {expression}") == [expected]


def test_every_column_type_equals_udfs(ctx: lance_sql.SessionContext) -> None:
    table = _table()
    for name in table.column_names:
        if name == "lst":
            continue
        got = _one(ctx, f"SELECT murmur3({name}) FROM t")
        assert got == udfs.murmur3(table.column(name)).to_pylist(), name


def test_multi_of_all_types_equals_udfs(ctx: lance_sql.SessionContext) -> None:
    table = _table().drop_columns(["lst"])
    args = ", ".join(table.column_names)
    got = _one(ctx, f"SELECT murmur3_multi({args}) FROM t")
    assert got == udfs.murmur3_multi(list(table.columns)).to_pylist()


# --- everywhere in a query ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT murmur3(i64) AS h FROM t WHERE murmur3(s) = -629525236", [1392991556]),
        (
            "SELECT murmur3(s) AS h, count(*) FROM t GROUP BY murmur3(s) "
            "HAVING murmur3_multi(count(*)) <> 0 ORDER BY murmur3(s) NULLS LAST",
            [-629525236, 0, None],
        ),
        ("SELECT x.k FROM u AS x JOIN t ON murmur3(x.k) = murmur3(t.i8) ORDER BY 1", [1]),
        (
            "WITH c AS (SELECT i32 AS z FROM t) SELECT murmur3(c.z) FROM c ORDER BY 1",
            [1392991556, 2017239379, None],
        ),
        ("SELECT (SELECT murmur3(max(k)) FROM u)", [udfs.murmur3([3]).to_pylist()[0]]),
        (
            "SELECT k FROM u WHERE EXISTS "
            "(SELECT 1 FROM t WHERE murmur3(t.i32) = murmur3(u.k)) ORDER BY k",
            [1],
        ),
        ("SELECT abs(CAST(murmur3(i64) AS BIGINT)) % 16 FROM t ORDER BY 1", [4, 8, None]),
        ("SELECT k AS alias FROM u ORDER BY murmur3(alias) LIMIT 1", [3]),
        ("SELECT murmur3(murmur3(k)) = murmur3(CAST(murmur3(k) AS BIGINT)) FROM u", [True] * 3),
        (
            "SELECT murmur3(upper(s) || 'x') FROM t ORDER BY 1 NULLS FIRST",
            [None, *sorted(udfs.murmur3(["USx", "x"]).to_pylist())],
        ),
        ('SELECT "murmur3"(k) FROM u ORDER BY k LIMIT 1', [1392991556]),
        ("SELECT MURMUR3(k) FROM u ORDER BY k LIMIT 1", [1392991556]),
        (
            "SELECT sum(CAST(murmur3(k) AS BIGINT)) OVER (ORDER BY k) FROM u ORDER BY k LIMIT 1",
            [1392991556],
        ),
    ],
)
def test_calls_anywhere(ctx: lance_sql.SessionContext, sql: str, expected: list) -> None:
    assert _one(ctx, sql) == expected


def test_create_view_and_explain(ctx: lance_sql.SessionContext) -> None:
    ctx.sql("CREATE VIEW v AS SELECT k, murmur3(k) AS h FROM u WHERE murmur3_multi(k, 'x') <> 0")
    assert (
        ctx.sql("SELECT h FROM v ORDER BY k").to_pydict()["h"]
        == udfs.murmur3(pa.array([1, 2, 3])).to_pylist()
    )
    plan = ctx.sql("EXPLAIN SELECT murmur3(k) FROM u").to_arrow_table().to_pydict()["plan"]
    assert any("__lance_murmur3__int32" in p for p in plan)


def test_probing_never_executes_ddl(ctx: lance_sql.SessionContext) -> None:
    ctx.sql("CREATE TABLE made AS SELECT murmur3(k) AS h FROM u WHERE murmur3(k) IS NOT NULL")
    assert ctx.table("made").to_pydict()["h"] == udfs.murmur3(pa.array([1, 2, 3])).to_pylist()
    with pytest.raises(Exception, match="already exists"):
        ctx.sql("CREATE TABLE made AS SELECT murmur3(k) AS h FROM u")


# --- text untouched, cache, threads --------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT k FROM u",
        "select  k ,'murmur3(' as s -- murmur3(k)\nfrom u /* murmur3( */",
        "SELECT u.murmur3 FROM (SELECT k AS murmur3 FROM u) AS u",
        "SELECT 'it''s murmur3(x)'",
    ],
)
def test_queries_without_calls_are_untouched(ctx: lance_sql.SessionContext, sql: str) -> None:
    assert sql_dispatch.dispatch_sql(ctx, sql) is sql
    ctx.sql(sql).collect()


def test_only_the_function_name_is_replaced(ctx: lance_sql.SessionContext) -> None:
    sql = "SELECT   murmur3( k )  AS \"Odd Name\" ,'murmur3(' FROM u -- murmur3(k)\n"
    rewritten = sql_dispatch.dispatch_sql(ctx, sql)
    assert rewritten == sql.replace("murmur3( k )", "__lance_murmur3__int32( k )")


def test_identical_queries_are_not_probed_again(
    ctx: lance_sql.SessionContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    rounds = []
    original = sql_dispatch._planning_error

    def counting(c: object, sql: str) -> str | None:
        rounds.append(sql)
        return original(c, sql)

    monkeypatch.setattr(sql_dispatch, "_planning_error", counting)
    sql = "SELECT murmur3(i64), murmur3_multi(s, d32) FROM t"
    first = ctx.sql(sql).to_pydict()
    probes = len(rounds)
    assert probes == 2
    assert ctx.sql(sql).to_pydict() == first
    assert len(rounds) == probes
    # a table re-registered with another type invalidates the cached rewrite
    ctx.deregister_table("t")
    ctx.register_record_batches(
        "t",
        [
            [
                pa.record_batch(
                    {"i64": pa.array(["1"]), "s": pa.array(["US"]), "d32": pa.array([1.5])}
                )
            ]
        ],
    )
    again = ctx.sql(sql).to_arrow_table()
    assert len(rounds) > probes
    assert again.column(0).to_pylist() == udfs.murmur3(["1"]).to_pylist()


def test_many_threads_one_context(ctx: lance_sql.SessionContext) -> None:
    queries = [
        "SELECT murmur3(k) FROM u ORDER BY k",
        "SELECT murmur3(CAST(k AS BIGINT)) FROM u ORDER BY k",
        "SELECT murmur3_multi(k, 'x', CAST(k AS DOUBLE)) FROM u ORDER BY k",
        "SELECT murmur3(CAST(k AS VARCHAR)) FROM u ORDER BY k",
    ]
    expected = {q: _one(ctx, q) for q in queries}
    fresh = lance_sql.SessionContext()
    fresh.register_record_batches("u", [[pa.record_batch({"k": pa.array([1, 2, 3], pa.int32())})]])
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for j in range(6):
                q = queries[(k + j) % len(queries)]
                assert _one(fresh, q) == expected[q]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# --- errors ------------------------------------------------------------------------------


def test_unsupported_type_names_function_and_type(ctx: lance_sql.SessionContext) -> None:
    with pytest.raises(functions.UnsupportedFunctionArgumentError) as info:
        ctx.sql("SELECT murmur3(lst) FROM t")
    assert isinstance(info.value, lance_sql.PlanningError)
    assert isinstance(info.value, udfs.UnsupportedTypeError)
    assert "murmur3: unsupported Arrow type list<item: int64>" in str(info.value)
    with pytest.raises(
        functions.UnsupportedFunctionArgumentError, match=r"murmur3_multi: .*struct"
    ):
        ctx.sql("SELECT murmur3_multi(k, named_struct('a', k)) FROM u")


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT murmur3() FROM u", "murmur3 takes exactly 1 argument, got 0"),
        ("SELECT murmur3(k, k) FROM u", "murmur3 takes exactly 1 argument, got 2"),
        ("SELECT murmur3_multi() FROM u", "murmur3_multi takes at least 1 argument, got 0"),
    ],
)
def test_wrong_arity(ctx: lance_sql.SessionContext, sql: str, message: str) -> None:
    with pytest.raises(functions.FunctionArityError, match=message):
        ctx.sql(sql)


def test_other_errors_are_datafusions(ctx: lance_sql.SessionContext) -> None:
    with pytest.raises(Exception, match="nosuchcol"):
        ctx.sql("SELECT murmur3(nosuchcol) FROM u").collect()


def test_plain_names_serve_the_dataframe_api(ctx: lance_sql.SessionContext) -> None:
    from datafusion import col

    df = ctx.table("u").select(ctx.udf("murmur3")(col("k")).alias("h"))
    assert df.to_pydict()["h"] == udfs.murmur3(pa.array([1, 2, 3])).to_pylist()


def test_dataframe_api_murmur3_of_every_type(ctx: lance_sql.SessionContext) -> None:
    from datafusion import col

    table = _table().drop_columns(["lst"])
    for name in table.column_names:
        df = ctx.table("t").select(ctx.udf("murmur3")(col(name)).alias("h"))
        assert df.to_pydict()["h"] == udfs.murmur3(table.column(name)).to_pylist(), name
    multi = ctx.udf("murmur3_multi")(col("s"), col("i32"))
    got = ctx.table("t").select(multi.alias("h")).to_pydict()["h"]
    want = udfs.murmur3_multi([table.column("s"), table.column("i32")]).to_pylist()
    assert got == want


def test_sql_dispatches_murmur3_before_datafusion_plans(ctx: lance_sql.SessionContext) -> None:
    got = ctx.sql("SELECT murmur3(s) AS h FROM t").to_pydict()["h"]
    assert got == udfs.murmur3(_table().column("s")).to_pylist()


def test_same_text_in_different_scopes_gets_each_scopes_type() -> None:
    ctx = lance_sql.SessionContext()
    ctx.register_record_batches("a", [[pa.record_batch({"x": pa.array(["1", "2"])})]])
    ctx.register_record_batches("b", [[pa.record_batch({"x": pa.array([1, 5], pa.int64())})]])
    as_int = udfs.murmur3(pa.array([1, 5])).to_pylist()
    as_str = udfs.murmur3(pa.array(["1", "2"])).to_pylist()
    sql = (
        "SELECT murmur3(x) AS h, (SELECT max(murmur3(x)) FROM b) AS m FROM a "
        "GROUP BY murmur3(x) ORDER BY murmur3(x)"
    )
    got = ctx.sql(sql).to_pydict()
    assert got["h"] == sorted(as_str)
    assert got["m"] == [max(as_int)] * 2
    union = "SELECT murmur3(x) FROM a UNION ALL SELECT murmur3(x) FROM b"
    assert sorted(_one(ctx, union)) == sorted(as_str + as_int)


# --- readable column names ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "names"),
    [
        ("SELECT murmur3(k) FROM u", ["murmur3(u.k)"]),
        ("SELECT murmur3(k) % 16 FROM u", ["murmur3(u.k) % Int64(16)"]),
        ("SELECT abs(murmur3(k)) % 16 FROM u", ["abs(murmur3(u.k)) % Int64(16)"]),
        ("SELECT murmur3_multi(k, 'x'), k FROM u", ['murmur3_multi(u.k,Utf8("x"))', "k"]),
        ("SELECT murmur3_multi(i64, s, d32) FROM t", ["murmur3_multi(t.i64,t.s,t.d32)"]),
        ("SELECT murmur3(1)", ["murmur3(Int64(1))"]),
        (
            'SELECT murmur3(k) h, murmur3(k) AS "H 2", murmur3(k) + 1 FROM u',
            ["h", "H 2", "murmur3(u.k) + Int64(1)"],
        ),
        ("SELECT DISTINCT murmur3(k) FROM u", ["murmur3(u.k)"]),
        ("SELECT *, murmur3(k) FROM u", ["k", "murmur3(u.k)"]),
        ("SELECT * FROM (SELECT murmur3(k) FROM u)", ["murmur3(u.k)"]),
        (
            "SELECT *, murmur3(k) FROM (SELECT murmur3(k), k FROM u) q",
            ["murmur3(u.k)", "k", "murmur3(q.k)"],
        ),
        ("WITH a AS (SELECT murmur3(k) FROM u) SELECT * FROM a", ["murmur3(u.k)"]),
        (
            "SELECT murmur3(k), count(*) FROM u GROUP BY murmur3(k) ORDER BY murmur3(k)",
            ["murmur3(u.k)", "count(*)"],
        ),
        ("SELECT murmur3(k) FROM u UNION ALL SELECT murmur3(s) FROM t", ["murmur3(u.k)"]),
    ],
)
def test_unaliased_calls_get_datafusion_style_names(
    ctx: lance_sql.SessionContext, sql: str, names: list[str]
) -> None:
    """Named as DataFusion names a UDF called murmur3 (like ``abs(u.k)``); aliases kept."""
    df = ctx.sql(sql)
    assert df.schema().names == names
    assert df.to_arrow_table().column_names == names


def test_readable_names_match_datafusion_naming_of_a_plain_udf(
    ctx: lance_sql.SessionContext,
) -> None:
    """The names equal those DataFusion gives the registered ``murmur3(Int64)`` UDF itself."""
    import datafusion

    for expression in ("murmur3(k)", "murmur3(k) % 16", "murmur3(k + 1) * 2"):
        sql = f"SELECT {expression} FROM u"
        plain = datafusion.SessionContext.sql(ctx, sql).schema().names  # no dispatch pass
        assert ctx.sql(sql).schema().names == plain


def test_readable_names_in_views_and_tables(ctx: lance_sql.SessionContext) -> None:
    ctx.sql("CREATE VIEW hv AS SELECT murmur3(k), murmur3(k) AS h FROM u")
    assert ctx.sql("SELECT * FROM hv").schema().names == ["murmur3(u.k)", "h"]
    ctx.sql("CREATE TABLE ht AS WITH q AS (SELECT 1 AS one) SELECT murmur3(k) FROM u, q")
    assert ctx.table("ht").schema().names == ["murmur3(u.k)"]
    assert ctx.sql('SELECT "murmur3(u.k)" FROM ht').to_pydict() == {
        "murmur3(u.k)": udfs.murmur3(pa.array([1, 2, 3])).to_pylist()
    }


def test_readable_names_keep_results_and_subqueries(ctx: lance_sql.SessionContext) -> None:
    got = ctx.sql(
        "SELECT k, (SELECT max(murmur3(u2.k)) FROM u u2 WHERE u2.k = u.k) FROM u "
        "WHERE murmur3(k) IN (SELECT murmur3(k) FROM u) ORDER BY k"
    ).to_pydict()
    assert got == {
        "k": [1, 2, 3],
        "max(murmur3(u2.k))": udfs.murmur3(pa.array([1, 2, 3])).to_pylist(),
    }


def test_readable_name_rewrites_only_typed_calls() -> None:
    assert sql_dispatch.readable_name("__lance_murmur3__int64(t.x) % Int64(16)") == (
        "murmur3(t.x) % Int64(16)"
    )
    assert sql_dispatch.readable_name("__lance_murmur3_multi__string__int32(t.s,t.i)") == (
        "murmur3_multi(t.s,t.i)"
    )
    assert sql_dispatch.readable_name("murmur3(x)") == "murmur3(x)"


def test_dataframe_api_murmur3_in_expressions_equals_sql(ctx: lance_sql.SessionContext) -> None:
    """Typed DataFrame calls compose like expressions: arithmetic, comparisons, filters."""
    from datafusion import col

    m3, multi = ctx.udf("murmur3"), ctx.udf("murmur3_multi")
    t = ctx.table("t")
    got = (
        t.filter(m3(col("s")) % 16 == 3)
        .with_column("h", multi(col("s"), col("i32")))
        .select(col("s"), (m3(col("s")) % 16).alias("b"), col("h"))
        .sort(col("s"))
        .to_pydict()
    )
    want = ctx.sql(
        "SELECT s, murmur3(s) % 16 AS b, murmur3_multi(s, i32) AS h FROM t "
        "WHERE murmur3(s) % 16 = 3 ORDER BY s"
    ).to_pydict()
    assert got == want


def test_dataframe_api_murmur3_refuses_a_type_without_canonical_bytes(
    ctx: lance_sql.SessionContext,
) -> None:
    from datafusion import col

    with pytest.raises(TypeError, match="murmur3"):
        ctx.table("t").select(ctx.udf("murmur3")(col("lst")))
