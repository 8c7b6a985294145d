"""A 64-tenant namespace (``identity(tenant)``) of AI-shaped rows: one tenant reads one table.

Columns: an embedding ``fixed_size_list<float32>[W]`` (W = 32 here; the benchmark
``benchmarks/bench_ai_data.py`` uses 768), ``struct<a: int64, tags: list<string>>``,
``list<struct<k: string, w: float>>`` and ``map<string, string>``. ``WHERE tenant =
'x'`` reads 1/64 partition tables in SQL, DataFrames and ``plan_scan``, and a
nearest-neighbour query (``ORDER BY array_distance(emb, q) LIMIT 10``) under that
WHERE reads 1/64 and returns numpy's brute-force answer. The Spark read is in
``tests/spark/test_ai_columns_spark.py``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from ai_columns import TENANTS, tenant_rows
from datafusion import col, lit

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.tables.namespace.namespace import PartitionedNamespace

ROWS_PER_TENANT = 40
WIDTH = 32


@pytest.fixture(scope="module")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, pa.Table]:
    root = str(tmp_path_factory.mktemp("tenants") / "ns")
    rows = tenant_rows(WIDTH, ROWS_PER_TENANT)
    ns = PartitionedNamespace.create(root, rows.schema, "identity(tenant)")
    ns.append(rows)
    return root, rows


def _reads(run: Any) -> list[str]:
    with capture_scans() as records:
        run()
    found = [re.search(r"partition_tables=\d+/\d+", r.plan.description) for r in records]
    return [m.group(0) for m in found if m]


def test_one_tenant_reads_one_table_everywhere(tenants: tuple[str, pa.Table]) -> None:
    root, rows = tenants
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", root)
    ns = PartitionedNamespace.open(root)
    sql = "SELECT id, emb, profile, items, attrs FROM n WHERE tenant = 't17'"
    assert _reads(lambda: ctx.sql(sql).collect()) == ["partition_tables=1/64"]
    df = ctx.table("n").filter(col("tenant") == lit("t17"))
    assert _reads(df.collect) == ["partition_tables=1/64"]
    for f in ("tenant = 't17'", pc.field("tenant") == "t17"):
        plan = lance_sql.plan_scan(ns, f)
        assert len(plan.partitions) == 1 and plan.total_partitions == TENANTS and plan.pruned
    want = sorted(i for i, t in enumerate(rows.column("tenant").to_pylist()) if t == "t17")
    got = ctx.sql(sql).to_arrow_table()
    assert sorted(got.column("id").to_pylist()) == want
    by_id = {r["id"]: r for r in rows.to_pylist()}
    for r in got.to_pylist():
        assert r == {k: by_id[r["id"]][k] for k in r}


def test_nearest_neighbours_of_one_tenant_equal_numpy(tenants: tuple[str, pa.Table]) -> None:
    root, rows = tenants
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", root)
    q = np.random.default_rng(3).standard_normal(WIDTH).astype(np.float32)
    literal = ", ".join(repr(float(x)) for x in q)
    sql = (
        f"SELECT id, array_distance(emb, [{literal}]) AS d FROM n "
        "WHERE tenant = 't05' ORDER BY d LIMIT 10"
    )
    assert _reads(lambda: ctx.sql(sql).collect()) == ["partition_tables=1/64"]
    got = ctx.sql(sql).to_pylist()

    mine = [r for r in rows.to_pylist() if r["tenant"] == "t05" and r["emb"] is not None]
    vectors = np.array([r["emb"] for r in mine], dtype=np.float64)
    dist = np.sqrt(((vectors - q.astype(np.float64)) ** 2).sum(axis=1))
    order = np.argsort(dist, kind="stable")[:10]
    assert [r["id"] for r in got] == [mine[i]["id"] for i in order]
    np.testing.assert_allclose([r["d"] for r in got], dist[order], rtol=1e-6)
