"""Benchmark: scans choosing early or late materialization from a sample (issue #18 item 5).

TPC-H (tpchgen-cli data, the DataFusion repository's query texts, the
bucketed namespaces of ``bench_tpch.py``) through one ``lance_sql.SessionContext``,
in alternating rounds per query:

* ``adaptive``: lance-sql's choice (:mod:`lance_sql.tables.materialization`);
* ``late``: Lance's default late materialization for every filtered scan;
* ``early``: every filtered scan reads all projected columns up front;
* ``parquet``: plain DataFusion over the Parquet files.

Prints medians per query and the geometric means of adaptive/late,
early/late, adaptive/parquet and late/parquet. Every variant's answer is
checked against the Parquet one first.

Usage: ``python benchmarks/bench_materialization.py [--sf 1] [--queries all|3,10]
[--rounds 3]``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tpch
import tpch_data

VARIANTS = ("adaptive", "late", "early", "parquet")


def _set(variant: str) -> None:
    """Point the scans of the next query at ``variant``'s choice."""
    from lance_sql.tables import materialization

    materialization.clear()
    materialization.EARLY_AT = {"late": math.inf, "early": 0.0}.get(variant, 0.5)
    materialization.MIN_ROWS = 0 if variant == "early" else 4 * 8 * 1024


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--queries", default="all")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data-dir")
    args = p.parse_args(argv)
    import datafusion

    import lance_sql

    sf = f"{args.sf:g}"
    data_dir = tpch_data.data_dir(args.data_dir, args.sf)
    parquet_dir, lance_dir = tpch_data.prepare(data_dir, args.sf)
    ctx = lance_sql.SessionContext()
    tpch_data.register_lance_sql(ctx, lance_dir)
    pq = datafusion.SessionContext()
    tpch_data.register_parquet(pq, parquet_dir)
    per: dict[str, list[float]] = {v: [] for v in VARIANTS}
    print(f"TPC-H SF{sf}, {args.rounds} alternating rounds, medians (s); load {os.getloadavg()}")
    for n in bench_tpch.parse_queries(args.queries):
        text = tpch_data.query_text(n)
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        want = bench_tpch._canonical(tpch_data.run_query(pq, text))
        for v in VARIANTS[:-1]:
            _set(v)
            if bench_tpch._canonical(tpch_data.run_query(ctx, text)) != want:
                raise AssertionError(f"q{n}: variant {v} answers differently from Parquet")
        for _ in range(args.rounds):
            for v in VARIANTS:
                _set(v)
                engine: Any = pq if v == "parquet" else ctx
                start = time.perf_counter()
                tpch_data.run_query(engine, text)
                times[v].append(time.perf_counter() - start)
        med = {v: statistics.median(t) for v, t in times.items()}
        for v in VARIANTS:
            per[v].append(med[v])
        cells = " ".join(f"{v} {med[v]:.3f}" for v in VARIANTS)
        print(f"q{n:<3} {cells}  adaptive/late {med['adaptive'] / med['late']:.2f}", flush=True)
    _set("adaptive")

    def gm(a: str, b: str) -> float:
        return math.exp(
            statistics.fmean(math.log(x / y) for x, y in zip(per[a], per[b], strict=True))
        )

    out = {
        "adaptive/late": gm("adaptive", "late"),
        "early/late": gm("early", "late"),
        "adaptive/parquet": gm("adaptive", "parquet"),
        "late/parquet": gm("late", "parquet"),
    }
    print("geomean " + ", ".join(f"{k} {v:.2f}" for k, v in out.items()))
    print(f"load average after: {os.getloadavg()}")
    return out


if __name__ == "__main__":
    main()
