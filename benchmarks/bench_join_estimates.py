"""Benchmark: join estimates per AND-ed filter condition vs one per filter (issue #18).

The join-statistics pass estimates a filtered input at 0.25 of its rows per
AND-ed condition, at most :data:`~lance_sql.engines.datafusion.join_swap.MAX_FILTER_CONJUNCTS`
counted (``new``); before, 0.25 per filter, whatever it held (``old``, the
same code with the cap at 1). Both run in one ``lance_sql.SessionContext``,
alternated round by round with DataFusion over Parquet; every answer is
checked against Parquet's first.

``--data plain``: all eight tables plain Lance datasets (``lance_plain``,
where TPC-H q12's join is planned by DataFusion); ``spj`` / ``nospj``: the
bucketed namespaces with storage-partitioned joins on / off.

Usage: ``python benchmarks/bench_join_estimates.py [--queries all] [--rounds 3]
[--data plain|spj|nospj] [--sf 1] [--data-dir DIR]``.
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

CAPS = {"old": 1, "new": 3}


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--queries", default="all")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data", choices=("plain", "spj", "nospj"), default="plain")
    p.add_argument("--data-dir")
    args = p.parse_args(argv)
    import datafusion

    import lance_sql
    from lance_sql.engines.datafusion import join_swap

    sf = f"{args.sf:g}"
    data_dir = tpch_data.data_dir(args.data_dir, args.sf)
    parquet_dir, lance_dir = tpch_data.prepare(data_dir, args.sf)
    ctx = lance_sql.SessionContext()
    if args.data == "plain":
        plain_dir = tpch_data.load_plain_lance(parquet_dir, data_dir)
        tpch_data.register_lance_plain(ctx, lance_dir, plain_dir)
    else:
        tpch_data.register_lance_sql(ctx, lance_dir)
        ctx.sql(f"SET lance.spj = {'true' if args.data == 'spj' else 'false'}")
    pq = datafusion.SessionContext()
    tpch_data.register_parquet(pq, parquet_dir)
    names = [*CAPS, "parquet"]
    per: dict[str, list[float]] = {v: [] for v in names}
    print(f"TPC-H SF{sf} ({args.data}), {args.rounds} alternating rounds, medians (s)")
    print(f"load {os.getloadavg()}")
    for n in bench_tpch.parse_queries(args.queries):
        text = tpch_data.query_text(n)
        want = bench_tpch._canonical(tpch_data.run_query(pq, text))
        for v, cap in CAPS.items():
            join_swap.MAX_FILTER_CONJUNCTS = cap
            if bench_tpch._canonical(tpch_data.run_query(ctx, text)) != want:
                raise AssertionError(f"q{n}: {v} answers differently from Parquet")
        times: dict[str, list[float]] = {v: [] for v in names}
        for _ in range(args.rounds):
            for v in names:
                engine: Any = pq if v == "parquet" else ctx
                if v in CAPS:
                    join_swap.MAX_FILTER_CONJUNCTS = CAPS[v]
                start = time.perf_counter()
                tpch_data.run_query(engine, text)
                times[v].append(time.perf_counter() - start)
        med = {v: statistics.median(t) for v, t in times.items()}
        for v in names:
            per[v].append(med[v])
        cells = " ".join(f"{v} {med[v]:.3f}" for v in names)
        print(
            f"q{n:<3} {cells}  new/old {med['new'] / med['old']:.2f}"
            f"  new/parquet {med['new'] / med['parquet']:.2f}"
            f"  old/parquet {med['old'] / med['parquet']:.2f}",
            flush=True,
        )
    join_swap.MAX_FILTER_CONJUNCTS = CAPS["new"]

    def gm(a: str, b: str) -> float:
        return math.exp(
            statistics.fmean(math.log(x / y) for x, y in zip(per[a], per[b], strict=True))
        )

    out = {"new/old": gm("new", "old"), "new/parquet": gm("new", "parquet")}
    out["old/parquet"] = gm("old", "parquet")
    print("geomean " + ", ".join(f"{k} {v:.2f}" for k, v in out.items()))
    print(f"load average after: {os.getloadavg()}")
    return out


if __name__ == "__main__":
    main()
