from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def test_bench_spark_write_tiny(spark: Any, tmp_path: Path) -> None:
    path = Path(__file__).parents[2] / "benchmarks" / "bench_spark_write.py"
    spec = importlib.util.spec_from_file_location("bench_spark_write", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    times = mod.run(spark, 400, 1, 2, str(tmp_path), existing=True)  # run() checks each write
    sides = ("lance_ns", "parquet", "noop_arrow")
    assert {k: len(v) for k, v in times.items()} == {
        **{side: 1 for side in sides},
        **{f"{side} first": 1 for side in sides},  # the untimed warm-up round
    }
