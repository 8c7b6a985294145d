"""Lance scan options per table, measured on TPC-H: which pylance scanner settings pay.

Every variant is a ``lance_sql.SessionContext`` over the same TPC-H Lance
tables (``benchmarks/tpch_data.py``; ``--layout plain``: all 8 tables plain
datasets, ``namespace``: lineitem bucket[16] / orders bucket[8] namespaces),
registered with one set of ``scan_options`` on every table
(docs/scan_options.md). Queries alternate the variants round by round (as
``bench_tpch.py``); answers must be equal; each variant's median is divided by
the ``default`` variant's (no options).

    /work/venv/bin/python benchmarks/bench_scan_options.py [--sf 1] [--rounds 5]
        [--queries 1,6,12,14,19] [--layout plain|namespace] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

#: variant -> the scan options every table is registered with
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "batch_64k": {"batch_size": 65536},
    "batch_4k": {"batch_size": 4096},
    "batch_readahead_4": {"batch_readahead": 4},
    "batch_readahead_64": {"batch_readahead": 64},
    "fragment_readahead_1": {"fragment_readahead": 1},
    "fragment_readahead_16": {"fragment_readahead": 16},
    "io_buffer_64m": {"io_buffer_size": 64 << 20},
    "late_off": {"late_materialization": False},
}


def _bench_tpch() -> ModuleType:
    path = Path(__file__).resolve().with_name("bench_tpch.py")
    spec = importlib.util.spec_from_file_location("bench_tpch", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_tpch"] = module
    spec.loader.exec_module(module)
    return module


def contexts(
    td: ModuleType, lance_dir: Path, plain_dir: Path | None, names: list[str]
) -> dict[str, Any]:
    """One context per variant (``plain_dir``: all tables plain datasets, else namespaces)."""
    import lance_sql

    out = {}
    for name in names:
        options = VARIANTS[name] or None
        ctx = lance_sql.SessionContext()
        for table in td.TABLES:
            if table in td.NAMESPACES and plain_dir is None:
                ctx.register_namespace(table, str(lance_dir / table), scan_options=options)
                continue
            root = plain_dir if table in td.NAMESPACES and plain_dir else lance_dir
            ctx.register_lance(table, str(root / f"{table}.lance"), scan_options=options)
        out[name] = ctx
    return out


def main(argv: list[str] | None = None) -> dict[int, dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--queries", default="1,6,12,14,19")
    p.add_argument("--layout", choices=("plain", "namespace"), default="plain")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--data-dir")
    args = p.parse_args(argv)
    bt = _bench_tpch()
    td = bt._tpch_data()
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    if "default" not in names or any(n not in VARIANTS for n in names):
        raise SystemExit(f"variants: 'default' and any of {list(VARIANTS)}")
    data_dir = td.data_dir(args.data_dir, args.sf)
    parquet_dir, lance_dir = td.prepare(data_dir, args.sf)
    plain = td.load_plain_lance(parquet_dir, data_dir) if args.layout == "plain" else None
    ctxs = contexts(td, lance_dir, plain, names)
    print(f"TPC-H SF{args.sf:g}, {args.layout} tables, {args.rounds} alternating rounds")
    print(f"{'query':<7}" + "".join(f"{n:>22}" for n in names), flush=True)
    results: dict[int, dict[str, float]] = {}
    for n in bt.parse_queries(args.queries):
        r = bt.time_query(ctxs, td.query_text(n), args.rounds)
        base = r["default_s"]
        results[n] = {name: r[f"{name}_s"] / base for name in names}
        cells = [f"{r['default_s']:.3f} s"] + [f"{results[n][m]:.2f}" for m in names[1:]]
        print(f"q{n:<6}" + "".join(f"{c:>22}" for c in cells), flush=True)
    if len(results) > 1:
        means = [bt._geomean([r[m] for r in results.values()]) for m in names[1:]]
        print("geomean" + " " * 22 + "".join(f"{m:>22.2f}" for m in means), flush=True)
    return results


if __name__ == "__main__":
    main()
