"""Storage-partitioned join vs the plain DataFusion join through SQL (time and peak RSS).

orders (bucket[16] on customer_id) JOIN customers (bucket[8] on id), grouped by
segment. Each variant runs in a fresh subprocess so peak RSS (``ru_maxrss``) is
its own; time is the best of ``--repeats`` runs inside that process.

    /work/venv/bin/python benchmarks/bench_spj.py [--orders 5000000] [--customers 1000000]
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
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        ctx.sql(QUERY).to_arrow_table()
        best = min(best, time.perf_counter() - start)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": best, "rss_mb": rss_kb / 1024}


def measure(root: str, spj: bool, repeats: int) -> dict[str, float]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            root,
            "--spj",
            str(int(spj)),
            "--repeats",
            str(repeats),
        ],
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
    p.add_argument("--child")
    p.add_argument("--spj", type=int, default=1)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(run_one(args.child, bool(args.spj), args.repeats)))
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), args.orders, args.customers)
        plain = measure(tmp, False, args.repeats)
        spj = measure(tmp, True, args.repeats)
    ratios = {
        "time_ratio": spj["seconds"] / plain["seconds"],
        "rss_ratio": spj["rss_mb"] / plain["rss_mb"],
    }
    print(f"orders={args.orders} customers={args.customers} repeats={args.repeats}")
    print(f"{'variant':<10}{'seconds':>10}{'peak RSS MB':>14}")
    print(f"{'plain':<10}{plain['seconds']:>10.3f}{plain['rss_mb']:>14.1f}")
    print(f"{'spj':<10}{spj['seconds']:>10.3f}{spj['rss_mb']:>14.1f}")
    print(f"ratios: time {ratios['time_ratio']:.2f}, peak RSS {ratios['rss_ratio']:.2f}")
    return ratios


if __name__ == "__main__":
    main()
