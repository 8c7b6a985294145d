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
    if "MyT" in ctx.registered_namespaces():  # DELETE / UPDATE need a namespace
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
