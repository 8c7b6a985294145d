"""Benchmark: namespace costs as the number of partitions P grows.

A namespace partitioned by ``identity(pid)`` (int32) with P partitions of
``--rows-per`` rows each (7 columns). For each P in ``--partitions``:

* ``append``: median time of a 10-row append into one existing partition and
  the bytes it adds under ``__manifest`` (data, deletion and version files);
* ``first``: in fresh processes, the first 10-row append after opening the namespace
  and the second one (wall and process CPU);
* ``point``: the first SQL ``WHERE pid = k`` query on a registered namespace
  after another object's write (the session refreshes ``__manifest``);
* ``bounds``: ``plan_scan(ns, "pid = k")`` with column bounds on a freshly
  opened namespace vs a pylance read of all of ``__manifest``;
* ``bounds_mb``: the same ``plan_scan`` in a fresh process: peak resident memory
  above the imports (MB);
* ``scan`` (P <= ``--scan-max``): a full ``SELECT count(*), sum(a)`` on a registered
  namespace (second query of the context: warm) against the same rows as one
  pylance dataset registered the same way, alternating; ms per partition table;
* ``expire`` (P <= ``--expire-max``): ``expire_versions(older_than=0)`` after the
  appends above;
* ``writers`` (only P = ``--concurrent-p``): 4 threads appending 10 rows each
  to their own partition for ``--seconds``, against one thread alone: commits
  per second, failed appends, rows present exactly once; then
  ``expire_versions`` + ``cleanup`` dry run: bytes no version references.

Ratios are between sizes measured in the same run.

Usage: ``python benchmarks/bench_scale.py [--partitions 1000,10000] [--seconds 60]
[--scan-max P] [--expire-max P] [--dir PATH [--reuse]]`` (``--reuse`` opens the
namespaces an earlier run left in ``--dir`` instead of building them; they then hold
that run's appends too).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa

SCHEMA = pa.schema(
    [
        pa.field("pid", pa.int32()),
        pa.field("id", pa.int64()),
        pa.field("a", pa.int64()),
        pa.field("b", pa.float64()),
        pa.field("c", pa.utf8()),
        pa.field("d", pa.date32()),
        pa.field("e", pa.bool_()),
    ]
)
SPEC = {
    "id": 1,
    "fields": [
        {
            "field_id": "pid",
            "source_ids": [0],
            "transform": {"type": "identity"},
            "result_type": {"type": "int32"},
        }
    ],
}


def rows(pids: np.ndarray, start: int = 0) -> pa.Table:
    n = len(pids)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "pid": pa.array(pids, pa.int32()),
            "id": ids,
            "a": ids * 7,
            "b": ids.astype(np.float64) / 3,
            "c": pa.array([f"v{i % 97}" for i in range(n)]),
            "d": pa.array(ids % 3650, pa.int32()).cast(pa.date32()),
            "e": pa.array(ids % 2 == 0),
        },
        schema=SCHEMA,
    )


def tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def build(root: Path, p: int, per: int) -> Any:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ns = PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    step = 20_000  # partitions per append (bounded memory; several commits)
    for lo in range(0, p, step):
        pids = np.repeat(np.arange(lo, min(p, lo + step), dtype=np.int32), per)
        ns.append(rows(pids, start=lo * per))
    return ns


def bench_append(ns: Any, root: Path, p: int, repeat: int) -> tuple[float, int, float]:
    """Medians of (wall seconds, __manifest bytes written, process CPU seconds)."""
    times, written, cpu = [], [], []
    manifest = root / "__manifest"
    for i in range(repeat):
        before = tree_bytes(manifest)
        t0, c0 = time.perf_counter(), time.process_time()
        ns.append(rows(np.full(10, (i * 7919) % p, np.int32), start=10**9 + i * 10))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        written.append(tree_bytes(manifest) - before)
    return statistics.median(times), int(statistics.median(written)), statistics.median(cpu)


def bench_overwrite(ns: Any, p: int, n: int, repeat: int) -> dict[str, float]:
    """Dynamic overwrite of one partition with ``n`` rows against two floors, alternating:
    pylance alone overwriting a dataset of the same rows plus an append to a small Lance
    table, or plus an ``Update`` of one of its rows (what replacing a ``__manifest`` row
    costs at least: a fragment, a deletion vector, one commit)."""
    scratch = Path(tempfile.mkdtemp(prefix="bench_overwrite_"))
    lance.write_dataset(rows(np.zeros(1, np.int32)), str(scratch / "commit"))
    small = rows(np.zeros(1000, np.int32))
    lance.write_dataset(small, str(scratch / "update"), max_rows_per_file=100)
    ours, floor, update = [], [], []
    for i in range(repeat):
        data = rows(np.full(n, (i * 7) % p, np.int32), start=6 * 10**9 + i * n)
        t0 = time.perf_counter()
        ns.overwrite(data, partitions="dynamic")
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        lance.write_dataset(data, str(scratch / "day"), mode="overwrite")
        lance.write_dataset(rows(np.zeros(1, np.int32)), str(scratch / "commit"), mode="append")
        floor.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        lance.write_dataset(data, str(scratch / "day2"), mode="overwrite")
        _update_one_row(str(scratch / "update"), i)
        update.append(time.perf_counter() - t0)
    shutil.rmtree(scratch, ignore_errors=True)
    o, f, u = statistics.median(ours), statistics.median(floor), statistics.median(update)
    return {
        "overwrite_s": o,
        "overwrite_floor_s": f,
        "overwrite_ratio": o / f,
        "overwrite_update_floor_s": u,
        "overwrite_update_ratio": o / u,
    }


def _update_one_row(uri: str, i: int) -> None:
    """Replace one row of the small table at ``uri`` in one ``Update`` commit."""
    ds = lance.dataset(uri)
    frag = ds.get_fragments()[i % len(ds.get_fragments())]
    first = frag.to_table(columns=["id"]).column(0)[0].as_py()
    new = lance.fragment.write_fragments(
        rows(np.zeros(1, np.int32), start=10**12 + i), uri, schema=ds.schema
    )
    kept = frag.delete(f"id = {first}")
    op = lance.LanceOperation.Update(
        removed_fragment_ids=[] if kept else [frag.fragment_id],
        updated_fragments=[kept] if kept else [],
        new_fragments=new,
    )
    lance.LanceDataset.commit(uri, op, read_version=ds.version)


def bench_point(root: Path, p: int, repeat: int) -> float:
    import lance_sql
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(root))
    ctx.sql("SELECT count(*) FROM t WHERE pid = 1").collect()
    writer = PartitionedNamespace.open(str(root))
    times = []
    for i in range(repeat):
        k = (i * 104729) % p
        writer.append(rows(np.full(10, k, np.int32), start=2 * 10**9 + i * 10))
        t0 = time.perf_counter()
        got = ctx.sql(f"SELECT count(*) AS n FROM t WHERE pid = {k}").to_arrow_table()
        times.append(time.perf_counter() - t0)
        assert got.column("n")[0].as_py() >= 10
    return statistics.median(times)


def bench_bounds(root: Path) -> tuple[float, float]:
    from lance_sql import plan_scan
    from lance_sql.tables.namespace.manifest_fragments import _SNAPSHOTS, _STATE
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    _STATE.clear()
    _SNAPSHOTS.clear()
    t0 = time.perf_counter()
    ns = PartitionedNamespace.open(str(root))
    plan_scan(ns, "pid = 3")
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    lance.dataset(str(root / "__manifest")).to_table()
    return ours, time.perf_counter() - t0


# (peak RSS from /proc: ru_maxrss of a child starts at its parent's peak on Linux)
_BOUNDS_CHILD = """
import sys, time
import lance_sql
from lance_sql import plan_scan
from lance_sql.tables.namespace.namespace import PartitionedNamespace
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
if len(sys.argv) > 2:  # a small namespace first: every module plan_scan needs is imported
    plan_scan(PartitionedNamespace.open(sys.argv[2]), "pid = 3")
base = hwm()
t0 = time.perf_counter()
plan_scan(PartitionedNamespace.open(sys.argv[1]), "pid = 3")
took = time.perf_counter() - t0
print(took, hwm() - base)
"""


def bench_bounds_memory(root: Path, warm: Path | None = None) -> tuple[float, float]:
    """(seconds, peak MB above the imports) of a first ``plan_scan`` in a fresh process
    (``warm``: a small namespace planned first, so the imports are done)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _BOUNDS_CHILD, str(root), *([str(warm)] if warm else [])],
        capture_output=True,
        text=True,
    )
    took, mb = out.stdout.split()[-2:]
    return float(took), float(mb)


# a fresh process: open the namespace, then one 10-row append into partition argv[2]
# (the first write after opening), then a second one; process CPU and wall of each
_FIRST_CHILD = """
import sys, time
import numpy as np
sys.path.insert(0, sys.argv[3])
from bench_scale import rows
from lance_sql.tables.namespace.namespace import PartitionedNamespace
ns = PartitionedNamespace.open(sys.argv[1])
k, start = int(sys.argv[2]), 5 * 10**9 + int(sys.argv[2]) * 20
out = []
for i in range(2):
    w, c = time.perf_counter(), time.process_time()
    ns.append(rows(np.full(10, k, np.int32), start=start + 10 * i))
    out += [time.perf_counter() - w, time.process_time() - c]
print(*out)
"""


def bench_first(root: Path, p: int, repeat: int) -> dict[str, float]:
    """Medians over ``repeat`` fresh processes: the first and second 10-row append after
    opening the namespace (wall and process CPU seconds)."""
    import subprocess
    import sys

    got = []
    for i in range(repeat):
        k = (i * 7907 + 13) % p
        here = str(Path(__file__).resolve().parent)
        cmd = [sys.executable, "-c", _FIRST_CHILD, str(root), str(k), here]
        got.append(
            [
                float(x)
                for x in subprocess.run(
                    cmd, capture_output=True, text=True, check=True
                ).stdout.split()
            ]
        )
    names = ("first_write_s", "first_write_cpu_s", "second_write_s", "second_write_cpu_s")
    return {n: statistics.median(g[j] for g in got) for j, n in enumerate(names)}


def bench_scan(root: Path, p: int, per: int, repeat: int) -> dict[str, float]:
    """Full scan of the namespace vs one dataset of the same rows, warm, alternating."""
    import lance_sql

    single = root.parent / f"single{p}"
    if not single.exists():
        lance.write_dataset(
            rows(np.repeat(np.arange(p, dtype=np.int32), per)), str(single), schema=SCHEMA
        )
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(root))
    ctx.register_lance("one", str(single))
    sql = "SELECT count(*) AS n, sum(a) AS s FROM {}"
    first_t0 = time.perf_counter()
    ctx.sql(sql.format("t")).collect()
    cold = time.perf_counter() - first_t0
    ctx.sql(sql.format("one")).collect()
    ns_t, one_t = [], []
    for _ in range(repeat):
        for name, acc in (("t", ns_t), ("one", one_t)):
            t0 = time.perf_counter()
            ctx.sql(sql.format(name)).collect()
            acc.append(time.perf_counter() - t0)
    ns_s, one_s = statistics.median(ns_t), statistics.median(one_t)
    return {
        "scan_cold_s": cold,
        "scan_s": ns_s,
        "single_s": one_s,
        "scan_ratio": ns_s / one_s,
        "ms_per_table": 1000 * ns_s / p,
    }


#: The writers' row ids start here, above every other step's.
WRITER_IDS = 10**11


def writer_rows(root: Path) -> tuple[int, int]:
    """(rows, distinct ids) the writers of any run added."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ids = PartitionedNamespace.open(str(root)).to_table(
        columns=["id"], filter=pa.compute.field("id") >= WRITER_IDS
    )["id"]
    return len(ids), pa.compute.count_distinct(ids).as_py()


def bench_writers(root: Path, p: int, seconds: float, threads: int) -> dict[str, float]:
    from lance_sql.errors import CommitConflictError
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    counts = [0] * threads
    failed = [0] * threads
    stop = time.monotonic() + seconds

    def work(i: int) -> None:
        ns = PartitionedNamespace.open(str(root))
        k = (i * 1009 + 11) % p
        n = 0
        while time.monotonic() < stop:
            try:
                start = WRITER_IDS + (threads << 40) + (i << 32) + n * 10
                ns.append(rows(np.full(10, k, np.int32), start=start))
                counts[i] += 1
            except CommitConflictError:
                failed[i] += 1
            n += 1

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return {"commits": sum(counts), "failed": sum(failed), "per_s": sum(counts) / seconds}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", default="1000,10000")
    ap.add_argument("--rows-per", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--concurrent-p", type=int, default=10_000)
    ap.add_argument("--scan-max", type=int, default=10_000, help="largest P scanned in full")
    ap.add_argument("--expire-max", type=int, default=10_000, help="largest P expired")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--reuse", action="store_true", help="open namespaces left in --dir")
    ap.add_argument(
        "--steps", default="append,first,point,bounds,scan,expire,overwrite", help="which to run"
    )
    ap.add_argument("--overwrite-rows", type=int, default=10_000)
    args = ap.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="bench_scale_"))
    results: dict[int, dict[str, float]] = {}
    if not (base / "warm").exists():
        build(base / "warm", 10, 1)
    for p in [int(x) for x in args.partitions.split(",")]:
        root = base / f"p{p}"
        t0 = time.perf_counter()
        if args.reuse and root.exists():  # a namespace an earlier run of this script built
            from lance_sql.tables.namespace.namespace import PartitionedNamespace

            ns = PartitionedNamespace.open(str(root))
        else:
            shutil.rmtree(root, ignore_errors=True)
            ns = build(root, p, args.rows_per)
        made = time.perf_counter() - t0
        steps = set(args.steps.split(","))
        nan = float("nan")
        append_s, append_bytes, append_cpu_s = (
            bench_append(ns, root, p, args.repeat) if "append" in steps else (nan, 0, nan)
        )
        first = bench_first(root, p, args.repeat) if "first" in steps else {}
        point_s = bench_point(root, p, args.repeat) if "point" in steps else nan
        bounds_s, pylance_s, bounds_mb = nan, nan, nan
        if "bounds" in steps:
            bounds_s, pylance_s = bench_bounds(root)
            _, bounds_mb = bench_bounds_memory(root, base / "warm")
        scan = {}
        if p <= args.scan_max and "scan" in steps:
            scan = bench_scan(root, p, args.rows_per, 3)
        expire_s = expire_after_s = nan
        if p <= args.expire_max and "expire" in steps:
            t0 = time.perf_counter()
            ns = type(ns).open(str(root))
            ns.expire_versions(older_than=timedelta(0))
            expire_s = time.perf_counter() - t0
            for i in range(10):  # then expire what 10 appends left: the steady state
                ns.append(rows(np.full(10, (i * 613) % p, np.int32), start=4 * 10**9 + i * 10))
            t0 = time.perf_counter()
            ns.expire_versions(older_than=timedelta(0))
            expire_after_s = time.perf_counter() - t0
        overwrite = (
            bench_overwrite(ns, p, args.overwrite_rows, args.repeat) if "overwrite" in steps else {}
        )
        results[p] = {
            "bounds_mb": bounds_mb,
            **scan,
            "expire_s": expire_s,
            "expire_after_10_appends_s": expire_after_s,
            **overwrite,
            "build_s": made,
            "append_s": append_s,
            "append_bytes": append_bytes,
            "append_cpu_s": append_cpu_s,
            **first,
            "point_s": point_s,
            "bounds_s": bounds_s,
            "pylance_s": pylance_s,
        }
        print(f"P={p}: {results[p]}", flush=True)
        if p == args.concurrent_p and args.seconds > 0:
            earlier = writer_rows(root)  # (--reuse: an earlier run's writers)
            one = bench_writers(root, p, args.seconds / 2, 1)
            four = bench_writers(root, p, args.seconds, 4)
            ns = type(ns).open(str(root))
            expected = 10 * (one["commits"] + four["commits"])
            got, distinct = (a - b for a, b in zip(writer_rows(root), earlier, strict=True))
            ns.expire_versions(older_than=timedelta(0))
            orphan = ns.cleanup(older_than=timedelta(0), dry_run=True).bytes
            print(
                f"writers P={p}: one {one} four {four} ratio "
                f"{four['per_s'] / max(one['per_s'], 1e-9):.2f} rows {got}/{expected} "
                f"(distinct ids {distinct}) "
                f"orphaned bytes after expire_versions {orphan}",
                flush=True,
            )
    ps = sorted(results)
    lo, hi = ps[0], ps[-1]
    print(f"append ratio P={hi}/P={lo}: {results[hi]['append_s'] / results[lo]['append_s']:.2f}")
    for key in ("append_cpu_s", "first_write_s", "first_write_cpu_s"):
        if key in results[hi]:
            print(f"{key} ratio P={hi}/P={lo}: {results[hi][key] / results[lo][key]:.2f}")
    print(f"point ratio P={hi}/P={lo}: {results[hi]['point_s'] / results[lo]['point_s']:.2f}")
    print(
        f"bounds / pylance read at P={hi}: {results[hi]['bounds_s'] / results[hi]['pylance_s']:.2f}"
    )


if __name__ == "__main__":
    main()
