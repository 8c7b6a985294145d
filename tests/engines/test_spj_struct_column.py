"""A struct column before the join key does not stop a storage-partitioned join.

Substrait lists a read's column names depth first (a struct's fields after it);
the join-side reader took the n-th name for the n-th column, so with
``(st struct<a, b>, k)`` the key ``k`` was read as ``a`` and the join ran
unpartitioned. Rows are compared with plain DataFusion over the same rows.
"""

from __future__ import annotations

from pathlib import Path

import datafusion
import pyarrow as pa

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.tables.namespace.namespace import PartitionedNamespace


def test_spj_with_a_struct_column_before_the_key(tmp_path: Path) -> None:
    rows = pa.table(
        {
            "st": pa.array([{"a": i, "b": -i} for i in range(50)]),
            "k": pa.array([*range(49), None], pa.int64()),
            "v": [i * 2 for i in range(50)],
        }
    )
    ctx = lance_sql.SessionContext()
    plain = datafusion.SessionContext()
    for name in ("x", "y"):
        PartitionedNamespace.create(str(tmp_path / name), rows.schema, "bucket(4, k)").append(rows)
        ctx.register_namespace(name, str(tmp_path / name))
        plain.register_record_batches(name, [rows.to_batches()])
    sql = "SELECT x.k, y.st['a'] AS a FROM x JOIN y ON x.k = y.k WHERE x.v > 3 ORDER BY x.k"
    with capture_scans() as records:
        got = ctx.sql(sql).to_arrow_table()
    assert got.to_pylist() == plain.sql(sql).to_arrow_table().to_pylist()
    assert got.num_rows == 47
    assert any(r.plan.description.startswith("StoragePartitionedJoin") for r in records)
