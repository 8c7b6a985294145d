"""A tiny run of benchmarks/bench_spark_read.py (its timed runs check every result)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # about 25 Spark jobs


def test_bench_spark_read_tiny(spark: Any, tmp_path: Any) -> None:
    if spark.sparkContext.master.startswith("local-cluster"):
        pytest.skip("a smoke run: local[2] is enough")
    path = Path(__file__).parents[2] / "benchmarks" / "bench_spark_read.py"
    spec = importlib.util.spec_from_file_location("bench_spark_read", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    root, parquet, staged = mod.build(str(tmp_path), 3000)
    mod.write_parquet(spark, staged, parquet)
    results = mod.time_alternating(spark, root, parquet, 1)  # raises on a wrong count
    assert [r[0] for r in results] == ["full scan", "one day", "OR of customer equalities"]
    assert all(lance > 0 and par > 0 and parts >= 1 for _, lance, par, parts in results)
