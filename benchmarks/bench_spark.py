"""Spark benchmarks: partition-wise join vs sort-merge join; pruned vs unpruned read.

Run: /work/venv/bin/python benchmarks/bench_spark.py [--rows N] [--repeats R]
Both sides of each ratio are measured in the same run (best of R).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa


def _best(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _ns(root: str, rows: int, buckets: int) -> None:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.float64())])
    ns = PartitionedNamespace.create(
        root, schema, [{"source": "k", "transform": "bucket", "num_buckets": buckets}]
    )
    ns.append(pa.table({"k": range(rows), "v": [float(i) for i in range(rows)]}, schema=schema))


def run(rows: int, repeats: int, spark: Any = None) -> list[tuple[str, float, float]]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import lance_sql.engines.spark as lance_spark
    from lance_sql.engines.spark.join import _spark_join

    own = spark is None
    if own:
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
    lance_spark.register(spark)
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        left, right, wide = f"{tmp}/l", f"{tmp}/r", f"{tmp}/w"
        _ns(left, rows, 8)
        _ns(right, rows, 8)
        _ns(wide, rows, 64)
        spj = _best(
            lambda: lance_spark.partitioned_join(spark, left, right, on="k").count(), repeats
        )
        smj = _best(
            lambda: _spark_join(spark, left, right, [("k", "k")], "inner", None, None).count(),
            repeats,
        )
        results.append(("join: partition-wise vs sort-merge", spj, smj))
        reader = spark.read.format("lance_ns")
        pruned = _best(lambda: reader.load(wide).filter("k = 7").count(), repeats)
        off = spark.read.format("lance_ns").option("pruning", "false")
        full = _best(lambda: off.load(wide).filter("k = 7").count(), repeats)
        results.append(("read 1 of 64 partitions: pruned vs unpruned", pruned, full))
    if own:
        spark.stop()
    return results


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    print(f"{'case':46} {'ours s':>8} {'baseline s':>10} {'speedup':>8}")
    for name, ours, base in run(a.rows, a.repeats):
        print(f"{name:46} {ours:8.3f} {base:10.3f} {base / ours:7.1f}x")


if __name__ == "__main__":
    main()
