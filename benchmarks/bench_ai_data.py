"""AI-shaped data: what nested columns a query does not read cost it, and a full read.

A 64-tenant namespace (``identity(tenant)``) whose rows hold an embedding
``fixed_size_list<float32>[768]``, ``struct<a: int64, tags: list<string>>``,
``list<struct<k: string, w: float>>`` and ``map<string, string>``, against the
same namespace without those four columns (same scalar rows). Per round,
alternated in one process so machine load hits every variant alike (in a new
random order each round); medians of ``--rounds`` rounds:

- ``tenant``: ``SELECT id, tenant, score FROM n WHERE tenant = 't05'`` on both
  namespaces (target: nested / scalar <= 1.2x: columns not read cost nothing);
- ``nearest``: ``SELECT id, array_distance(emb, q) AS d FROM n WHERE tenant =
  't05' ORDER BY d LIMIT 10`` on the nested namespace (reported; the partition
  tables read are printed);
- ``select_all``: ``SELECT *`` of the nested namespace against pylance's
  ``to_table()`` of the same rows written as one Lance dataset (reported).

Phase 1 times the two tenant queries alone, phase 2 every variant (reads of the
vectors between them: those make later scalar reads of the same tables slower).

    python benchmarks/bench_ai_data.py --rows-per-tenant 300 --rounds 15
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lance
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from ai_columns import AI_NAMES, TENANTS, tenant_rows

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.tables.namespace.namespace import PartitionedNamespace


def write(root: Path, rows_per_tenant: int, width: int) -> dict[str, str]:
    rows = tenant_rows(width, rows_per_tenant)
    scalar = rows.drop_columns(list(AI_NAMES))
    out = {}
    for name, table in (("nested", rows), ("scalar", scalar)):
        path = str(root / name)
        PartitionedNamespace.create(path, table.schema, "identity(tenant)").append(table)
        out[name] = path
    out["dataset"] = str(root / "one.lance")
    lance.write_dataset(rows, out["dataset"])
    return out


def timed(run: Any) -> float:
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def tables_read(ctx: Any, sql: str) -> str:
    with capture_scans() as records:
        ctx.sql(sql).collect()
    found = [re.search(r"partition_tables=\d+/\d+", r.plan.description) for r in records]
    return ", ".join(m.group(0) for m in found if m)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-tenant", type=int, default=300)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        paths = write(Path(tmp), args.rows_per_tenant, args.width)
        print(f"wrote {TENANTS * args.rows_per_tenant:,} rows in {time.perf_counter() - t0:.1f} s")
        ctx = lance_sql.SessionContext()
        ctx.register_namespace("nested", paths["nested"])
        ctx.register_namespace("scalar", paths["scalar"])
        q = np.random.default_rng(1).standard_normal(args.width).astype(np.float32)
        vector = "[" + ", ".join(f"{x:.6f}" for x in q) + "]"
        tenant = "SELECT id, tenant, score FROM {} WHERE tenant = 't05'"
        nearest = (
            f"SELECT id, array_distance(emb, {vector}) AS d FROM nested "
            "WHERE tenant = 't05' ORDER BY d LIMIT 10"
        )
        dataset = lance.dataset(paths["dataset"])
        variants = {
            "tenant_nested": lambda: ctx.sql(tenant.format("nested")).collect(),
            "tenant_scalar": lambda: ctx.sql(tenant.format("scalar")).collect(),
            "nearest": lambda: ctx.sql(nearest).collect(),
            "select_all_lance_sql": lambda: ctx.sql("SELECT * FROM nested").collect(),
            "select_all_pylance": lambda: dataset.to_table(),
        }
        # phase 1: the point queries alone; phase 2: every variant, full reads included
        for phase, names in (("tenant queries", list(variants)[:2]), ("all", list(variants))):
            for name in names:  # warm caches (opened tables, plans)
                variants[name]()
            times: dict[str, list[float]] = {k: [] for k in names}
            # a new random order each round: a rotation keeps the cyclic order, so one
            # variant always ran right after the largest read (pylance's SELECT *)
            order = random.Random(7)
            for _ in range(args.rounds):
                for name in order.sample(names, len(names)):
                    times[name].append(timed(variants[name]))
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"-- {phase}")
            for name in names:
                print(f"{name:22s} median {med[name] * 1000:8.1f} ms")
            ratio = med["tenant_nested"] / med["tenant_scalar"]
            print(f"tenant: nested / scalar = {ratio:.2f}x")
        print(
            "select *: lance-sql / pylance to_table = "
            f"{med['select_all_lance_sql'] / med['select_all_pylance']:.2f}x"
        )
        print(
            "tables read:",
            tables_read(ctx, tenant.format("nested")),
            "|",
            tables_read(ctx, nearest),
        )
        print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
