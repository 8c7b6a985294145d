"""No pushed filter outlives its scan: one DataFrame reused across queries (``local[2]``).

The same checks run in ``local-cluster`` mode in ``test_local_cluster.py``.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from reuse_checks import build, reuse_checks, where_option_checks

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def data(tmp_path_factory: Any) -> tuple[str, str]:
    return build(str(tmp_path_factory.mktemp("reuse")))


def test_reused_dataframe_equals_parquet(spark: Any, data: tuple[str, str]) -> None:
    wrong = [c for c in reuse_checks(spark, *data) if c[1] != c[2]]
    assert not wrong, wrong


def test_where_option_equals_parquet(spark: Any, data: tuple[str, str]) -> None:
    wrong = [c for c in where_option_checks(spark, *data) if c[1] != c[2]]
    assert not wrong, wrong


def test_pushdown_reader_state_stays_in_its_partitions(data: tuple[str, str]) -> None:
    """With pushdown (a Spark that scopes read plans), the where filter travels in partitions."""
    from pyspark.sql.datasource import EqualTo

    from lance_sql.engines.spark.source import LanceNamespacePushdownDataSource

    root, _ = data
    source = LanceNamespacePushdownDataSource({"path": root, "where": "k < 100"})
    reader = source.reader(source.schema())
    assert list(reader.pushFilters([EqualTo(("k",), 3)])) == []
    parts = [pickle.loads(pickle.dumps(p)) for p in reader.partitions()]
    rows = [r for p in parts for b in reader.read(p) for r in b.column(0).to_pylist()]
    assert rows == [3]


def test_base_reader_takes_no_pushed_filters(data: tuple[str, str]) -> None:
    from pyspark.sql.datasource import DataSourceReader

    from lance_sql.engines.spark.source import LanceNamespaceDataSource

    source = LanceNamespaceDataSource({"path": data[0]})
    reader = source.reader(source.schema())
    assert type(reader).pushFilters is DataSourceReader.pushFilters  # pyspark's "not implemented"


def test_where_reads_filter_columns_it_does_not_return(data: tuple[str, str]) -> None:
    """``columns`` without the filter's columns: they are read for the filter, then dropped."""
    from lance_sql.engines.spark.source import LanceNamespaceDataSource

    for where in ("k IN (3, 4)", "k / 2 = 2", "abs(murmur3(k)) % 8 = 3 AND k < 40"):
        source = LanceNamespaceDataSource({"path": data[0], "columns": "v", "where": where})
        reader = source.reader(source.schema())
        batches = [b for p in reader.partitions() for b in reader.read(p)]
        assert all(b.schema.names == ["v"] for b in batches)
        got = sorted(v for b in batches for v in b.column(0).to_pylist())
        import lance_sql

        ctx = lance_sql.SessionContext()
        ctx.register_namespace("t", data[0])
        want = ctx.sql(f"SELECT v FROM t WHERE {where}").to_arrow_table().column(0)
        assert got == sorted(want.to_pylist()), where


def test_forced_pushdown_shows_why_it_is_off(spark: Any, data: tuple[str, str]) -> None:
    """Pins the pyspark 4.3.0 fact the design rests on: a pushed filter's read plan is reused."""
    import lance_sql.engines.spark as lance_spark

    if lance_spark.scan_scoped_pushdown(spark):
        pytest.skip("this Spark keeps read plans per scan: pushdown is on by default")
    try:
        lance_spark.register(spark, filter_pushdown=True)
        df = spark.read.format("lance_ns").load(data[0])
        assert df.where("k = 7").count() == 1
        assert df.count() == 1  # 2000 rows: Spark ran the unfiltered scan with k = 7's plan
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
        lance_spark.register(spark)
    fresh = spark.read.format("lance_ns").load(data[0])
    assert fresh.where("k = 7").count() == 1 and fresh.count() == 2000
