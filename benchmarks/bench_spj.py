"""Storage-partitioned join vs the plain DataFusion join through SQL (time and peak RSS).

orders (bucket[16] on customer_id) JOIN customers (bucket[8] on id), grouped by
segment. Time is measured in one subprocess that holds both variants and
alternates them for ``--rounds`` rounds (spj on, spj off, spj on, ...): this
VM's speed drifts by tens of percent within a minute, and alternating puts
both variants under the same drift; the ratio is of the two medians. Memory
is measured with each variant in a fresh subprocess running the query
``--repeats`` times (its best time is printed too). Peak RSS is the child's ``VmHWM``
(``/proc/self/status``): ``ru_maxrss`` is not usable here, because Linux
carries the parent's peak across ``fork``/``exec`` into it (the parent, which
wrote the data, then set both variants' figure). ``baseline`` is the child's
peak after creating the context and registering the namespaces (libraries,
DataFusion, pylance: the same for both variants); ``query`` = peak - baseline
is what the query itself added.

    /work/venv/bin/python benchmarks/bench_spj.py [--orders 5000000] [--customers 1000000]
        [--rounds 15] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = (
    "SELECT c.segment, sum(o.amount) FROM orders o JOIN customers c "
    "ON o.customer_id = c.id GROUP BY c.segment"
)


def write(root: Path, orders: int, customers: int) -> None:
    import numpy as np
    import pyarrow as pa

    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    rng = np.random.default_rng(7)
    o = PartitionedNamespace.create(
        str(root / "orders"),
        pa.schema(
            [
                pa.field("order_id", pa.int64()),
                pa.field("customer_id", pa.int64()),
                pa.field("amount", pa.float64()),
            ]
        ),
        [{"source": "customer_id", "transform": "bucket", "num_buckets": 16}],
    )
    c = PartitionedNamespace.create(
        str(root / "customers"),
        pa.schema([pa.field("id", pa.int64()), pa.field("segment", pa.string())]),
        [{"source": "id", "transform": "bucket", "num_buckets": 8}],
    )
    segments = pa.array([f"segment{i}" for i in range(5)])
    ids = np.arange(customers, dtype=np.int64)
    c.append(pa.table({"id": ids, "segment": segments.take(pa.array(ids % 5))}))
    o.append(
        pa.table(
            {
                "order_id": np.arange(orders, dtype=np.int64),
                "customer_id": rng.integers(0, customers, orders),
                "amount": rng.random(orders),
            }
        )
    )


def run_one(root: str, spj: bool, repeats: int) -> dict[str, float]:
    import lance_sql

    ctx = lance_sql.SessionContext(spj=spj)
    ctx.register_namespace("orders", f"{root}/orders")
    ctx.register_namespace("customers", f"{root}/customers")
    baseline = peak_rss_mb()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        ctx.sql(QUERY).to_arrow_table()
        best = min(best, time.perf_counter() - start)
    peak = peak_rss_mb()
    return {"seconds": best, "rss_mb": peak, "baseline_mb": baseline, "query_mb": peak - baseline}


def run_interleaved(root: str, rounds: int) -> dict[str, float]:
    """Median seconds of each variant, run alternately in this one process."""
    import statistics

    import lance_sql

    contexts = {}
    for spj in (True, False):
        ctx = lance_sql.SessionContext(spj=spj)
        ctx.register_namespace("orders", f"{root}/orders")
        ctx.register_namespace("customers", f"{root}/customers")
        ctx.sql(QUERY).to_arrow_table()  # warm: caches, thread pools
        contexts[spj] = ctx
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for spj, ctx in contexts.items():
            start = time.perf_counter()
            ctx.sql(QUERY).to_arrow_table()
            times[spj].append(time.perf_counter() - start)
    return {
        "spj_seconds": statistics.median(times[True]),
        "plain_seconds": statistics.median(times[False]),
    }


def peak_rss_mb() -> float:
    """This process's peak resident set since it started (VmHWM), in MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux


def measure(root: str, *args: str) -> dict[str, float]:
    """Run this script as a child on ``root`` with ``args``; its last line of output as JSON."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", root, *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--orders", type=int, default=5_000_000)
    p.add_argument("--customers", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--child")
    p.add_argument("--spj", type=int, default=1)
    p.add_argument("--interleaved", action="store_true")
    args = p.parse_args(argv)
    if args.child:
        if args.interleaved:
            result = run_interleaved(args.child, args.rounds)
        else:
            result = run_one(args.child, bool(args.spj), args.repeats)
        print(json.dumps(result))
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), args.orders, args.customers)
        timed = measure(tmp, "--interleaved", "--rounds", str(args.rounds))
        plain = measure(tmp, "--spj", "0", "--repeats", str(args.repeats))
        spj = measure(tmp, "--spj", "1", "--repeats", str(args.repeats))
    ratios = {
        "time_ratio": timed["spj_seconds"] / timed["plain_seconds"],
        "rss_ratio": spj["rss_mb"] / plain["rss_mb"],
        "query_rss_ratio": spj["query_mb"] / max(plain["query_mb"], 1e-9),
    }
    print(
        f"orders={args.orders} customers={args.customers} "
        f"rounds={args.rounds} repeats={args.repeats}"
    )
    print(
        f"interleaved medians: plain {timed['plain_seconds']:.3f} s, "
        f"spj {timed['spj_seconds']:.3f} s"
    )
    head = ("variant", "best s", "peak RSS MB", "baseline MB", "query MB")
    print(f"{head[0]:<10}" + "".join(f"{h:>14}" for h in head[1:]))
    for name, m in (("plain", plain), ("spj", spj)):
        values = (m["seconds"], m["rss_mb"], m["baseline_mb"], m["query_mb"])
        print(f"{name:<10}{values[0]:>14.3f}" + "".join(f"{v:>14.1f}" for v in values[1:]))
    print(
        f"ratios: time (interleaved medians) {ratios['time_ratio']:.2f}, "
        f"peak RSS {ratios['rss_ratio']:.2f}, "
        f"query RSS (peak - baseline) {ratios['query_rss_ratio']:.2f}"
    )
    return ratios


if __name__ == "__main__":
    main()
