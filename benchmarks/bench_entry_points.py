"""Benchmark: per-read cost of each entry point over one namespace, for comparing two trees.

Builds (``build DIR``) a namespace of 100,000 rows under ``identity(day),
bucket(4, id)`` (800 partition tables), then (``run DIR``) prints the median
milliseconds (wall, then process CPU) of: a SQL one-day aggregate (the same day every time, and a
different day each time), a SQL ``count(*)`` without filter,
``ns.to_table(filter=day == D)`` and ``lance_sql.plan_scan(ns, "day = D")``.

Compare two checkouts by alternating them on the same data (the machine is
shared: compare medians of several alternations, never one run)::

    for i in 1 2 3; do for tree in BEFORE AFTER; do
      PYTHONPATH=$tree python benchmarks/bench_entry_points.py run DIR; done; done
"""

from __future__ import annotations

import datetime as dt
import statistics
import sys
import time
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

import lance_sql
from lance_sql import SessionContext
from lance_sql.tables.namespace.namespace import PartitionedNamespace

DAYS = 200


def _day(i: int) -> dt.date:
    return dt.date(2024, 1, 1) + dt.timedelta(days=i % DAYS)


def build(root: str) -> None:
    n = DAYS * 500
    table = pa.table(
        {
            "day": pa.array([_day(i) for i in range(n)], pa.date32()),
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array([float(i) for i in range(n)]),
        }
    )
    PartitionedNamespace.create(root, table.schema, "identity(day), bucket(4, id)").append(table)


def _median_ms(f: Callable[[int], object], k: int) -> tuple[float, float]:
    """Median wall and process CPU milliseconds of ``k`` calls."""
    wall, cpu = [], []
    for i in range(k):
        t0, c0 = time.perf_counter(), time.process_time()
        f(i)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def run(root: str) -> dict[str, tuple[float, float]]:
    ns = PartitionedNamespace.open(root)
    ctx = SessionContext()
    ctx.register_namespace("t", root)
    agg = "SELECT count(*), sum(x) FROM t WHERE day = DATE '{}'"
    return {
        "sql_same_day": _median_ms(lambda i: ctx.sql(agg.format(_day(31))).to_arrow_table(), 40),
        "sql_varied_day": _median_ms(lambda i: ctx.sql(agg.format(_day(i))).to_arrow_table(), 40),
        "sql_count_all": _median_ms(
            lambda i: ctx.sql("SELECT count(*) FROM t").to_arrow_table(), 15
        ),
        "to_table_day": _median_ms(
            lambda i: ns.to_table(filter=pc.field("day") == pa.scalar(_day(i), pa.date32())), 10
        ),
        "plan_scan_day": _median_ms(
            lambda i: lance_sql.plan_scan(ns, f"day = DATE '{_day(i)}'").object_ids, 40
        ),
    }


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit("usage: bench_entry_points.py build|run DIR")
    if sys.argv[1] == "build":
        build(sys.argv[2])
    else:
        timed = run(sys.argv[2]).items()
        print(" ".join(f"{k}={wall:.2f}" for k, (wall, _) in timed))
        print(" ".join(f"cpu_{k}={cpu:.2f}" for k, (_, cpu) in timed))
