"""Adversarial review (session 7, second pass): residual elimination over invalid data.

A partition table holding a row outside its partition values cannot be
written through the namespace; pylance can put one there, and a hand edit of
``__manifest`` can pin it. The spec selects tables by partition values, so
such rows are invalid: pruning hides them from a filter on their own value,
and residual elimination returns them for a filter on the table's value. This
pins that documented behaviour (docs/pruning.md, residual elimination).
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa

import lance_sql
from lance_sql.engines.datafusion import namespace_plans
from lance_sql.tables.namespace.layout import manifest_uri

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("region", pa.string())])
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]


def _ids(root: str, where: str) -> list[int]:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    return sorted(ctx.sql(f"SELECT id FROM t WHERE {where}").to_arrow_table().column(0).to_pylist())


def test_a_row_outside_its_partition_is_invalid_data(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    ns = lance_sql.PartitionedNamespace.create(root, SCHEMA, SPEC)
    ns.append(pa.table({"id": [1, 2], "region": ["r1", "r2"]}, schema=SCHEMA))
    r1 = next(e for e in ns.tables() if e.values["region"] == "r1")
    stray = pa.table({"id": [999], "region": ["r2"]}, schema=SCHEMA)
    ds = lance.write_dataset(stray, r1.uri, mode="append")
    lance.dataset(manifest_uri(root)).update(
        {"read_version": str(ds.version)}, where=f"object_id = '{r1.object_id}'"
    )
    assert _ids(root, "region = 'r2'") == [2]  # pruned away (as before residual elimination)
    assert _ids(root, "region = 'r1'") == [1, 999]  # the r1 table's filter is proven
    namespace_plans.ENABLE_RESIDUAL_ELIMINATION[0] = False
    try:
        assert _ids(root, "region = 'r1'") == [1]
    finally:
        namespace_plans.ENABLE_RESIDUAL_ELIMINATION[0] = True
