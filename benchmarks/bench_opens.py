"""Benchmark: a query that cannot prune, over a 731-partition day namespace vs one dataset.

Builds (once, reused with ``--dir``) ``--rows`` rows (int64 ``id`` unique and
random, int64 ``eid`` unique and increasing with ``day`` as event ids are,
date32 ``day`` over 731 days, float64 ``x``, utf8 ``s``) as

* a partitioned namespace with ``identity(day)``: 731 partition tables;
* one Lance dataset with the same rows (written by pylance).

Then measures, in one process and alternating the two sides each round
(best of ``--repeat`` rounds):

* point lookup ``SELECT * FROM t WHERE id = K`` (``id`` is not a partition
  column, so nothing is pruned; its values are random, so the per-partition
  column bounds in ``__manifest`` cannot help either: every partition table is
  opened and scanned);
* clustered point lookup ``... WHERE eid = K`` (not a partition column either,
  but every partition's ``eid`` bounds are narrow: the planner skips all
  partition tables but one, docs/pruning.md "Column bounds");
* ``SELECT count(*) FROM t`` (answered from metadata, no pages read);
* ``SELECT count(*), sum(x) FROM t``;
* "cold": a new ``SessionContext``, registration and one point lookup with
  nothing opened before (the process-wide open caches are cleared);
* with ``--threads N``: N threads on one shared context running one-day
  aggregates and day-pruned lookups (queries/s, p50, p99; answers checked).

Each query is planned and run through ``lance_sql.SessionContext``; answers
of both sides are compared. The ratio namespace / one dataset is the result
(issue #18: point lookup <= 1.5x).

Usage: ``python benchmarks/bench_opens.py [--rows N] [--repeat R] [--dir PATH]
[--bounds-on-off] [--indexed]`` (``--bounds-on-off`` also times both lookups
with column-bounds skipping switched off, alternating in one process;
``--indexed`` gives the namespace and the dataset a BTREE index on ``id``, so
the namespace has key filters, docs/pruning.md "Key filters", and adds the
indexed namespace's lookup against the plain dataset).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa

import lance_sql
from lance_sql.planning import key_filter_skipping as key_filters
from lance_sql.tables.namespace.namespace import PartitionedNamespace

DAYS = 731


def make_table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    start = datetime.date(2024, 1, 1).toordinal() - datetime.date(1970, 1, 1).toordinal()
    days = np.sort(rng.integers(0, DAYS, rows)) + start
    days[:DAYS] = np.arange(DAYS) + start  # every day present (rows >= DAYS)
    eid = np.empty(rows, np.int64)  # event ids: increasing with day (clustered)
    eid[np.argsort(days, kind="stable")] = np.arange(rows)
    words = np.array([f"value-{i:05d}" for i in range(1000)], dtype=object)
    return pa.table(
        {
            "id": pa.array(rng.permutation(rows), pa.int64()),
            "eid": pa.array(eid, pa.int64()),
            "day": pa.array(days.astype(np.int32), pa.date32()),
            "x": pa.array(rng.random(rows), pa.float64()),
            "s": pa.array(words[rng.integers(0, len(words), rows)], pa.string()),
        }
    )


def build(directory: Path, rows: int, indexed: bool = False) -> tuple[str, str]:
    """The namespace and the dataset; ``indexed``: both with a BTREE index on ``id`` (the
    namespace's through ``ns.create_scalar_index``, which also builds key filters)."""
    suffix = "_idx" if indexed else ""
    ns_root, one_uri = directory / f"days_ns{suffix}", directory / f"days_one{suffix}.lance"
    marker = directory / f"built_{rows}_eid2{suffix}"
    if marker.exists():
        return str(ns_root), str(one_uri)
    for p in (ns_root, one_uri):
        if p.exists():
            shutil.rmtree(p)
    data = make_table(rows)
    spec = [{"field_id": "day", "source": "day", "transform": {"type": "identity"}}]
    ns = PartitionedNamespace.create(str(ns_root), data.schema, spec)
    ns.append(data)
    ds = lance.write_dataset(data, str(one_uri))
    if indexed:
        ns.create_scalar_index("id", "BTREE")
        ds.create_scalar_index("id", "BTREE")
    marker.touch()
    return str(ns_root), str(one_uri)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def cpu_timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall time and process CPU time (all threads): on a loaded machine CPU is steadier."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def run(rows: int, repeat: int, directory: Path, indexed: bool = False) -> list[dict[str, Any]]:
    ns_root, one_uri = build(directory, rows, indexed)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("ns", ns_root)
    ctx.register_lance("one", one_uri)
    key = rows // 3
    queries = {}
    if indexed:  # the indexed namespace (key filters) against the plain dataset too, and
        # against itself with key filters switched off (alternating in this process)
        queries["indexed ns id = K, key filters off"] = "SELECT id, day, x, s FROM {} WHERE id = "
        queries["indexed ns id = K, key filters off"] += str(key)
        _, plain_uri = build(directory, rows)
        ctx.register_lance("plain", plain_uri)
        queries["indexed ns id = K vs plain one"] = (
            "SELECT id, day, x, s FROM {} WHERE id = " + str(key)
        )
    queries |= {
        "point lookup WHERE id = K (no pruning)": "SELECT id, day, x, s FROM {} WHERE id = "
        + str(key),
        "clustered lookup WHERE eid = K (bounds)": "SELECT id, day, x, s FROM {} WHERE eid = "
        + str(key),
        "count(*)": "SELECT count(*) AS n FROM {}",
        "count(*), sum(x)": "SELECT count(*) AS n, sum(x) AS s FROM {}",
    }
    results = []
    for name, sql in queries.items():

        def ours(sql: str = sql) -> Any:
            return ctx.sql(sql.format("ns")).to_pylist()

        other = "plain" if name.endswith("vs plain one") else "one"
        if name.endswith("key filters off"):
            other = "ns"

        def base(sql: str = sql, other: str = other) -> Any:
            if other != "ns":
                return ctx.sql(sql.format(other)).to_pylist()
            key_filters.ENABLED[0] = False
            try:
                return ctx.sql(sql.format(other)).to_pylist()
            finally:
                key_filters.ENABLED[0] = True

        got, expected = ours(), base()  # warm both (page cache, open datasets)
        if not _same(got, expected):
            raise AssertionError(f"{name}: namespace {got} != one dataset {expected}")
        t_ours, t_base = [], []
        for _ in range(repeat):
            t_ours.append(cpu_timed(ours))
            t_base.append(cpu_timed(base))
        results.append(
            {
                "query": name,
                "namespace_s": min(t[0] for t in t_ours),
                "one_s": min(t[0] for t in t_base),
                "ratio": min(t[0] for t in t_ours) / min(t[0] for t in t_base),
                "cpu_ratio": min(t[1] for t in t_ours) / max(1e-9, min(t[1] for t in t_base)),
                "namespace_cpu_s": min(t[1] for t in t_ours),
            }
        )
    results.append(
        _cold(ns_root, one_uri, queries["point lookup WHERE id = K (no pruning)"], repeat)
    )
    return results


def bounds_on_off(ns_root: str, rows: int, repeat: int) -> list[dict[str, Any]]:
    """The two point lookups with column-bounds skipping on / off (alternating, one process).

    Off = ``planning.bounds_skipping.skip_by_bounds`` replaced by a function that skips
    nothing, i.e. the planner as it was before bounds. Answers are compared.
    """
    from lance_sql.planning import bounds_skipping as bounds

    real = bounds.skip_by_bounds

    def off(pred: Any, table: pa.Table) -> tuple[pa.Table, int]:
        return table, 0

    ctx = lance_sql.SessionContext()
    ctx.register_namespace("ns", ns_root)
    key = rows // 3
    out = []
    for name, col in (("random id", "id"), ("clustered eid", "eid")):
        sql = f"SELECT id, day, x, s FROM ns WHERE {col} = {key}"
        t_on, t_off = [], []
        try:
            for _ in range(repeat):
                bounds.skip_by_bounds = real
                t, on_rows = timed(lambda sql=sql: ctx.sql(sql).to_pylist())
                t_on.append(t)
                bounds.skip_by_bounds = off
                t, off_rows = timed(lambda sql=sql: ctx.sql(sql).to_pylist())
                t_off.append(t)
                if not _same(on_rows, off_rows):
                    raise AssertionError(f"{sql}: {on_rows} != {off_rows}")
        finally:
            bounds.skip_by_bounds = real
        out.append({"lookup": name, "on_s": min(t_on), "off_s": min(t_off)})
    return out


def service(ns_root: str, one_uri: str, rows: int, threads: int, per_thread: int) -> dict[str, Any]:
    """``threads`` threads on one shared context: one-day aggregates and day-pruned lookups.

    Every answer is checked against the same query over the one dataset
    (computed first, single-threaded). Returns queries/s and latency percentiles.
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    ctx = lance_sql.SessionContext()
    ctx.register_namespace("ns", ns_root)
    ctx.register_lance("one", one_uri)
    start = datetime.date(2024, 1, 1)
    work = []
    for i in range(threads * per_thread):
        day = (start + datetime.timedelta(days=(i * 37) % DAYS)).isoformat()
        if i % 2:
            sql = f"SELECT count(*) AS n, sum(x) AS s FROM {{}} WHERE day = DATE '{day}'"
        else:
            key = (i * 7919) % rows
            sql = (
                f"SELECT id, x FROM {{}} WHERE day = DATE '{day}' AND id >= {key} "
                "ORDER BY id LIMIT 3"
            )
        work.append((sql, ctx.sql(sql.format("one")).to_pylist()))
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        for sql, expected in work[k * per_thread : (k + 1) * per_thread]:
            t, got = timed(lambda sql=sql: ctx.sql(sql.format("ns")).to_pylist())
            if not _same(got, expected):
                raise AssertionError(f"{sql}: {got} != {expected}")
            with lock:
                latencies.append(t)

    begin = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, range(threads)))
    elapsed = time.perf_counter() - begin
    latencies.sort()
    return {
        "threads": threads,
        "queries": len(latencies),
        "qps": len(latencies) / elapsed,
        "p50_ms": 1e3 * latencies[len(latencies) // 2],
        "p99_ms": 1e3 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    }


def _forget_opened() -> None:
    """Drop what earlier queries opened (process-wide caches, when this version has them)."""
    try:
        from lance_sql.tables import dataset_cache
        from lance_sql.tables.namespace import reader
    except ImportError:
        return
    reader._OPENED.clear()
    dataset_cache._session = None


def _cold(ns_root: str, one_uri: str, sql: str, repeat: int) -> dict[str, Any]:
    """Register in a new context and run the lookup once, nothing opened before (both sides)."""

    def ours() -> Any:
        _forget_opened()
        ctx = lance_sql.SessionContext()
        ctx.register_namespace("ns", ns_root)
        return ctx.sql(sql.format("ns")).to_pylist()

    def base() -> Any:
        _forget_opened()
        ctx = lance_sql.SessionContext()
        ctx.register_lance("one", one_uri)
        return ctx.sql(sql.format("one")).to_pylist()

    t_ours, t_base = [], []
    for _ in range(max(2, repeat // 2)):
        t_ours.append(cpu_timed(ours))
        t_base.append(cpu_timed(base))
    return {
        "query": "cold: register + point lookup",
        "namespace_s": min(t[0] for t in t_ours),
        "one_s": min(t[0] for t in t_base),
        "ratio": min(t[0] for t in t_ours) / min(t[0] for t in t_base),
        "cpu_ratio": min(t[1] for t in t_ours) / max(1e-9, min(t[1] for t in t_base)),
        "namespace_cpu_s": min(t[1] for t in t_ours),
    }


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b, strict=True):
        for k, va in ra.items():
            vb = rb[k]
            if isinstance(va, float) and isinstance(vb, float):
                if abs(va - vb) > 1e-9 * max(1.0, abs(vb)):
                    return False
            elif va != vb:
                return False
    return True


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=None, help="keep the data here (reused)")
    parser.add_argument(
        "--threads", type=int, default=0, help="also run the service mix on N threads"
    )
    parser.add_argument("--per-thread", type=int, default=20)
    parser.add_argument(
        "--bounds-on-off", action="store_true", help="also time both lookups with bounds off"
    )
    parser.add_argument(
        "--indexed",
        action="store_true",
        help="namespace and dataset with a BTREE index on id (namespace key filters)",
    )
    args = parser.parse_args(argv)
    tmp = None
    directory = args.dir
    if directory is None:
        tmp = tempfile.mkdtemp(prefix="bench_opens_")
        directory = Path(tmp)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        results = run(max(args.rows, DAYS), args.repeat, directory, args.indexed)
        if args.bounds_on_off:
            ns_root, _ = build(directory, max(args.rows, DAYS))
            for r in bounds_on_off(ns_root, max(args.rows, DAYS), args.repeat):
                print(
                    f"bounds on/off, {r['lookup']} lookup: {r['on_s']:.4f} s / "
                    f"{r['off_s']:.4f} s = {r['on_s'] / r['off_s']:.2f}"
                )
        if args.threads:
            ns_root, one_uri = build(directory, max(args.rows, DAYS))
            svc = service(ns_root, one_uri, max(args.rows, DAYS), args.threads, args.per_thread)
            print(
                f"service: {svc['threads']} threads, {svc['queries']} queries (one-day "
                f"aggregates and day-pruned lookups, answers checked): {svc['qps']:.1f} queries/s, "
                f"p50 {svc['p50_ms']:.1f} ms, p99 {svc['p99_ms']:.1f} ms"
            )
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"rows={args.rows} partition tables={DAYS} repeat={args.repeat} (best of, alternating)")
    head = f"{'query':42} {'namespace s':>12} {'one s':>8} {'ratio':>6}"
    print(f"{head} {'ns cpu s':>9} {'cpu ratio':>9}")
    for r in results:
        print(
            f"{r['query']:42} {r['namespace_s']:12.4f} {r['one_s']:8.4f} {r['ratio']:6.2f} "
            f"{r['namespace_cpu_s']:9.4f} {r['cpu_ratio']:9.2f}"
        )
    if hasattr(os, "getloadavg"):
        print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    return results


if __name__ == "__main__":
    main()
