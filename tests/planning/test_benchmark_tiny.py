"""The pruning benchmark runs at a tiny size (no timing assertions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def _module():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "pruning.py"
    spec = importlib.util.spec_from_file_location("pruning_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pruning_query_benchmark_runs_tiny(tmp_path) -> None:
    bench = _module()
    root = bench.build_day_namespace(tmp_path / "days", rows=2000, days=20, chunk_days=8)
    assert bench.build_day_namespace(root, rows=2000, days=20) == root  # reused, not rebuilt
    rows = bench.run_queries(root, days=20, repeats=1)
    assert len(rows) == 3 and all(r["rows"] > 0 for r in rows)  # results asserted equal inside
    bench.print_queries(rows)


def test_pruning_plan_benchmark_runs_tiny(tmp_path) -> None:
    bench = _module()
    root = bench.build_plan_manifest(tmp_path / "manifest", 600)
    rows = bench.run_plan(root, 600, repeats=1)
    assert len(rows) == 5 and all(0 < r["selected"] < r["total"] for r in rows)
    bench.print_plan(rows)
