"""Benchmark: the life of a namespace (issue #17): dynamic overwrite, point delete, compaction.

Three parts, each measured in one process with the two sides alternating every
round; the result is the ratio of the medians (namespace / baseline):

* ``overwrite``: a namespace partitioned by ``identity(day)`` over 365 days
  (``--overwrite-rows`` rows in all) and the same rows as Hive-style Parquet
  partitions. Each round replaces one day by ``--day-rows`` new rows (each
  size measured separately): ``ns.overwrite(rows, partitions="dynamic")``
  against rewriting that day's Parquet partition with pyarrow (remove the
  day's directory, ``pq.write_table`` the new rows). Target <= 1.5x. A third
  side, pylance writing the same rows as a new dataset (``write_dataset``: one
  file write and one commit, the least any Lance write does), shows how much
  of the ratio is Lance's own and how much the namespace's.
* ``delete``: ``--delete-rows`` rows (default 10M) in 64 partitions
  (``identity(k)``) against one pylance dataset with the same rows. Each round
  deletes one row ``WHERE id = K`` (``id`` is not a partition column: every
  partition may match) with ``ns.delete`` and with pylance's ``delete``.
  Target <= 1.2x. Also reported: the same point delete with the partition
  value given (``k = .. AND id = K``: prunes to one partition).
* ``index``: appends of 1,000 rows (into one partition, and spread over all
  64) to a ``--index-rows``-row namespace with a BTREE namespace index, against
  the same appends without the index; then, on one partition table, what
  bringing the BTREE up to date after an append costs done three ways
  (``optimize_indices`` merging, a delta index, a full rebuild) and the point
  query after each (report).
* ``overwrite_ops`` (not part of ``all``): ``--ops`` dynamic overwrites back to
  back on the same namespace, no baseline: wall time and the CPU time of the
  Python thread per overwrite (what the namespace's own code costs; Lance's
  threads excluded), steadier than wall-clock ratios on a loaded machine.
* ``compact``: a partition table that received ``--appends`` small appends,
  read (``SELECT count(*), sum(x)`` through ``lance_sql.SessionContext``)
  before and after ``ns.compact()`` (report only).

Answers are checked: the rows each side deletes, and after the overwrite and
delete rounds the namespace's rows equal the baseline's.

Usage: ``python benchmarks/bench_lifecycle.py [--part all|overwrite|overwrite_ops|delete|compact]
[--delete-rows N] [--overwrite-rows N] [--rows A,B] [--ops N] [--appends N] [--rounds R]
[--dir PATH] [--profile]``. The machine is shared with other jobs: compare ratios only.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lance_sql

# lance_sql.PartitionedNamespace, not the module's: importing it through the package
# registers the pruning planner its row operations use (filter_hook.py)
PartitionedNamespace = lance_sql.PartitionedNamespace

DAYS = 365
PARTS = 64


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _timed_cpu(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall, CPU of the whole process including Lance's threads, result): on a loaded
    machine the CPU ratio moves far less than the wall-clock one."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def _profile(fn: Callable[[], Any], top: int = 25) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


# -- dynamic overwrite -------------------------------------------------------------------
def day_table(rows: int, days: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    start = datetime.date(2025, 1, 1).toordinal() - datetime.date(1970, 1, 1).toordinal()
    day = np.repeat(np.arange(days), -(-rows // days))[:rows] + start
    return pa.table(
        {
            "id": pa.array(np.arange(rows), pa.int64()),
            "day": pa.array(day.astype(np.int32), pa.date32()),
            "x": pa.array(rng.random(rows), pa.float64()),
            "s": pa.array([f"v{i % 997}" for i in range(rows)], pa.string()),
        }
    )


def bench_overwrite(
    base: Path, rows: int, day_rows: list[int], rounds: int, profile: bool
) -> list[dict[str, Any]]:
    data = day_table(rows, DAYS, 1)
    spec = [{"field_id": "day", "source": "day", "transform": {"type": "identity"}}]
    ns = PartitionedNamespace.create(base / "ow_ns", data.schema, spec)
    ns.append(data)
    hive = base / "ow_parquet"
    days = data.column("day").to_numpy()
    all_days = np.unique(days)
    for d in all_days:
        path = hive / f"day={d}"
        path.mkdir(parents=True)
        pq.write_table(data.filter(pa.array(days == d)), path / "part-0.parquet")
    rng = np.random.default_rng(7)
    out = []
    for size in day_rows:
        ns_times, pq_times, pl_times = [], [], []
        ns_cpu: list[float] = []
        pq_cpu: list[float] = []
        for r in range(rounds):
            d = all_days[int(rng.integers(0, DAYS))]
            new = pa.table(
                {
                    "id": pa.array(np.arange(size) + (len(out) * rounds + r + 1) * 10**8),
                    "day": pa.array(np.full(size, d, np.int32), pa.date32()),
                    "x": pa.array(rng.random(size), pa.float64()),
                    "s": pa.array([f"w{i % 991}" for i in range(size)], pa.string()),
                }
            )

            def parquet(new: pa.Table = new, d: Any = d) -> None:
                path = hive / f"day={d}"
                shutil.rmtree(path)
                path.mkdir()
                pq.write_table(new, path / "part-0.parquet")

            def namespace(new: pa.Table = new) -> None:
                ns.overwrite(new, partitions="dynamic")

            def pylance(new: pa.Table = new, d: Any = d, r: int = r, n: int = size) -> None:
                # the Lance floor: the same rows as a new dataset (one write, one commit)
                lance.write_dataset(new, base / "ow_lance" / f"{n}_{r}_{d}.lance")

            if profile and r == 0:
                _profile(namespace)
                parquet()
                continue
            sides = [(namespace, ns_times, ns_cpu), (parquet, pq_times, pq_cpu)]
            sides.append((pylance, pl_times, []))
            for fn, times, cpu in sides[r % 3 :] + sides[: r % 3]:
                wall, used, _ = _timed_cpu(fn)
                times.append(wall)
                cpu.append(used)
        measure = f"dynamic overwrite of one day ({size:,} rows) / pyarrow Parquet rewrite"
        out.append(_result(measure, ns_times, pq_times, size, cpu=(ns_cpu, pq_cpu)))
        out[-1]["pylance_write_s"] = statistics.median(pl_times)
        out[-1]["ratio_to_pylance_write"] = out[-1]["namespace_s"] / out[-1]["pylance_write_s"]
        out[-1]["fastest_ms"] = {  # namespace, pyarrow, pylance alone
            k: round(1e3 * min(v), 2)
            for k, v in (("namespace", ns_times), ("pyarrow", pq_times), ("pylance", pl_times))
        }
        print(out[-1], flush=True)
    # answers: the namespace equals the Parquet partitions
    got = ns.to_table().sort_by("id")
    want = pq.read_table(hive, schema=data.schema).sort_by("id")
    assert got.equals(want.select(got.column_names)), "overwrite: namespace != parquet"
    return out


def bench_overwrite_ops(base: Path, rows: int, day_rows: list[int], ops: int) -> list[dict]:
    """``ops`` dynamic overwrites of random days back to back (after 3 warm-up ones), no
    baseline in between: wall time and CPU time of the calling (Python) thread per
    overwrite, which moves far less than wall-clock on a loaded machine (Lance's own
    threads are not in it)."""
    data = day_table(rows, DAYS, 1)
    spec = [{"field_id": "day", "source": "day", "transform": {"type": "identity"}}]
    ns = PartitionedNamespace.create(base / "ops_ns", data.schema, spec)
    ns.append(data)
    days = np.unique(data.column("day").to_numpy())
    rng = np.random.default_rng(7)
    out = []
    for size in day_rows:
        walls, threads = [], []
        for r in range(ops + 3):
            d = days[int(rng.integers(0, DAYS))]
            new = pa.table(
                {
                    "id": pa.array(np.arange(size) + (r + 1) * 10**8),
                    "day": pa.array(np.full(size, d, np.int32), pa.date32()),
                    "x": pa.array(rng.random(size), pa.float64()),
                    "s": pa.array([f"w{i % 991}" for i in range(size)], pa.string()),
                }
            )
            t0, c0 = time.perf_counter(), time.thread_time()
            ns.overwrite(new, partitions="dynamic")
            if r >= 3:
                walls.append(time.perf_counter() - t0)
                threads.append(time.thread_time() - c0)
        out.append(
            {
                "measure": f"dynamic overwrite of one day ({size:,} rows), back to back",
                "rows": size,
                "ops": ops,
                "median_ms": round(1e3 * statistics.median(walls), 2),
                "fastest_ms": round(1e3 * min(walls), 2),
                "python_thread_cpu_ms": round(1e3 * statistics.median(threads), 2),
            }
        )
        print(out[-1], flush=True)
    return out


# -- point delete ------------------------------------------------------------------------
def delete_table(rows: int, seed: int = 2) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(rng.permutation(rows), pa.int64()),
            "k": pa.array(rng.integers(0, PARTS, rows), pa.int32()),
            "x": pa.array(rng.random(rows), pa.float64()),
        }
    )


def bench_delete(base: Path, rows: int, rounds: int, profile: bool) -> list[dict[str, Any]]:
    ns_root, ds_uri = base / "del_ns", base / "del_one.lance"
    if not (ns_root / "__manifest").exists():
        data = delete_table(rows)
        spec = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
        ns = PartitionedNamespace.create(ns_root, data.schema, spec)
        ns.append(data)
        lance.write_dataset(data, ds_uri)
        del data
    ns = PartitionedNamespace.open(ns_root)
    ds = lance.dataset(ds_uri)
    ids = ds.to_table(columns=["id", "k"])
    id_col, k_col = ids.column("id").to_numpy(), ids.column("k").to_numpy()
    rng = np.random.default_rng(os.getpid())  # fresh rows when --dir reuses the data
    picks = rng.choice(len(id_col), size=2 * rounds + 2, replace=False)
    out = []
    for pruned in (False, True):
        ns_times, pl_times = [], []
        ns_cpu: list[float] = []
        pl_cpu: list[float] = []
        for r in range(rounds):
            i = picks[2 * r + int(pruned)]
            key, part = int(id_col[i]), int(k_col[i])
            where = f"id = {key}" if not pruned else f"k = {part} AND id = {key}"

            def namespace(where: str = where) -> int:
                return ns.delete(where)

            def pylance(key: int = key) -> int:
                before = ds.count_rows()
                ds.delete(f"id = {key}")
                return before - ds.count_rows()

            if profile and r == 0 and not pruned:
                _profile(namespace)
                pylance()
                continue
            first, second = (namespace, pylance) if r % 2 == 0 else (pylance, namespace)
            t1, c1, n1 = _timed_cpu(first)
            t2, c2, n2 = _timed_cpu(second)
            assert n1 == n2 == 1, (where, n1, n2)
            (tn, cn), (tp, cp) = (
                ((t1, c1), (t2, c2)) if first is namespace else ((t2, c2), (t1, c1))
            )
            ns_times.append(tn)
            pl_times.append(tp)
            ns_cpu.append(cn)
            pl_cpu.append(cp)
        what = "point delete, filter prunes to 1 partition" if pruned else "point delete"
        measure = f"{what} / pylance delete on one dataset"
        out.append(_result(measure, ns_times, pl_times, rows, cpu=(ns_cpu, pl_cpu)))
    assert ns.count_rows() == ds.count_rows(), "delete: row counts differ"
    return out


# -- compaction --------------------------------------------------------------------------
def bench_compact(base: Path, appends: int, rounds: int) -> dict[str, Any]:
    schema = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("x", pa.float64())])
    spec = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
    ns = PartitionedNamespace.create(base / "compact_ns", schema, spec)
    for i in range(appends):
        ns.append(
            pa.table(
                {
                    "id": np.arange(i * 100, i * 100 + 100),
                    "k": np.zeros(100, np.int32),
                    "x": np.full(100, 0.5),
                },
                schema=schema,
            )
        )
    query = "SELECT count(*) AS n, sum(x) AS s FROM t"

    def read() -> Any:
        ctx = lance_sql.SessionContext()
        ctx.register_namespace("t", str(ns.root))
        return ctx.sql(query).to_arrow_table().to_pylist()

    def median_read() -> float:
        return statistics.median(_timed(read)[0] for _ in range(rounds))

    fragments_before = len(ns._open(ns.tables()[0])[0].get_fragments())
    answer = read()
    before = median_read()
    t_compact, _ = _timed(lambda: ns.compact())
    fragments_after = len(ns._open(ns.tables()[0])[0].get_fragments())
    assert read() == answer, "compaction changed the answer"
    after = median_read()
    return {
        "measure": f"read of 1 partition table after {appends} appends, before / after compact",
        "before_s": before,
        "after_s": after,
        "ratio": before / after,
        "fragments": f"{fragments_before} -> {fragments_after}",
        "compact_s": t_compact,
    }


# -- index maintenance -------------------------------------------------------------------
def bench_index(base: Path, rows: int, rounds: int) -> list[dict[str, Any]]:
    """An append to an indexed namespace vs the same append without the index, and what
    each way of updating one table's BTREE costs (merge / delta / rebuild)."""
    data = delete_table(rows, seed=5)
    spec = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
    plain = PartitionedNamespace.create(base / "ix_plain", data.schema, spec)
    indexed = PartitionedNamespace.create(base / "ix_indexed", data.schema, spec)
    plain.append(data)
    indexed.append(data)
    indexed.create_scalar_index("id")
    rng = np.random.default_rng(3)
    out = []
    for spread in (1, PARTS):
        t_ix, t_plain = [], []
        for r in range(rounds):
            n = 1000
            new = pa.table(
                {
                    "id": pa.array(np.arange(n) + rows + (spread * rounds + r) * n, pa.int64()),
                    "k": pa.array(rng.integers(0, spread, n), pa.int32()),
                    "x": pa.array(rng.random(n), pa.float64()),
                }
            )
            pair = [(indexed, t_ix), (plain, t_plain)]
            for ns, times in pair if r % 2 == 0 else pair[::-1]:
                times.append(_timed(lambda ns=ns, new=new: ns.append(new))[0])
        what = f"append of 1,000 rows into {spread} partition(s), BTREE kept / no index"
        out.append(_result(what, t_ix, t_plain, rows))
        print(out[-1], flush=True)
    # one partition table: how to bring its index up to date after an append
    entry = indexed.tables()[0]
    uri = entry.uri
    probe = int(indexed.to_table(["id"], partitions=[entry]).column("id")[0].as_py())
    times: dict[str, list[float]] = {"merge": [], "delta": [], "rebuild": []}
    query: dict[str, list[float]] = {k: [] for k in times}
    for r in range(rounds):
        for how in times:
            lance.write_dataset(
                pa.table(
                    {
                        "id": pa.array(np.arange(1000) + 10**9 + r * 10**6 + len(query[how])),
                        "k": pa.array(np.zeros(1000, np.int32)),
                        "x": pa.array(np.zeros(1000)),
                    }
                ),
                uri,
                mode="append",
            )
            ds = lance.dataset(uri)
            if how == "merge":
                op = lambda ds=ds: ds.optimize.optimize_indices(index_names=["id_idx"])  # noqa: E731
            elif how == "delta":
                op = lambda ds=ds: ds.optimize.optimize_indices(  # noqa: E731
                    index_names=["id_idx"], num_indices_to_merge=0
                )
            else:
                op = lambda ds=ds: ds.create_scalar_index("id", "BTREE", name="id_idx")  # noqa: E731
            times[how].append(_timed(op)[0])
            ds = lance.dataset(uri)
            query[how].append(
                statistics.median(
                    _timed(lambda ds=ds: ds.to_table(filter=f"id = {probe}"))[0] for _ in range(5)
                )
            )
    for how in times:
        out.append(
            {
                "measure": f"one table's BTREE after a 1,000-row append: {how}",
                "update_s": statistics.median(times[how]),
                "point_query_s": statistics.median(query[how]),
                "table_rows": lance.dataset(uri).count_rows(),
            }
        )
        print(out[-1], flush=True)
    return out


def _result(
    measure: str,
    ns_times: list[float],
    base_times: list[float],
    rows: int,
    *,
    cpu: tuple[list[float], list[float]] | None = None,
) -> dict:
    n, b = statistics.median(ns_times), statistics.median(base_times)
    out = {
        "measure": measure,
        "rows": rows,
        "namespace_s": n,
        "baseline_s": b,
        "ratio": n / b,
        "rounds": len(ns_times),
        # the fastest round of each side: the least disturbed by other jobs on a loaded VM
        "ratio_of_fastest": min(ns_times) / min(base_times),
    }
    if cpu is not None:
        nc, bc = statistics.median(cpu[0]), statistics.median(cpu[1])
        out.update(namespace_cpu_s=nc, baseline_cpu_s=bc, cpu_ratio=nc / bc)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--part",
        default="all",
        choices=["all", "overwrite", "overwrite_ops", "delete", "compact", "index"],
    )
    p.add_argument("--delete-rows", type=int, default=10_000_000)
    p.add_argument("--overwrite-rows", type=int, default=3_650_000, help="rows of all 365 days")
    p.add_argument(
        "--day-rows",
        "--rows",
        default="10000,100000,1000000",
        help="rows of the new day (comma-separated sizes, each measured on its own)",
    )
    p.add_argument("--appends", type=int, default=1000)
    p.add_argument("--ops", type=int, default=30, help="overwrites per size (overwrite_ops)")
    p.add_argument("--index-rows", type=int, default=2_000_000)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--dir", default=None, help="keep (and reuse) the data here")
    p.add_argument("--profile", action="store_true", help="cProfile the first namespace round")
    args = p.parse_args()
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench_lifecycle_"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"data in {base}; load average {os.getloadavg()}")
    results: list[dict[str, Any]] = []
    try:
        if args.part in ("all", "overwrite"):
            for d in ("ow_ns", "ow_parquet", "ow_lance"):
                shutil.rmtree(base / d, ignore_errors=True)
            sizes = [int(x) for x in args.day_rows.split(",")]
            results.extend(
                bench_overwrite(base, args.overwrite_rows, sizes, args.rounds, args.profile)
            )
        if args.part == "overwrite_ops":  # (not in "all": no baseline, CPU per call)
            shutil.rmtree(base / "ops_ns", ignore_errors=True)
            sizes = [int(x) for x in args.day_rows.split(",")]
            results.extend(bench_overwrite_ops(base, args.overwrite_rows, sizes, args.ops))
        if args.part in ("all", "delete"):
            results.extend(bench_delete(base, args.delete_rows, args.rounds, args.profile))
            print(*results[-2:], sep="\n", flush=True)
        if args.part in ("all", "compact"):
            shutil.rmtree(base / "compact_ns", ignore_errors=True)
            results.append(bench_compact(base, args.appends, args.rounds))
            print(results[-1], flush=True)
        if args.part in ("all", "index"):
            for d in ("ix_plain", "ix_indexed"):
                shutil.rmtree(base / d, ignore_errors=True)
            results.extend(bench_index(base, args.index_rows, args.rounds))
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
