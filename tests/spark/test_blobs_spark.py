"""Blob columns through Spark: reads return pylance's descriptor; bytes come from tasks."""

from __future__ import annotations

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql.engines.spark as lance_spark
from lance_sql import PartitionedNamespace

pytestmark = pytest.mark.spark


def _namespace(root):
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), lance.blob_field("payload")])
    ns = PartitionedNamespace.create(root, schema, [{"source": "region", "transform": "identity"}])
    ns.append(
        pa.table(
            {
                "id": [1, 2, 3],
                "region": ["eu", "us", "eu"],
                "payload": [b"abc", b"defg" * 1000, b""],
            }
        )
    )
    return ns


def test_spark_reads_descriptors_and_reads_bytes_in_tasks(spark, tmp_path):
    ns = _namespace(str(tmp_path / "ns"))
    expected = pa.concat_tables(
        [lance.dataset(e.uri, version=e.read_version).to_table() for e in ns.tables()]
    ).sort_by("id")
    rows = spark.read.format("lance_ns").load(str(tmp_path / "ns")).orderBy("id").collect()
    got = [
        {k: int(v) if k != "blob_uri" else v for k, v in r["payload"].asDict().items()}
        for r in rows
    ]
    assert got == expected.column("payload").to_pylist()

    df = lance_spark.read_blob_bytes(
        spark, str(tmp_path / "ns"), "payload", columns=["id"], rows_per_task=1
    )
    assert df.rdd.getNumPartitions() == 3
    assert [(r["id"], r["payload"]) for r in df.orderBy("id").collect()] == [
        (1, b"abc"),
        (2, b"defg" * 1000),
        (3, b""),
    ]
    eu = lance_spark.read_blob_bytes(
        spark, str(tmp_path / "ns"), "payload", filter=pc.field("region") == "eu"
    )
    assert sorted(r["payload"] for r in eu.collect()) == [b"", b"abc"]


def test_spark_appends_bytes_to_a_blob_column(spark, tmp_path):
    root = str(tmp_path / "ns")
    ns = _namespace(root)
    rows = spark.createDataFrame(
        [(4, "us", bytearray(b"spark"))], "id long, region string, payload binary"
    )
    rows.write.format("lance_ns").mode("append").save(root)
    ns.refresh()
    got = ns.blob_rows(pc.field("id") == 4)
    assert ns.read_blobs("payload", got) == [b"spark"]
    assert ns.count_rows() == 4
