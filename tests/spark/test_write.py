from __future__ import annotations

from typing import Any

import lance
import pytest

from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark


def test_append_and_overwrite(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    root = str(tmp_path / "ns")
    make_ns(root, range(10))
    # 2 Spark partitions both hit the same partition values
    df = spark.createDataFrame(
        [(i, "w", float(i)) for i in range(10, 40)], "k long, s string, v double"
    )
    df.repartition(2).write.format("lance_ns").mode("append").save(root)
    ns = PartitionedNamespace.open(root)
    assert ns.to_table().num_rows == 40
    parts = ns.partitions()
    assert parts.num_rows == 8  # one partition table per bucket value
    for loc in parts.column("location").to_pylist():  # readable by pylance directly
        assert lance.dataset(f"{root}/{loc}").count_rows() >= 1
    assert (
        sum(
            lance.dataset(f"{root}/{loc}").count_rows()
            for loc in parts.column("location").to_pylist()
        )
        == 40
    )
    from lance_sql import SessionContext

    ctx = SessionContext()
    ctx.register_namespace("t", root)
    assert ctx.sql("SELECT count(*) AS n FROM t WHERE s = 'w'").to_pydict()["n"] == [30]
    df.limit(3).write.format("lance_ns").mode("overwrite").save(root)
    assert PartitionedNamespace.open(root).to_table().num_rows == 3
    assert spark.read.format("lance_ns").load(root).count() == 3


def test_failed_write_leaves_manifest_unchanged(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    from pyspark.sql.functions import udf

    root = str(tmp_path / "ns")
    ns = make_ns(root, range(10))
    before = ns.manifest_version

    @udf("long")
    def boom(k: int) -> int:
        if k == 25:
            raise ValueError("task failure")
        return k

    df = spark.createDataFrame([(i, "w", 1.0) for i in range(20, 30)], "k long, s string, v double")
    with pytest.raises(Exception, match="task failure"):
        df.select(boom("k").alias("k"), "s", "v").write.format("lance_ns").mode("append").save(root)
    after = PartitionedNamespace.open(root)
    assert after.manifest_version == before
    assert after.to_table().num_rows == 10
    # abort removes the job's staging folder, but a straggling task of the failed
    # job may re-create its staged file afterwards: such leftovers may only ever
    # live under _spark_staging/ (never inside a partition table, never in
    # __manifest); reclaiming them is ns.cleanup's job (issue 10).
    tables_before = {p["location"] for p in ns.partitions().to_pylist()}
    tables_after = {p["location"] for p in after.partitions().to_pylist()}
    assert tables_after == tables_before
