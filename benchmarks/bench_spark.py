"""Spark benchmarks: partition-wise join vs sort-merge join; pruned vs unpruned read.

Run: /work/venv/bin/python benchmarks/bench_spark.py [--rows N] [--repeats R] [--buckets B]

Each ratio compares two runs of the *same* query in the same Spark session,
best of R after one untimed warm-up (Python workers and JIT warm on both
sides); every run's result is checked, so a faster wrong answer cannot win.

- join: ``partitioned_join`` (one task per bucket pair, no Exchange) vs Spark's
  sort-merge join of the same two ``lance_ns`` reads (broadcast disabled);
  both counted.
- read: ``filter("k = 7").collect()`` on a namespace with B bucket partitions,
  read with ``option("where", "k = 7")`` (pyspark 4.3.0 pushes no filter to it),
  pruned (1 of B partition tables read) vs ``pruning=false`` (all B read; the
  filter still applied inside each scan). Default layout: one Spark partition
  per partition table. A second row runs ``count()`` instead (a second Spark
  stage on both sides). A third repeats the read with ``rows_per_partition``
  packing on both sides, where the unpruned read is one task instead of B: it
  shows how much of the first ratio is Spark's per-task overhead.
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


def _best(fn: Callable[[], Any], repeats: int, check: Callable[[Any], bool]) -> float:
    """Best wall time of ``repeats`` runs after one warm-up; every result must pass ``check``."""
    runs = repeats + (1 if repeats > 1 else 0)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
        if not check(out):
            raise AssertionError(f"benchmark result is wrong: {out!r}")
    return min(times[-repeats:])


def _ns(root: str, rows: int, buckets: int) -> None:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.float64())])
    ns = PartitionedNamespace.create(
        root, schema, [{"source": "k", "transform": "bucket", "num_buckets": buckets}]
    )
    ns.append(pa.table({"k": range(rows), "v": [float(i) for i in range(rows)]}, schema=schema))


def run(
    rows: int, repeats: int, spark: Any = None, buckets: int = 64
) -> list[tuple[str, float, float]]:
    """[(case, ours seconds, baseline seconds)]; ``spark``: reuse a session (tests)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import lance_sql.engines.spark as lance_spark
    from lance_sql.engines.spark.join import _spark_join

    own = spark is None
    if own:
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
    lance_spark.register(spark)
    prev = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    results = []
    key = min(7, rows - 1)
    expected = [(key, float(key))]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            left, right, wide = f"{tmp}/l", f"{tmp}/r", f"{tmp}/w"
            _ns(left, rows, 8)
            _ns(right, rows, 8)
            _ns(wide, rows, buckets)

            def count_is_rows(n: int) -> bool:
                return n == rows

            spj = _best(
                lambda: lance_spark.partitioned_join(spark, left, right, on="k").count(),
                repeats,
                count_is_rows,
            )
            smj = _best(
                lambda: _spark_join(spark, left, right, [("k", "k")], "inner", None, None).count(),
                repeats,
                count_is_rows,
            )
            results.append(("join: partition-wise vs sort-merge", spj, smj))

            def read(options: dict[str, str]) -> Callable[[], list[tuple]]:
                def go() -> list[tuple]:
                    df = spark.read.format("lance_ns").options(**options)
                    df = df.option("where", f"k = {key}").load(wide)  # prunes (pyspark 4.3)
                    return [tuple(r) for r in df.filter(f"k = {key}").collect()]

                return go

            def right_row(out: list[tuple]) -> bool:
                return out == expected

            label = f"read 1 of {buckets} partitions: pruned vs unpruned"
            pruned = _best(read({}), repeats, right_row)
            full = _best(read({"pruning": "false"}), repeats, right_row)
            results.append((label, pruned, full))

            def count(options: dict[str, str]) -> Callable[[], int]:
                def go() -> int:
                    df = spark.read.format("lance_ns").options(**options)
                    df = df.option("where", f"k = {key}").load(wide)  # prunes (pyspark 4.3)
                    return df.filter(f"k = {key}").count()

                return go

            def one(n: int) -> bool:
                return n == 1

            pruned_c = _best(count({}), repeats, one)
            full_c = _best(count({"pruning": "false"}), repeats, one)
            results.append(("  same, count() instead of collect()", pruned_c, full_c))
            packing = {"rows_per_partition": str(max(rows, 1))}
            pruned_p = _best(read(packing), repeats, right_row)
            full_p = _best(read({**packing, "pruning": "false"}), repeats, right_row)
            results.append((f"  same, tables packed (rows_per_partition={rows})", pruned_p, full_p))
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", prev)
        if own:
            spark.stop()
    return results


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--buckets", type=int, default=64, help="partitions of the read namespace")
    a = p.parse_args()
    results = run(a.rows, a.repeats, buckets=a.buckets)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"rows={a.rows} repeats={a.repeats} (best of) load average: {load}")
    print(f"{'case':58} {'ours s':>8} {'baseline s':>10} {'speedup':>8}")
    for name, ours, base in results:
        print(f"{name:58} {ours:8.3f} {base:10.3f} {base / ours:7.1f}x")


if __name__ == "__main__":
    main()
