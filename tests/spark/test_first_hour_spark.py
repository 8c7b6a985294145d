"""Spark side of the newcomer's first hour: the one spec dialect in write options, and the
dataset/namespace mix-up hint on a read."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import lance
import pyarrow as pa
import pytest

from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark

ROWS = [(i, dt.datetime(2026, 1, 1 + i % 5, 3)) for i in range(10)]


def test_spec_option_takes_json_with_spark_names(spark: Any, tmp_path: Any) -> None:
    df = spark.createDataFrame(ROWS, "id long, ts timestamp")
    spec = json.dumps(
        [
            {"source": "ts", "transform": "days"},
            {"source": "id", "transform": "bucket", "num_buckets": 4},
        ]
    )
    df.write.format("lance_ns").option("spec", spec).mode("append").save(str(tmp_path / "j"))
    df.write.format("lance_ns").option("partitionBy", "days(ts), bucket(4, id)").mode(
        "append"
    ).save(str(tmp_path / "t"))
    by_json = PartitionedNamespace.open(tmp_path / "j").current_spec.to_json()
    by_text = PartitionedNamespace.open(tmp_path / "t").current_spec.to_json()
    assert by_json == by_text
    assert [f["transform"]["type"] for f in by_json["fields"]] == ["year", "month", "day", "bucket"]


def test_reading_a_dataset_as_lance_ns_hints_the_dataset(spark: Any, tmp_path: Any) -> None:
    uri = str(tmp_path / "events.lance")
    lance.write_dataset(pa.table({"x": [1, 2]}), uri)
    with pytest.raises(Exception, match="this is a Lance dataset"):
        spark.read.format("lance_ns").load(uri).collect()
