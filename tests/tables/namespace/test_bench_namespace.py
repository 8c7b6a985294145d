"""The namespace benchmark runs end to end at a tiny size (no timing assertions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_namespace.py"


def test_bench_namespace_runs_tiny(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_namespace", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(["--rows", "2000", "--repeat", "1", "--dir", str(tmp_path)])
    assert [r["target"] for r in results] == [1.5, None, 1.3]
    assert all(r["ratio"] > 0 for r in results)
