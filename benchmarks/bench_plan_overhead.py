"""Planning cost lance-sql's plan-level integration adds per query (issue #15: target < 5 ms).

Two namespaces, orders bucket[16] on customer_id and customers bucket[8] on id
(every bucket filled), and a two-namespace join query. Three timings per
round, alternated in one process so machine load hits all alike; medians of
``--runs`` rounds:

- ``plain``: ``ctx.sql(q)`` and DataFusion's own physical planning of the
  plan as built (what running the query would plan without lance-sql's passes);
- ``integrated``: ``ctx.sql(q)`` and ``execution_plan()`` of the
  :class:`LanceDataFrame` (lance-sql's rewrite, then physical planning);
- ``rewrite``: ``ctx.sql(q)`` and ``lance_rewrite()`` alone.

``integrated - plain`` is the cost added per query; ``rewrite - sql`` the
rewrite itself. Nothing is read from the partition tables' data. Wall time
and process CPU time (all threads; less sensitive to other processes on a
busy machine) are both reported.

    python benchmarks/bench_plan_overhead.py --runs 200
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import datafusion
import pyarrow as pa

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

QUERIES = {
    "join": "SELECT o.order_id, c.segment FROM orders o JOIN customers c ON o.customer_id = c.id",
    "join+agg+where": (
        "SELECT c.segment, sum(o.amount) AS s FROM orders o JOIN customers c "
        "ON o.customer_id = c.id WHERE o.amount > 10 GROUP BY c.segment"
    ),
}


def write(root: Path, rows: int) -> None:
    orders = pa.table(
        {
            "order_id": pa.array(range(rows), pa.int64()),
            "customer_id": pa.array([i % 1000 for i in range(rows)], pa.int64()),
            "amount": pa.array([i / 4 for i in range(rows)], pa.float64()),
        }
    )
    customers = pa.table(
        {
            "id": pa.array(range(1000), pa.int64()),
            "segment": pa.array([f"s{i % 5}" for i in range(1000)], pa.string()),
        }
    )
    for name, table, source, n in (
        ("orders", orders, "customer_id", 16),
        ("customers", customers, "id", 8),
    ):
        ns = PartitionedNamespace.create(
            str(root / name),
            table.schema,
            [{"source": source, "transform": "bucket", "num_buckets": n}],
        )
        ns.append(table)


def measure(root: Path, sql: str, runs: int) -> dict[str, float]:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("orders", str(root / "orders"))
    ctx.register_namespace("customers", str(root / "customers"))
    done = ctx.sql(sql).lance_rewrite()
    if len(done.used) != 1:
        raise SystemExit(f"expected one storage-partitioned join, got {done.reasons}")

    def plain() -> None:
        datafusion.DataFrame.execution_plan(datafusion.DataFrame(ctx.sql(sql).df))

    def integrated() -> None:
        ctx.sql(sql).execution_plan()

    def rewrite() -> None:
        ctx.sql(sql).lance_rewrite()

    def sql_only() -> None:
        ctx.sql(sql)

    variants = {"sql": sql_only, "plain": plain, "integrated": integrated, "rewrite": rewrite}
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():  # warm up (imports, caches)
        fn()
    for _ in range(runs):
        for name, fn in variants.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    med = {name: 1000 * statistics.median(ts) for name, ts in times.items()}
    med |= {f"{name}_cpu": 1000 * statistics.median(ts) for name, ts in cpu.items()}
    med["added"] = med["integrated"] - med["plain"]
    med["rewrite_only"] = med["rewrite"] - med["sql"]
    med["added_cpu"] = med["integrated_cpu"] - med["plain_cpu"]
    med["rewrite_only_cpu"] = med["rewrite_cpu"] - med["sql_cpu"]
    return med


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--rows", type=int, default=20_000)
    args = p.parse_args(argv)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), args.rows)
        for name, sql in QUERIES.items():
            m = measure(Path(tmp), sql, args.runs)
            out[name] = m
            for clock, sfx in (("wall", ""), ("cpu", "_cpu")):
                print(
                    f"{name} ({clock}): medians of {args.runs} alternated rounds (ms): "
                    f"sql {m['sql' + sfx]:.2f}, plain planning {m['plain' + sfx]:.2f}, "
                    f"with lance-sql's rewrite {m['integrated' + sfx]:.2f} "
                    f"(added {m['added' + sfx]:.2f}); rewrite alone {m['rewrite_only' + sfx]:.2f}"
                )
    return out


if __name__ == "__main__":
    main()
