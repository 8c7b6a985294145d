"""DML statements find a lance-sql table under the name DataFusion's catalog gives it.

DataFusion lower-cases an unquoted registration name (``register_namespace("MyT")``
is table ``myt``: ``FROM MyT`` finds it, ``FROM "MyT"`` does not); DELETE, UPDATE
and INSERT resolve their target the same way SELECT does.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_sql

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
ROWS = pa.table({"k": [1, 2, 3], "v": [10, 20, 30]}, schema=SCHEMA)


@pytest.fixture(params=["namespace", "lance"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path) -> lance_sql.SessionContext:
    ctx = lance_sql.SessionContext()
    if request.param == "namespace":
        ns = lance_sql.PartitionedNamespace.create(str(tmp_path / "t"), SCHEMA, "k")
        ns.append(ROWS)
        ctx.register_namespace("MyT", str(tmp_path / "t"))
    else:
        lance.write_dataset(ROWS, str(tmp_path / "t.lance"))
        ctx.register_lance("MyT", str(tmp_path / "t.lance"))
    return ctx


def _rows(ctx: lance_sql.SessionContext) -> list[dict[str, int]]:
    return ctx.sql("SELECT * FROM MyT ORDER BY k").to_pylist()


def test_dml_resolves_a_mixed_case_registration_as_select_does(
    ctx: lance_sql.SessionContext,
) -> None:
    assert ctx.sql("INSERT INTO MyT VALUES (4, 40)").to_pylist() == [{"count": 1}]
    expected = [{"k": 1, "v": 10}, {"k": 2, "v": 20}, {"k": 3, "v": 30}, {"k": 4, "v": 40}]
    if "myt" in ctx.registered_namespaces():  # DELETE / UPDATE need a namespace
        assert ctx.sql("DELETE FROM MyT WHERE k = 1").to_pylist() == [{"count": 1}]
        assert ctx.sql("UPDATE myt SET v = 99 WHERE k = 2").to_pylist() == [{"count": 1}]
        expected = [{"k": 2, "v": 99}, *expected[2:]]
    assert _rows(ctx) == expected


def test_a_name_select_cannot_find_is_not_found_for_dml_either(
    ctx: lance_sql.SessionContext,
) -> None:
    for statement in ('SELECT * FROM "MyT"', 'INSERT INTO "MyT" VALUES (4, 40)'):
        with pytest.raises(Exception, match="not found"):
            ctx.sql(statement).collect()
    assert len(_rows(ctx)) == 3


def test_plan_passes_and_search_find_mixed_case_namespaces(tmp_path: Path) -> None:
    """The storage-partitioned join and ``lance_search`` see a namespace registered
    under a mixed-case name (they looked it up by the name as registered)."""
    ctx = lance_sql.SessionContext()
    for name in ("Left", "Right"):
        ns = lance_sql.PartitionedNamespace.create(str(tmp_path / name), SCHEMA, "bucket(4, k)")
        ns.append(pa.table({"k": list(range(40)), "v": list(range(40))}, schema=SCHEMA))
        ctx.register_namespace(name, str(tmp_path / name))
    assert sorted(ctx.registered_namespaces()) == ["left", "right"]
    query = "SELECT count(*) AS n FROM Left l JOIN Right r ON l.k = r.k"
    done = ctx.sql(query).lance_rewrite()
    assert done.used, "bucket(4, k) on both sides is a storage-partitioned join"
    assert ctx.sql(query).to_pylist() == [{"n": 40}]
    with pytest.raises(lance_sql.LanceSqlError, match="column 'v' is int64"):  # found 'Left'
        ctx.sql("SELECT * FROM lance_search('Left', 'v', [1.0, 2.0], 3)").collect()


def test_quoted_and_unquoted_names_are_two_tables(tmp_path: Path) -> None:
    """``"Foo"`` and ``foo`` both registered: DML writes the table its plan names (never
    the lower-cased other one); ``lance_search('Foo')`` takes the exact name first."""
    ctx = lance_sql.SessionContext()
    for name, path in (('"Foo"', "upper"), ("foo", "lower")):
        ns = lance_sql.PartitionedNamespace.create(str(tmp_path / path), SCHEMA, "k")
        ns.append(ROWS)
        ctx.register_namespace(name, str(tmp_path / path))
    assert sorted(ctx.registered_namespaces()) == ["Foo", "foo"]
    assert ctx.sql('INSERT INTO "Foo" VALUES (4, 40)').to_pylist() == [{"count": 1}]
    assert ctx.sql('DELETE FROM "Foo" WHERE k = 1').to_pylist() == [{"count": 1}]
    assert ctx.sql("UPDATE Foo SET v = 0 WHERE k = 2").to_pylist() == [{"count": 1}]
    upper = ctx.sql('SELECT k, v FROM "Foo" ORDER BY k').to_pylist()
    lower = ctx.sql("SELECT k, v FROM foo ORDER BY k").to_pylist()
    assert upper == [{"k": 2, "v": 20}, {"k": 3, "v": 30}, {"k": 4, "v": 40}]
    assert lower == [{"k": 1, "v": 10}, {"k": 2, "v": 0}, {"k": 3, "v": 30}]
    for name in ("Foo", "FOO"):  # found (a table of no vector column), not "not registered"
        query = f"SELECT count(*) AS n FROM lance_search('{name}', 'v', [1.0], 1)"
        with pytest.raises(lance_sql.LanceSqlError, match="column 'v' is int64"):
            ctx.sql(query).collect()
