"""Benchmark: ``open_metadata(uri).count_rows()`` against ``lance.dataset(uri).count_rows()``.

Both answer from the manifest alone. The dataset has many small fragments (1,000
by default) and a deletion file in every fragment, so the manifest is large
and per-fragment work shows. It is built once with a single write and cached
under ``benchmarks/.data/``.

Usage::

    python benchmarks/bench_metadata.py                # 10,000 rows, 10 per fragment
    python benchmarks/bench_metadata.py --rows 50      # tiny run (5 fragments)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / ".data"


def build_dataset(rows: int, rows_per_fragment: int, data_dir: Path) -> str:
    """The cached benchmark dataset, written by pylance if not there yet."""
    import lance
    import numpy as np
    import pyarrow as pa

    uri = data_dir / f"metadata_{rows}_{rows_per_fragment}.lance"
    marker = uri / ".complete"
    if marker.exists():
        return str(uri)
    shutil.rmtree(uri, ignore_errors=True)
    table = pa.table(
        {
            "id": pa.array(np.arange(rows), pa.int64()),
            "value": pa.array(np.random.default_rng(0).random(rows)),
        }
    )
    lance.write_dataset(table, str(uri), max_rows_per_file=rows_per_fragment)
    lance.dataset(str(uri)).delete("id % 7 = 0")
    marker.write_text("ok\n")
    return str(uri)


def best_of(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Fastest wall time of ``repeats`` calls, and the last result."""
    best = float("inf")
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def run(rows: int, rows_per_fragment: int, repeats: int, data_dir: Path) -> dict[str, float]:
    import lance

    from lance_sql.format.metadata import open_metadata

    uri = build_dataset(rows, rows_per_fragment, data_dir)
    fragments = len(open_metadata(uri).fragments)
    # warm both code paths (imports, fsspec instance cache, pylance runtime)
    open_metadata(uri).count_rows()
    lance.dataset(uri).count_rows()
    ours, our_count = best_of(lambda: open_metadata(uri).count_rows(), repeats)
    theirs, their_count = best_of(lambda: lance.dataset(uri).count_rows(), repeats)
    if our_count != their_count:
        raise SystemExit(f"row counts differ: lance-sql {our_count}, pylance {their_count}")
    ratio = ours / theirs
    print(f"dataset: {uri} ({fragments} fragments, {our_count} visible rows)")
    print(f"{'measure':<42} {'best of ' + str(repeats):>12}")
    print(f"{'open_metadata(uri).count_rows()':<42} {ours * 1e3:>10.2f} ms")
    print(f"{'lance.dataset(uri).count_rows()':<42} {theirs * 1e3:>10.2f} ms")
    print(f"{'ratio lance-sql / pylance (target <= 1.0)':<42} {ratio:>12.2f}")
    return {"ours": ours, "theirs": theirs, "ratio": ratio, "fragments": fragments}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000, help="total rows (default 10000)")
    parser.add_argument("--rows-per-fragment", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    run(args.rows, args.rows_per_fragment, args.repeats, args.data_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
