"""Benchmark: partition pruning — query speed-up, and planning cost on a huge ``__manifest``.

Two parts (issue #6):

``query`` — a namespace of ``--days`` day partitions (``year/month/day(ts)``;
default 3,650 = 10 years) holding ``--rows`` rows (default 20M: ``ts``, an
int ``k``, a string ``s``, a float ``x``), built once with
``PartitionedNamespace.create/append`` into ``--data-dir`` (rebuilt only when
missing or built with other sizes). One-day SQL queries through
``lance_sql.SessionContext.register_namespace`` with pruning (default) vs the
same query with ``prune=None``; results must be equal. Target: >= 100x.

``plan`` — a ``__manifest`` of ``--partitions`` partition tables (default
100,000; spec v1 = year/month/day of ``ts``, spec v2 = the same days x
bucket[16] of ``k``), written with the project's own manifest code (the
partition tables themselves do not exist). ``plan_scan(ns, filter)`` on a
namespace opened per query (what a Spark driver or a fresh query pays) vs two
baselines measured in the same run: (a) ``lance.dataset(__manifest)`` +
``to_table()`` (open and read every row), (b) ``lance.dataset(__manifest)``
alone. Target: plan / (a) <= 3.

Run: ``/work/venv/bin/python benchmarks/pruning.py [--part query|plan|both]
[--rows N] [--days D] [--partitions P] [--data-dir DIR] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

DEFAULT_DIR = Path("/tmp/lance_sql_bench/pruning")
START = dt.datetime(2015, 1, 1)


def best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Best wall time of ``repeats`` runs and the last result."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


# -- part 1: one-day queries over day partitions -------------------------------------------
DAY_SCHEMA = pa.schema(
    [
        pa.field("ts", pa.timestamp("us")),
        pa.field("k", pa.int32()),
        pa.field("s", pa.string()),
        pa.field("x", pa.float64()),
    ]
)
DAY_SPEC = [{"source": "ts", "transform": t} for t in ("year", "month", "day")]


def day_rows(first_day: int, days: int, rows: int, seed: int) -> pa.Table:
    """``rows`` rows spread evenly over ``days`` days from day ``first_day`` (sorted by ts)."""
    rng = np.random.default_rng(seed)
    start_us = int((START - dt.datetime(1970, 1, 1)).total_seconds()) * 1_000_000
    day_us = 86_400 * 1_000_000
    offsets = np.sort(rng.integers(0, days * day_us, rows, dtype=np.int64))
    ts = start_us + first_day * day_us + offsets
    words = np.array([f"w{i:03d}" for i in range(500)], dtype=object)
    return pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("us")),
            "k": pa.array(rng.integers(0, 1_000_000, rows, dtype=np.int32), pa.int32()),
            "s": pa.array(words[rng.integers(0, len(words), rows)], pa.string()),
            "x": pa.array(np.round(rng.random(rows) * 100, 3), pa.float64()),
        },
        schema=DAY_SCHEMA,
    )


def build_day_namespace(root: Path, rows: int, days: int, chunk_days: int = 365) -> Path:
    """The day-partitioned namespace at ``root`` (built once; reused when sizes match)."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    marker = root / "_bench.json"
    want = {"rows": rows, "days": days}
    if marker.exists() and json.loads(marker.read_text()) == want:
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    ns = PartitionedNamespace.create(root, DAY_SCHEMA, DAY_SPEC)
    done = 0
    for first in range(0, days, chunk_days):
        n_days = min(chunk_days, days - first)
        n_rows = rows * (first + n_days) // days - done
        ns.append(day_rows(first, n_days, n_rows, seed=first))
        done += n_rows
    marker.write_text(json.dumps(want))
    return root


def day_queries(days: int) -> list[tuple[str, str]]:
    """(label, SQL) one-day queries on a day in the middle of the data."""
    day = START + dt.timedelta(days=days * 6 // 10)
    d0, d1 = day.date().isoformat(), (day + dt.timedelta(days=1)).date().isoformat()
    agg = "SELECT count(*), sum(x), min(k), max(s) FROM events"
    return [
        ("string literals", f"{agg} WHERE ts >= '{d0}' AND ts < '{d1}'"),
        (
            "TIMESTAMP literals",
            f"{agg} WHERE ts >= TIMESTAMP '{d0} 00:00:00' AND ts < TIMESTAMP '{d1} 00:00:00'",
        ),
        (
            "BETWEEN + k filter",
            f"{agg} WHERE ts BETWEEN TIMESTAMP '{d0} 06:00:00' AND TIMESTAMP '{d0} 18:00:00'"
            " AND k < 500000",
        ),
    ]


def run_queries(root: Path, days: int, repeats: int, full_repeats: int = 1) -> list[dict]:
    """Per query: pruned vs ``prune=None``, each in a fresh context and in a reused one.

    Fresh: a new ``SessionContext`` + ``register_namespace`` per run (reads
    ``__manifest``, opens the partition tables it scans). Reused: one
    registered context per mode, so partition tables opened by an earlier
    query stay open (a long session). The OS page cache is warm for both.
    """
    import lance_sql

    def context(prune: Any) -> Any:
        ctx = lance_sql.SessionContext()
        if prune == "planner":
            ctx.register_namespace("events", str(root))
        else:
            ctx.register_namespace("events", str(root), prune=None)
        return ctx

    kept = {"planner": context("planner"), None: context(None)}
    out = []
    for label, sql in day_queries(days):

        def fresh(prune: Any, sql: str = sql) -> Any:
            return context(prune).sql(sql).to_arrow_table()

        def reused(prune: Any, sql: str = sql) -> Any:
            return kept[prune].sql(sql).to_arrow_table()

        reused(None)  # warm-up: page cache, and opens every table in the reused context
        t_full, r_full = best(lambda: fresh(None), full_repeats)
        t_full_warm, _ = best(lambda: reused(None), full_repeats)
        fresh("planner"), reused("planner")  # warm-up (numba, DataFusion literal cache)
        t_pruned, r_pruned = best(lambda: fresh("planner"), repeats)
        t_pruned_warm, r_warm = best(lambda: reused("planner"), repeats)
        assert r_pruned.equals(r_full) and r_warm.equals(r_full), (label, r_pruned, r_full)
        assert r_full.column(0)[0].as_py() > 0, label
        out.append(
            {
                "query": label,
                "sql": sql,
                "rows": r_full.column(0)[0].as_py(),
                "pruned_ms": t_pruned * 1000,
                "full_ms": t_full * 1000,
                "speedup": t_full / t_pruned,
                "pruned_warm_ms": t_pruned_warm * 1000,
                "full_warm_ms": t_full_warm * 1000,
                "speedup_warm": t_full_warm / t_pruned_warm,
            }
        )
    return out


def print_queries(rows: list[dict]) -> None:
    print("fresh = new context per query; reused = one registered context per mode")
    print(
        f"{'query':20s} {'rows':>6s} {'pruned ms':>10s} {'no-prune ms':>12s} {'speed-up':>9s}"
        f" {'reused: pruned':>15s} {'no-prune':>9s} {'speed-up':>9s}"
    )
    for r in rows:
        print(
            f"{r['query']:20s} {r['rows']:6d} {r['pruned_ms']:10.1f} {r['full_ms']:12.1f}"
            f" {r['speedup']:8.0f}x {r['pruned_warm_ms']:15.1f} {r['full_warm_ms']:9.1f}"
            f" {r['speedup_warm']:8.0f}x"
        )


# -- part 2: planning on a 100,000-partition __manifest --------------------------------------
PLAN_SCHEMA = pa.schema([pa.field("ts", pa.timestamp("us")), pa.field("k", pa.int64())])
BUCKETS = 16


def build_plan_manifest(root: Path, partitions: int) -> Path:
    """A namespace whose ``__manifest`` lists ``partitions`` tables (no table data)."""
    from lance_sql.tables.namespace.layout import (
        NAMESPACE,
        TABLE,
        TABLE_NAME,
        join_object_id,
        random_namespace_name,
        table_dir_name,
    )
    from lance_sql.tables.namespace.manifest_table import commit_rows, conform_rows
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    marker = root / "_bench.json"
    want = {"partitions": partitions}
    if marker.exists() and json.loads(marker.read_text()) == want:
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    time_fields = [{"source": "ts", "transform": t} for t in ("year", "month", "day")]
    ns = PartitionedNamespace.create(root, PLAN_SCHEMA, time_fields)
    spec2 = ns.add_spec([*time_fields, {"source": "k", "transform": "bucket", "num_buckets": 16}])
    spec1 = ns.specs[1]
    columns = [f.column_name for f in spec2.fields]
    rows: list[dict[str, Any]] = list(ns.snapshot.rows.to_pylist())
    days = max(partitions // (BUCKETS + 1), 1)

    def add(spec: Any, key: tuple[Any, ...], namespaces: dict[tuple, str]) -> None:
        parent = spec.namespace_name
        for level in range(1, len(key) + 1):
            oid = namespaces.get(key[:level])
            if oid is None:
                oid = namespaces[key[:level]] = join_object_id(parent, random_namespace_name())
                values = dict(zip(columns, key[:level], strict=False))
                rows.append({"object_id": oid, "object_type": NAMESPACE, **values})
            parent = oid
        oid = join_object_id(parent, TABLE_NAME)
        values = dict(zip(columns, key, strict=False))
        rows.append(
            {
                "object_id": oid,
                "object_type": TABLE,
                "location": table_dir_name(oid),
                "metadata": "{}",
                "read_version": 1,
                **values,
            }
        )

    ns1: dict[tuple, str] = {}
    ns2: dict[tuple, str] = {}
    for i in range(days):
        d = START.date() + dt.timedelta(days=i)
        add(spec1, (d.year, d.month, d.day), ns1)
        for b in range(BUCKETS):
            add(spec2, (d.year, d.month, d.day, b), ns2)
    schema = ns.snapshot.lance_schema
    table = conform_rows(pa.Table.from_pylist(rows, schema=_nullable(schema)), schema)
    commit_rows(ns.snapshot, table)
    marker.write_text(json.dumps(want))
    return root


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type, True) for f in schema])


def plan_filters(partitions: int) -> list[tuple[str, str]]:
    days = max(partitions // (BUCKETS + 1), 1)
    mid = START + dt.timedelta(days=days // 2)
    span = max(days // 100, 1)
    d = mid.date().isoformat()
    d_end = (mid + dt.timedelta(days=span)).date().isoformat()
    other = (START + dt.timedelta(days=days // 5)).date().isoformat()
    other_end = (START + dt.timedelta(days=days // 5 + 3)).date().isoformat()
    return [
        ("one partition (=)", f"ts = TIMESTAMP '{d} 10:30:00' AND k = 42"),
        ("range ~1%", f"ts >= '{d}' AND ts < '{d_end}'"),
        (
            "IN list",
            f"ts IN (TIMESTAMP '{d} 01:00:00', TIMESTAMP '{other} 02:00:00') AND k IN (1, 2, 3)",
        ),
        ("OR", f"(ts >= '{d}' AND ts < '{d_end}') OR (ts >= '{other}' AND ts < '{other_end}')"),
        ("bucket field", f"abs(murmur3(k)) % 16 = 3 AND ts >= '{d}' AND ts < '{d_end}'"),
    ]


def run_plan(root: Path, partitions: int, repeats: int) -> list[dict]:
    import lance

    from lance_sql.planning import manifest_scan
    from lance_sql.planning.namespace_scan import plan_scan
    from lance_sql.tables.namespace.layout import manifest_uri, root_uri
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    uri = manifest_uri(root_uri(root))

    def open_read() -> pa.Table:
        return lance.dataset(uri).to_table()

    def open_only() -> Any:
        return lance.dataset(uri)

    open_read(), open_only()  # warm
    t_read, all_rows = best(open_read, repeats)
    t_open, _ = best(open_only, repeats)
    total = sum(1 for t in all_rows.column("object_type").to_pylist() if t == "table")
    ns = PartitionedNamespace.open(root)
    out = []
    for label, sql in plan_filters(partitions):

        def pushed(sql: str = sql) -> Any:
            return plan_scan(str(root), sql)

        def first(sql: str = sql) -> Any:
            manifest_scan._TOTALS.clear()  # per-content totals cache: as a new process
            return plan_scan(str(root), sql)

        def in_memory(sql: str = sql) -> Any:
            return plan_scan(ns, sql)

        in_memory()  # warm caches (DataFusion literal folding, numba)
        t_pushed, result = best(pushed, repeats)
        t_first, _ = best(first, repeats)
        t_mem, expected = best(in_memory, repeats)
        assert result.partitions == expected.partitions, label
        assert result.total_partitions == total, (result.total_partitions, total)
        assert 0 < len(result.partitions) < total, label
        out.append(
            {
                "filter": label,
                "sql": sql,
                "selected": len(result.partitions),
                "total": total,
                "plan_ms": t_pushed * 1000,
                "first_ms": t_first * 1000,
                "mem_ms": t_mem * 1000,
                "read_ms": t_read * 1000,
                "open_ms": t_open * 1000,
                "ratio_read": t_pushed / t_read,
                "ratio_first": t_first / t_read,
                "ratio_open": t_pushed / t_open,
            }
        )
    return out


def print_plan(rows: list[dict]) -> None:
    print(
        "plan = plan_scan(root, filter) (filter pushed into the __manifest scan);"
        " 1st = same, first call in a process; mem = plan_scan(open namespace, filter)"
    )
    print(
        f"{'filter':18s} {'selected':>13s} {'plan ms':>8s} {'1st ms':>7s} {'mem ms':>7s}"
        f" {'(a) ms':>7s} {'(b) ms':>7s} {'plan/(a)':>8s} {'1st/(a)':>8s} {'plan/(b)':>8s}"
    )
    for r in rows:
        sel = f"{r['selected']}/{r['total']}"
        print(
            f"{r['filter']:18s} {sel:>13s} {r['plan_ms']:8.1f} {r['first_ms']:7.1f}"
            f" {r['mem_ms']:7.1f} {r['read_ms']:7.1f} {r['open_ms']:7.1f}"
            f" {r['ratio_read']:8.2f} {r['ratio_first']:8.2f} {r['ratio_open']:8.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("query", "plan", "both"), default="both")
    parser.add_argument("--rows", type=int, default=20_000_000, help="rows (query part)")
    parser.add_argument("--days", type=int, default=3650, help="day partitions (query part)")
    parser.add_argument("--partitions", type=int, default=100_000, help="(plan part)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.part in ("query", "both"):
        t0 = time.perf_counter()
        root = build_day_namespace(args.data_dir / "days", args.rows, args.days)
        print(f"namespace ready at {root} ({time.perf_counter() - t0:.1f} s)")
        print_queries(run_queries(root, args.days, args.repeats))
    if args.part in ("plan", "both"):
        t0 = time.perf_counter()
        root = build_plan_manifest(args.data_dir / "manifest", args.partitions)
        print(f"manifest ready at {root} ({time.perf_counter() - t0:.1f} s)")
        print_plan(run_plan(root, args.partitions, args.repeats))


if __name__ == "__main__":
    main()
