"""Scan units packed into Spark input partitions by bytes from metadata, as Spark packs files."""

from __future__ import annotations

from typing import Any

import pytest

from lance_sql.engines.spark.read_packing import Packing, pack_units, parse_bytes, unit_bytes
from lance_sql.errors import LanceSqlError
from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark

MB = 2**20


class _Unit:
    def __init__(self, name: str, size: int) -> None:
        self.name, self.size = name, size

    @property
    def estimated_rows(self) -> int:
        return self.size // 64  # unit_bytes falls back to rows x 64 bytes


def _names(groups: list[list[Any]]) -> list[list[str]]:
    return [[u.name for u in g] for g in groups]


def test_parse_bytes_reads_spark_forms() -> None:
    assert parse_bytes("134217728") == 128 * MB
    assert parse_bytes("128m") == parse_bytes("128MB") == parse_bytes("128 MiB") == 128 * MB
    assert parse_bytes("4k") == 4096 and parse_bytes("1g") == 2**30 and parse_bytes("10b") == 10
    with pytest.raises(ValueError):
        parse_bytes("lots")


def test_spark_split_rule() -> None:
    p = Packing(max_partition_bytes=128 * MB, open_cost=4 * MB, min_partitions=2)
    # many small tables: the open cost dominates, as for Spark's small files
    assert p.max_split([MB] * 80) == 128 * MB
    assert p.max_split([MB] * 8) == 20 * MB  # 8 x 5 MB over 2 cores
    assert p.max_split([0]) == 4 * MB  # never below the open cost


def test_pack_units_first_fit_decreasing_keeps_order() -> None:
    units = [_Unit(f"t{i}", s * MB) for i, s in enumerate([10, 1, 30, 2, 200, 3])]
    p = Packing(max_partition_bytes=40 * MB, open_cost=1 * MB, min_partitions=1)
    groups = pack_units(units, p)
    assert _names(groups) == [["t0"], ["t1", "t2", "t3", "t5"], ["t4"]]
    assert sorted(u.name for g in groups for u in g) == sorted(u.name for u in units)
    assert pack_units([], p) == []


def test_options_override_and_bad_values_name_the_option() -> None:
    p = Packing().with_options(
        {"bytes_per_partition": "1m", "open_cost_bytes": "0", "min_partitions": "3"}
    )
    assert p == Packing(max_partition_bytes=MB, open_cost=0, min_partitions=3)
    for key, raw in (("bytes_per_partition", "0"), ("min_partitions", "x")):
        with pytest.raises(LanceSqlError, match=key):
            Packing().with_options({"path": "/ns", key: raw})


def test_unit_bytes_come_from_fragment_metadata(tmp_path: Any, make_ns: Any) -> None:
    import os

    root = str(tmp_path / "ns")
    ns = make_ns(root, range(4000), buckets=2)
    units = ns.scan_units()
    on_disk = 0
    for entry in ns.tables():
        for dirpath, _, files in os.walk(os.path.join(entry.uri, "data")):
            on_disk += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
    assert sum(unit_bytes(u) for u in units) == on_disk
    ns.delete("k < 2000")  # deleted rows: the live share of the files
    after = PartitionedNamespace.open(root).scan_units()
    assert 0.4 * on_disk < sum(unit_bytes(u) for u in after) < 0.6 * on_disk


def test_session_settings_reach_the_planner(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    """register() ships the session's file-split settings to the planning worker."""
    import lance_sql.engines.spark as lance_spark

    root = str(tmp_path / "ns")
    ns = make_ns(root, range(400), buckets=8)
    packed = spark.read.format("lance_ns").load(root)
    assert packed.rdd.getNumPartitions() <= 2 and packed.count() == 400
    try:
        spark.conf.set("spark.sql.files.minPartitionNum", "8")
        lance_spark.register(spark)
        spread = spark.read.format("lance_ns").load(root)
        assert spread.rdd.getNumPartitions() == 8 and spread.count() == 400
    finally:
        spark.conf.unset("spark.sql.files.minPartitionNum")
        lance_spark.register(spark)
    opt = spark.read.format("lance_ns").option("min_partitions", "4").load(root)
    want = pack_units(ns.scan_units(), Packing(min_partitions=4))
    assert 2 < len(want) <= 8 and opt.rdd.getNumPartitions() == len(want)
    assert sorted(r.k for r in opt.collect()) == list(range(400))


def test_describe_read_counts_tables_and_spark_partitions(
    spark: Any, tmp_path: Any, make_ns: Any
) -> None:
    import lance_sql.engines.spark as lance_spark

    root = str(tmp_path / "ns")
    make_ns(root, range(400), buckets=8)
    for options in ({}, {"where": "k IN (3, 4)"}, {"min_partitions": "4"}, {"where": "k = 3"}):
        report = lance_spark.describe_read(spark, root, **options)
        df = spark.read.format("lance_ns").options(**options).load(root)
        assert report.spark_partitions == df.rdd.getNumPartitions(), options
        assert report.total_partition_tables == 8
    assert lance_spark.describe_read(spark, root, where="k = 3").partition_tables == 1
    report = lance_spark.describe_read(None, root, where="k IN (3, 4)")
    assert report.partition_tables == len(report.object_ids) <= 2 and report.bytes > 0
    assert "2/8" in str(report) or "1/8" in str(report)


def test_load_reads_the_schema_without_pylance(tmp_path: Any, make_ns: Any) -> None:
    """schema() (Spark runs it in a Python worker) reads the manifest alone, same answer."""
    from lance_sql.engines.spark.source import schema_from_metadata

    root = str(tmp_path / "ns")
    ns = make_ns(root, range(50), buckets=2)
    first = ns.manifest_version
    ns.append(ns.to_table().slice(0, 5))
    for options, version in (
        ({"path": root}, ns.manifest_version),
        ({"path": root, "version": str(first)}, first),
    ):
        schema, got = schema_from_metadata(options)
        assert got == version
        assert schema.equals(
            PartitionedNamespace.open(root, version=version).schema, check_metadata=True
        )
    with pytest.raises(LanceSqlError):  # the source then opens fully, for its typed error
        schema_from_metadata({"path": str(tmp_path / "missing")})
