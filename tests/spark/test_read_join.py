from __future__ import annotations

import warnings
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.planning.scan_plan import plan_scan

pytestmark = pytest.mark.spark


def _rows(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_register_sets_filter_pushdown(spark: Any) -> None:
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"


def test_pruned_read(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    root = str(tmp_path / "ns")
    ns = make_ns(root, range(200))
    df = spark.read.format("lance_ns").load(root)
    assert df.count() == 200
    assert df.rdd.getNumPartitions() == 8
    pruned = df.filter("k = 3")
    assert plan_scan(ns, "k = 3").partitions.__len__() == 1
    assert pruned.rdd.getNumPartitions() == 1  # one partition table read
    assert _rows(pruned) == [(3, "3", 3.0)]
    assert "Filter (" not in pruned._jdf.queryExecution().executedPlan().toString()
    multi = df.filter("k in (1, 2, 3) and v >= 2")
    assert sorted(r.k for r in multi.collect()) == [2, 3]
    # a filter that cannot prune (string) is still exact
    assert df.filter("s = '1' and s like '1%'").count() == sum(
        1 for i in range(200) if i % 7 and i % 5 == 1
    )
    assert df.filter("s is null").count() == sum(1 for i in range(200) if i % 7 == 0)
    assert df.filter("not (k = 3)").count() == 199
    off = spark.read.format("lance_ns").option("pruning", "false").load(root)
    assert off.filter("k = 3").rdd.getNumPartitions() == 8
    assert _rows(off.filter("k = 3")) == [(3, "3", 3.0)]
    packed = spark.read.format("lance_ns").option("rows_per_partition", "1000").load(root)
    assert packed.rdd.getNumPartitions() == 1 and packed.count() == 200


def test_version_option(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    root = str(tmp_path / "ns")
    ns = make_ns(root, range(10))
    v = ns.manifest_version
    ns.append(pa.table({"k": [100], "s": ["x"], "v": [1.0]}, schema=ns.schema))
    assert spark.read.format("lance_ns").load(root).count() == 11
    old = spark.read.format("lance_ns").option("version", str(v)).load(root)
    assert old.count() == 10


def _spark_join(spark: Any, lroot: str, rroot: str, how: str) -> Any:
    from lance_sql.engines.spark.join import _spark_join

    return _spark_join(spark, lroot, rroot, [("k", "k")], how, None, None)


@pytest.mark.parametrize("how", ["inner", "left", "full", "anti"])
def test_partitioned_join_equals_spark_join(
    spark: Any, tmp_path: Any, make_ns: Any, how: str
) -> None:
    from lance_sql.engines.spark import partitioned_join

    lroot, rroot = str(tmp_path / "l"), str(tmp_path / "r")
    make_ns(lroot, range(0, 60))
    make_ns(rroot, range(30, 100), tag="r")
    df = partitioned_join(spark, lroot, rroot, on="k", how=how)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in plan
    assert df.rdd.getNumPartitions() >= 1
    assert _rows(df) == _rows(_spark_join(spark, lroot, rroot, how))


def test_partitioned_join_filters(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    from lance_sql.engines.spark import partitioned_join

    lroot, rroot = str(tmp_path / "l"), str(tmp_path / "r")
    make_ns(lroot, range(0, 60))
    make_ns(rroot, range(30, 100))
    df = partitioned_join(spark, lroot, rroot, on=[("k", "k")], left_filter="k < 40")
    assert sorted(r.k for r in df.collect()) == list(range(30, 40))


def test_incompatible_join_falls_back_with_warning(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    from lance_sql.engines.spark import partitioned_join

    lroot, rroot = str(tmp_path / "l"), str(tmp_path / "r")
    make_ns(lroot, range(0, 20))
    make_ns(rroot, range(10, 30))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = partitioned_join(spark, lroot, rroot, on=[("k", "v")])
    assert any("falling back" in str(w.message) for w in caught)
    assert sorted(r.k for r in df.collect()) == list(range(10, 20))
