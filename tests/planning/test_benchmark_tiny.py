"""The pruning benchmark runs at a tiny size (no timing assertions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_pruning_benchmark_runs_tiny() -> None:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "pruning.py"
    spec = importlib.util.spec_from_file_location("pruning_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.run(2000, repeats=1)
    assert rows and all(0 < r["selected"] < r["total"] for r in rows)
