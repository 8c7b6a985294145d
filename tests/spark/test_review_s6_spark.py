"""Adversarial review (session 6): Spark ``replaceWhere``, ``lance_sql.spark.delete`` and
``merge`` followed by queries that column bounds may prune; a long-lived
``lance_sql.SessionContext`` and a fresh one must equal DuckDB over a model.

Runs on the shared ``spark`` session of ``conftest.py`` (local mode by default; its
cluster mode is in ``-m slow``), so it starts no JVM of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("x", pa.int64())])
DDL = "k long, x long"
SPEC = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
QUERIES = ["x = 1000", "x = 5", "x > 500", "x < 0", "x IS NULL", "x = -1", "k = 1 AND x = 2"]


def _check(root: str, model: pa.Table, ctx: Any) -> None:
    con = duckdb.connect()
    con.register("m", model)
    fresh = lance_sql.SessionContext()
    fresh.register_namespace("t", root)
    for where in QUERIES:
        want = sorted(con.execute(f"SELECT k, x FROM m WHERE {where}").fetchall(), key=repr)
        for c in (ctx, fresh):
            got = c.sql(f"SELECT k, x FROM t WHERE {where}").to_arrow_table().to_pylist()
            assert sorted((tuple(r.values()) for r in got), key=repr) == want, where


def _apply(model: pa.Table, sql: str) -> pa.Table:
    con = duckdb.connect()
    con.register("m", model)
    return con.execute(sql).to_arrow_table().cast(SCHEMA)


def test_spark_dml_then_pruned_queries(spark: Any, tmp_path: Path) -> None:
    from lance_sql.engines.spark import delete, merge

    root = str(tmp_path / "ns")
    base = pa.table(
        {"k": [0, 0, 1, 1, 2, 2], "x": [1, 2, 3, 4, 5, None]},
        schema=SCHEMA,
    )
    ns = PartitionedNamespace.create(root, SCHEMA, SPEC)
    ns.append(base)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    _check(root, base, ctx)
    model = base

    # replaceWhere on a non-partition column: rows with x > 3 replaced, NULL x kept
    new = pa.table({"k": [1, 2], "x": [1000, 600]}, schema=SCHEMA)
    df = spark.createDataFrame(new.to_pylist(), DDL).repartition(2)
    df.write.format("lance_ns").mode("overwrite").option("replaceWhere", "x > 3").save(root)
    model = pa.concat_tables(
        [_apply(model, "SELECT * FROM m WHERE NOT coalesce(x > 3, false)"), new]
    )
    _check(root, model, ctx)

    # a direct append between Spark operations (its bounds are merged)
    PartitionedNamespace.open(root).append(pa.table({"k": [1], "x": [-1]}, schema=SCHEMA))
    model = pa.concat_tables([model, pa.table({"k": [1], "x": [-1]}, schema=SCHEMA)])
    _check(root, model, ctx)

    # Spark delete of a value inside the bounds, then an append of a deleted value
    delete(spark, root, "x = 1000 OR x = 2")
    model = _apply(model, "SELECT * FROM m WHERE NOT coalesce(x = 1000 OR x = 2, false)")
    _check(root, model, ctx)
    PartitionedNamespace.open(root).append(pa.table({"k": [0], "x": [1000]}, schema=SCHEMA))
    model = pa.concat_tables([model, pa.table({"k": [0], "x": [1000]}, schema=SCHEMA)])
    _check(root, model, ctx)

    # Spark merge: x moves out of its table's old bounds, a row moves partition, an insert
    sdf = spark.createDataFrame(  # keyed on x: 600 -> (0, 5), 1 -> (2, -9), 77 unmatched
        [(600, 0, 5), (1, 2, -9), (77, 1, 7)], "x long, k long, x_new long"
    )
    merge(
        spark,
        root,
        sdf,
        on=["x"],
        when_matched_update={"x": "source.x_new", "k": "source.k"},
        when_not_matched_insert=False,
    )
    model = _apply(
        model,
        "SELECT CASE WHEN x = 600 THEN 0 WHEN x = 1 THEN 2 ELSE k END AS k, "
        "CASE WHEN x = 600 THEN 5 WHEN x = 1 THEN -9 ELSE x END AS x FROM m",
    )
    _check(root, model, ctx)
