"""Storage-partitioned join planning skips partitions by column bounds too, and the
SQL join over the namespaces still returns DuckDB's rows."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

import lance_sql
from lance_sql.planning.joins.plan import plan_join
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema([("g", pa.int64()), ("v", pa.int64())])
SPEC = [{"field_id": "g", "source": "g", "transform": {"type": "identity"}}]


def _ns(root: Path, rows: dict[str, list[int]]) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    ns.append(pa.table(rows, schema=SCHEMA))
    return ns


def test_join_plan_skips_by_bounds_and_sql_agrees(tmp_path: Path) -> None:
    left_rows = {"g": [0, 0, 1, 1, 2], "v": [1, 3, 10, 20, 7]}
    right_rows = {"g": [0, 1, 1, 2], "v": [100, 200, 201, 300]}
    left = _ns(tmp_path / "l", left_rows)
    right = _ns(tmp_path / "r", right_rows)
    plan = plan_join(left, right, [("g", "g")], "inner", left_filter="v = 15")
    left_tables = {ref.object_id for grp in plan.groups for ref in grp.left}
    assert len(left_tables) == 1  # only g = 1's table ([10, 20]) may hold v = 15
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("l", left.root)
    ctx.register_namespace("r", right.root)
    lt, rt = pa.table(left_rows, schema=SCHEMA), pa.table(right_rows, schema=SCHEMA)
    for where in ("l.v = 10", "l.v = 15", "l.v > 5 AND r.v < 250", "l.v IN (3, 7)"):
        sql = f"SELECT l.g, l.v AS lv, r.v AS rv FROM l JOIN r ON l.g = r.g WHERE {where}"
        got = sorted(tuple(r.values()) for r in ctx.sql(sql).to_arrow_table().to_pylist())
        con = duckdb.connect()
        con.register("l", lt)
        con.register("r", rt)
        assert got == sorted(con.sql(sql).fetchall()), where
