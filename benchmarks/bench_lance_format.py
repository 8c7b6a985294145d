"""Benchmark: the Lance file format version of the TPC-H tables as lance-sql reads them (#18).

lance-sql writes partition tables with pylance's defaults
(``lance.fragment.write_fragments``: file format 2.2 in pylance 14), one
fragment per flush of the writer's buffers. This script copies the
benchmark's Lance directory (``<data-dir>/lance``: bucketed namespaces for
lineitem and orders, plain datasets for the rest) once per ``--versions``
entry, rewriting every dataset and partition table with one fragment in that
file format version (``lance.write_dataset(..., data_storage_version=V)``;
the namespaces' ``__manifest`` is copied as is: each table keeps version 1,
its schema and field ids). Then TPC-H runs through one
``lance_sql.SessionContext`` per copy (and one over the original), with
DataFusion over Parquet, alternated round by round; every answer is checked
against Parquet's first. Sizes on disk are printed.

Usage: ``python benchmarks/bench_lance_format.py [--versions 2.0,2.2]
[--queries all] [--rounds 3] [--sf 1] [--data-dir DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tpch
import tpch_data


def rewrite_copy(src: Path, dst: Path, version: str) -> Path:
    """``src`` (a benchmark Lance directory) rewritten at ``dst`` in file format ``version``."""
    import lance

    if (dst / ".done").exists():
        return dst
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for entry in sorted(src.iterdir()):
        target = dst / entry.name
        if not entry.is_dir():
            shutil.copy(entry, target)
        elif entry.name.endswith(".lance"):
            ds = lance.dataset(str(entry))
            lance.write_dataset(ds.to_table(), str(target), data_storage_version=version)
        else:  # a namespace: the manifest as is, every partition table rewritten at version 1
            shutil.copytree(entry / "__manifest", target / "__manifest")
            for table in sorted(entry.glob("*$dataset")):
                ds = lance.dataset(str(table))
                if ds.version != 1:
                    raise ValueError(f"{table}: at version {ds.version}, the copy needs 1")
                out = lance.write_dataset(
                    ds.to_table(),
                    str(target / table.name),
                    schema=ds.schema,
                    data_storage_version=version,
                )
                if out.version != 1 or not out.schema.equals(ds.schema):
                    raise ValueError(f"{table}: the copy differs in version or schema")
    (dst / ".done").write_text(version)
    return dst


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--versions", default="2.0,2.2")
    p.add_argument("--queries", default="all")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data-dir")
    p.add_argument("--out", help="where the copies go (default <data-dir>/formats)")
    args = p.parse_args(argv)
    import datafusion

    import lance_sql

    sf = f"{args.sf:g}"
    data_dir = tpch_data.data_dir(args.data_dir, args.sf)
    parquet_dir, lance_dir = tpch_data.prepare(data_dir, args.sf)
    out_dir = Path(args.out) if args.out else data_dir / "formats"
    dirs = {"orig": Path(lance_dir)}
    for v in (v.strip() for v in args.versions.split(",") if v.strip()):
        dirs[f"v{v}"] = rewrite_copy(Path(lance_dir), out_dir / v / "lance", v)
    for name, d in dirs.items():
        sizes = {t: round(_size_mb(d / t)) for t in ("lineitem", "orders")}
        print(f"{name}: {d} lineitem {sizes['lineitem']} MB, orders {sizes['orders']} MB")
    engines: dict[str, Any] = {}
    for name, d in dirs.items():
        ctx = lance_sql.SessionContext()
        tpch_data.register_lance_sql(ctx, d)
        engines[name] = ctx
    pq = datafusion.SessionContext()
    tpch_data.register_parquet(pq, parquet_dir)
    engines["parquet"] = pq
    per: dict[str, list[float]] = {k: [] for k in engines}
    print(f"TPC-H SF{sf}, {args.rounds} alternating rounds, medians (s); load {os.getloadavg()}")
    for n in bench_tpch.parse_queries(args.queries):
        text = tpch_data.query_text(n)
        want = bench_tpch._canonical(tpch_data.run_query(pq, text))
        for name, ctx in engines.items():
            if bench_tpch._canonical(tpch_data.run_query(ctx, text)) != want:
                raise AssertionError(f"q{n}: {name} answers differently from Parquet")
        times: dict[str, list[float]] = {k: [] for k in engines}
        for _ in range(args.rounds):
            for name, ctx in engines.items():
                start = time.perf_counter()
                tpch_data.run_query(ctx, text)
                times[name].append(time.perf_counter() - start)
        med = {k: statistics.median(t) for k, t in times.items()}
        for k in engines:
            per[k].append(med[k])
        cells = " ".join(f"{k} {med[k]:.3f}" for k in engines)
        ratios = " ".join(f"{k}/pq {med[k] / med['parquet']:.2f}" for k in dirs)
        print(f"q{n:<3} {cells}  {ratios}", flush=True)

    def gm(a: str, b: str) -> float:
        return math.exp(
            statistics.fmean(math.log(x / y) for x, y in zip(per[a], per[b], strict=True))
        )

    out = {f"{k}/parquet": gm(k, "parquet") for k in dirs}
    out.update({f"{k}/orig": gm(k, "orig") for k in dirs if k != "orig"})
    print("geomean " + ", ".join(f"{k} {v:.2f}" for k, v in out.items()))
    print(f"load average after: {os.getloadavg()}")
    return out


if __name__ == "__main__":
    main()
