"""Benchmark: SQL scans of one Lance dataset through lance_sql.SessionContext vs pylance.

Measures, on a table of ``--rows`` rows (int64 ``x``, float64 ``y``, utf8 ``s``)
written by pylance, the best of ``--repeat`` runs of

* ``SELECT *`` collected through DataFusion vs ``lance.dataset(uri).to_table()``;
* ``SELECT count(*), sum(x) WHERE y < c`` vs pylance's scanner with the same
  filter and the aggregate computed by pyarrow;
* ``SELECT count(*), sum(x)`` and ``SELECT s, count(*), sum(x) GROUP BY s`` vs
  the same SQL run by pylance's own DataFusion (``LanceDataset.sql``, no
  Python in the loop; issue #18: <= 1.2x);
* ``SELECT * LIMIT 10``: rows actually pulled out of pylance (counter), not a time.

The context is ``lance_sql.SessionContext()`` with no config, i.e. what a user
gets (``batch_size`` 131072; Lance scans read batches of at most 16,384 rows); the
batch sizes seen are printed.

Usage: ``python benchmarks/bench_scan.py [--rows N] [--repeat R] [--dir PATH]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lance_sql


def make_table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array([f"value-{i:05d}" for i in range(10_000)], dtype=object)
    return pa.table(
        {
            "x": pa.array(rng.integers(-1_000_000, 1_000_000, rows), pa.int64()),
            "y": pa.array(rng.random(rows), pa.float64()),
            "s": pa.array(words[rng.integers(0, len(words), rows)], pa.string()),
        }
    )


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """A result as sorted row tuples (group order is not defined)."""
    return sorted(tuple(r.values()) for r in table.to_pylist())


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def run(rows: int, repeat: int, directory: Path) -> list[dict[str, Any]]:
    uri = str(directory / "bench.lance")
    if not Path(uri).exists():
        lance.write_dataset(make_table(rows), uri)
    ctx = lance_sql.SessionContext()
    ctx.register_lance("t", uri)
    cutoff = 0.25
    results: list[dict[str, Any]] = []

    def sql_full() -> int:
        return sum(b.num_rows for b in ctx.sql("SELECT * FROM t").collect())

    def lance_full() -> int:
        return lance.dataset(uri).to_table().num_rows

    def sql_agg() -> tuple[int, int]:
        row = ctx.sql(f"SELECT count(*) AS n, sum(x) AS s FROM t WHERE y < {cutoff}")
        out = row.to_pylist()[0]
        return out["n"], out["s"]

    def lance_agg() -> tuple[int, int]:
        table = lance.dataset(uri).scanner(columns=["x"], filter=pc.field("y") < cutoff).to_table()
        return table.num_rows, pc.sum(table["x"]).as_py()

    dataset = lance.dataset(uri)

    def native(sql: str) -> Callable[[], Any]:
        """pylance's own DataFusion (``LanceDataset.sql``): no Python per batch."""

        def run() -> Any:
            batches = dataset.sql(sql.format("dataset")).build().to_batch_records()
            return _rows(pa.Table.from_batches(batches))

        return run

    def ours_sql(sql: str) -> Callable[[], Any]:
        return lambda: _rows(ctx.sql(sql.format("t")).to_arrow_table())

    total = "SELECT count(*) AS n, sum(x) AS sx FROM {}"
    grouped = "SELECT s, count(*) AS n, sum(x) AS sx FROM {} GROUP BY s"
    for name, ours, base in [
        ("SELECT * (all batches)", sql_full, lance_full),
        (f"count(*), sum(x) WHERE y < {cutoff}", sql_agg, lance_agg),
        ("count(*), sum(x) vs ds.sql", ours_sql(total), native(total)),
        ("s, count(*), sum(x) GROUP BY s vs ds.sql", ours_sql(grouped), native(grouped)),
    ]:
        base()  # warm the page cache and pylance's metadata cache for both sides
        ours()
        t_base, t_ours = [], []
        for _ in range(repeat):  # alternate, so machine noise hits both sides alike
            tb, r_base = best(base, 1)
            to, r_ours = best(ours, 1)
            t_base.append(tb)
            t_ours.append(to)
        if r_base != r_ours:
            raise AssertionError(f"{name}: results differ: {r_ours} != {r_base}")
        results.append(
            {
                "query": name,
                "lance_sql_s": min(t_ours),
                "pylance_s": min(t_base),
                "ratio": min(t_ours) / min(t_base),
            }
        )

    sizes = [b.num_rows for b in ctx.sql("SELECT x FROM t").collect()]
    print(
        f"config: lance_sql.SessionContext() defaults, target_partitions="
        f"{ctx.lance_table('t').partitions}, largest batch {max(sizes, default=0):,} rows "
        f"(DataFusion batch_size), first batches {sizes[:4]}"
    )
    metrics = ctx.lance_table("t").metrics
    metrics.reset()
    got = ctx.sql("SELECT * FROM t LIMIT 10").to_arrow_table().num_rows
    assert got == min(10, rows), got
    results.append(
        {
            "query": "SELECT * LIMIT 10",
            "rows_read": metrics.rows_read,
            "fraction_read": metrics.rows_read / max(rows, 1),
        }
    )
    return results


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="keep the data here (reused)")
    args = parser.parse_args(argv)
    tmp = None
    directory = args.dir
    if directory is None:
        tmp = tempfile.mkdtemp(prefix="bench_scan_")
        directory = Path(tmp)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        results = run(args.rows, args.repeat, directory)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"rows={args.rows} repeat={args.repeat} (best of)")
    print(f"{'query':40} {'lance_sql s':>12} {'pylance s':>10} {'ratio':>7}")
    for r in results:
        if "ratio" in r:
            print(
                f"{r['query']:40} {r['lance_sql_s']:12.3f} {r['pylance_s']:10.3f} {r['ratio']:7.2f}"
            )
        else:
            print(
                f"{r['query']:40} rows read from pylance: {r['rows_read']} "
                f"({100 * r['fraction_read']:.3f}% of the table)"
            )
    return results


if __name__ == "__main__":
    main()
