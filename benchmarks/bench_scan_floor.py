"""Benchmark: where a TPC-H query's time goes in lance-sql, next to the floors (issue #18).

For each query, in one process, alternated round by round (medians):

* ``spj`` / ``nospj``: the query through ``lance_sql.SessionContext()`` over the
  bucketed namespaces, storage-partitioned joins on (the default) and off;
* ``parquet``: plain DataFusion over the Parquet files;
* ``planning``: ``df.lance_rewrite()`` plus DataFusion's physical planning of
  the ``nospj`` query (no data read);
* the scans of the ``nospj`` plan (captured while it is planned: table,
  projected columns, pushed filter), each read three ways, summed over the
  query's scans (each scan on as many threads as DataFusion partitions):

  - ``ours``: lance-sql's scan path without DataFusion (the units' batches
    pulled from Python, as DataFusion pulls them: lance-sql's per-batch
    Python work, read-ahead and per-table scan starts included);
  - ``pylance``: pylance alone reading the same fragments, columns and filter
    (the same early/late materialization choice), batches of 16,384 rows:
    Lance's decode, the floor of any scan through pylance;

* ``pq_scan``: DataFusion's own Parquet scan time in the ``parquet`` query
  (``EXPLAIN ANALYZE``: ``time_elapsed_processing`` of its ``DataSourceExec``
  nodes, summed, divided by the partitions).

Printed per query: those medians, the batches the ``nospj`` scans yield and
their mean rows, and the split of the ``nospj`` time into Lance decode
(``pylance``), lance-sql's scan overhead (``ours - pylance``) and the rest
(DataFusion operators, the per-batch crossing into DataFusion, planning,
scans waiting on one another), which can be negative when scans overlap.

``--crossing``: instead, the cost of the per-batch crossing from Python into
DataFusion alone: lineitem's ``l_orderkey, l_commitdate, l_receiptdate``,
decoded once into memory, summed by DataFusion from a Python table that
yields the batches as pylance returned them (16,384 rows), from the same
table with 131,072-row batches, and from a DataFusion memory table (no
Python in the loop), two partitions each.

Usage: ``python benchmarks/bench_scan_floor.py [--sf 1] [--queries 3,4,12]
[--rounds 3] [--data-dir DIR] [--crossing]``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tpch
import tpch_data

#: the worst queries of docs/benchmarks/tpch.md (session 6)
DEFAULT_QUERIES = "1,3,4,12,19,21"
LANCE_BATCH_ROWS = 16384


def _scans(ctx: Any, text: str) -> list[Any]:
    """The scan nodes DataFusion plans for ``text`` (distinct table, columns, filter)."""
    from lance_sql.engines.datafusion.provider import capture_scans

    seen: dict[tuple[str, str, str], Any] = {}
    with capture_scans() as records:
        tpch_data.run_query(ctx, text)
    for r in records:
        seen.setdefault((r.table, str(r.columns), str(r.filter_text)), r)
    return list(seen.values())


def _threads(parts: list[Callable[[], tuple[int, int]]]) -> tuple[int, int]:
    """Run ``parts`` on one thread each; total (rows, batches)."""
    with ThreadPoolExecutor(max(1, len(parts))) as pool:
        done = list(pool.map(lambda f: f(), parts))
    return sum(r for r, _ in done), sum(b for _, b in done)


def ours(record: Any) -> tuple[int, int]:
    """lance-sql's scan units read as DataFusion reads them, without DataFusion."""
    ds = record.dataset

    def part(fragment: Any) -> Callable[[], tuple[int, int]]:
        def run() -> tuple[int, int]:
            rows = batches = 0
            scanner = fragment.scanner(
                ds.schema, columns=record.columns, filter=record.filter, batch_size=131072
            )
            for b in scanner.to_batches():
                rows += b.num_rows
                batches += 1
            return rows, batches

        return run

    return _threads([part(f) for f in ds.get_fragments(record.filter)])


def _leaves(unit: Any) -> list[Any]:
    """The pylance-reading units under ``unit`` (chains and partition tables unwrapped)."""
    if hasattr(unit, "units"):
        return [leaf for u in unit.units for leaf in _leaves(u)]
    inner = getattr(unit, "_inner", None)
    return [inner] if inner is not None else [unit]


def pylance(record: Any) -> tuple[int, int]:
    """pylance alone over the same fragments, columns, filter and materialization."""
    from lance_sql.tables.lance_scanner import lance_scanner
    from lance_sql.tables.materialization import late_materialization
    from lance_sql.tables.scan import normalize_filter

    filt = normalize_filter(record.filter)
    plan = record.dataset.plan(filt)

    def part(unit: Any) -> Callable[[], tuple[int, int]]:
        def run() -> tuple[int, int]:
            rows = batches = 0
            for leaf in _leaves(unit):
                ds = leaf.dataset
                frags = [ds.get_fragment(i) for i in leaf.fragment_ids]
                cols = list(record.columns) if record.columns is not None else None
                late = late_materialization(ds, frags, cols, filt)
                scanner = lance_scanner(
                    ds,
                    columns=cols,
                    filter=filt,
                    fragments=frags,
                    batch_size=LANCE_BATCH_ROWS,
                    with_row_id=not cols,
                    late_materialization=late,
                )
                for b in scanner.to_batches():
                    rows += b.num_rows
                    batches += 1
            return rows, batches

        return run

    return _threads([part(u) for u in plan.units])


_UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_PROCESSING = re.compile(r"time_elapsed_processing=([\d.]+)(ns|µs|ms|s)\b")


def parquet_scan_ms(pq: Any, text: str, partitions: int) -> float:
    """DataFusion's own Parquet decode time for the query (EXPLAIN ANALYZE), in wall ms.

    The sum of every ``DataSourceExec``'s ``time_elapsed_processing`` (decoding
    and filtering pages, summed over its partitions), divided by the partitions.
    """
    total = 0.0
    for stmt in tpch_data.statements(text):
        if not stmt.lower().startswith("select"):
            continue
        plan = pq.sql("EXPLAIN ANALYZE " + stmt).to_arrow_table().column(1)[0].as_py()
        for line in plan.splitlines():
            if "DataSourceExec" in line and (m := _PROCESSING.search(line)):
                total += float(m.group(1)) * _UNITS[m.group(2)]
    return 1000 * total / partitions


class _MemoryUnit:
    """A scan unit yielding batches already in memory (see :func:`crossing`)."""

    def __init__(self, batches: list[Any]) -> None:
        self.batches = batches

    def to_batches(self, columns: Any = None, filter: Any = None, batch_size: Any = None) -> Any:
        for b in self.batches:
            yield b if columns is None else b.select(columns)


def crossing(lance_dir: Path, rounds: int) -> dict[str, float]:
    """Median ms of a ``sum`` over in-memory batches reaching DataFusion three ways."""
    import datafusion
    import lance
    import pyarrow as pa

    from lance_sql.engines.datafusion.provider import ScanPlan, ScanUnitDataset
    from lance_sql.tables.scan import ScanUnit

    class Unit(_MemoryUnit, ScanUnit):
        @property
        def schema(self) -> pa.Schema:
            return self.batches[0].schema

        def describe(self) -> str:
            return "memory"

    cols = ["l_orderkey", "l_commitdate", "l_receiptdate"]
    small = [
        b
        for path in sorted((lance_dir / "lineitem").glob("*$dataset"))
        for b in lance.dataset(str(path))
        .scanner(columns=cols, batch_size=LANCE_BATCH_ROWS, scan_in_order=False)
        .to_batches()
    ]
    large = pa.Table.from_batches(small).combine_chunks().to_batches(max_chunksize=131072)
    schema = small[0].schema
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_batch_size(131072))
    for name, batches in (("python_16k", small), ("python_128k", large)):
        half = len(batches) // 2
        units = [Unit(batches[:half]), Unit(batches[half:])]
        ctx.register_table(
            name, ScanUnitDataset(schema, lambda _f, u=units: ScanPlan(u), name=name)
        )
    ctx.register_record_batches("memory", [small[: len(small) // 2], small[len(small) // 2 :]])
    names = ["python_16k", "python_128k", "memory"]
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds + 1):
        for n in names:
            start = time.perf_counter()
            ctx.sql(f"SELECT sum(l_orderkey), max(l_commitdate) FROM {n}").collect()
            if r:
                times[n].append(time.perf_counter() - start)
    out = {n: 1000 * statistics.median(t) for n, t in times.items()}
    out["batches_16k"], out["batches_128k"] = len(small), len(large)
    print(
        f"crossing, {rounds} rounds, medians (ms): "
        + ", ".join(f"{n} {out[n]:.1f}" for n in names)
        + f"; batches {len(small)} / {len(large)}; load {os.getloadavg()}"
    )
    return out


def planning_ms(ctx: Any, text: str) -> float:
    """Seconds to rewrite and physically plan the query's SELECT (no data read)."""
    start = time.perf_counter()
    for stmt in tpch_data.statements(text):
        if stmt.lower().startswith("select"):
            ctx.sql(stmt).lance_rewrite().dataframe.execution_plan()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict[int, dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--queries", default=DEFAULT_QUERIES)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data-dir")
    p.add_argument("--crossing", action="store_true", help="time the Python-to-DataFusion crossing")
    args = p.parse_args(argv)
    import datafusion

    import lance_sql

    sf = f"{args.sf:g}"
    data_dir = tpch_data.data_dir(args.data_dir, args.sf)
    parquet_dir, lance_dir = tpch_data.prepare(data_dir, args.sf)
    if args.crossing:
        return {0: crossing(Path(lance_dir), args.rounds)}
    spj = lance_sql.SessionContext()
    tpch_data.register_lance_sql(spj, lance_dir)
    nospj = lance_sql.SessionContext()
    tpch_data.register_lance_sql(nospj, lance_dir)
    nospj.sql("SET lance.spj = false")
    pq = datafusion.SessionContext()
    tpch_data.register_parquet(pq, parquet_dir)
    partitions = int(pq.sql("SHOW datafusion.execution.target_partitions").to_pylist()[0]["value"])
    print(f"TPC-H SF{sf}, {args.rounds} alternating rounds, medians (ms); load {os.getloadavg()}")
    cols = ["spj", "nospj", "parquet", "planning", "ours", "pylance"]
    print(
        f"{'query':<6}"
        + "".join(f"{c:>11}" for c in cols)
        + f"{'pq_scan':>9}{'batches':>9}{'rows/b':>8}{'decode':>8}{'ours-pl':>8}{'rest':>8}",
        flush=True,
    )
    results: dict[int, dict[str, float]] = {}
    for n in bench_tpch.parse_queries(args.queries):
        text = tpch_data.query_text(n)
        want = bench_tpch._canonical(tpch_data.run_query(pq, text))
        for ctx in (spj, nospj):
            if bench_tpch._canonical(tpch_data.run_query(ctx, text)) != want:
                raise AssertionError(f"q{n}: lance-sql answers differently from Parquet")
        scans = _scans(nospj, text)
        runs: dict[str, Callable[[], object]] = {
            "spj": lambda t=text: tpch_data.run_query(spj, t),
            "nospj": lambda t=text: tpch_data.run_query(nospj, t),
            "parquet": lambda t=text: tpch_data.run_query(pq, t),
            "planning": lambda t=text: planning_ms(nospj, t),
            "ours": lambda sc=scans: [ours(s) for s in sc],
            "pylance": lambda sc=scans: [pylance(s) for s in sc],
        }
        times: dict[str, list[float]] = {c: [] for c in cols}
        counted = [ours(s) for s in scans]
        for _ in range(args.rounds):
            for c, fn in runs.items():
                start = time.perf_counter()
                fn()
                times[c].append(time.perf_counter() - start)
        med = {c: 1000 * statistics.median(t) for c, t in times.items()}
        med["pq_scan"] = statistics.median(
            parquet_scan_ms(pq, text, partitions) for _ in range(args.rounds)
        )
        rows = sum(r for r, _ in counted)
        batches = sum(b for _, b in counted)
        med["batches"] = batches
        med["rows_per_batch"] = rows / batches if batches else 0.0
        med["scans"] = len(scans)
        results[n] = med
        decode, overhead = med["pylance"], med["ours"] - med["pylance"]
        rest = med["nospj"] - med["ours"]
        print(
            f"q{n:<5}"
            + "".join(f"{med[c]:>11.1f}" for c in cols)
            + f"{med['pq_scan']:>9.1f}{batches:>9}{med['rows_per_batch']:>8.0f}"
            + f"{decode:>8.1f}{overhead:>8.1f}{rest:>8.1f}",
            flush=True,
        )
    print(f"load average after: {os.getloadavg()}")
    return results


if __name__ == "__main__":
    main()
