"""Run in a subprocess by ``test_local_cluster.py``: one ``local-cluster[2,1,1024]`` session.

Separate executor JVMs and Python workers catch code that only works in one
process. Prints one JSON object: ``{"checks": [[name, lance, parquet], ...], "errors": {...}}``.
Usage: ``python cluster_checks.py <work dir>`` (run with the work dir as cwd).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from reuse_checks import _rows, build

TS_SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("event_ts", pa.timestamp("us", "UTC"))]
)


def build_events(base: str) -> tuple[str, str]:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    root, parquet = os.path.join(base, "events"), os.path.join(base, "events.parquet")
    ns = PartitionedNamespace.create(
        root,
        TS_SCHEMA,
        [{"source": "event_ts", "transform": k} for k in ("year", "month", "day")],
    )
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    table = pa.table(
        {
            "id": list(range(300)),
            "event_ts": [start + datetime.timedelta(hours=5 * i) for i in range(300)],
        },
        schema=TS_SCHEMA,
    )
    ns.append(table)
    pq.write_table(table, parquet)
    return root, parquet


def recipe(spark: Any, root: str, where: str, spark_schema: str) -> Any:
    """The docs/spark.md recipe: plan on the driver, scan the partition list in tasks."""
    import lance_sql
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    plan = lance_sql.plan_scan(PartitionedNamespace.open(root), where)
    text, ids = plan.to_json(), plan.object_ids

    def read_partitions(batches: Any) -> Any:
        from lance_sql.planning.scan_plan import ScanPlan
        from lance_sql.tables.namespace.namespace import PartitionedNamespace

        task_plan = ScanPlan.from_json(text)
        ns = PartitionedNamespace.open(task_plan.root, version=task_plan.manifest_version)
        for batch in batches:
            mine = [ids[i] for i in batch.column(0).to_pylist()]
            yield from task_plan.to_batches(ns, partitions=mine)

    n = max(len(ids), 1)
    return spark.range(0, len(ids), 1, n).mapInArrow(read_partitions, spark_schema), plan


def main(base: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession

    import lance_sql.engines.spark as lance_spark

    os.environ["SPARK_HOME"] = os.path.dirname(pyspark.__file__)
    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lance_spark.register(spark)
    checks: list[list[Any]] = []
    errors: dict[str, str] = {}
    # the reuse and where-option checks run in this mode in test_filter_scope.py[cluster]
    root, _ = build(base)

    eroot, eparquet = build_events(base)
    par = spark.read.parquet(eparquet)
    # year x month x day-of-month partitions: one per day, 2026-01-01 .. 2026-03-04 (63)
    expected = {
        "event_ts >= TIMESTAMP '2026-01-03 00:00:00'": 61,
        "CAST(event_ts AS DATE) = DATE '2026-01-05'": 1,
        "date_part('day', event_ts) = 7 AND date_part('month', event_ts) = 2": 1,
    }
    for where in expected:
        df, plan = recipe(spark, eroot, where, "id long, event_ts timestamp")
        spark_where = where.replace("date_part('day', event_ts)", "day(event_ts)").replace(
            "date_part('month', event_ts)", "month(event_ts)"
        )
        checks.append([f"recipe {where}", _rows(df), _rows(par.where(spark_where))])
        checks.append([f"recipe pruned {where}", len(plan.partitions), expected[where]])
        opt = spark.read.format("lance_ns").option("where", where).load(eroot)
        checks.append([f"where option {where}", _rows(opt), _rows(par.where(spark_where))])

    # every URI form Spark and Hadoop hand a source; relative to the driver's cwd (= base)
    lance_rows = _rows(spark.read.format("lance_ns").load(root))
    for form in ("file:" + root, "file://" + root, os.path.relpath(root, base)):
        try:
            checks.append(
                [f"load {form}", _rows(spark.read.format("lance_ns").load(form)), lance_rows]
            )
        except Exception as e:  # reported, asserted by the test
            errors[f"load {form}"] = str(e)[:400]
    extra = spark.createDataFrame([(5000, "x", 1.0)], "k long, s string, v double")
    try:
        extra.write.format("lance_ns").mode("append").save("file:" + root)
        extra.write.format("lance_ns").mode("append").save(os.path.relpath(root, base))
        got = spark.read.format("lance_ns").load(root).where("k = 5000").count()
        checks.append(["save file: and relative", got, 2])
    except Exception as e:
        errors["save"] = str(e)[:400]
    try:
        spark.sql(f"CREATE TEMPORARY VIEW lance_view USING lance_ns OPTIONS (path 'file:{root}')")
        got = spark.sql("SELECT count(*) FROM lance_view WHERE k >= 1999").collect()[0][0]
        checks.append(["temporary view file: path", got, 3])
    except Exception as e:
        errors["temporary view"] = str(e)[:400]
    try:
        spark.sql(f"CREATE TABLE lance_located USING lance_ns LOCATION 'file:{root}'")
        checks.append(
            [
                "create table location",
                spark.sql("SELECT count(*) FROM lance_located").collect()[0][0],
                2002,
            ]
        )
    except Exception as e:
        errors["create table"] = str(e)[-1500:]
    spark.stop()
    print("CHECKS-JSON " + json.dumps({"checks": checks, "errors": errors}, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
