"""``partitionOverwriteMode=dynamic``: staged writes, one driver commit (issue #17 item 6)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.float64())])
BASE = pa.table({"k": list(range(40)), "v": [float(i) for i in range(40)]}, schema=SCHEMA)


def _rows(ns: PartitionedNamespace) -> list[tuple[int, float]]:
    t = ns.to_table()
    return sorted(zip(t.column("k").to_pylist(), t.column("v").to_pylist(), strict=True))


def test_dynamic_overwrite_equals_the_python_api(spark: Any, tmp_path: Any) -> None:
    roots = [str(tmp_path / "py"), str(tmp_path / "spark")]
    for r in roots:
        PartitionedNamespace.create(r, SCHEMA, "bucket(4, k)").append(BASE)
    new = pa.table({"k": [1, 2, 100], "v": [-1.0, -2.0, -100.0]}, schema=SCHEMA)
    PartitionedNamespace.open(roots[0]).overwrite(new, partitions="dynamic")
    before = PartitionedNamespace.open(roots[1]).manifest_version
    df = spark.createDataFrame(new.to_pylist(), "k long, v double").repartition(2)
    df.write.format("lance_ns").option("partitionOverwriteMode", "dynamic").mode("overwrite").save(
        roots[1]
    )
    got = PartitionedNamespace.open(roots[1])
    assert got.manifest_version == before + 1  # one commit
    assert _rows(got) == _rows(PartitionedNamespace.open(roots[0]))
    assert len(_rows(got)) < 40  # some partitions were replaced, the others kept
    assert (3, 3.0) in _rows(got) or (0, 0.0) in _rows(got)
    # an empty DataFrame replaces nothing
    spark.createDataFrame([], "k long, v double").write.format("lance_ns").option(
        "partitionOverwriteMode", "dynamic"
    ).mode("overwrite").save(roots[1])
    assert _rows(PartitionedNamespace.open(roots[1])) == _rows(got)


def test_bad_overwrite_options_are_refused_not_ignored(spark: Any, tmp_path: Any) -> None:
    root = str(tmp_path / "ns")
    PartitionedNamespace.create(root, SCHEMA, "bucket(4, k)").append(BASE)
    df = spark.createDataFrame([(1, 0.5)], "k long, v double")
    with pytest.raises(Exception, match="replaceWhere needs mode"):  # (test_replace_where.py)
        df.write.format("lance_ns").option("replaceWhere", "k = 1").mode("append").save(root)
    with pytest.raises(Exception, match="partitionOverwriteMode='sometimes'"):
        df.write.format("lance_ns").option("partitionOverwriteMode", "sometimes").mode(
            "overwrite"
        ).save(root)
    assert PartitionedNamespace.open(root).count_rows() == 40
