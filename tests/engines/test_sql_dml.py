"""SQL DML on namespaces (issue #17 item 5): CREATE TABLE ... PARTITIONED BY, INSERT INTO,
INSERT OVERWRITE, DELETE, UPDATE, MERGE INTO through ``lance_sql.SessionContext.sql``.

Each statement is checked three ways: against DuckDB running the same statement
on an equal table (rows and affected counts; INSERT OVERWRITE, which DuckDB
lacks, is emulated there with a DELETE of the replaced partitions and an
INSERT), against the Python API applied to a second namespace, and by reading
the namespace back with ``PartitionedNamespace.open``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import lance_sql
from lance_sql.engines.datafusion.dml import COUNT_SCHEMA
from lance_sql.errors import (
    LanceSqlError,
    NotFoundError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from lance_sql.tables.namespace.merge import MergeKeyError
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from udfs.transforms import bucket

COLUMNS = "(id BIGINT NOT NULL, g VARCHAR, v DOUBLE)"
SPEC = "(g, bucket(4, id))"


def _ctx(tmp: Path) -> lance_sql.SessionContext:
    ctx = lance_sql.SessionContext()
    ctx.sql(f"SET lance.warehouse = '{tmp}'")
    return ctx


def _duck() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.create_function(
        "lbucket",
        lambda ids: bucket(ids, 4),
        ["BIGINT"],
        "INTEGER",
        type="arrow",
    )
    con.execute(f"CREATE TABLE t {COLUMNS}")
    return con


def _sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    def norm(x: Any) -> Any:  # NaN equals itself here; -0.0 is 0.0 (DuckDB stores
        # VALUES (-0.0) as 0.0, Lance keeps -0.0: SQL equality holds either way)
        if isinstance(x, float):
            return "NaN" if x != x else x + 0.0
        return x

    rows = [tuple(norm(x) for x in r) for r in rows]
    return sorted(rows, key=lambda r: tuple((x is None, repr(x)) for x in r))


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return _sorted([tuple(r.values()) for r in table.to_pylist()])


def _count(df: Any) -> int:
    table = df.to_arrow_table()
    assert table.schema.equals(COUNT_SCHEMA), table.schema
    return int(table.column("count")[0].as_py())


#: partition specs and, for DuckDB's emulation of INSERT OVERWRITE, each term over alias {a}
SPECS = {
    SPEC: ("{a}.g", "lbucket({a}.id)"),
    "(truncate(10, id), truncate(1, g))": ("{a}.id - {a}.id % 10", "left({a}.g, 1)"),
    "(id)": ("{a}.id",),
    "": (),
}


class Pair:
    """A namespace ``t`` in lance-sql and a table ``t`` in DuckDB, fed the same statements."""

    def __init__(self, tmp: Path, spec: str = SPEC) -> None:
        self.ctx = _ctx(tmp)
        partitioned = f" PARTITIONED BY {spec}" if spec else f" LOCATION '{tmp / 't'}'"
        self.ctx.sql(f"CREATE TABLE t {COLUMNS}{partitioned}")
        self.root = str(tmp / "t")
        self.duck = _duck()
        self.keys = SPECS[spec]

    def run(self, sql: str) -> int:
        got = _count(self.ctx.sql(sql))
        want = self.duck.execute(sql).fetchall()[0][0]
        assert got == want, (sql, got, want)
        return got

    def overwrite(self, values: str) -> int:
        got = _count(self.ctx.sql(f"INSERT OVERWRITE t VALUES {values}"))
        d = self.duck
        d.execute(f"CREATE OR REPLACE TEMP TABLE n AS SELECT * FROM (VALUES {values}) v(id, g, v)")
        same = " AND ".join(
            f"({k.format(a='n')}) IS NOT DISTINCT FROM ({k.format(a='t')})" for k in self.keys
        )
        d.execute(f"DELETE FROM t WHERE EXISTS (SELECT 1 FROM n WHERE {same or 'TRUE'})")
        want = d.execute("INSERT INTO t SELECT * FROM n").fetchall()[0][0]
        assert got == want, (values, got, want)
        return got

    def check(self) -> None:
        want = _sorted(self.duck.execute("SELECT id, g, v FROM t").fetchall())
        got = _rows(self.ctx.sql("SELECT id, g, v FROM t").to_arrow_table())
        assert got == want
        back = lance_sql.PartitionedNamespace.open(self.root).to_table()
        assert _rows(back.select(["id", "g", "v"])) == want


SEED = "(1, 'a', 1.5), (2, 'b', 2.5), (3, 'a', NULL), (4, NULL, 4.0), (5, 'c', 5.5), (6, 'b', 6.0)"


@pytest.fixture
def pair(tmp_path: Path) -> Pair:
    p = Pair(tmp_path)
    p.run(f"INSERT INTO t VALUES {SEED}")
    p.check()
    return p


# -- each statement vs DuckDB ----------------------------------------------------------------
def test_create_table_partitioned_by_makes_the_spec(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    ctx.sql(
        "CREATE TABLE e (id BIGINT NOT NULL, ts TIMESTAMP, d DATE, s VARCHAR) PARTITIONED BY "
        f"(bucket(16, id), year(ts), month(ts), day(d), hour(ts), truncate(4, s), identity(d)) "
        f"LOCATION '{tmp_path / 'events'}'"
    )
    ns = lance_sql.PartitionedNamespace.open(tmp_path / "events")
    got = [
        (f.transform.type, f.transform.num_buckets, f.transform.width)
        for f in ns.current_spec.fields
    ]
    assert got == [
        ("bucket", 16, None),
        ("year", None, None),
        ("month", None, None),
        ("day", None, None),
        ("hour", None, None),
        ("truncate", None, 4),
        ("identity", None, None),
    ]
    assert ns.schema.field("id").nullable is False
    assert ns.schema.field("s").type == pa.string()  # not DataFusion's Utf8View
    assert "e" in ctx.registered_namespaces()
    # IF NOT EXISTS is a no-op on a registered name; a second CREATE is refused
    ctx.sql(f"CREATE TABLE IF NOT EXISTS e (id BIGINT) PARTITIONED BY (id) LOCATION '{tmp_path}/x'")
    assert not (tmp_path / "x").exists()
    with pytest.raises(LanceSqlError, match="'e'"):
        ctx.sql(f"CREATE TABLE e (id BIGINT) PARTITIONED BY (id) LOCATION '{tmp_path}/y'")


def test_create_table_names_resolve_as_datafusion_resolves_them(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    ctx.sql('CREATE TABLE Daily (ID BIGINT, "Kind" VARCHAR) PARTITIONED BY (ID, "Kind")')
    ctx.sql("INSERT INTO DAILY VALUES (1, 'a')").collect()
    assert ctx.sql('SELECT id, "Kind" FROM daily').to_pylist() == [{"id": 1, "Kind": "a"}]
    assert lance_sql.PartitionedNamespace.open(tmp_path / "daily").schema.names == ["id", "Kind"]


def test_create_table_as_select(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    ctx.sql(
        "CREATE TABLE c PARTITIONED BY (g) AS "
        "SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'a')) AS v(id, g)"
    )
    ns = lance_sql.PartitionedNamespace.open(tmp_path / "c")
    assert ns.partitions().num_rows == 2
    got = ctx.sql("SELECT id, g FROM c ORDER BY id").to_pylist()
    assert got == [{"id": 1, "g": "a"}, {"id": 2, "g": "b"}, {"id": 3, "g": "a"}]


def test_insert_delete_update_match_duckdb(pair: Pair) -> None:
    pair.run("INSERT INTO t SELECT id + 10, g, v * 2 FROM t WHERE g IS NOT NULL")
    pair.check()
    pair.run("DELETE FROM t WHERE id > 10 AND (g = 'a' OR v IS NULL)")
    pair.check()
    pair.run("UPDATE t SET v = v + 1, g = 'z' WHERE g = 'b'")  # rows move partitions
    pair.check()
    pair.run("UPDATE t SET id = id + 100 WHERE id % 2 = 0")  # and buckets
    pair.check()
    pair.run("DELETE FROM t WHERE g IS NULL")
    pair.check()
    pair.run("UPDATE t SET v = 0")
    pair.check()
    pair.run("UPDATE t SET v = v, g = g WHERE id > 3")  # changes nothing, counts the rows
    pair.check()
    pair.run("DELETE FROM t")
    pair.check()


def test_insert_overwrite_replaces_only_partitions_present(pair: Pair) -> None:
    assert pair.overwrite("(1, 'a', 10.0), (40, NULL, 1.0)") == 2
    pair.check()
    assert pair.overwrite("(7, 'q', NULL)") == 1
    pair.check()


def test_merge_matches_duckdb(pair: Pair) -> None:
    pair.run(
        "MERGE INTO t USING (VALUES (1, 'a', 9.5), (2, 'x', 0.5), (9, NULL, 1.0)) AS s(id, g, v) "
        "ON t.id = s.id WHEN MATCHED AND s.v > 1 THEN UPDATE SET v = s.v, g = s.g "
        "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.g, s.v)"
    )
    pair.check()
    pair.run(
        "MERGE INTO t AS tt USING (SELECT id, g, v FROM t WHERE id < 4) AS src "
        "ON tt.id = src.id + 1 WHEN MATCHED THEN UPDATE SET v = src.v "
        "WHEN NOT MATCHED AND src.id > 100 THEN INSERT (id, g) VALUES (src.id, 'n')"
    )
    pair.check()
    pair.run(
        "MERGE INTO t USING (VALUES (5, 'c', 1.0), (77, 'w', 7.0)) AS s(id, g, v) ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id * 2, s.v)"
    )
    pair.check()


def test_merge_from_a_datafusion_table_with_view_types(pair: Pair) -> None:
    pair.ctx.sql("CREATE TABLE src (id BIGINT, g VARCHAR, v DOUBLE)")  # Utf8View columns
    pair.ctx.sql("INSERT INTO src VALUES (1, 'q', 1.0), (50, 'r', 2.0)").collect()
    pair.duck.execute("CREATE TABLE src (id BIGINT, g VARCHAR, v DOUBLE)")
    pair.duck.execute("INSERT INTO src VALUES (1, 'q', 1.0), (50, 'r', 2.0)")
    pair.run(
        "MERGE INTO t USING src ON t.id = src.id AND t.g IS NOT NULL "
        "WHEN MATCHED THEN UPDATE SET g = src.g "
        "WHEN NOT MATCHED THEN INSERT VALUES (src.id, src.g, src.v)"
    )
    pair.check()


def test_merge_names_resolve_as_datafusion_resolves_them(pair: Pair) -> None:
    """Unquoted names are lower case in DataFusion: aliases T and S are t and s."""
    pair.run(
        "MERGE INTO T AS TT USING (VALUES (1, 'q', 8.0), (60, 'r', 2.0)) AS S(ID, G, V) "
        "ON TT.ID = S.ID WHEN MATCHED THEN UPDATE SET V = S.V "
        "WHEN NOT MATCHED THEN INSERT (ID, G, V) VALUES (S.ID, S.G, S.V)"
    )
    pair.check()


def test_merge_expressions_run_as_written(pair: Pair) -> None:
    """Integer division stays integer division (a dialect printer made it a float one),
    functions keep their DataFusion names (isnan, substr), CASE ... END in a condition."""
    want = pair.ctx.sql("SELECT 5 / 2 AS q, substr('xyz', 2, 1) AS c").to_pylist()[0]
    assert want == {"q": 2, "c": "y"}
    n = _count(
        pair.ctx.sql(
            "MERGE INTO t USING (VALUES (5, 'xyz', CAST('NaN' AS DOUBLE)), (77, 'xyz', 1.0)) "
            "AS s(id, g, v) ON t.id = s.id "
            "WHEN MATCHED AND CASE WHEN isnan(s.v) THEN true ELSE false END "
            "THEN UPDATE SET v = s.id / 2, g = substr(s.g, 2, 1) "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, substr(s.g, 2, 1), s.id / 2)"
        )
    )
    assert n == 2
    got = pair.ctx.sql("SELECT id, g, v FROM t WHERE id IN (5, 77) ORDER BY id").to_pylist()
    assert got == [{"id": 5, "g": "y", "v": 2.0}, {"id": 77, "g": "y", "v": 38.0}]


def test_merge_when_not_matched_by_source(pair: Pair) -> None:
    pair.run(
        "MERGE INTO t USING (VALUES (1, 'a', 9.0), (2, 'b', 8.0), (90, 'q', 1.0)) AS s(id, g, v) "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED BY SOURCE AND t.g IS NULL THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = t.v * 10, g = 'src'"
    )
    pair.check()
    pair.run(
        "MERGE INTO t USING (SELECT * FROM (VALUES (1)) AS x(id) WHERE id > 5) AS s "
        "ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND t.id % 2 = 0 THEN DELETE"
    )
    pair.check()


def test_merge_refuses_two_source_rows_for_one_target_row(pair: Pair) -> None:
    sql = (
        "MERGE INTO t USING (VALUES (1, 1.0), (1, 2.0)) AS s(id, v) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v"
    )
    # The SQL standard's <merge statement> makes this a cardinality violation (SQLSTATE 21000):
    # a target row may be matched by at most one source row. lance-sql refuses it, names the
    # table and writes nothing; the test does not depend on what a DuckDB release does with it.
    before = pair.ctx.sql("SELECT * FROM t").to_arrow_table()
    with pytest.raises(MergeKeyError, match="'t'"):
        pair.ctx.sql(sql).collect()
    assert _rows(pair.ctx.sql("SELECT * FROM t").to_arrow_table()) == _rows(before)


# -- conditions and SET values mean what they mean in a SELECT, for every type ------------------
_TYPED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("tz", pa.timestamp("us", tz="UTC")),
        ("tz1", pa.timestamp("us", tz="+01:00")),
        ("ts", pa.timestamp("us")),
        ("d", pa.date32()),
        ("dec", pa.decimal128(10, 2)),
        ("s", pa.string()),
        ("Mixed Case", pa.int32()),
        ("b", pa.bool_()),
        ("f", pa.float64()),
    ]
)

_CONDITIONS = [
    "tz > TIMESTAMP '2024-03-31 05:00:00'",
    "tz > '2024-03-31T05:00:00+02:00'",
    "tz1 < '2024-03-31T05:00:00Z'",
    "ts >= '2024-01-01T10:00:00'",
    "d = DATE '2024-01-05'",
    "d > '2024-01-20'",
    "dec > 2.5",
    "dec = 1.25",
    "s = 'it''s'",
    "s LIKE 'i%'",
    "s = 'é'",
    '"Mixed Case" = 3',
    "b",
    "NOT b",
    "b IS NULL",
    "f = 0",
    "f > 1",
    "f IS NULL",
    "isnan(f)",
    "f = 'NaN'",
    "id IN (1, 2, 3)",
    "abs(murmur3(id)) % 4 = 1",
    "murmur3_multi(s, id) > 0",
    "date_part('hour', tz1) = 3",
    "CAST(tz AS DATE) = DATE '2024-03-31'",
    "s IS DISTINCT FROM 'x'",
    "coalesce(s, 'z') = 'z'",
    "CASE WHEN id > 5 THEN d < DATE '2024-01-30' ELSE b END",
    "substr(s, 1, 1) = 'i'",
]

#: (SET clause, the same values as SELECT items by column)
_SETS = [
    ("s = s || '''x'", {"s": "s || '''x'"}),
    ('"Mixed Case" = "Mixed Case" + 1', {"Mixed Case": '"Mixed Case" + 1'}),
    ("f = CASE WHEN f > 1 THEN 2 ELSE f END", {"f": "CASE WHEN f > 1 THEN 2 ELSE f END"}),
    (
        "tz = tz + INTERVAL '1 hour', d = d + INTERVAL '1 day'",
        {"tz": "tz + INTERVAL '1 hour'", "d": "d + INTERVAL '1 day'"},
    ),
    ("dec = dec * 2, b = NOT b", {"dec": "dec * 2", "b": "NOT b"}),
    ("id = murmur3(id) % 100", {"id": "murmur3(id) % 100"}),
]


def _typed_rows(n: int = 40) -> pa.Table:
    import datetime as dt
    import decimal

    base = dt.datetime(2024, 3, 30, 20, 0, tzinfo=dt.timezone.utc)
    return pa.table(
        {
            "id": list(range(n)),
            "tz": [base + dt.timedelta(hours=i) for i in range(n)],
            "tz1": [base + dt.timedelta(hours=i) for i in range(n)],
            "ts": [dt.datetime(2024, 1, 1) + dt.timedelta(hours=i) for i in range(n)],
            "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(n)],
            "dec": [decimal.Decimal(i) / 4 for i in range(n)],
            "s": [["it's", "x", "é", None][i % 4] for i in range(n)],
            "Mixed Case": [i % 5 for i in range(n)],
            "b": [[True, False, None][i % 3] for i in range(n)],
            "f": [[float("nan"), -0.0, 0.0, 1.5, None][i % 5] for i in range(n)],
        },
        schema=_TYPED,
    )


def _bag(table: pa.Table) -> list[tuple[Any, ...]]:
    def norm(x: Any) -> Any:
        return "NaN" if isinstance(x, float) and x != x else x

    return sorted(
        (tuple(norm(x) for x in r.values()) for r in table.to_pylist()),
        key=lambda r: tuple((x is None, str(x)) for x in r),
    )


@pytest.fixture
def typed(tmp_path: Path) -> lance_sql.SessionContext:
    ns = lance_sql.PartitionedNamespace.create(
        tmp_path / "typed",
        _TYPED,
        [
            {"source": "id", "transform": "bucket", "num_buckets": 4},
            {"source": "d", "transform": "month"},
        ],
    )
    ns.append(_typed_rows())
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", tmp_path / "typed")
    return ctx


@pytest.mark.parametrize("condition", _CONDITIONS)
def test_delete_condition_means_what_select_means(
    typed: lance_sql.SessionContext, condition: str
) -> None:
    ctx = typed
    hit = ctx.sql(f"SELECT * FROM t WHERE {condition}").to_arrow_table()
    kept = ctx.sql(f"SELECT * FROM t WHERE ({condition}) IS NOT TRUE").to_arrow_table()
    assert _count(ctx.sql(f"DELETE FROM t WHERE {condition}")) == hit.num_rows
    assert _bag(ctx.sql("SELECT * FROM t").to_arrow_table()) == _bag(kept)


@pytest.mark.parametrize("assign", _SETS, ids=[a for a, _ in _SETS])
@pytest.mark.parametrize("condition", _CONDITIONS[::4])
def test_update_means_what_select_means(
    typed: lance_sql.SessionContext, assign: tuple[str, dict[str, str]], condition: str
) -> None:
    ctx = typed
    clause, values = assign
    items = ", ".join(
        "(" + values.get(f.name, '"' + f.name + '"') + ') AS "' + f.name + '"' for f in _TYPED
    )
    new = ctx.sql(f"SELECT {items} FROM t WHERE {condition}").to_arrow_table()
    kept = ctx.sql(f"SELECT * FROM t WHERE ({condition}) IS NOT TRUE").to_arrow_table()
    want = pa.concat_tables([new.cast(kept.schema), kept])
    assert _count(ctx.sql(f"UPDATE t SET {clause} WHERE {condition}")) == new.num_rows
    assert _bag(ctx.sql("SELECT * FROM t").to_arrow_table()) == _bag(want)


@pytest.mark.parametrize("condition", _CONDITIONS[::2])
def test_python_api_delete_means_what_select_means(
    typed: lance_sql.SessionContext, tmp_path: Path, condition: str
) -> None:
    """``ns.delete(text)`` plans its text as SQL DELETE does: the same rows go."""
    ctx = typed
    hit = ctx.sql(f"SELECT * FROM t WHERE {condition}").to_arrow_table()
    kept = ctx.sql(f"SELECT * FROM t WHERE ({condition}) IS NOT TRUE").to_arrow_table()
    ns = lance_sql.PartitionedNamespace.open(tmp_path / "typed")
    assert ns.delete(condition) == hit.num_rows
    assert _bag(ns.to_table()) == _bag(kept)


@pytest.mark.parametrize("assign", _SETS, ids=[a for a, _ in _SETS])
def test_python_api_update_means_what_select_means(
    typed: lance_sql.SessionContext, tmp_path: Path, assign: tuple[str, dict[str, str]]
) -> None:
    """``ns.update(set={...}, where=text)`` computes what SQL UPDATE computes."""
    ctx = typed
    condition = _CONDITIONS[0]
    values = assign[1]
    items = ", ".join(
        "(" + values.get(f.name, '"' + f.name + '"') + ') AS "' + f.name + '"' for f in _TYPED
    )
    new = ctx.sql(f"SELECT {items} FROM t WHERE {condition}").to_arrow_table()
    kept = ctx.sql(f"SELECT * FROM t WHERE ({condition}) IS NOT TRUE").to_arrow_table()
    ns = lance_sql.PartitionedNamespace.open(tmp_path / "typed")
    assert ns.update(set=values, where=condition) == new.num_rows
    assert _bag(ns.to_table()) == _bag(pa.concat_tables([new.cast(kept.schema), kept]))


# -- equal to the Python API ------------------------------------------------------------------
def test_statements_equal_python_api(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    ctx.sql(f"CREATE TABLE t {COLUMNS} PARTITIONED BY {SPEC}")
    ctx.sql(f"INSERT INTO t VALUES {SEED}").collect()
    api = lance_sql.PartitionedNamespace.create(
        tmp_path / "api",
        lance_sql.PartitionedNamespace.open(tmp_path / "t").schema,
        [
            {"source": "g", "transform": "identity"},
            {"source": "id", "transform": "bucket", "num_buckets": 4},
        ],
    )
    api.append(lance_sql.PartitionedNamespace.open(tmp_path / "t").to_table())
    steps = [
        ("DELETE FROM t WHERE v > 5", lambda: api.delete("v > 5")),
        (
            "UPDATE t SET v = v * 10 WHERE g = 'a'",
            lambda: api.update({"v": "v * 10"}, where="g = 'a'"),
        ),
        (
            "INSERT OVERWRITE t VALUES (2, 'b', 0.0)",
            lambda: (
                api.overwrite(pa.table({"id": [2], "g": ["b"], "v": [0.0]}), partitions="dynamic")
                and 1
            ),
        ),
        (
            "MERGE INTO t USING (VALUES (1, 'a', 3.0), (8, 'h', 8.0)) AS s(id, g, v) "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.g, s.v)",
            lambda: (
                api.merge(
                    pa.table({"id": [1, 8], "g": ["a", "h"], "v": [3.0, 8.0]}),
                    on=["id"],
                    when_matched_update={"v": "source.v"},
                    when_not_matched_insert=True,
                ).rows
            ),
        ),
    ]
    for sql, call in steps:
        got = _count(ctx.sql(sql))
        want = call()
        assert got == want, sql
        a = _rows(ctx.sql("SELECT * FROM t").to_arrow_table())
        b = _rows(lance_sql.PartitionedNamespace.open(tmp_path / "api").to_table())
        assert a == b, sql


# -- DataFusion's DML conventions ---------------------------------------------------------------
def test_runs_when_executed_like_datafusion(tmp_path: Path) -> None:
    import datafusion

    plain = datafusion.SessionContext()
    plain.sql("CREATE TABLE m (id BIGINT, g VARCHAR, v DOUBLE)").collect()
    want_schema = plain.sql("INSERT INTO m VALUES (1, 'a', 1.0)").to_arrow_table().schema
    p = Pair(tmp_path)
    df = p.ctx.sql("INSERT INTO t VALUES (1, 'a', 1.0)")
    assert df.logical_plan().display_indent().startswith("Dml: op=[Insert Into] table=[t]")
    assert p.ctx.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 0}]  # not yet
    assert df.to_arrow_table().schema.equals(want_schema)
    df.collect()  # like DataFusion: each execution runs the statement again
    assert p.ctx.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 2}]


# -- typed errors ----------------------------------------------------------------------------
def test_errors_are_typed_and_name_the_table(tmp_path: Path, pair: Pair) -> None:
    ctx = pair.ctx
    with pytest.raises(NotFoundError, match="nope"):
        ctx.sql("DELETE FROM nope WHERE id = 1")
    with pytest.raises(UnsupportedFeatureError, match="'t'"):
        ctx.sql("INSERT OVERWRITE t PARTITION (g = 'a') SELECT 3, 1.0")
    for bad in (
        "UPDATE t SET nope = 1",
        "DELETE FROM t WHERE nope = 1",
        "INSERT INTO t (id, nope) VALUES (1, 2)",
        "INSERT INTO t VALUES (1)",
        "MERGE INTO t USING (VALUES (1)) AS s(id) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET nope = 1",
    ):
        with pytest.raises(SchemaMismatchError, match="'t'"):
            ctx.sql(bad)
    with pytest.raises(SchemaMismatchError):
        ctx.sql("INSERT INTO t VALUES ('x', 'a', 1.0)").collect()
    with pytest.raises(SchemaMismatchError, match="'id'"):
        ctx.sql("INSERT INTO t VALUES (NULL, 'a', 1.0)").collect()
    with pytest.raises(SchemaMismatchError, match=r"'t'.*'id'"):
        ctx.sql("UPDATE t SET id = 'abc' WHERE g = 'a'").collect()
    with pytest.raises(SchemaMismatchError, match=r"'t'.*'id'"):
        ctx.sql(
            "MERGE INTO t USING (VALUES (1, 'x')) AS s(id, g) ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET id = s.g"
        ).collect()
    import lance

    lance.write_dataset(pa.table({"id": [1]}), str(tmp_path / "plain.lance"))
    ctx.register_lance("plain", str(tmp_path / "plain.lance"))
    with pytest.raises(UnsupportedFeatureError, match="'plain'"):
        ctx.sql("DELETE FROM plain WHERE id = 1")
    ctx.register_lance("plain_v1", str(tmp_path / "plain.lance"), version=1)
    with pytest.raises(UnsupportedFeatureError, match="'plain_v1'"):
        ctx.sql("INSERT INTO plain_v1 VALUES (2)")
    ctx.register_namespace("old", pair.root, version=1)
    with pytest.raises(UnsupportedFeatureError, match="'old'"):
        ctx.sql("DELETE FROM old WHERE id = 1").collect()
    with pytest.raises(LanceSqlError, match="LOCATION"):
        lance_sql.SessionContext().sql("CREATE TABLE w (id BIGINT) PARTITIONED BY (id)")
    pair.check()  # nothing above changed the table


# -- the CLI runs a script ------------------------------------------------------------------------
def test_cli_script_create_insert_select(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lance_sql.cli.main import main

    script = tmp_path / "s.sql"
    script.write_text(
        f"CREATE TABLE k (id BIGINT, g VARCHAR) PARTITIONED BY (g) LOCATION '{tmp_path}/k';\n"
        "INSERT INTO k VALUES (1, 'a'), (2, 'b'), (3, 'a');\n"
        "DELETE FROM k WHERE id = 2;\n"
        "SELECT g, count(*) AS n FROM k GROUP BY g ORDER BY g;\n"
    )
    assert main(["sql", "-f", str(script)]) == 0
    out = capsys.readouterr().out
    assert "a" in out and "2" in out and "b" not in out.split("-- statement 4")[1]
    assert lance_sql.PartitionedNamespace.open(tmp_path / "k").to_table().num_rows == 2


# -- the sql_examples file, vs DuckDB --------------------------------------------------------
def test_dml_example_matches_duckdb(tmp_path: Path) -> None:
    from lance_sql.cli.demo import demo_context, examples_dir
    from lance_sql.cli.demo_data import build_demo
    from lance_sql.cli.statements import split_statements

    folder, _ = build_demo(tmp_path / "demo")
    ctx = demo_context(folder)
    duck = duckdb.connect()
    duck.create_function("lbucket", lambda ids: bucket(ids, 4), ["BIGINT"], "INTEGER", type="arrow")
    events = ctx.sql("SELECT * FROM events").to_arrow_table()
    duck.register("events_arrow", events)
    duck.execute("CREATE TABLE events AS SELECT * FROM events_arrow")
    stmts = split_statements((examples_dir() / "06_dml.sql").read_text())
    for stmt in stmts[:-1]:
        got = ctx.sql(stmt).to_arrow_table()
        if "CREATE TABLE" in stmt:
            duck.execute("CREATE TABLE daily AS " + stmt.split(" AS\n", 1)[1])
            continue
        if "INSERT OVERWRITE daily" in stmt:
            query = stmt.split("INSERT OVERWRITE daily", 1)[1]
            duck.execute(f"CREATE TEMP TABLE n AS {query}")
            duck.execute(
                "DELETE FROM daily WHERE EXISTS (SELECT 1 FROM n WHERE n.event_date = "
                "daily.event_date AND lbucket(n.id) = lbucket(daily.id))"
            )
            want = duck.execute("INSERT INTO daily SELECT * FROM n").fetchall()[0][0]
        else:
            want = duck.execute(stmt).fetchall()[0][0]
        assert got.column("count").to_pylist() == [want], stmt
    got_rows = _rows(ctx.sql("SELECT * FROM daily").to_arrow_table())
    want_rows = _sorted(duck.execute("SELECT * FROM daily").fetchall())
    assert got_rows == want_rows


# -- random statement sequences vs DuckDB -------------------------------------------------
_G = st.sampled_from(["'a'", "'b'", "'c'", "NULL"])
_V = st.sampled_from(
    ["NULL", "0.5", "1.5", "2.0", "7.25", "-3.0", "0.0", "-0.0", "CAST('NaN' AS DOUBLE)"]
)
_ID = st.integers(0, 30)
_PRED = st.sampled_from(
    [
        "id < 10",
        "id >= 20",
        "id % 3 = 0",
        "g = 'a'",
        "g IS NULL",
        "g <> 'b'",
        "v > 1",
        "v IS NULL",
        "NOT (v < 2)",
        "g = 'c' OR id = 5",
        "g IN ('a', 'b') AND v >= 0.5",
        "id BETWEEN 5 AND 15",
    ]
)


def _values(rows: list[tuple[int, str, str]]) -> str:
    return ", ".join(f"({i}, {g}, {v})" for i, g, v in rows)


_ROWS = st.lists(st.tuples(_ID, _G, _V), min_size=1, max_size=6)


class DmlMachine(RuleBasedStateMachine):
    tmp: Path

    @initialize(spec=st.sampled_from(sorted(SPECS)))
    def start(self, spec: str) -> None:
        import tempfile

        self.dir = tempfile.TemporaryDirectory(dir=os.environ.get("LANCE_SQL_TEST_TMP"))
        self.pair = Pair(Path(self.dir.name), spec)

    def teardown(self) -> None:
        if hasattr(self, "dir"):
            self.dir.cleanup()

    @rule(rows=_ROWS)
    def insert(self, rows: list[tuple[int, str, str]]) -> None:
        self.pair.run(f"INSERT INTO t VALUES {_values(rows)}")

    @rule(rows=_ROWS)
    def overwrite(self, rows: list[tuple[int, str, str]]) -> None:
        self.pair.overwrite(_values(rows))

    @rule(pred=_PRED, shift=st.integers(-5, 40))
    def insert_select(self, pred: str, shift: int) -> None:
        self.pair.run(f"INSERT INTO t SELECT id + {shift}, g, v FROM t WHERE {pred}")

    @rule(pred=_PRED)
    def delete(self, pred: str) -> None:
        self.pair.run(f"DELETE FROM t WHERE {pred}")

    @rule(
        pred=_PRED,
        assign=st.sampled_from(
            ["v = v + 1", "g = 'b'", "id = id + 7", "v = NULL, g = 'c'", "g = NULL", "v = v"]
        ),
    )
    def update(self, pred: str, assign: str) -> None:
        self.pair.run(f"UPDATE t SET {assign} WHERE {pred}")

    @rule(
        rows=st.lists(st.tuples(_ID, _G, _V), min_size=1, max_size=5, unique_by=lambda r: r[0]),
        matched=st.sampled_from(
            [
                "WHEN MATCHED THEN UPDATE SET v = s.v",
                "WHEN MATCHED AND s.v > 1 THEN UPDATE SET g = s.g, v = t.v "
                "WHEN MATCHED THEN DELETE",
                "WHEN MATCHED THEN DELETE",
                "WHEN MATCHED AND t.g IS NULL THEN DELETE "
                "WHEN MATCHED THEN UPDATE SET id = s.id + 40, g = coalesce(s.g, t.g)",
                "",
            ]
        ),
        insert=st.sampled_from(
            [
                "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.g, s.v)",
                "WHEN NOT MATCHED AND s.v IS NOT NULL THEN INSERT (id, v) VALUES (s.id, s.v) "
                "WHEN NOT MATCHED THEN INSERT (id, g) VALUES (s.id + 100, 'n')",
                "",
            ]
        ),
        on=st.sampled_from(
            ["t.id = s.id", "t.id = s.id AND t.g IS NOT DISTINCT FROM s.g", "t.v = s.v"]
        ),
        by_source=st.sampled_from(
            [
                "",
                "",
                "WHEN NOT MATCHED BY SOURCE AND t.id > 20 THEN DELETE",
                "WHEN NOT MATCHED BY SOURCE AND t.g = 'a' THEN UPDATE SET v = -1, id = t.id + 3",
            ]
        ),
    )
    def merge(
        self, rows: list[tuple[int, str, str]], matched: str, insert: str, on: str, by_source: str
    ) -> None:
        if not matched and not insert and not by_source:
            return
        if "t.v" in on:  # a target row matched by two source rows is refused (Spark's rule,
            # checked even where no clause applies; DuckDB checks only where one applies)
            seen: set[str] = set()
            keep = []
            for r in rows:
                key = r[2].replace("-0.0", "0.0")
                if key not in seen:
                    seen.add(key)
                    keep.append(r)
            rows = keep
        self.pair.run(
            f"MERGE INTO t USING (VALUES {_values(rows)}) AS s(id, g, v) ON {on} "
            f"{matched} {insert} {by_source}"
        )

    @invariant()
    def same(self) -> None:
        if hasattr(self, "pair"):
            self.pair.check()


_HEALTH = list(HealthCheck)
TestDmlSequences = DmlMachine.TestCase
TestDmlSequences.settings = settings(
    max_examples=50, stateful_step_count=6, deadline=None, suppress_health_check=_HEALTH
)


@pytest.mark.slow
def test_dml_sequences_long() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        DmlMachine,
        settings=settings(
            max_examples=1000, stateful_step_count=8, deadline=None, suppress_health_check=_HEALTH
        ),
    )


def test_merge_values_are_cast_as_insert_casts_them(typed: lance_sql.SessionContext) -> None:
    """A naive timestamp string into a +01:00 column: DataFusion reads it in that zone
    (pyarrow's cast refuses it); MERGE must store what INSERT stores."""
    ctx = typed
    ctx.sql(
        "INSERT INTO t (id, tz1, dec, f) VALUES (100, '2024-01-01 10:00:00', 1.005, 1)"
    ).collect()
    ctx.sql(
        "MERGE INTO t USING (VALUES (101)) AS s(id) ON t.id = s.id WHEN NOT MATCHED THEN "
        "INSERT (id, tz1, dec, f) VALUES (s.id, '2024-01-01 10:00:00', 1.005, 1)"
    ).collect()
    ctx.sql(
        "MERGE INTO t USING (VALUES (0)) AS s(id) ON t.id = s.id WHEN MATCHED THEN "
        "UPDATE SET tz1 = '2024-01-01 10:00:00', dec = 1.005, f = 1"
    ).collect()
    got = ctx.sql("SELECT id, tz1, dec, f FROM t WHERE id IN (0, 100, 101) ORDER BY id")
    rows = got.to_pylist()
    assert len(rows) == 3
    assert {(r["tz1"], r["dec"], r["f"]) for r in rows} == {
        (rows[1]["tz1"], rows[1]["dec"], rows[1]["f"])
    }


def test_merge_on_float_keys_matches_as_sql_equality(tmp_path: Path) -> None:
    """-0.0 = 0.0 and NaN = NaN in DataFusion and DuckDB; pyarrow's is_in says otherwise,
    so the partition prefilter must not decide float keys."""
    ctx = _ctx(tmp_path)
    ctx.sql("CREATE TABLE f (k DOUBLE, v BIGINT) PARTITIONED BY (bucket(4, v))")
    duck = duckdb.connect()
    duck.execute("CREATE TABLE f (k DOUBLE, v BIGINT)")
    seed = "INSERT INTO f VALUES (0.0, 1), (CAST('NaN' AS DOUBLE), 2), (1.5, 3)"
    merge = (
        "MERGE INTO f USING (VALUES (CAST('-0.0' AS DOUBLE), 5), (CAST('NaN' AS DOUBLE), 6), "
        "(2.5, 7)) AS s(k, v) ON f.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.v)"
    )
    for sql in (seed, merge):
        assert _count(ctx.sql(sql)) == duck.execute(sql).fetchall()[0][0], sql
    got = sorted(r["v"] for r in ctx.sql("SELECT v FROM f").to_pylist())
    assert got == sorted(r[0] for r in duck.execute("SELECT v FROM f").fetchall()) == [3, 5, 6, 7]


def test_insert_into_a_plain_lance_dataset(tmp_path: Path) -> None:
    import lance

    uri = str(tmp_path / "plain.lance")
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64()), "s": ["a"]}), uri)
    ctx = lance_sql.SessionContext()
    ctx.register_lance("p", uri)
    assert _count(ctx.sql("INSERT INTO p VALUES (2, 'b'), (3, NULL)")) == 2
    assert _count(ctx.sql("INSERT INTO p SELECT id + 10, s FROM p")) == 3
    got = sorted(lance.dataset(uri).to_table().to_pylist(), key=lambda r: r["id"])
    assert [r["id"] for r in got] == [1, 2, 3, 11, 12, 13]
    assert lance.dataset(uri).version == 3  # one commit per statement
    assert _count(ctx.sql("INSERT OVERWRITE p VALUES (7, 'z')")) == 1
    assert lance.dataset(uri).to_table().to_pylist() == [{"id": 7, "s": "z"}]
    assert ctx.sql("SELECT * FROM p").to_pylist() == [{"id": 7, "s": "z"}]


def test_create_table_days_expands_to_calendar_fields(tmp_path: Path) -> None:
    """Iceberg's ``days(ts)`` is the spec's year + month + day (they prune a day range alike)."""
    ctx = lance_sql.SessionContext()
    ctx.sql(
        f"CREATE TABLE d (id BIGINT, ts TIMESTAMP) PARTITIONED BY (days(ts), bucket(4, id)) "
        f"LOCATION '{tmp_path}/d'"
    )
    ns = PartitionedNamespace.open(str(tmp_path / "d"))
    kinds = [f.transform.type for f in ns.current_spec.fields if f.transform is not None]
    assert kinds == ["year", "month", "day", "bucket"]
    ctx.sql(
        "INSERT INTO d VALUES (1, TIMESTAMP '2026-01-03 10:00:00'), "
        "(2, TIMESTAMP '2026-02-03 10:00:00')"
    ).collect()
    got = ctx.sql(
        "SELECT id FROM d WHERE ts >= TIMESTAMP '2026-01-03' AND ts < TIMESTAMP '2026-01-04'"
    )
    assert got.to_arrow_table().column("id").to_pylist() == [1]
