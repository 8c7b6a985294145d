"""Benchmark: ``udfs.murmur3`` against a per-value Python loop, and SQL against ``udfs``.

Three comparisons, each measured in this run (best of ``--repeats``):

1. int64: ``udfs.murmur3`` vs a Python loop calling ``mmh3.hash`` (C) per value
   over the same canonical bytes (8 bytes little-endian). Loop A hashes bytes
   built before timing (the loop at its fastest); loop B builds each value's
   bytes in the loop (``int.to_bytes``), as a per-value implementation would.
   Target: at least 30x.
2. utf8 strings of 5-30 characters: the same comparison over the UTF-8 bytes
   (loop B: ``str.encode`` in the loop). Target: at least 5x.
3. ``SELECT sum(murmur3(x)) FROM t`` in ``lance_sql.SessionContext`` on a
   registered in-memory table vs ``pc.sum(udfs.murmur3(x))`` over the same
   chunks. Target: ratio <= 1.5. Measured with the default config, i.e. what
   ``lance_sql.SessionContext()`` gives (``batch_size`` 131072: DataFusion calls
   the Python UDF once per 131,072-row batch), and, for reference, with
   DataFusion's own default ``batch_size`` 8192 (16x more calls), and with one
   partition (``target_partitions`` 1: no parallel hashing, as in the direct call).

The loops run over a subset (``--loop-rows``, default 1M) and are extrapolated
per row to ``--rows``, since 10M Python calls take seconds each. The one-time
numba compilation (or on-disk cache load) is measured separately on a tiny
array and excluded from the timings.

Usage::

    python benchmarks/bench_udfs.py                 # 10,000,000 rows
    python benchmarks/bench_udfs.py --rows 2000     # tiny run
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Fastest wall time of ``repeats`` calls, and the last result."""
    best = float("inf")
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def make_strings(rows: int, seed: int = 1) -> object:
    """``rows`` random ASCII strings of 5-30 characters, built from buffers (fast)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 31, size=rows)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    alphabet = np.frombuffer(
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", np.uint8
    )
    data = alphabet[rng.integers(0, len(alphabet), size=int(offsets[-1]))]
    return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data.tobytes()))


def run(rows: int, repeats: int, loop_rows: int, batch_rows: int) -> dict[str, float]:
    import mmh3
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    import lance_sql
    import udfs
    from udfs import _kernels

    loop_rows = min(loop_rows, rows)
    ints = pa.array(np.random.default_rng(0).integers(-(2**62), 2**62, size=rows), pa.int64())
    strings = make_strings(rows)

    # one-time cost: numba compile (or load from its on-disk cache) of the kernels
    t0 = time.perf_counter()
    udfs.murmur3(pa.array([1], pa.int64()))
    udfs.murmur3(pa.array(["a"]))
    first_call = time.perf_counter() - t0
    cache_hits = sum(
        len(k.stats.cache_hits) for k in (_kernels.hash_int_values, _kernels.hash_bytes)
    )

    # 1. int64
    int_values = ints.slice(0, loop_rows).to_pylist()
    int_bytes = [v.to_bytes(8, "little", signed=True) for v in int_values]
    loop_int, loop_int_result = best_of(lambda: [mmh3.hash(b) for b in int_bytes], repeats)
    loop_int *= rows / loop_rows
    loop_int_conv, _ = best_of(
        lambda: [mmh3.hash(v.to_bytes(8, "little", signed=True)) for v in int_values], repeats
    )
    loop_int_conv *= rows / loop_rows
    ours_int, ours_int_result = best_of(lambda: udfs.murmur3(ints), repeats)
    if ours_int_result.slice(0, loop_rows).to_pylist() != loop_int_result:
        raise SystemExit("int64 hashes differ from mmh3")

    # 2. strings
    str_values = strings.slice(0, loop_rows).to_pylist()
    str_bytes = [s.encode() for s in str_values]
    loop_str, loop_str_result = best_of(lambda: [mmh3.hash(b) for b in str_bytes], repeats)
    loop_str *= rows / loop_rows
    loop_str_conv, _ = best_of(lambda: [mmh3.hash(s.encode()) for s in str_values], repeats)
    loop_str_conv *= rows / loop_rows
    ours_str, ours_str_result = best_of(lambda: udfs.murmur3(strings), repeats)
    if ours_str_result.slice(0, loop_rows).to_pylist() != loop_str_result:
        raise SystemExit("string hashes differ from mmh3")

    # 3. SQL vs udfs directly, same aggregation on both sides
    import datafusion

    from lance_sql.engines.datafusion.session_defaults import default_config

    table = pa.table({"x": ints})
    batches = table.to_batches(max_chunksize=batch_rows)
    sql = "SELECT sum(murmur3(x)) AS s FROM t"
    contexts = {}
    batch_sizes = {}
    for label, config in (
        ("default", None),
        ("8192", datafusion.SessionConfig().with_batch_size(8192)),
        (
            "1 partition",
            default_config().with_target_partitions(1),
        ),
    ):
        ctx = lance_sql.SessionContext(config)
        ctx.register_record_batches("t", [batches])
        ctx.sql(sql).collect()  # warm: dispatch probe, UDF registration
        # the batch size in effect, as seen: the largest batch DataFusion produces
        batch_sizes[label] = max(b.num_rows for b in ctx.sql("SELECT x FROM t").collect())
        contexts[label] = ctx
    chunked = pa.chunked_array([b.column(0) for b in batches])
    # rounds interleave every variant, so a shared machine's load drifts over all alike
    sql_times = dict.fromkeys(contexts, float("inf"))
    direct_time = float("inf")
    for _ in range(max(repeats, 5)):
        for label, ctx in contexts.items():
            t, sql_result = best_of(lambda c=ctx: c.sql(sql).to_pydict()["s"][0], 1)
            sql_times[label] = min(sql_times[label], t)
        t, direct_result = best_of(lambda: pc.sum(udfs.murmur3(chunked)).as_py(), 1)
        direct_time = min(direct_time, t)
    if sql_result != direct_result:
        raise SystemExit(f"SQL sum {sql_result} != direct sum {direct_result}")
    sql_time = sql_times["default"]
    sql_small = sql_times["8192"]
    sql_serial = sql_times["1 partition"]

    results = {
        "first_call": first_call,
        "loop_int": loop_int,
        "ours_int": ours_int,
        "ratio_int": loop_int / ours_int,
        "loop_int_conv": loop_int_conv,
        "ratio_int_conv": loop_int_conv / ours_int,
        "loop_str": loop_str,
        "ours_str": ours_str,
        "ratio_str": loop_str / ours_str,
        "loop_str_conv": loop_str_conv,
        "ratio_str_conv": loop_str_conv / ours_str,
        "sql": sql_time,
        "direct": direct_time,
        "ratio_sql": sql_time / direct_time,
        "sql_small": sql_small,
        "ratio_sql_small": sql_small / direct_time,
        "sql_serial": sql_serial,
        "ratio_sql_serial": sql_serial / direct_time,
        "default_batch_size": batch_sizes["default"],
    }
    w = 58
    print(f"rows: {rows:,} (loops timed on {loop_rows:,} rows, extrapolated per row)")
    print(
        f"SQL table: {rows:,} rows in batches of {batch_rows:,}; best of {repeats} "
        f"(SQL vs direct: best of {max(repeats, 5)} interleaved rounds)"
    )
    print(f"{'measure':<{w}} {'time':>10} {'rows/s':>14}")

    def line(label: str, seconds: float) -> None:
        print(f"{label:<{w}} {seconds * 1e3:>8.1f}ms {rows / seconds:>14,.0f}")

    cache_note = "numba cache hit" if cache_hits else "compiled"
    print(f"{'first call, excluded (' + cache_note + ')':<{w}} {first_call * 1e3:>8.1f}ms")
    line("int64: loop A, mmh3.hash(prebuilt canonical bytes)", loop_int)
    line("int64: loop B, mmh3.hash(v.to_bytes(8, 'little'))", loop_int_conv)
    line("int64: udfs.murmur3", ours_int)
    print(f"{'int64: speed-up over loop A (target >= 30)':<{w}} {results['ratio_int']:>10.1f}x")
    print(f"{'int64: speed-up over loop B':<{w}} {results['ratio_int_conv']:>10.1f}x")
    line("utf8 5-30 chars: loop A, mmh3.hash(prebuilt bytes)", loop_str)
    line("utf8 5-30 chars: loop B, mmh3.hash(s.encode())", loop_str_conv)
    line("utf8 5-30 chars: udfs.murmur3", ours_str)
    print(f"{'utf8: speed-up over loop A (target >= 5)':<{w}} {results['ratio_str']:>10.1f}x")
    print(f"{'utf8: speed-up over loop B':<{w}} {results['ratio_str_conv']:>10.1f}x")
    default_rows = f"{batch_sizes['default']:,}-row batches"
    line(f"SQL: sum(murmur3(x)), SessionContext() ({default_rows})", sql_time)
    line("SQL: the same, batch_size 8192 (DataFusion's default)", sql_small)
    line("SQL: the same, default batch_size, target_partitions 1", sql_serial)
    line("direct: pc.sum(udfs.murmur3(x))", direct_time)
    print(f"{'ratio SQL / direct, default (target <= 1.5)':<{w}} {results['ratio_sql']:>10.2f}")
    print(f"{'ratio SQL / direct, batch_size 8192':<{w}} {results['ratio_sql_small']:>10.2f}")
    print(f"{'ratio SQL / direct, 1 partition':<{w}} {results['ratio_sql_serial']:>10.2f}")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loop-rows", type=int, default=1_000_000)
    parser.add_argument("--batch-rows", type=int, default=131_072)
    args = parser.parse_args(argv)
    run(args.rows, args.repeats, args.loop_rows, args.batch_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
