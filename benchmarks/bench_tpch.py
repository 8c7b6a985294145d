"""TPC-H through lance-sql: storage-partitioned joins on vs off, and DataFusion over Parquet.

Data (``benchmarks/tpch_data.py``, generated and loaded once per data directory):
tpchgen-cli Parquet at ``--sf``; in Lance, lineitem is a namespace bucket[16] on
l_orderkey, orders bucket[8] on o_orderkey, the other tables plain datasets.

Variants, all in this one process:

- ``spj``: ``lance_sql.SessionContext()`` with ``SET lance.spj = true`` (the default);
- ``nospj``: the same with ``SET lance.spj = false``;
- ``parquet``: a plain ``datafusion.SessionContext()`` over the Parquet files
  (DataFusion's own defaults), as a reference.

Each query runs once per variant to warm up, then ``--rounds`` rounds in which
every variant runs it once, in turn: this VM's speed drifts by tens of percent
within a minute, and alternating puts every variant under the same drift
(``bench_spj.py`` does the same). A ratio is of two medians. ``spj joins`` is
the number of ``StoragePartitionedJoin`` lines in the ``spj`` variant's EXPLAIN.

    /work/venv/bin/python benchmarks/bench_tpch.py [--sf 1] [--queries 3,5,10,12,18,21 | all]
        [--rounds 5] [--data-dir DIR]    (default $LANCE_SQL_TPCH_DIR or /tmp/lance-sql-tpch/sf<SF>)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

DEFAULT_QUERIES = (3, 5, 10, 12, 18, 21)
VARIANTS = ("spj", "nospj", "parquet")


def _tpch_data() -> ModuleType:
    """``benchmarks/tpch_data.py`` (loaded by path: ``benchmarks`` is not a package)."""
    if "tpch_data" in sys.modules:
        return sys.modules["tpch_data"]
    path = Path(__file__).resolve().with_name("tpch_data.py")
    spec = importlib.util.spec_from_file_location("tpch_data", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tpch_data"] = module
    spec.loader.exec_module(module)
    return module


def contexts(parquet_dir: Path, lance_dir: Path) -> dict[str, Any]:
    """One context per variant, tables registered."""
    import datafusion

    import lance_sql

    td = _tpch_data()
    out: dict[str, Any] = {}
    for name, setting in (("spj", "true"), ("nospj", "false")):
        ctx = lance_sql.SessionContext()
        ctx.sql(f"SET lance.spj = {setting}")
        td.register_lance_sql(ctx, lance_dir)
        out[name] = ctx
    plain = datafusion.SessionContext()
    td.register_parquet(plain, parquet_dir)
    out["parquet"] = plain
    return out


def spj_joins(ctx: Any, text: str) -> int:
    """How many storage-partitioned joins EXPLAIN shows for the query's SELECT (-1: EXPLAIN failed).

    q15's CREATE VIEW runs first (and its DROP VIEW after), so its SELECT can be explained.
    """
    td = _tpch_data()
    stmts = td.statements(text)
    views = [s for s in stmts if s.lower().split()[:2] == ["create", "view"]]
    selects = [s for s in stmts if s.lower().split()[0] not in ("create", "drop")]
    for view in views:
        ctx.sql(view).collect()
    try:
        count = 0
        for stmt in selects:
            plan = ctx.sql("EXPLAIN " + stmt).to_arrow_table().column("plan").to_pylist()
            count += sum(p.count("StoragePartitionedJoin: ") for p in plan if p)
        return count
    except Exception:
        return -1  # e.g. q7 (issue 15: EXPLAIN compares pyarrow expressions with ==)
    finally:
        for view in views:
            ctx.sql(f"DROP VIEW IF EXISTS {view.split()[2]}").collect()


def time_query(ctxs: dict[str, Any], text: str, rounds: int) -> dict[str, Any]:
    """Median seconds per variant over ``rounds`` alternating rounds (after one warm-up each)."""
    td = _tpch_data()
    rows = {}
    for name in VARIANTS:
        rows[name] = td.run_query(ctxs[name], text).num_rows  # warm: caches, thread pools
    if len(set(rows.values())) != 1:
        raise AssertionError(f"the variants return different row counts: {rows}")
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(rounds):
        for name in VARIANTS:
            start = time.perf_counter()
            td.run_query(ctxs[name], text)
            times[name].append(time.perf_counter() - start)
    result: dict[str, Any] = {f"{n}_s": statistics.median(t) for n, t in times.items()}
    result["rows"] = rows["spj"]
    return result


def parse_queries(text: str) -> list[int]:
    if text == "all":
        return list(_tpch_data().QUERY_NUMBERS)
    numbers = [int(q.strip().lstrip("qQ")) for q in text.split(",") if q.strip()]
    bad = [n for n in numbers if n not in _tpch_data().QUERY_NUMBERS]
    if bad:
        raise SystemExit(f"no TPC-H query {bad}")
    return numbers


def main(argv: list[str] | None = None) -> dict[int, dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    p.add_argument("--queries", default=",".join(map(str, DEFAULT_QUERIES)), help="'all' or 3,5")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--data-dir", help="where the data is generated and cached")
    args = p.parse_args(argv)
    sf = f"{args.sf:g}"
    data_dir = Path(
        args.data_dir or os.environ.get("LANCE_SQL_TPCH_DIR") or f"/tmp/lance-sql-tpch/sf{sf}"
    )
    td = _tpch_data()
    start = time.perf_counter()
    parquet_dir, lance_dir = td.prepare(data_dir, args.sf)
    print(f"data: {data_dir} (ready in {time.perf_counter() - start:.1f} s)", flush=True)
    ctxs = contexts(parquet_dir, lance_dir)
    results: dict[int, dict[str, Any]] = {}
    head = ("query", "rows", "spj joins", "spj s", "nospj s", "parquet s", "spj/nospj", "spj/parq")
    print(f"TPC-H SF{sf}, {args.rounds} alternating rounds, medians")
    print(f"{head[0]:<6}" + "".join(f"{h:>11}" for h in head[1:]), flush=True)
    for n in parse_queries(args.queries):
        text = td.query_text(n)
        r = time_query(ctxs, text, args.rounds)
        r["spj_joins"] = spj_joins(ctxs["spj"], text)
        r["spj_over_nospj"] = r["spj_s"] / r["nospj_s"]
        r["spj_over_parquet"] = r["spj_s"] / r["parquet_s"]
        results[n] = r
        cells = (r["rows"], r["spj_joins"], r["spj_s"], r["nospj_s"], r["parquet_s"])
        print(
            f"q{n:<5}{cells[0]:>11}{cells[1]:>11}"
            + "".join(f"{v:>11.3f}" for v in cells[2:])
            + f"{r['spj_over_nospj']:>11.2f}{r['spj_over_parquet']:>11.2f}",
            flush=True,
        )
    return results


if __name__ == "__main__":
    main()
