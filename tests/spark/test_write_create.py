"""Creating a namespace from a Spark write, and the one schema rule on Spark writes."""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark

ROWS = [(i, f"c{i % 3}", dt.datetime(2026, 1, 1 + i % 5, 3)) for i in range(40)]
DDL = "id long, s string, ts timestamp"


def _df(spark: Any, rows: list[tuple] = ROWS, ddl: str = DDL) -> Any:
    return spark.createDataFrame(rows, ddl).repartition(3)


def test_create_with_iceberg_text_in_one_commit(spark: Any, tmp_path: Any) -> None:
    root = str(tmp_path / "created")
    _df(spark).write.format("lance_ns").option("partitionBy", "bucket(4, id), days(ts)").mode(
        "append"
    ).save(root)
    ns = PartitionedNamespace.open(root)
    assert ns.manifest_version <= 2  # one commit with the rows (+ the table-metadata mirror)
    first = PartitionedNamespace.open(root, version=1)  # version 1 already holds every row
    assert first.count_rows() == 40
    assert [(f.field_id, f.transform.type) for f in ns.current_spec.fields] == [
        ("id_bucket_4", "bucket"),
        ("ts_year", "year"),
        ("ts_month", "month"),
        ("ts_day", "day"),
    ]
    assert ns.schema.field("ts").type == pa.timestamp("us", "UTC")
    assert sorted(ns.to_table(["id"]).column("id").to_pylist()) == list(range(40))
    back = spark.read.format("lance_ns").load(root)
    assert sorted(r.id for r in back.collect()) == list(range(40))
    assert not os.path.exists(os.path.join(root, "_spark_staging"))
    # later appends need no spec; the same spec is accepted, another one is refused
    _df(spark).write.format("lance_ns").mode("append").save(root)
    _df(spark).write.format("lance_ns").option("partitionBy", "bucket(4, id), days(ts)").mode(
        "append"
    ).save(root)
    assert PartitionedNamespace.open(root).count_rows() == 120
    with pytest.raises(Exception, match="not by the write's spec option"):
        _df(spark).write.format("lance_ns").option("partitionBy", "bucket(8, id)").mode(
            "append"
        ).save(root)


def test_create_with_spec_json_and_empty_frame(spark: Any, tmp_path: Any) -> None:
    root = str(tmp_path / "json")
    spec = json.dumps([{"source": "s", "transform": "identity"}])
    _df(spark).write.format("lance_ns").option("spec", spec).mode("append").save(root)
    ns = PartitionedNamespace.open(root)
    (field,) = ns.current_spec.fields
    assert sorted(e.values[field.field_id] for e in ns.tables()) == ["c0", "c1", "c2"]
    empty = str(tmp_path / "empty")
    _df(spark, []).write.format("lance_ns").option("partitionBy", "s").mode("append").save(empty)
    made = PartitionedNamespace.open(empty)
    assert made.count_rows() == 0 and made.schema.names == ["id", "s", "ts"]


def test_missing_root_without_spec_says_how(spark: Any, tmp_path: Any) -> None:
    with pytest.raises(Exception, match="partitionBy"):
        _df(spark).write.format("lance_ns").mode("append").save(str(tmp_path / "none"))
    assert not os.path.exists(tmp_path / "none" / "__manifest")


def test_spark_writes_follow_the_schema_rule(spark: Any, tmp_path: Any) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("u", pa.uint32()),
            pa.field("note", pa.utf8()),
        ]
    )
    root = str(tmp_path / "strict")
    PartitionedNamespace.create(root, schema, "bucket(2, id)")
    fmt = spark.createDataFrame
    # extra column: refused (was silently dropped)
    with pytest.raises(Exception, match="'extra' is not in the namespace schema"):
        fmt([(1, 2, "a", 9)], "id long, u long, note string, extra int").write.format(
            "lance_ns"
        ).mode("append").save(root)
    # a string id is never cast to bigint (was cast)
    with pytest.raises(Exception, match="column 'id' has type string"):
        fmt([("1", 2, "a")], "id string, u long, note string").write.format("lance_ns").mode(
            "append"
        ).save(root)
    # an int id is not widened either, as in ns.append
    with pytest.raises(Exception, match="column 'id' has type int32"):
        fmt([(1, 2, "a")], "id int, u long, note string").write.format("lance_ns").mode(
            "append"
        ).save(root)
    assert PartitionedNamespace.open(root).count_rows() == 0
    # a missing nullable column is NULL (was refused); uint32 arrives as Spark's bigint
    fmt([(1, 7), (2, 8)], "id long, u long").write.format("lance_ns").mode("append").save(root)
    got = PartitionedNamespace.open(root).to_table().sort_by("id").to_pylist()
    assert got == [{"id": 1, "u": 7, "note": None}, {"id": 2, "u": 8, "note": None}]
    # a value the namespace type cannot hold is refused, naming the column
    with pytest.raises(Exception, match="'u'"):
        fmt([(3, -1)], "id long, u long").write.format("lance_ns").mode("append").save(root)
    assert PartitionedNamespace.open(root).count_rows() == 2


def test_two_jobs_creating_one_root_one_wins(tmp_path: Any) -> None:
    """Creating commits refuse an existing namespace: the loser commits and leaves nothing."""
    import sys
    from pathlib import Path

    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    from lance_sql.engines.spark.write import LanceNamespaceWriter
    from lance_sql.errors import CommitConflictError

    sys.path.insert(0, str(Path(__file__).parent))
    from test_write_orphans import unowned_files

    root = str(tmp_path / "raced")
    struct = StructType([StructField("k", LongType()), StructField("v", DoubleType())])
    options = {"path": root, "partitionby": "bucket(2, k)"}
    first = LanceNamespaceWriter(dict(options), False, struct)
    second = LanceNamespaceWriter(
        dict(options), False, struct
    )  # both planned before either commits

    def batch(start: int) -> Any:
        ks = list(range(start, start + 10))
        return iter([pa.record_batch({"k": ks, "v": [float(k) for k in ks]})])

    m1, m2 = first.write(batch(0)), second.write(batch(100))
    first.commit([m1])
    with pytest.raises(CommitConflictError, match="created there while this write ran"):
        second.commit([m2])
    second.abort([m2])
    ns = PartitionedNamespace.open(root)
    assert sorted(ns.to_table(["k"]).column("k").to_pylist()) == list(range(10))
    assert unowned_files(root) == []
    assert not os.path.exists(os.path.join(root, "_spark_staging"))
