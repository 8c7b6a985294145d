"""The session-7 scan benchmarks run end to end at a tiny scale (slow: they generate data)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"


def _main(name: str, argv: list[str]) -> Any:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
        assert spec is not None and spec.loader is not None
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
        return bench.main(argv)
    finally:
        sys.path.remove(str(BENCH_DIR))


@pytest.mark.slow
def test_bench_scan_floor_tiny(tmp_path: Path) -> None:
    out = _main(
        "bench_scan_floor",
        ["--sf", "0.01", "--data-dir", str(tmp_path), "--rounds", "1", "--queries", "4,12"],
    )
    assert set(out) == {4, 12}
    for r in out.values():
        assert r["scans"] == 2 and r["batches"] > 0  # orders and lineitem
        assert r["pylance"] > 0 and r["ours"] > 0 and r["pq_scan"] >= 0


@pytest.mark.slow
def test_bench_join_estimates_tiny(tmp_path: Path) -> None:
    out = _main(
        "bench_join_estimates",
        ["--sf", "0.01", "--data-dir", str(tmp_path), "--rounds", "1", "--queries", "12,14"],
    )
    assert set(out) == {"new/old", "new/parquet", "old/parquet"}
    from lance_sql.engines.datafusion import join_swap

    assert join_swap.MAX_FILTER_CONJUNCTS == 3  # put back


@pytest.mark.slow
def test_bench_lance_format_tiny(tmp_path: Path) -> None:
    out = _main(
        "bench_lance_format",
        [
            "--sf",
            "0.01",
            "--data-dir",
            str(tmp_path),
            "--rounds",
            "1",
            "--queries",
            "4",
            "--versions",
            "2.0",
        ],
    )
    assert set(out) == {"orig/parquet", "v2.0/parquet", "v2.0/orig"}
    assert (tmp_path / "formats" / "2.0" / "lance" / ".done").exists()
