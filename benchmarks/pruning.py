"""Benchmark: partition pruning over a large ``__manifest`` (planning cost and effect).

Builds a manifest of N partitions (spec v1: year/month/day of a timestamp;
spec v2: day-chain plus bucket[16] of a key), then for a few filters measures:

- ``plan``: ``plan_partitions`` (parse, project through every spec, select the
  rows, compute residuals) — best of a few repeats;
- ``baseline``: a hand-written pyarrow filter over the same manifest that
  selects the same partitions (what a perfect, pre-compiled filter costs);
- the partitions selected out of the total (the pruning effect).

Run: ``/work/venv/bin/python benchmarks/pruning.py [--rows N]`` (N = partitions).
"""

from __future__ import annotations

import argparse
import datetime as dt
import time

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.planning.planner import plan_partitions
from lance_sql.tables.namespace.spec import PartitionField, PartitionSpec, Transform


def _field(name: str, t: pa.DataType, fid: int) -> pa.Field:
    return pa.field(name, t, metadata={b"lance:field_id": str(fid).encode()})


SCHEMA = pa.schema([_field("ts", pa.timestamp("us"), 1), _field("k", pa.int64(), 2)])
TIME = [PartitionField(k, (1,), pa.int32(), Transform(k)) for k in ("year", "month", "day")]
SPECS = {
    1: PartitionSpec(1, tuple(TIME)),
    2: PartitionSpec(
        2, (*TIME, PartitionField("kb", (2,), pa.int32(), Transform("bucket", num_buckets=16)))
    ),
}


def build_manifest(partitions: int) -> pa.Table:
    days = max(partitions // 17, 1)  # v1: one per day; v2: 16 buckets per day
    start = dt.date(2020, 1, 1)
    ids, ys, ms, ds, kb = [], [], [], [], []
    for i in range(days):
        d = start + dt.timedelta(days=i)
        ids.append(f"v1$d{i}$dataset")
        ys.append(d.year), ms.append(d.month), ds.append(d.day), kb.append(None)
        for b in range(16):
            ids.append(f"v2$d{i}$b{b}$dataset")
            ys.append(d.year), ms.append(d.month), ds.append(d.day), kb.append(b)
    return pa.table(
        {
            "object_id": ids,
            "object_type": ["table"] * len(ids),
            "partition_field_year": pa.array(ys, pa.int32()),
            "partition_field_month": pa.array(ms, pa.int32()),
            "partition_field_day": pa.array(ds, pa.int32()),
            "partition_field_kb": pa.array(kb, pa.int32()),
        }
    )


def _ymd(y: int, m: int, d: int) -> pc.Expression:
    f = pc.field
    return (
        (f("partition_field_year") > y)
        | ((f("partition_field_year") == y) & (f("partition_field_month") > m))
        | (
            (f("partition_field_year") == y)
            & (f("partition_field_month") == m)
            & (f("partition_field_day") >= d)
        )
    )


CASES = [
    ("ts >= TIMESTAMP '2020-03-15 00:00:00'", lambda: _ymd(2020, 3, 15)),
    (
        "ts >= TIMESTAMP '2020-03-15 00:00:00' AND k = 1",
        lambda: (
            _ymd(2020, 3, 15)
            & (pc.field("partition_field_kb").is_null() | (pc.field("partition_field_kb") == 4))
        ),
    ),
    (
        "date_trunc('day', ts) = TIMESTAMP '2020-03-01 00:00:00'",
        lambda: (
            (pc.field("partition_field_year") == 2020)
            & (pc.field("partition_field_month") == 3)
            & (pc.field("partition_field_day") == 1)
        ),
    ),
]


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run(partitions: int, repeats: int = 3) -> list[dict]:
    manifest = build_manifest(partitions)
    rows = []
    for sql, baseline in CASES:
        plan = plan_partitions(sql, SPECS, SCHEMA, manifest)  # warm caches (DataFusion, numba)
        expected = manifest.filter(baseline())
        assert plan.selected.num_rows == expected.num_rows, sql
        t_plan = best(lambda sql=sql: plan_partitions(sql, SPECS, SCHEMA, manifest), repeats)
        t_base = best(lambda b=baseline: manifest.filter(b()), repeats)
        rows.append(
            {
                "filter": sql,
                "selected": plan.selected.num_rows,
                "total": manifest.num_rows,
                "plan_ms": t_plan * 1000,
                "baseline_ms": t_base * 1000,
                "ratio": t_plan / t_base if t_base else float("inf"),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="number of partitions")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = run(args.rows, args.repeats)
    print(f"{'filter':58s} {'selected':>17s} {'plan ms':>9s} {'base ms':>9s} {'ratio':>7s}")
    for r in rows:
        sel = f"{r['selected']}/{r['total']}"
        print(
            f"{r['filter'][:58]:58s} {sel:>17s} {r['plan_ms']:9.2f} {r['baseline_ms']:9.2f}"
            f" {r['ratio']:7.1f}"
        )


if __name__ == "__main__":
    main()
