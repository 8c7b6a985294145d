"""benchmarks/bench_tpch.py runs end to end at a tiny scale (slow: generates its own data)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


@pytest.mark.slow
def test_bench_tpch_tiny(tmp_path: Path) -> None:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_tpch.py"
    spec = importlib.util.spec_from_file_location("bench_tpch", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    argv = ["--sf", "0.01", "--data-dir", str(tmp_path), "--rounds", "1", "--queries", "4,q15"]
    results = bench.main(argv)
    assert set(results) == {4, 15}
    assert results[4]["spj_joins"] >= 1  # the EXISTS semi join of orders and lineitem
    for r in results.values():
        assert r["spj_over_nospj"] > 0 and r["spj_over_parquet"] > 0


@pytest.mark.slow
def test_bench_tpch_against_duckdb_over_lance_tiny(tmp_path: Path) -> None:
    """The ``duckdb`` variant answers like lance-sql (checked by the benchmark) and is timed."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_tpch.py"
    spec = importlib.util.spec_from_file_location("bench_tpch", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    argv = ["--sf", "0.01", "--data-dir", str(tmp_path), "--rounds", "1", "--queries", "1,17"]
    results = bench.main([*argv, "--variants", "spj,lance,duckdb"])
    for r in results.values():
        assert r["spj_over_lance"] > 0 and r["lance_over_best_external"] > 0
        assert r["best_external_s"] == r["duckdb_s"]


@pytest.mark.slow
def test_bench_materialization_tiny(tmp_path: Path) -> None:
    import sys

    bench_dir = Path(__file__).resolve().parents[2] / "benchmarks"
    sys.path.insert(0, str(bench_dir))
    try:
        spec = importlib.util.spec_from_file_location(
            "bench_materialization", bench_dir / "bench_materialization.py"
        )
        assert spec is not None and spec.loader is not None
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
        out = bench.main(
            ["--sf", "0.01", "--data-dir", str(tmp_path), "--rounds", "1", "--queries", "3,6"]
        )
    finally:
        sys.path.remove(str(bench_dir))
    assert set(out) == {"adaptive/late", "early/late", "adaptive/parquet", "late/parquet"}
    assert all(v > 0 for v in out.values())
