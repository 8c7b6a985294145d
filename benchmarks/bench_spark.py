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

``--bucketed`` (issue #19's target; run it with ``--master
'local-cluster[2,1,1024]'``) instead compares ``partitioned_join`` with Spark's
own bucketed join of the same rows: both sides written by Spark with
``bucketBy(8, "k")`` (as many buckets as the namespaces' bucket[8]), joined with
no Exchange. Time: alternating runs in one session, medians. Memory: peak RSS
and PSS of the whole process tree, each side in a fresh session of its own (a
subprocess), as in ``bench_spark_read.py``. ``--per-group`` also times
``partitioned_join(tasks=<groups>)``, one Spark task per join group (the
layout before groups were packed into tasks). Results: docs/benchmarks/spark.md.
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


BUCKETED_DDL = (
    "CREATE TABLE IF NOT EXISTS {name} (k BIGINT, v DOUBLE) USING parquet "
    "CLUSTERED BY (k) INTO 8 BUCKETS LOCATION '{path}'"
)


def _bucketed_tables(spark: Any, base: str, left: str, right: str) -> None:
    """``lb``/``rb``: the namespaces' rows as bucketed tables (written once, declared later)."""
    for name, root in (("lb", left), ("rb", right)):
        path = f"{base}/{name}_bucketed"
        if not os.path.exists(path):
            df = spark.read.format("lance_ns").load(root)
            df.write.format("parquet").bucketBy(8, "k").option("path", path).saveAsTable(name)
        else:
            spark.sql(BUCKETED_DDL.format(name=name, path=path))


def _join_side(spark: Any, side: str, left: str, right: str) -> Any:
    import lance_sql.engines.spark as lance_spark

    if side == "lance":
        return lance_spark.partitioned_join(spark, left, right, on="k")
    if side == "lance_per_group":  # the first design: one Spark task per join group
        return lance_spark.partitioned_join(spark, left, right, on="k", tasks=1 << 30)
    return spark.table("lb").join(spark.table("rb"), "k")


def _session(master: str) -> Any:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_spark_read import session

    return session(master, {"spark.sql.autoBroadcastJoinThreshold": "-1"})


def run_bucketed(
    rows: int, repeats: int, master: str, base: str, per_group: bool = False
) -> dict[str, Any]:
    """partitioned_join vs Spark's bucketed join: median times, then peak memory per side.

    ``per_group``: also time ``partitioned_join`` with one task per join group.
    """
    import json
    import statistics
    import subprocess

    left, right = f"{base}/l", f"{base}/r"
    if not os.path.exists(left):
        _ns(left, rows, 8)
        _ns(right, rows, 8)
    spark = _session(master)
    times: dict[str, list[float]] = {"lance": [], "bucketed": []}
    if per_group:
        times["lance_per_group"] = []
    try:
        _bucketed_tables(spark, base, left, right)
        plan = _join_side(spark, "bucketed", left, right)._jdf.queryExecution()
        exchange_free = "Exchange" not in plan.executedPlan().toString()
        for _ in range(repeats + 1):  # the first round is an untimed warm-up
            for side in times:
                t = time.perf_counter()
                n = _join_side(spark, side, left, right).count()
                times[side].append(time.perf_counter() - t)
                if n != rows:
                    raise AssertionError(f"{side} join counted {n} rows, expected {rows}")
    finally:
        spark.stop()
    out: dict[str, Any] = {
        "rows": rows,
        "master": master,
        "bucketed_plan_has_no_exchange": exchange_free,
        "lance_s": statistics.median(times["lance"][1:]),
        "bucketed_s": statistics.median(times["bucketed"][1:]),
    }
    if per_group:
        out["lance_per_group_s"] = statistics.median(times["lance_per_group"][1:])
    for side in ("lance", "bucketed"):
        proc = subprocess.run(
            [
                *(sys.executable, __file__, "--memory-side", side, "--base", base),
                *("--repeats", str(repeats), "--master", master, "--rows", str(rows)),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        line = [x for x in proc.stdout.splitlines() if x.startswith("MEMORY ")][-1]
        out[f"memory_{side}"] = json.loads(line[len("MEMORY ") :])
    return out


def memory_side(side: str, base: str, repeats: int, master: str, rows: int) -> dict[str, int]:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_spark_read import PeakRss

    spark = _session(master)
    try:
        _bucketed_tables(spark, base, f"{base}/l", f"{base}/r")
        with PeakRss() as peak:
            for _ in range(repeats):
                n = _join_side(spark, side, f"{base}/l", f"{base}/r").count()
                if n != rows:
                    raise AssertionError(f"{side} join counted {n} rows, expected {rows}")
        return {"peak": peak.peak, "python_peak": peak.python_peak, "pss_peak": peak.pss_peak}
    finally:
        spark.stop()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--buckets", type=int, default=64, help="partitions of the read namespace")
    p.add_argument("--bucketed", action="store_true", help="vs Spark's bucketed join (#19)")
    p.add_argument("--master", default="local-cluster[2,1,1024]")
    p.add_argument("--base", help="data folder for --bucketed (kept; default: a temporary one)")
    p.add_argument("--memory-side", choices=["lance", "bucketed"])
    p.add_argument(
        "--per-group", action="store_true", help="--bucketed: also time one task per join group"
    )
    a = p.parse_args()
    if a.memory_side:
        import json

        mem = memory_side(a.memory_side, a.base, a.repeats, a.master, a.rows)
        print("MEMORY " + json.dumps(mem))
        return
    if a.bucketed:
        import json

        r = run_bucketed(a.rows, a.repeats, a.master, a.base or tempfile.mkdtemp(), a.per_group)
        ml, mb = r["memory_lance"], r["memory_bucketed"]
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"rows={a.rows} repeats={a.repeats} master={a.master} load average: {load}")
        print(
            f"partitioned_join {r['lance_s']:.3f} s, bucketed join {r['bucketed_s']:.3f} s: "
            f"ratio {r['lance_s'] / r['bucketed_s']:.2f} (bucketed plan without Exchange: "
            f"{r['bucketed_plan_has_no_exchange']})"
        )
        if "lance_per_group_s" in r:
            print(
                f"  one task per join group: {r['lance_per_group_s']:.3f} s, ratio "
                f"{r['lance_per_group_s'] / r['bucketed_s']:.2f}"
            )
        for key, label in (("peak", "RSS"), ("pss_peak", "PSS")):
            print(
                f"peak {label}: partitioned_join {ml[key] / 2**20:.0f} MiB, bucketed "
                f"{mb[key] / 2**20:.0f} MiB; ratio {ml[key] / mb[key]:.2f}"
            )
        print("RESULT-JSON " + json.dumps(r))
        return
    results = run(a.rows, a.repeats, buckets=a.buckets)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"rows={a.rows} repeats={a.repeats} (best of) load average: {load}")
    print(f"{'case':58} {'ours s':>8} {'baseline s':>10} {'speedup':>8}")
    for name, ours, base in results:
        print(f"{name:58} {ours:8.3f} {base:10.3f} {base / ours:7.1f}x")


if __name__ == "__main__":
    main()
