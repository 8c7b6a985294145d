"""Full scan of many tiny partition tables: file reader vs scanner, alternating in one process.

A namespace of P partitions of ``--rows-per`` rows each (``bench_scale.build``)
is registered once; ``SELECT count(*), sum(a)`` then runs ``--repeat`` rounds,
each round once per route, in turn:

- ``file``: small tables read from their data files (``tables/file_read.py``);
- ``scanner``: the same units forced onto pylance's scanner (as before that route);
- ``one``: the same rows as one Lance dataset (the ratio's baseline).

Reports medians of wall time and process CPU time per partition table, and
each route's wall time over ``one``'s.

    python benchmarks/bench_file_read.py [--partitions 1000,10000] [--repeat 7] [--dir DIR]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

import lance
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_scale


def bench(root: Path, p: int, per: int, repeat: int) -> dict[str, float]:
    import lance_sql
    from lance_sql.engines.datafusion.provider import ScanUnitDataset

    single = root.parent / f"single{p}"
    if not single.exists():
        data = bench_scale.rows(np.repeat(np.arange(p, dtype=np.int32), per))
        lance.write_dataset(data, str(single), schema=bench_scale.SCHEMA)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(root))
    ctx.register_lance("one", str(single))
    sql = "SELECT count(*) AS n, sum(a) AS s FROM {}"
    expected = ctx.sql(sql.format("one")).to_pylist()
    assert ctx.sql(sql.format("t")).to_pylist() == expected
    dataset = next(o for o in gc.get_objects() if isinstance(o, ScanUnitDataset) and o.name == "t")
    units = [getattr(u, "_inner", u) for c in dataset.plan(None).units for u in c.units]
    direct = [u._direct for u in units]
    times: dict[str, list[tuple[float, float]]] = {"file": [], "scanner": [], "one": []}
    for _ in range(repeat):
        for route in times:
            table = "one" if route == "one" else "t"
            if route != "one":
                for u, d in zip(units, direct, strict=True):
                    u._direct = d if route == "file" else None
            t0, c0 = time.perf_counter(), time.process_time()
            got = ctx.sql(sql.format(table)).to_pylist()
            times[route].append((time.perf_counter() - t0, time.process_time() - c0))
            assert got == expected
    wall = {k: statistics.median(t for t, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
    return {
        "file_ms_per_table": 1000 * wall["file"] / p,
        "scanner_ms_per_table": 1000 * wall["scanner"] / p,
        "file_cpu_ms_per_table": 1000 * cpu["file"] / p,
        "scanner_cpu_ms_per_table": 1000 * cpu["scanner"] / p,
        "file_ratio": wall["file"] / wall["one"],
        "scanner_ratio": wall["scanner"] / wall["one"],
        "direct_units": sum(isinstance(d, list) for d in direct) / len(direct),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", default="1000,10000")
    ap.add_argument("--rows-per", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="bench_file_read_"))
    for p in [int(x) for x in args.partitions.split(",")]:
        root = base / f"p{p}"
        if not root.exists():
            bench_scale.build(root, p, args.rows_per)
        result = bench(root, p, args.rows_per, args.repeat)
        print(f"P={p}: " + ", ".join(f"{k}={v:.3f}" for k, v in result.items()), flush=True)


if __name__ == "__main__":
    main()
