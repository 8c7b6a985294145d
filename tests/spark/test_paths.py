"""Namespace roots in every form Spark and Hadoop produce (``file:/``, ``s3a://``, relative)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from lance_sql.engines.spark.paths import normalize_root
from lance_sql.errors import LanceSqlError


@pytest.mark.parametrize(
    ("given", "want"),
    [
        ("/data/ns", "/data/ns"),
        ("/data/ns/", "/data/ns"),
        ("file:/data/ns", "/data/ns"),
        ("file:///data/ns", "/data/ns"),
        ("file://localhost/data/ns", "/data/ns"),
        ("file:/data/with%20space", "/data/with space"),
        ("FILE:/data/ns", "/data/ns"),
        ("s3://bucket/ns", "s3://bucket/ns"),
        ("s3a://bucket/ns", "s3://bucket/ns"),
        ("s3n://bucket/a/b", "s3://bucket/a/b"),
        ("gs://bucket/ns", "gs://bucket/ns"),
        ("abfss://c@acct.dfs.core.windows.net/ns", "abfss://c@acct.dfs.core.windows.net/ns"),
        ("ns", "/work/dir/ns"),
        ("./a/../ns", "/work/dir/ns"),
        ("file:ns", "/work/dir/ns"),
    ],
)
def test_normalize_root(given: str, want: str) -> None:
    assert normalize_root(given, cwd="/work/dir") == want


def test_other_host_and_empty_roots_are_refused() -> None:
    with pytest.raises(LanceSqlError, match="otherhost"):
        normalize_root("file://otherhost/data/ns")
    with pytest.raises(LanceSqlError, match="empty"):
        normalize_root("  ")


def test_relative_root_resolves_against_the_working_directory(tmp_path: Any, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert normalize_root("ns") == os.path.join(str(tmp_path), "ns")


def test_source_resolves_root_where_it_is_created(
    tmp_path: Any, monkeypatch: Any, make_ns: Any
) -> None:
    """The data source is created on the driver: executors get the absolute path."""
    import pickle

    from lance_sql.engines.spark.source import LanceNamespaceDataSource

    make_ns(str(tmp_path / "ns"), range(5))
    monkeypatch.chdir(tmp_path)
    source = LanceNamespaceDataSource({"path": "ns"})
    monkeypatch.chdir("/")
    shipped = pickle.loads(pickle.dumps(source))
    assert shipped.options["path"] == str(tmp_path / "ns")
    reader = shipped.reader(shipped.schema())
    rows = [r for p in reader.partitions() for b in reader.read(p) for r in b.column(0).to_pylist()]
    assert sorted(rows) == list(range(5))


@pytest.mark.spark
def test_load_and_save_s3a(spark: Any, s3_server: Any, make_ns: Any) -> None:
    options, bucket = s3_server
    b = bucket()
    make_ns(f"s3://{b}/ns", range(20), storage_options=options)
    opts = json.dumps(options)
    df = spark.read.format("lance_ns").option("storage_options", opts).load(f"s3a://{b}/ns")
    assert df.count() == 20
    extra = spark.createDataFrame([(100, "x", 1.0)], "k long, s string, v double")
    extra.write.format("lance_ns").option("storage_options", opts).mode("append").save(
        f"s3a://{b}/ns"
    )
    again = spark.read.format("lance_ns").option("storage_options", opts).load(f"s3://{b}/ns")
    assert again.count() == 21 and again.where("k = 100").count() == 1
