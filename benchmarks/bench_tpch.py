"""TPC-H through lance-sql: namespaces, plain Lance datasets and DataFusion over Parquet.

Data (``benchmarks/tpch_data.py``, generated and loaded once per data directory):
tpchgen-cli Parquet at ``--sf``; in Lance, lineitem is a namespace bucket[16] on
l_orderkey, orders bucket[8] on o_orderkey, the other tables plain datasets
(and, for the ``lance`` variants, lineitem and orders as plain datasets too).

Variants (``--variants``, default ``spj,nospj,parquet``), all in this one process:

- ``spj``: ``lance_sql.SessionContext()`` over the bucketed namespaces with
  ``SET lance.spj = true`` (the default) and join statistics on (the default);
- ``nospj``: the same with ``SET lance.spj = false``;
- ``spj_always``: ``spj`` with the per-join decision off (``ctx.spj_small_side_rows = 0``,
  :func:`lance_sql.engines.datafusion.spj_plan.decide`): every compatible join storage-partitioned;
- ``spj_nostats``: ``spj`` with the join-statistics pass off
  (``ctx.join_stats_enabled = False``, :mod:`lance_sql.engines.datafusion.join_stats`);
- ``lance`` / ``lance_nostats``: all 8 tables plain Lance datasets, join statistics on / off;
- ``parquet``: a plain ``datafusion.SessionContext()`` over the Parquet files
  (DataFusion's own defaults), as a reference;
- ``duckdb`` / ``ffi54``: DuckDB over ``lance.dataset`` objects, and pylance's
  ``FFILanceTableProvider`` in DataFusion 54 (a worker process in a virtual
  environment created once, ``--ffi-venv``), all 8 tables plain datasets
  (``benchmarks/tpch_engines.py``). With ``lance`` they give ``lance/ext``:
  plain datasets over the faster of the two; ``spj/lance`` compares the
  namespaces with the same rows as plain datasets.

Each query runs once per variant to warm up, then ``--rounds`` rounds in which
every variant runs it once, in turn: this VM's speed drifts by tens of percent
within a minute, and alternating puts every variant under the same drift
(``bench_spj.py`` does the same). A ratio is of two medians; every variant is
divided by ``parquet`` (when run), and ``spj`` by ``nospj``. ``spj joins`` is
the number of ``StoragePartitionedJoin`` lines in the ``spj`` variant's EXPLAIN.

    /work/venv/bin/python benchmarks/bench_tpch.py [--sf 1] [--queries 3,5,10,12,18,21 | all]
        [--rounds 5] [--variants spj,nospj,parquet] [--data-dir DIR]
        (data: default $LANCE_SQL_TPCH_DIR or /tmp/lance-sql-tpch/sf<SF>)
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

DEFAULT_QUERIES = (3, 5, 10, 12, 18, 21)
VARIANTS = ("spj", "nospj", "parquet")
ALL_VARIANTS = (
    "spj",
    "nospj",
    "spj_always",
    "spj_nostats",
    "spj_dyn",
    "nospj_dyn",
    "lance",
    "lance_nostats",
    "parquet",
    "duckdb",
    "ffi54",
)


def _load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` (loaded by path: ``benchmarks`` is not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _tpch_data() -> ModuleType:
    """``benchmarks/tpch_data.py``."""
    return _load("tpch_data")


def contexts(
    parquet_dir: Path,
    lance_dir: Path,
    variants: tuple[str, ...] = VARIANTS,
    plain_dir: Path | None = None,
    ffi_venv: Path | None = None,
) -> dict[str, Any]:
    """One context per variant, tables registered (``plain_dir``: the plain Lance datasets of
    the ``lance``, ``duckdb`` and ``ffi54`` variants; ``ffi_venv``: DataFusion 54's venv)."""
    import datafusion

    import lance_sql

    td = _tpch_data()
    out: dict[str, Any] = {}
    for name in variants:
        if name in ("duckdb", "ffi54"):
            engines = _load("tpch_engines")
            if plain_dir is None:
                raise ValueError(f"variant {name} needs the plain Lance data (plain_dir)")
            paths = engines.dataset_paths(lance_dir, plain_dir, td.TABLES)
            if name == "duckdb":
                out[name] = engines.DuckDBOverLance(paths)
            else:
                assert ffi_venv is not None
                out[name] = engines.FFIWorker(engines.ffi_python(ffi_venv), paths)
            continue
        if name == "parquet":
            plain = datafusion.SessionContext()
            td.register_parquet(plain, parquet_dir)
            out[name] = plain
            continue
        config = None
        if name.endswith("_dyn"):  # DataFusion's join dynamic filter pushdown forced on
            from lance_sql.engines.datafusion.session_defaults import default_config

            config = default_config().set(
                "datafusion.optimizer.enable_join_dynamic_filter_pushdown", "true"
            )
        ctx = lance_sql.SessionContext(config)
        ctx.join_stats_enabled = not name.endswith("_nostats")
        if name == "spj_always":
            ctx.spj_small_side_rows = 0
        if name.startswith("lance"):
            if plain_dir is None:
                raise ValueError(f"variant {name} needs the plain Lance data (plain_dir)")
            td.register_lance_plain(ctx, lance_dir, plain_dir)
        else:
            spj = "false" if name.startswith("nospj") else "true"
            ctx.sql(f"SET lance.spj = {spj}")
            td.register_lance_sql(ctx, lance_dir)
        out[name] = ctx
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
    """Median seconds per variant over ``rounds`` alternating rounds (after one warm-up each).

    The variants' answers must be equal (rows compared as sorted value lists,
    floats rounded to 6 significant digits), else the run stops.
    """
    answers = {}
    for name in ctxs:
        answers[name] = _canonical(_timed(ctxs[name], text)[0])  # warm: caches, thread pools
    first = next(iter(answers))
    wrong = [n for n, a in answers.items() if not _same_rows(a, answers[first])]
    if wrong:
        raise AssertionError(f"variants {wrong} answer differently from {first}")
    times: dict[str, list[float]] = {name: [] for name in ctxs}
    cpu: dict[str, list[float]] = {name: [] for name in ctxs}
    for _ in range(rounds):
        for name in ctxs:
            before = time.process_time()  # this process's CPU, all threads (external: theirs)
            times[name].append(_timed(ctxs[name], text)[1])
            cpu[name].append(time.process_time() - before)
    result: dict[str, Any] = {f"{n}_s": statistics.median(t) for n, t in times.items()}
    result |= {f"{n}_cpu_s": statistics.median(t) for n, t in cpu.items()}
    result["rows"] = len(answers[first])
    return result


def _timed(ctx: Any, text: str) -> tuple[Any, float]:
    """The answer of ``text`` on one variant and its seconds (an external engine times itself)."""
    if hasattr(ctx, "timed"):
        return ctx.timed(text)
    start = time.perf_counter()
    table = _tpch_data().run_query(ctx, text)
    return table, time.perf_counter() - start


def planning_times(
    ctxs: dict[str, Any], queries: list[int], rounds: int
) -> dict[int, dict[str, Any]]:
    """Median ms of ``df.lance_rewrite()`` (the plan passes) per lance-sql variant, alternated."""
    td = _tpch_data()
    names = [n for n in ctxs if n not in ("parquet", "duckdb", "ffi54")]
    print(f"plan rewrite, median ms of {rounds} alternating rounds")
    print(f"{'query':<7}" + "".join(f"{n:>16}" for n in names), flush=True)
    results: dict[int, dict[str, Any]] = {}
    for n in queries:
        selects = [
            s
            for s in td.statements(td.query_text(n))
            if s.lower().split()[0] not in ("create", "drop")
        ]
        if len(selects) != 1:
            continue  # q15: its view must exist first
        frames = {name: ctxs[name].sql(selects[0]) for name in names}
        for df in frames.values():
            df.lance_rewrite()  # warm
        times: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(rounds):
            for name, df in frames.items():
                start = time.perf_counter()
                df.lance_rewrite()
                times[name].append((time.perf_counter() - start) * 1e3)
        results[n] = {f"{k}_ms": statistics.median(v) for k, v in times.items()}
        print(f"q{n:<6}" + "".join(f"{results[n][f'{k}_ms']:>16.2f}" for k in names), flush=True)
    return results


def _canonical(table: Any) -> list[tuple[Any, ...]]:
    """A query answer as sorted rows, floats and decimals rounded (for comparing variants)."""

    def norm(v: Any) -> Any:
        if isinstance(v, float) or type(v).__name__ == "Decimal":
            return float(f"{float(v):.6g}")
        return v

    def key(row: tuple[Any, ...]) -> str:  # sorted by values rounded further (see _same_rows)
        return repr(tuple(f"{v:.4g}" if isinstance(v, float) else v for v in row))

    rows = zip(*(table.column(i).to_pylist() for i in range(table.num_columns)), strict=True)
    return sorted((tuple(norm(v) for v in r) for r in rows), key=key)


def _same_rows(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    """Equal answers, floats to a relative 1e-4 (DuckDB's ``avg`` of a decimal is a double,
    DataFusion's a decimal cut at scale 6: 0.0499977 against 0.049997)."""

    def close(x: Any, y: Any) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return math.isclose(x, y, rel_tol=1e-4, abs_tol=1e-9)
        return x == y

    return len(a) == len(b) and all(
        len(r) == len(s) and all(close(x, y) for x, y in zip(r, s, strict=True))
        for r, s in zip(a, b, strict=True)
    )


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
    p.add_argument("--variants", default=",".join(VARIANTS), help=",".join(ALL_VARIANTS))
    p.add_argument(
        "--file-version",
        help="Lance file format of every Lance table (namespaces: data_storage_version)",
    )
    p.add_argument(
        "--planning",
        action="store_true",
        help="time the plan rewrite (df.lance_rewrite()) per variant instead of the queries",
    )
    p.add_argument(
        "--ffi-venv",
        help="DataFusion 54's virtual environment for ffi54 (default: <data dir>/../df54-venv)",
    )
    args = p.parse_args(argv)
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in variants if v not in ALL_VARIANTS]
    if unknown or not variants:
        raise SystemExit(f"unknown variants {unknown}: choose from {ALL_VARIANTS}")
    sf = f"{args.sf:g}"
    td = _tpch_data()
    data_dir = td.data_dir(args.data_dir, args.sf)
    start = time.perf_counter()
    parquet_dir, lance_dir = td.prepare(data_dir, args.sf, args.file_version)
    plain_dir = None
    if any(v.startswith("lance") or v in ("duckdb", "ffi54") for v in variants):
        plain_dir = td.load_plain_lance(parquet_dir, data_dir, args.file_version)
    print(f"data: {data_dir} (ready in {time.perf_counter() - start:.1f} s)", flush=True)
    ffi_venv = Path(args.ffi_venv) if args.ffi_venv else data_dir.parent / "df54-venv"
    if "ffi54" in variants:
        try:
            _load("tpch_engines").ffi_python(ffi_venv)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            print(f"ffi54 left out: {exc}", flush=True)
            variants = tuple(v for v in variants if v != "ffi54")
    ctxs = contexts(parquet_dir, lance_dir, variants, plain_dir, ffi_venv)
    if args.planning:
        return planning_times(ctxs, parse_queries(args.queries), args.rounds)
    results: dict[int, dict[str, Any]] = {}
    ratios = _ratio_names(variants)
    short = {
        "parquet": "parq",
        "spj_nostats": "nostats",
        "lance_nostats": "nostats",
        "best_external": "ext",
    }
    labels = [f"{a}/{short.get(b, b)}" for a, b in ratios.values()]
    head = ["query", "rows", "spj joins", *(f"{v} s" for v in variants), *labels]
    print(f"TPC-H SF{sf}, {args.rounds} alternating rounds, medians")
    widths = [max(11, len(h) + 2) for h in head[1:]]
    print(
        f"{head[0]:<7}" + "".join(f"{h:>{w}}" for h, w in zip(head[1:], widths, strict=True)),
        flush=True,
    )
    for n in parse_queries(args.queries):
        text = td.query_text(n)
        r = time_query(ctxs, text, args.rounds)
        r["spj_joins"] = spj_joins(ctxs["spj"], text) if "spj" in ctxs else -1
        external = [r[f"{v}_s"] for v in ("duckdb", "ffi54") if v in ctxs]
        if external:
            r["best_external_s"] = min(external)
        for ratio, (a, b) in ratios.items():
            r[ratio] = r[f"{a}_s"] / r[f"{b}_s"]
        results[n] = r
        cells = [f"{r['rows']}", f"{r['spj_joins']}"]
        cells += [f"{r[f'{v}_s']:.3f}" for v in variants] + [f"{r[k]:.2f}" for k in ratios]
        cpu = ", ".join(f"{v} {r[f'{v}_cpu_s']:.2f}" for v in variants)
        print(
            f"q{n:<6}" + "".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)),
            flush=True,
        )
        print(f"        process CPU s: {cpu}", flush=True)
    if len(results) > 1:
        means = [f"{_geomean([r[k] for r in results.values()]):.2f}" for k in ratios]
        cells = [""] * (2 + len(variants)) + means
        print(
            "geomean" + "".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)), flush=True
        )
    for ctx in ctxs.values():
        if hasattr(ctx, "timed"):
            ctx.close()
    return results


def _ratio_names(variants: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """The ratios printed, ``{a}_over_{b}``: each variant over parquet, spj over nospj/nostats."""
    pairs: list[tuple[str, str]] = []
    if "parquet" in variants:
        pairs += [(v, "parquet") for v in variants if v != "parquet"]
    pairs += [(v, v[: -len("_dyn")]) for v in variants if v.endswith("_dyn") and v[:-4] in variants]
    for other in ("nospj", "spj_always", "spj_nostats"):
        if "spj" in variants and other in variants:
            pairs.append(("spj", other))
    if "lance" in variants and "lance_nostats" in variants:
        pairs.append(("lance", "lance_nostats"))
    if "lance" in variants:
        pairs += [(v, "lance") for v in ("spj", "nospj") if v in variants]
        if "duckdb" in variants or "ffi54" in variants:
            pairs.append(("lance", "best_external"))
    return {f"{a}_over_{b}": (a, b) for a, b in pairs}


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


if __name__ == "__main__":
    main()
