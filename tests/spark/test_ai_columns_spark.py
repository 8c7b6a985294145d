"""The Spark reader and writer with AI-shaped columns (vector, struct, list<struct>, map).

One tenant of the 64-tenant namespace of ``tests/engines/test_ai_tenants.py`` reads
1/64 partition tables through the ``where`` option and through filters Spark
pushes (the reader's ``pushFilters``, checked without a session: before the fix a
vector column made the pushed filter unplannable and every table was read), and
rows written back through ``lance_ns`` equal the rows read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from ai_columns import TENANTS, tenant_rows

from lance_sql.tables.namespace.namespace import PartitionedNamespace


@pytest.fixture(scope="module")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, pa.Table]:
    root = str(tmp_path_factory.mktemp("spark_tenants") / "ns")
    rows = tenant_rows(width=16, rows_per_tenant=10)
    ns = PartitionedNamespace.create(root, rows.schema, "identity(tenant)")
    ns.append(rows)
    return root, rows


def test_pushed_filter_prunes_with_vector_columns(tenants: tuple[str, pa.Table]) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.datasource import EqualTo

    from lance_sql.engines.spark.source import LanceNamespacePushdownDataSource

    root, _ = tenants
    source = LanceNamespacePushdownDataSource({"path": root})
    reader = source.reader(source.schema())
    assert list(reader.pushFilters([EqualTo(("tenant",), "t09")])) == []
    _, plan = reader.plan()
    assert (len(plan.partitions), plan.total_partitions) == (1, TENANTS)
    rows = [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    assert {r["tenant"] for r in rows} == {"t09"} and len(rows) == 10


def test_spark_reads_one_tenant_and_writes_ai_columns(
    spark: Any, tenants: tuple[str, pa.Table], tmp_path: Path
) -> None:
    import lance_sql.engines.spark as lance_spark

    root, rows = tenants
    report = lance_spark.describe_read(spark, root, where="tenant = 't09'")
    assert (report.partition_tables, report.total_partition_tables) == (1, TENANTS)
    df = spark.read.format("lance_ns").option("where", "tenant = 't09'").load(root)
    got = df.collect()
    want = {r["id"]: r for r in rows.to_pylist() if r["tenant"] == "t09"}
    assert sorted(r.id for r in got) == sorted(want)
    one = next(r for r in got if r.emb is not None)
    assert one.emb == pytest.approx(want[one.id]["emb"])
    assert dict(one.attrs or {}) == dict(want[one.id]["attrs"] or [])

    out = str(tmp_path / "copy")
    PartitionedNamespace.create(out, PartitionedNamespace.open(root).schema, "identity(tenant)")
    spark.read.format("lance_ns").load(root).write.format("lance_ns").mode("append").save(out)
    back = PartitionedNamespace.open(out).to_table().sort_by("id")
    assert back.to_pylist() == PartitionedNamespace.open(root).to_table().sort_by("id").to_pylist()
    assert len(PartitionedNamespace.open(out).tables()) == TENANTS
