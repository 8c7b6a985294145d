"""Benchmark: serving queries from 8 threads (issue #18, "Service").

Builds (once, reused with ``--dir``) ``--rows`` rows (int64 ``id`` unique,
date32 ``day`` over 731 days, float64 ``x``, utf8 ``s``) as

* a namespace partitioned by ``identity(day)`` (731 partition tables) with a
  namespace BTREE scalar index on ``id`` (``ns.create_scalar_index``);
* one Lance dataset with the same rows and BTREE indexes on ``id`` and ``day``.

Then ``--threads`` threads run a mix of point lookups
(``SELECT id, day, x, s FROM t WHERE id = K``) and one-day aggregates
(``SELECT count(*), sum(x) FROM t WHERE day = DATE 'D'``), ``--queries`` per
thread, against

* lance-sql: ONE shared ``lance_sql.SessionContext`` with the namespace
  registered;
* DuckDB: one cursor per thread over the indexed Lance dataset (registered
  through the Arrow dataset interface; Lance receives DuckDB's filters).

Sides alternate for ``--rounds`` rounds; each round reports queries/s and the
p50/p99 latency; every answer is checked against the in-memory rows. Targets:
lance-sql >= 1.0x DuckDB's queries/s and p99 <= 2x DuckDB's.

Usage: ``python benchmarks/bench_service.py [--rows N] [--threads T]
[--queries Q] [--rounds R] [--dir PATH] [--pool 2,3]``; ``--pool`` adds
``lance_sql.ServicePool`` sides (worker processes, one per count given). The
machine is shared with other jobs: compare ratios only.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import lance
import numpy as np
import pyarrow as pa

import lance_sql

DAYS = 731
EPOCH = datetime.date(1970, 1, 1)


def make_table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    start = (datetime.date(2024, 1, 1) - EPOCH).days
    days = np.sort(rng.integers(0, DAYS, rows)) + start
    days[:DAYS] = np.arange(DAYS) + start
    words = np.array([f"value-{i:05d}" for i in range(1000)], dtype=object)
    return pa.table(
        {
            "id": pa.array(rng.permutation(rows), pa.int64()),
            "day": pa.array(days.astype(np.int32), pa.date32()),
            "x": pa.array(rng.random(rows), pa.float64()),
            "s": pa.array(words[rng.integers(0, len(words), rows)], pa.string()),
        }
    )


def build(directory: Path, rows: int) -> tuple[str, str, pa.Table]:
    ns_root, one_uri = directory / "svc_ns", directory / "svc_one.lance"
    marker = directory / f"svc_built_{rows}"
    data = make_table(rows)
    if marker.exists():
        return str(ns_root), str(one_uri), data
    for p in (ns_root, one_uri):
        if p.exists():
            shutil.rmtree(p)
    spec = [{"field_id": "day", "source": "day", "transform": {"type": "identity"}}]
    ns = lance_sql.PartitionedNamespace.create(str(ns_root), data.schema, spec)
    ns.append(data)
    ns.create_scalar_index("id", "BTREE")
    ds = lance.write_dataset(data, str(one_uri))
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("day", "BTREE")
    marker.touch()
    return str(ns_root), str(one_uri), data


class Workload:
    """The queries (same for both sides) and their expected answers."""

    def __init__(self, data: pa.Table, threads: int, per_thread: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        ids = data.column("id").to_numpy()
        days = data.column("day").cast(pa.int32()).to_numpy()
        xs = data.column("x").to_numpy()
        ss = data.column("s").to_pylist()
        by_id = np.argsort(ids)
        day_n = np.bincount(days - days.min(), minlength=DAYS)
        day_sum = np.bincount(days - days.min(), weights=xs, minlength=DAYS)
        self.plans: list[list[tuple[str, Any]]] = []
        for _ in range(threads):
            plan = []
            for q in range(per_thread):
                if q % 2 == 0:
                    k = int(rng.integers(0, len(ids)))
                    row = int(by_id[k])
                    d = EPOCH + datetime.timedelta(days=int(days[row]))
                    sql = f"SELECT id, day, x, s FROM t WHERE id = {k}"
                    plan.append((sql, ("row", (k, d, float(xs[row]), ss[row]))))
                else:
                    i = int(rng.integers(0, DAYS))
                    d = EPOCH + datetime.timedelta(days=int(days.min()) + i)
                    sql = f"SELECT count(*) AS n, sum(x) AS s FROM t WHERE day = DATE '{d}'"
                    plan.append((sql, ("agg", (int(day_n[i]), float(day_sum[i])))))
            self.plans.append(plan)


def check(got: list[tuple[Any, ...]], expected: tuple[str, Any], sql: str) -> None:
    kind, want = expected
    if kind == "row":
        assert len(got) == 1 and tuple(got[0]) == want, f"{sql}: {got} != {want}"
    else:
        n, s = got[0]
        assert n == want[0] and math.isclose(s or 0.0, want[1], rel_tol=1e-9), (sql, got, want)


def worker_cpu(pool: Any) -> float:
    """CPU seconds (user + system) used so far by a ``ServicePool``'s worker processes."""
    executor = pool._executor  # benchmark only: the pool does not publish its workers
    total = 0.0
    for pid in list(getattr(executor, "_processes", {}) or {}):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            continue
    return total


def run_side(
    runner_for: Callable[[int], Callable[[str], list[tuple[Any, ...]]]],
    work: Workload,
    extra_cpu: Callable[[], float] = lambda: 0.0,
) -> dict[str, float]:
    latencies: list[float] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(work.plans) + 1)

    client_cpu: list[float] = []
    probe_waits: list[float] = []
    done = threading.Event()

    def probe() -> None:
        """How long a thread that sleeps 0.5 ms waits for the GIL once woken."""
        while not done.is_set():
            t0 = time.perf_counter()
            time.sleep(0.0005)
            probe_waits.append(time.perf_counter() - t0 - 0.0005)

    def worker(i: int) -> None:
        run = runner_for(i)
        mine = []
        barrier.wait()
        c0 = time.thread_time()
        try:
            for sql, expected in work.plans[i]:
                t0 = time.perf_counter()
                got = run(sql)
                mine.append(time.perf_counter() - t0)
                check(got, expected, sql)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        with lock:
            latencies.extend(mine)
            client_cpu.append(time.thread_time() - c0)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(work.plans))]
    prober = threading.Thread(target=probe)
    for t in threads:
        t.start()
    barrier.wait()
    start, cpu0 = time.perf_counter(), time.process_time() + extra_cpu()
    prober.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    cpu = time.process_time() + extra_cpu() - cpu0
    done.set()
    prober.join()
    if errors:
        raise errors[0]
    latencies.sort()
    return {
        "qps": len(latencies) / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "cores": cpu / wall,  # CPU the side used (its processes), in cores
        "cpu_ms": 1000 * cpu / len(latencies),  # CPU per query
        # CPU of the client threads (in cores): they run every Python part of a query
        # (parsing, planning, scanner setup; DataFusion also runs scans on the calling
        # thread), so it bounds the share of the wall time the GIL was held by them
        "client_cores": sum(client_cpu) / wall,
        "gil_wait_ms": 1000 * statistics.median(probe_waits or [0.0]),
    }


def cpu_per_query(
    data: pa.Table,
    n: int,
    switched: Callable[[bool], Callable[[int], Callable[[str], list[tuple[Any, ...]]]]],
    ours: Callable[[int], Callable[[str], list[tuple[Any, ...]]]],
    theirs: Callable[[int], Callable[[str], list[tuple[Any, ...]]]],
) -> None:
    """Process CPU and wall time per query on one thread, by query kind, sides alternating.

    Every run gets queries no run asked before (up to the 731 days), so the
    plan cache never hits here; its gain shows in the service rounds, where
    days repeat.
    """
    lookups = [q for q in Workload(data, 1, 8 * n, seed=7).plans[0] if q[1][0] == "row"]
    days: dict[str, tuple[str, Any]] = {}
    for q in Workload(data, 1, 20 * DAYS, seed=5).plans[0]:
        if q[1][0] == "agg":
            days.setdefault(q[0], q)
    aggs = list(days.values())
    np.random.default_rng(11).shuffle(aggs)  # type: ignore[arg-type]
    sides = [("lance-sql", switched(True)), ("lance-sql cuts off", switched(False))]
    sides.append(("duckdb", theirs))
    for kind, pool in (("lookup", lookups), ("one-day aggregate", aggs)):
        for rnd in range(2):
            for j, (name, fn) in enumerate(sides if rnd == 0 else sides[::-1]):
                run = fn(0)
                # distinct queries per run: no side ever repeats a filter here
                at = (rnd * len(sides) + j) * n % max(1, len(pool) - n)
                queries = pool[at : at + n]
                c0, t0 = time.process_time(), time.perf_counter()
                for sql, expected in queries:
                    check(run(sql), expected, sql)
                cpu = 1000 * (time.process_time() - c0) / len(queries)
                wall = 1000 * (time.perf_counter() - t0) / len(queries)
                print(f"cpu {kind:18} {name:20} cpu {cpu:.2f} ms/query, wall {wall:.2f} ms/query")
    switched(True)(0)


def every_day_lookup(data: pa.Table) -> str:
    """One query that looks up one key of every day (opens every partition table's index)."""
    days = data.column("day").cast(pa.int32()).to_numpy()
    _, first = np.unique(days, return_index=True)
    keys = ", ".join(str(int(k)) for k in data.column("id").to_numpy()[first])
    return f"SELECT count(*) FROM t WHERE id IN ({keys})"


def pool_side(
    processes: int, ns_root: str, warm_up: list[str]
) -> tuple[Callable[[int], Callable[[str], list[tuple[Any, ...]]]], Any]:
    """A ``lance_sql.ServicePool`` side: the namespace registered, every worker warmed."""
    pool = lance_sql.ServicePool(processes, warm_up=warm_up)
    pool.register_namespace("t", ns_root)
    pool.start()  # every worker started and warmed before the rounds

    def runner_for(_: int) -> Callable[[str], list[tuple[Any, ...]]]:
        return lambda sql: [tuple(r.values()) for r in pool.sql(sql).to_pylist()]

    return runner_for, pool


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--queries", type=int, default=40, help="queries per thread per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dir", default=None, help="keep (and reuse) the data here")
    p.add_argument(
        "--cuts-off",
        action="store_true",
        help="also run lance-sql with residual elimination, the plan cache and the rewrite "
        "skip cache off",
    )
    p.add_argument(
        "--cpu",
        type=int,
        default=0,
        help="also measure process CPU per query on one thread over this many queries per kind",
    )
    p.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        help="sys.setswitchinterval (seconds) for the whole run (Python's default: 0.005)",
    )
    p.add_argument(
        "--join-dynamic-filters",
        action="store_true",
        help="lance-sql's context with DataFusion's join dynamic filter pushdown on",
    )
    p.add_argument(
        "--pool",
        default="",
        help="also run lance_sql.ServicePool sides with these process counts (e.g. 2,3)",
    )
    args = p.parse_args()
    pool_sides: list[tuple[str, Any]] = []
    if args.switch_interval is not None:
        import sys

        sys.setswitchinterval(args.switch_interval)
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench_service_"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"data in {base}; load average {os.getloadavg()}", flush=True)
    try:
        ns_root, one_uri, data = build(base, args.rows)
        config = None
        if args.join_dynamic_filters:
            from lance_sql.engines.datafusion.session_defaults import default_config

            config = default_config().set(
                "datafusion.optimizer.enable_join_dynamic_filter_pushdown", "true"
            )
        ctx = lance_sql.SessionContext(config)
        ctx.register_namespace("t", ns_root)

        def ours(_: int) -> Callable[[str], list[tuple[Any, ...]]]:
            def run(sql: str) -> list[tuple[Any, ...]]:
                table = ctx.sql(sql).to_arrow_table()
                return [tuple(r.values()) for r in table.to_pylist()]

            return run

        con = duckdb.connect()
        one = lance.dataset(one_uri)

        def theirs(_: int) -> Callable[[str], list[tuple[Any, ...]]]:
            cur = con.cursor()
            cur.register("t", one)
            return lambda sql: cur.execute(sql).fetchall()

        from lance_sql.engines.datafusion import namespace_plans as cuts
        from lance_sql.engines.datafusion import plan_rewrite

        def switched(on: bool) -> Callable[[int], Callable[[str], list[tuple[Any, ...]]]]:
            def runner_for(i: int) -> Callable[[str], list[tuple[Any, ...]]]:
                cuts.ENABLE_PLAN_CACHE[0] = cuts.ENABLE_RESIDUAL_ELIMINATION[0] = on
                plan_rewrite.ENABLE_SKIP_CACHE[0] = on
                return ours(i)

            return runner_for

        warm = Workload(data, 1, 6, seed=99)
        # open every partition table once (a long-running service has them open): a full
        # scan, and one key of every day (lookups open tables through the key filters)
        warm_up = ["SELECT count(*) FROM t WHERE s = 'no such value'", every_day_lookup(data)]
        for query in warm_up:
            ctx.sql(query).collect()
        pools = [int(n) for n in args.pool.split(",") if n.strip()]
        pool_sides = [(f"lance-sql pool {n}", pool_side(n, ns_root, warm_up)) for n in pools]
        if args.cpu:
            cpu_per_query(data, args.cpu, switched, ours, theirs)
        run_side(ours, warm)  # first opens, page cache
        run_side(theirs, warm)
        rows = []
        for r in range(args.rounds):
            work = Workload(data, args.threads, args.queries, seed=r)
            sides = [("lance-sql", switched(True)), ("duckdb", theirs)]
            sides += [(name, side) for name, side in pool_sides]
            if args.cuts_off:
                sides.append(("lance-sql cuts off", switched(False)))
            for name, fn in sides if r % 2 == 0 else sides[::-1]:
                if isinstance(fn, tuple):  # a pool: its workers' CPU counts too
                    res = run_side(fn[0], work, lambda p=fn[1]: worker_cpu(p))
                else:
                    res = run_side(fn, work)
                rows.append({"round": r, "side": name, **res})
                print(rows[-1], flush=True)
        for key in ("qps", "p50_ms", "p99_ms", "cores", "cpu_ms", "client_cores", "gil_wait_ms"):
            a = statistics.median(x[key] for x in rows if x["side"] == "lance-sql")
            b = statistics.median(x[key] for x in rows if x["side"] == "duckdb")
            print(f"{key}: lance-sql {a:.1f}, duckdb {b:.1f}, ratio {a / b:.2f}")
            for name, _ in pool_sides:
                c = statistics.median(x[key] for x in rows if x["side"] == name)
                print(f"  {key}: {name} {c:.1f}, ratio to duckdb {c / b:.2f}")
            if args.cuts_off:
                c = statistics.median(x[key] for x in rows if x["side"] == "lance-sql cuts off")
                print(f"  {key}: lance-sql with the cuts off {c:.1f}, on / off {a / c:.2f}")
    finally:
        for _, side in pool_sides:
            side[1].close()
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
