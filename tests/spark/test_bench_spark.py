from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def test_bench_spark_tiny(spark: Any) -> None:
    path = Path(__file__).parents[2] / "benchmarks" / "bench_spark.py"
    spec = importlib.util.spec_from_file_location("bench_spark", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    before = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    results = mod.run(200, 1, spark=spark, buckets=4)  # run() checks every result itself
    assert len(results) == 4 and all(o > 0 and b > 0 for _, o, b in results)
    assert spark.conf.get("spark.sql.autoBroadcastJoinThreshold") == before
