"""Spark writes: ``df.write.format("lance_ns")`` append into bucket[16] vs Spark's Parquet write.

Run (local-cluster: separate executor JVMs and Python workers, as issue #19 measured):

    /work/venv/bin/python benchmarks/bench_spark_write.py --rows 2000000 --repeats 3 \
        --master 'local-cluster[2,1,1024]'

Both writes take the same DataFrame (``spark.range`` columns: ``order_id``,
``customer_id = id % 100000``, ``amount``, ``note``; generated in the JVM, so
neither side reads input), alternate run by run in one session (lance, parquet,
lance, parquet, ...) after one untimed warm-up of each, each into a fresh
target: a new namespace (bucket[16] of ``customer_id``, created before the
clock starts) or a new Parquet directory. Every lance run is checked (row
count through ``PartitionedNamespace``, 16 partition tables). Prints the best
and the median of each side and their ratio.

``--profile`` instead times the task-side steps of one lance write in this
process (no Spark): partition values, split, Lance file writes, commit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import pyarrow as pa

SCHEMA = pa.schema(
    [
        pa.field("order_id", pa.int64(), nullable=False),
        pa.field("customer_id", pa.int64(), nullable=False),
        pa.field("amount", pa.float64()),
        pa.field("note", pa.utf8()),
    ]
)
SPEC = [{"source": "customer_id", "transform": "bucket", "num_buckets": 16}]


def frame(spark: Any, rows: int, partitions: int) -> Any:
    return spark.range(0, rows, 1, partitions).selectExpr(
        "id AS order_id",
        "id % 100000 AS customer_id",
        "CAST(id AS DOUBLE) * 0.5 AS amount",
        "concat('n', CAST(id % 100 AS STRING)) AS note",
    )


def session(master: str) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession

    if master.startswith("local-cluster"):
        os.environ["SPARK_HOME"] = os.path.dirname(pyspark.__file__)
    spark = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.executor.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def noop_source() -> Any:
    """A Python data source whose tasks only receive their Arrow batches (Spark's floor)."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class NoopWriter(DataSourceArrowWriter):
        def write(self, iterator: Any) -> WriterCommitMessage:
            for _ in iterator:
                pass
            return WriterCommitMessage()

    class NoopSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "noop_arrow"

        def writer(self, schema: Any, overwrite: bool) -> Any:
            return NoopWriter()

    return NoopSource


def run(
    spark: Any, rows: int, repeats: int, partitions: int, base: str, existing: bool = False
) -> dict[str, list[float]]:
    """Alternating timed writes; returns seconds per side (warm-ups excluded; the first
    round's times, which pay each fresh Python worker's imports, under ``<side> first``)."""
    import lance_sql.engines.spark as lance_spark
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    lance_spark.register(spark)
    df = frame(spark, rows, partitions)
    times: dict[str, list[float]] = {"lance_ns": [], "parquet": [], "noop_arrow": []}
    spark.dataSource.register(noop_source())
    for i in range(repeats + 1):
        root = os.path.join(base, f"ns{i}")
        ns = PartitionedNamespace.create(root, SCHEMA, SPEC)
        if existing:  # append into 16 existing partition tables
            ns.append(pa.table({"order_id": [-1 - k for k in range(64)],
                                "customer_id": list(range(64)), "amount": [0.0] * 64,
                                "note": ["seed"] * 64}, schema=SCHEMA))  # fmt: skip
        t = time.perf_counter()
        df.write.format("lance_ns").mode("append").save(root)
        lance_s = time.perf_counter() - t
        ns = PartitionedNamespace.open(root)
        if ns.count_rows() != rows + (64 if existing else 0) or len(ns.tables()) != min(16, rows):
            raise AssertionError(f"lance write is wrong: {ns.count_rows()} rows")
        t = time.perf_counter()
        df.write.mode("overwrite").parquet(os.path.join(base, f"pq{i}"))
        parquet_s = time.perf_counter() - t
        t = time.perf_counter()
        df.write.format("noop_arrow").mode("append").save(root)
        noop_s = time.perf_counter() - t
        if i:  # the first round warms workers and JIT on every side
            times["lance_ns"].append(lance_s)
            times["parquet"].append(parquet_s)
            times["noop_arrow"].append(noop_s)
        else:
            first = {"lance_ns first": [lance_s], "parquet first": [parquet_s]}
            first["noop_arrow first"] = [noop_s]
    return {**times, **first}


def profile(rows: int, batch_rows: int) -> None:
    """Task-side steps of one staged write, in this process."""
    import numpy as np

    from lance_sql.engines.spark.write import LanceNamespaceWriter
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ids = np.arange(rows)
    table = pa.table(
        {
            "order_id": ids,
            "customer_id": ids % 100000,
            "amount": ids * 0.5,
            "note": pa.array([f"n{i % 100}" for i in range(rows)]),
        }
    )
    batches = table.to_batches(max_chunksize=batch_rows)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "ns")
        PartitionedNamespace.create(root, SCHEMA, SPEC)
        writer = LanceNamespaceWriter({"path": root}, False)
        writer.write(iter(batches[:1]))  # imports, numba
        t = time.perf_counter()
        msg = writer.write(iter(batches))
        staged = time.perf_counter() - t
        t = time.perf_counter()
        writer.commit([msg])
        commit = time.perf_counter() - t
    print(f"task stage of {rows} rows in {batch_rows}-row batches: {staged:.3f} s")
    print(f"driver commit: {commit:.3f} s")


def profile_tasks(rows: int, tasks: int) -> None:
    """``tasks`` write tasks as Spark runs them, in this process: each unpickles the
    writer and stages its share (10,000-row batches); then the driver's commit."""
    import pickle

    import numpy as np

    from lance_sql.engines.spark.types import spark_struct
    from lance_sql.engines.spark.write import LanceNamespaceWriter
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ids = np.arange(rows)
    table = pa.table(
        {
            "order_id": ids,
            "customer_id": ids % 100000,
            "amount": ids * 0.5,
            "note": pa.array([f"n{i % 100}" for i in range(rows)]),
        },
        schema=SCHEMA,
    )
    per = -(-rows // tasks)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "ns")
        PartitionedNamespace.create(root, SCHEMA, SPEC)
        t = time.perf_counter()
        blob = pickle.dumps(LanceNamespaceWriter({"path": root}, False, spark_struct(SCHEMA)))
        plan_s = time.perf_counter() - t
        t = time.perf_counter()
        pickle.loads(blob).write(iter(table.slice(0, 10).to_batches()))  # imports, numba
        first_s = time.perf_counter() - t
        messages, t = [], time.perf_counter()
        for k in range(tasks):
            part = table.slice(k * per, per)
            messages.append(pickle.loads(blob).write(iter(part.to_batches(10_000))))
        tasks_s = time.perf_counter() - t
        t = time.perf_counter()
        LanceNamespaceWriter.commit(pickle.loads(blob), messages)
        commit_s = time.perf_counter() - t
        ns = PartitionedNamespace.open(root)
        assert ns.count_rows() == rows, ns.count_rows()  # the warm-up write is not committed
        import lance

        files = sum(len(lance.dataset(tb.uri).get_fragments()) for tb in ns.tables())
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average: {load}; writer {len(blob)} bytes pickled, planned in {plan_s:.3f} s")
    print(f"first write in this process (imports, numba): {first_s:.2f} s")
    print(f"{tasks} tasks x {per} rows: {tasks_s:.2f} s = {1000 * tasks_s / tasks:.0f} ms per task")
    print(f"driver commit of {files} Lance files: {commit_s:.2f} s")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--partitions", default="4", help="Spark partitions of the input (comma-separated: each)"
    )
    p.add_argument(
        "--tasks-profile",
        type=int,
        default=0,
        help="time N tasks' writes in this process (no Spark): the rows split N ways",
    )
    p.add_argument("--master", default="local-cluster[2,1,1024]")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--existing", action="store_true", help="append into existing partitions")
    a = p.parse_args()
    if a.profile:
        profile(a.rows, 10_000)
        return
    if a.tasks_profile:
        profile_tasks(a.rows, a.tasks_profile)
        return
    spark = session(a.master)
    try:
        for partitions in [int(x) for x in str(a.partitions).split(",")]:
            with tempfile.TemporaryDirectory() as tmp:
                times = run(spark, a.rows, a.repeats, partitions, tmp, a.existing)
            report(times, a, partitions)
    finally:
        spark.stop()


def report(times: dict[str, list[float]], a: Any, partitions: int) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"rows={a.rows} partitions={partitions} existing={a.existing} master={a.master} "
        f"load average: {load}"
    )
    for side, ts in times.items():
        print(f"{side:16} best {min(ts):7.3f} s  median {statistics.median(ts):7.3f} s  {ts}")
    ratio = min(times["lance_ns"]) / min(times["parquet"])
    med = statistics.median(times["lance_ns"]) / statistics.median(times["parquet"])
    print(f"lance_ns / parquet: best {ratio:.2f}x  median {med:.2f}x")
    floor = min(times["noop_arrow"]) / min(times["parquet"])
    print(
        f"noop_arrow (Spark hands the rows to Python tasks, nothing written) / parquet: "
        f"best {floor:.2f}x"
    )
    # lance-sql's own cost: above what any Python data source pays for the same tasks
    pairs = list(zip(times["lance_ns"], times["noop_arrow"], strict=True))
    above = statistics.median(lance - noop for lance, noop in pairs)
    print(
        f"lance_ns - noop_arrow (same round), median: {above:.3f} s = "
        f"{1000 * above / partitions:.1f} ms per task; "
        f"(lance_ns - noop) / parquet: {above / statistics.median(times['parquet']):.2f}x"
    )


if __name__ == "__main__":
    main()
