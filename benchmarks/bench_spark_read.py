"""Spark reads through ``lance_ns`` vs Spark's own Parquet reads of the same rows (issues #19, #20).

Run (local-cluster, 2 executors of 1 core / 1 GB, the mode the targets are set in):

    /work/venv/bin/python benchmarks/bench_spark_read.py --rows 2000000 --repeats 3

Data: ``rows`` orders (order_id, customer_id, amount, status, note, ts) over 10
days. The namespace is partitioned ``year(ts), month(ts), day(ts),
bucket[8](customer_id)`` (80 partition tables); the Parquet copy is written by
Spark itself with ``partitionBy("day")`` (10 directories), so both sides hold
the same rows in their engine's usual layout.

Cases (every run's result is checked, so a faster wrong answer cannot win):

- full scan: every row and column materialised (``write.format("noop")``);
- one day: ``lance_ns`` with ``option("where", <one day>)`` vs Parquet
  ``where day = DATE '...'`` (partition pruning), also ``noop``;
- OR of customer equalities: Spark does not push an OR to Python sources, so
  this is the ``where`` option again; reported with the partitions read.

Time: alternating runs (lance, parquet, lance, ...) in one session after one
untimed warm-up of each; the ratio of medians is reported. Memory: peak RSS of
the whole process tree (driver JVM, executor JVMs, Python workers) sampled
every 20 ms; each side runs its cases in a fresh session of its own
(``--memory-side``, a subprocess), so neither side inherits the other's heaps
or Python workers.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

DAYS = 10
BUCKETS = 8
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
ONE_DAY = "2026-01-04"
CUSTOMERS = (17, 4242)


def build(base: str, rows: int) -> tuple[str, str, str]:
    """(namespace root, Parquet root, staging Parquet file) holding the same ``rows`` orders."""
    import numpy as np

    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    rng = np.random.default_rng(7)
    schema = pa.schema(
        [
            pa.field("order_id", pa.int64(), nullable=False),
            pa.field("customer_id", pa.int64()),
            pa.field("amount", pa.float64()),
            pa.field("status", pa.utf8()),
            pa.field("note", pa.utf8()),
            pa.field("ts", pa.timestamp("us", "UTC")),
        ]
    )
    micros = rng.integers(0, DAYS * 86_400_000_000, rows)
    statuses = np.array(["new", "paid", "shipped", "returned", "cancelled"])
    table = pa.table(
        {
            "order_id": np.arange(rows, dtype=np.int64),
            "customer_id": rng.integers(0, 100_000, rows),
            "amount": np.round(rng.random(rows) * 1000, 2),
            "status": statuses[rng.integers(0, 5, rows)],
            "note": pa.array([f"order note {i % 997}" for i in range(rows)]),
            "ts": pa.array(int(START.timestamp() * 1e6) + micros, pa.timestamp("us", "UTC")),
        },
        schema=schema,
    )
    root, parquet = os.path.join(base, "orders"), os.path.join(base, "orders_parquet")
    ns = PartitionedNamespace.create(
        root,
        schema,
        [
            {"source": "ts", "transform": "year"},
            {"source": "ts", "transform": "month"},
            {"source": "ts", "transform": "day"},
            {"source": "customer_id", "transform": "bucket", "num_buckets": BUCKETS},
        ],
    )
    for i in range(0, rows, 1_000_000):
        ns.append(table.slice(i, 1_000_000))
    staged = os.path.join(base, "staged.parquet")
    import pyarrow.parquet as pq

    pq.write_table(table, staged)
    return root, parquet, staged


#: settings of the read benchmark's sessions
READ_CONF = {"spark.sql.session.timeZone": "UTC"}


def session(master: str, conf: dict[str, str] | None = None) -> Any:
    """A Spark session for the benchmarks (``conf``: more settings), lance-sql registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession

    import lance_sql.engines.spark as lance_spark

    os.environ["SPARK_HOME"] = os.path.dirname(pyspark.__file__)
    builder = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    lance_spark.register(spark)
    return spark


def write_parquet(spark: Any, staged: str, parquet: str) -> None:
    """The Parquet side, written by Spark itself, partitioned by day (``day=2026-01-04``)."""
    if os.path.exists(parquet):
        return
    df = spark.read.parquet(staged).selectExpr("*", "CAST(ts AS DATE) AS day")
    df.write.partitionBy("day").parquet(parquet)


COLUMNS = "order_id, customer_id, amount, status, note, ts"


def cases(spark: Any, root: str, parquet: str) -> dict[str, tuple[Callable, Callable]]:
    """name -> (lance DataFrame factory, parquet DataFrame factory)."""
    day = f"CAST(ts AS DATE) = DATE '{ONE_DAY}'"
    ors = " OR ".join(f"customer_id = {c}" for c in CUSTOMERS)

    def lance(where: str | None = None) -> Callable[[], Any]:
        def make() -> Any:
            r = spark.read.format("lance_ns")
            return (r.option("where", where) if where else r).load(root)

        return make

    def par(where: str | None = None) -> Callable[[], Any]:
        def make() -> Any:
            df = spark.read.parquet(parquet)
            return (df.where(where) if where else df).selectExpr(*COLUMNS.split(", "))

        return make

    return {
        "full scan": (lance(), par()),
        "one day": (lance(day), par(f"day = DATE '{ONE_DAY}'")),
        "OR of customer equalities": (lance(ors), par(ors)),
    }


def noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


class PeakRss:
    """Peak memory of this process and all its descendants, sampled in a thread.

    ``peak``: summed RSS. A Python worker forked from Spark's daemon shares the
    daemon's pages and RSS counts them in both, so ``pss_peak`` (proportional
    set size: shared pages divided among their sharers; for the JVMs about
    their RSS) is also kept: what the machine actually spends.
    """

    def __init__(self, period: float = 0.05) -> None:
        import psutil

        self._psutil = psutil
        self.period = period
        self.peak = 0
        self.python_peak = 0
        self.pss_peak = 0
        #: [(process label, RSS, PSS)] of the sample with the highest summed RSS
        self.breakdown: list[tuple[str, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        me = self._psutil.Process()
        total, py, pss = 0, 0, 0
        rows: list[tuple[str, int, int]] = []
        for p in [me, *me.children(recursive=True)]:
            try:
                info = p.memory_full_info()
                total += info.rss
                pss += getattr(info, "pss", info.rss)
                if p is not me and "python" in p.name().lower():
                    py += info.rss
                rows.append((process_label(p, p is me), info.rss, getattr(info, "pss", info.rss)))
            except self._psutil.Error:
                continue
        if total > self.peak:
            self.breakdown = sorted(rows, key=lambda r: -r[1])
        self.peak = max(self.peak, total)
        self.python_peak = max(self.python_peak, py)
        self.pss_peak = max(self.pss_peak, pss)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.period)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def process_label(p: Any, me: bool) -> str:
    """A short name for a process of the tree: JVM role, Python daemon or worker."""
    if me:
        return "benchmark (python)"
    try:
        cmd = " ".join(p.cmdline())
    except Exception:
        return p.name()
    if "java" in p.name():
        return "executor JVM" if "CoarseGrainedExecutorBackend" in cmd else "driver JVM"
    if "pyspark.daemon" in cmd:
        try:
            parent = " ".join(p.parent().cmdline())
        except Exception:
            parent = ""
        return "python worker (forked)" if "pyspark.daemon" in parent else "python daemon"
    for key in ("plan_data_source_read", "create_data_source", "lookup_data_sources"):
        if key in cmd:
            return f"python {key}"
    return "python worker" if "python" in p.name().lower() else p.name()


def expected_counts(spark: Any, parquet: str) -> dict[str, int]:
    out = {}
    for name, (_, par) in cases(spark, "", parquet).items():
        out[name] = par().count()
    return out


def check(spark: Any, name: str, df: Any, want: int) -> None:
    got = df.count()
    if got != want:
        raise AssertionError(f"{name}: {got} rows, expected {want}")


def time_alternating(
    spark: Any, root: str, parquet: str, repeats: int
) -> list[tuple[str, float, float, int]]:
    """[(case, lance median s, parquet median s, Spark input partitions of the lance read)]."""
    want = expected_counts(spark, parquet)
    out = []
    for name, (lance, par) in cases(spark, root, parquet).items():
        check(spark, name, lance(), want[name])
        check(spark, name, par(), want[name])
        times: dict[str, list[float]] = {"lance": [], "parquet": []}
        for _ in range(repeats + 1):  # first round untimed (warm-up of both)
            for side, make in (("lance", lance), ("parquet", par)):
                t = time.perf_counter()
                noop(make())
                times[side].append(time.perf_counter() - t)
        parts = lance().rdd.getNumPartitions()
        out.append(
            (
                name,
                statistics.median(times["lance"][1:]),
                statistics.median(times["parquet"][1:]),
                parts,
            )
        )
    return out


def memory_side(side: str, root: str, parquet: str, repeats: int, master: str) -> dict[str, int]:
    spark = session(master, READ_CONF)
    try:
        with PeakRss() as peak:
            for _ in range(repeats):
                for lance, par in cases(spark, root, parquet).values():
                    noop((lance if side == "lance" else par)())
        return {
            "peak": peak.peak,
            "python_peak": peak.python_peak,
            "pss_peak": peak.pss_peak,
            "breakdown": peak.breakdown,
        }
    finally:
        spark.stop()


def run(
    rows: int, repeats: int, master: str, memory: bool = True, base: str | None = None
) -> dict[str, Any]:
    own = base is None
    tmp = tempfile.mkdtemp() if own else base
    if os.path.exists(os.path.join(tmp, "orders")):  # built by an earlier run (--base)
        root, parquet = os.path.join(tmp, "orders"), os.path.join(tmp, "orders_parquet")
        staged = os.path.join(tmp, "staged.parquet")
    else:
        root, parquet, staged = build(tmp, rows)
    spark = session(master, READ_CONF)
    try:
        write_parquet(spark, staged, parquet)
        timings = time_alternating(spark, root, parquet, repeats)
    finally:
        spark.stop()
    result: dict[str, Any] = {"rows": rows, "repeats": repeats, "master": master, "cases": timings}
    if memory:
        for side in ("lance", "parquet"):
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--memory-side",
                    side,
                    "--root",
                    root,
                    "--parquet",
                    parquet,
                    "--repeats",
                    str(repeats),
                    "--master",
                    master,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            line = [x for x in proc.stdout.splitlines() if x.startswith("MEMORY ")][-1]
            result[f"memory_{side}"] = json.loads(line[len("MEMORY ") :])
    return result


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--master", default="local-cluster[2,1,1024]")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--memory-side", choices=["lance", "parquet"])
    p.add_argument("--root")
    p.add_argument("--parquet")
    p.add_argument("--base", help="build the data here (kept) instead of a temporary folder")
    a = p.parse_args()
    if a.memory_side:
        mem = memory_side(a.memory_side, a.root, a.parquet, a.repeats, a.master)
        print("MEMORY " + json.dumps(mem))
        return
    t0 = time.time()
    r = run(a.rows, a.repeats, a.master, memory=not a.no_memory, base=a.base)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"rows={a.rows} repeats={a.repeats} master={a.master} load average: {load}")
    print(f"{'case':32} {'lance s':>8} {'parquet s':>9} {'ratio':>6} {'lance tasks':>11}")
    for name, lance, par, parts in r["cases"]:
        print(f"{name:32} {lance:8.3f} {par:9.3f} {lance / par:6.2f} {parts:11d}")
    if "memory_lance" in r:
        ml, mp = r["memory_lance"], r["memory_parquet"]
        print(
            f"peak RSS (process tree): lance {ml['peak'] / 2**20:.0f} MiB "
            f"(Python workers {ml['python_peak'] / 2**20:.0f}), parquet "
            f"{mp['peak'] / 2**20:.0f} MiB; ratio {ml['peak'] / mp['peak']:.2f}"
        )
        print(
            f"peak PSS (process tree): lance {ml['pss_peak'] / 2**20:.0f} MiB, parquet "
            f"{mp['pss_peak'] / 2**20:.0f} MiB; ratio {ml['pss_peak'] / mp['pss_peak']:.2f}"
        )
        for side in ("lance", "parquet"):
            print(f"processes at the {side} peak (RSS / PSS MiB):")
            for label, rss, pss in r[f"memory_{side}"]["breakdown"]:
                print(f"  {label:36} {rss / 2**20:6.0f} {pss / 2**20:6.0f}")
    print(f"total {time.time() - t0:.0f} s")
    print("RESULT-JSON " + json.dumps(r))


if __name__ == "__main__":
    main()
