from __future__ import annotations

import warnings
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.planning.namespace_scan import plan_scan
from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark


def _rows(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_register_enables_pushdown_only_where_spark_scopes_it(spark: Any) -> None:
    """pyspark 4.3.0 shares a pushed filter's read plan across scans: pushdown stays off."""
    import lance_sql.engines.spark as lance_spark

    assert lance_spark.scan_scoped_pushdown(spark) is False  # pyspark 4.3.0
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled", "false") == "false"


def test_pruned_read(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    root = str(tmp_path / "ns")
    ns = make_ns(root, range(200))
    df = spark.read.format("lance_ns").load(root)
    assert df.count() == 200
    assert df.rdd.getNumPartitions() <= 2  # 8 tiny tables packed by bytes (test_read_packing)
    one_each = spark.read.format("lance_ns").option("rows_per_partition", "1").load(root)
    assert one_each.rdd.getNumPartitions() == 8 and one_each.count() == 200
    pruned = spark.read.format("lance_ns").option("where", "k = 3").load(root)
    assert plan_scan(ns, "k = 3").partitions.__len__() == 1
    assert pruned.rdd.getNumPartitions() == 1  # one partition table read
    assert _rows(pruned) == [(3, "3", 3.0)]
    assert _rows(df.filter("k = 3")) == [(3, "3", 3.0)]  # Spark's own filter, every table
    multi = df.filter("k in (1, 2, 3) and v >= 2")
    assert sorted(r.k for r in multi.collect()) == [2, 3]
    # a filter that cannot prune (string) is still exact
    assert df.filter("s = '1' and s like '1%'").count() == sum(
        1 for i in range(200) if i % 7 and i % 5 == 1
    )
    assert df.filter("s is null").count() == sum(1 for i in range(200) if i % 7 == 0)
    assert df.filter("not (k = 3)").count() == 199
    off = spark.read.format("lance_ns").option("pruning", "false").option("where", "k = 3")
    off = off.option("rows_per_partition", "1").load(root)
    assert off.rdd.getNumPartitions() == 8
    assert _rows(off) == [(3, "3", 3.0)]
    packed = spark.read.format("lance_ns").option("rows_per_partition", "1000").load(root)
    assert packed.rdd.getNumPartitions() == 1 and packed.count() == 200
    # about 25 rows per table: a 60-row target packs 2 tables per Spark partition
    from lance_sql.engines.spark.read_packing import Packing, pack_units

    sizes = [u.estimated_rows for u in ns.scan_units()]
    groups = pack_units(ns.scan_units(), Packing(), 60)
    assert 1 < len(groups) < 8 and all(sum(u.estimated_rows for u in g) <= 60 for g in groups)
    assert sum(sizes) == 200
    packed = spark.read.format("lance_ns").option("rows_per_partition", "60").load(root)
    assert packed.rdd.getNumPartitions() == len(groups)
    assert _rows(packed) == _rows(df)
    assert _rows(packed.filter("k in (3, 4, 5)")) == _rows(df.filter("k in (3, 4, 5)"))


def test_version_storage_and_column_options(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    root = str(tmp_path / "ns")
    ns = make_ns(root, range(10))
    v = ns.manifest_version
    loaded = spark.read.format("lance_ns").load(root)
    ns.append(pa.table({"k": [100], "s": ["x"], "v": [1.0]}, schema=ns.schema))
    assert spark.read.format("lance_ns").load(root).count() == 11
    # a DataFrame keeps the __manifest version current at load(): one consistent snapshot
    assert loaded.count() == 10
    old = spark.read.format("lance_ns").option("version", str(v)).load(root)
    assert old.count() == 10 and old.filter("k = 100").count() == 0
    opts = spark.read.format("lance_ns").option("storage_options", "{}").load(root)
    assert opts.count() == 11
    cols = spark.read.format("lance_ns").option("columns", "v, k").load(root)
    assert cols.columns == ["v", "k"]
    assert sorted(r.k for r in cols.filter("k > 8").collect()) == [9, 100]
    typed = spark.read.format("lance_ns").schema("k long, s string").load(root)
    assert _rows(typed.filter("k = 3")) == [(3, "3")]
    empty = str(tmp_path / "empty")
    PartitionedNamespace.create(
        empty, ns.schema, [{"source": "k", "transform": "bucket", "num_buckets": 4}]
    )
    assert spark.read.format("lance_ns").load(empty).collect() == []


@pytest.mark.parametrize(
    ("option", "value", "match"),
    [
        ("storage_options", "{not json", "storage_options is not JSON"),
        ("version", "abc", "option version='abc'"),
        ("rows_per_partition", "0", "option rows_per_partition='0'"),
        ("columns", "k,nope", "nope"),
        ("pruning", "maybe", "option pruning='maybe'"),
    ],
)
def test_bad_read_options_name_the_option(
    tmp_path: Any, make_ns: Any, option: str, value: str, match: str
) -> None:
    """Checked in-process (the same code runs in Spark's planning worker)."""
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    from lance_sql.engines.spark.source import LanceNamespaceDataSource
    from lance_sql.errors import LanceSqlError

    root = str(tmp_path / "ns")
    make_ns(root, range(3))
    source = LanceNamespaceDataSource({"path": root, option: value})
    with pytest.raises(LanceSqlError, match=match) as info:
        source.reader(source.schema())
    assert root in str(info.value)
    ok = LanceNamespaceDataSource({"path": root})
    with pytest.raises(LanceSqlError, match="nope"):
        ok.reader(StructType([StructField("k", LongType()), StructField("nope", IntegerType())]))


def test_bad_option_surfaces_through_spark(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    root = str(tmp_path / "ns")
    make_ns(root, range(3))
    with pytest.raises(Exception, match="storage_options is not JSON"):
        spark.read.format("lance_ns").option("storage_options", "{x").load(root).collect()


def test_pack_first_fit_decreasing() -> None:
    from lance_sql.engines.spark.read_packing import Packing, pack_units

    def pack(units: list[Any], rows_per_partition: int) -> list[list[Any]]:
        return pack_units(units, Packing(), rows_per_partition)

    class Unit:
        def __init__(self, name: str, rows: int) -> None:
            self.name, self.estimated_rows = name, rows

    units = [Unit("a", 50), Unit("b", 200), Unit("c", 30), Unit("d", 60), Unit("e", 20)]
    assert [[u.name for u in g] for g in pack(units, 1)] == [["a"], ["b"], ["c"], ["d"], ["e"]]
    groups = [[u.name for u in g] for g in pack(units, 100)]
    # b is above the target and stays alone; the small ones fill groups of <= 100 rows
    assert groups == [["a", "e"], ["b"], ["c", "d"]]
    assert sorted(n for g in groups for n in g) == ["a", "b", "c", "d", "e"]
    assert pack([], 100) == []


def _spark_join(spark: Any, lroot: str, rroot: str, how: str) -> Any:
    from lance_sql.engines.spark.join import _spark_join

    return _spark_join(spark, lroot, rroot, [("k", "k")], how, None, None)


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
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


@pytest.mark.parametrize("on", [[("k", "k")], [("k", "v")]])
def test_partitioned_join_on_s3(spark: Any, s3_server: Any, make_ns: Any, on: Any) -> None:
    """Namespaces on an S3 store: the options reach the tasks (and the fallback's reads)."""
    from lance_sql.engines.spark import partitioned_join

    options, bucket = s3_server
    b = bucket()
    lroot, rroot = f"s3://{b}/l", f"s3://{b}/r"
    make_ns(lroot, range(0, 60), storage_options=options)
    make_ns(rroot, range(30, 100), storage_options=options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # [("k", "v")] falls back to Spark's join
        df = partitioned_join(spark, lroot, rroot, on=on, storage_options=options)
    assert sorted(r.k for r in df.collect()) == list(range(30, 60))  # v == k on each side


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


def test_reader_plans_once_and_tasks_read_pickled_units(tmp_path: Any, make_ns: Any) -> None:
    """In-process replay of Spark's protocol: plan, pickle, read; storage options travel."""
    import pickle

    from pyspark.sql.datasource import EqualTo

    from lance_sql.engines.spark.source import LanceNamespacePushdownDataSource

    root = str(tmp_path / "ns")
    make_ns(root, range(40))
    source = LanceNamespacePushdownDataSource(
        {"path": root, "storage_options": '{"timeout": "30s"}'}
    )
    source = pickle.loads(pickle.dumps(source))  # as shipped from load() to the planner
    reader = source.reader(source.schema())
    assert list(reader.pushFilters([EqualTo(("k",), 3)])) == []
    parts = reader.partitions()
    assert len(parts) == 1
    units = [u for p in parts for u in p.units]
    assert [u._inner.storage_options for u in units] == [{"timeout": "30s"}]
    task_reader = pickle.loads(pickle.dumps(reader))
    part = pickle.loads(pickle.dumps(parts[0]))
    batches = list(task_reader.read(part))
    assert [b.to_pydict() for b in batches] == [{"k": [3], "s": ["3"], "v": [3.0]}]
    assert batches[0].schema.equals(reader.target)


def test_partitioned_join_filter_is_datafusion_sql_on_both_paths(
    spark: Any, tmp_path: Any, make_ns: Any
) -> None:
    """``k / 2 = 3`` is integer division in DataFusion: k in (6, 7) on both paths."""
    from lance_sql.engines.spark import partitioned_join

    lroot, rroot = str(tmp_path / "l"), str(tmp_path / "r")
    make_ns(lroot, range(0, 20))
    make_ns(rroot, range(0, 20))
    for on in ([("k", "k")], [("k", "v")]):  # partition-wise, then Spark's join (fallback)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = partitioned_join(spark, lroot, rroot, on=on, left_filter="k / 2 = 3")
        assert sorted(r.k for r in df.collect()) == [6, 7], on
