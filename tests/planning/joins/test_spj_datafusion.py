"""Storage-partitioned joins in DataFusion equal the plain join for every join type."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from lance_sql.planning.joins import plan_join
from lance_sql.planning.joins.plan import PRESERVED
from lance_sql.tables.namespace.namespace import PartitionedNamespace


@pytest.fixture(scope="module")
def namespaces(tmp_path_factory) -> tuple[PartitionedNamespace, PartitionedNamespace]:
    tmp: Path = tmp_path_factory.mktemp("spj")
    orders = PartitionedNamespace.create(
        str(tmp / "orders"),
        pa.schema([pa.field("order_id", pa.int64()), pa.field("customer_id", pa.int64())]),
        [{"source": "customer_id", "transform": "bucket", "num_buckets": 6}],
    )
    customers = PartitionedNamespace.create(
        str(tmp / "customers"),
        pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())]),
        [{"source": "id", "transform": "identity"}],
    )
    keys = [1, 1, 1, 2, 3, None, 5, 8, 13, 1, None, 40]
    orders.append(pa.table({"order_id": list(range(len(keys))), "customer_id": keys}))
    ids = [1, 2, 4, 5, None, 21, 40]
    customers.append(pa.table({"id": ids, "name": [f"c{i}" for i in range(len(ids))]}))
    customers.add_spec([{"source": "id", "transform": "bucket", "num_buckets": 4}])
    customers.append(pa.table({"id": [3, 8, None, 77], "name": ["d0", "d1", "d2", "d3"]}))
    return orders, customers


def _rows(df) -> Counter:
    table = df.to_arrow_table()
    return Counter(tuple(r.values()) for r in table.to_pylist())


#: JoinPlan ``how`` -> SQL (the output: both sides, or the one a semi/anti join keeps)
_SQL = {
    "inner": "JOIN",
    "left": "LEFT JOIN",
    "right": "RIGHT JOIN",
    "full": "FULL JOIN",
    "semi": "LEFT SEMI JOIN",
    "anti": "LEFT ANTI JOIN",
    "right_semi": "RIGHT SEMI JOIN",
    "right_anti": "RIGHT ANTI JOIN",
}


def _sql(how: str) -> str:
    cols = "c.id, c.name" if how.startswith("right_") else "o.order_id, o.customer_id"
    if how in ("inner", "left", "right", "full"):
        cols += ", c.id, c.name"
    return f"SELECT {cols} FROM orders o {_SQL[how]} customers c ON o.customer_id = c.id"


def _ctx(namespaces, spj: bool):
    import lance_sql

    ctx = lance_sql.SessionContext(spj=spj)
    ctx.spj_small_side_rows = 0  # every compatible join storage-partitioned
    ctx.register_namespace("orders", namespaces[0].root)
    ctx.register_namespace("customers", namespaces[1].root)
    return ctx


@pytest.mark.parametrize("how", sorted(PRESERVED))
def test_group_joins_equal_plain_join(namespaces, how) -> None:
    """Every join type, run group by group in DataFusion, equals the plain join (NULL keys,
    a spec evolution regrouped by ``bucket % 2``)."""
    orders, customers = namespaces
    plan = plan_join(orders, customers, [("customer_id", "id")], how)
    assert plan.compatible and "bucket % 2" in plan.regrouping
    on, off = _ctx(namespaces, True), _ctx(namespaces, False)
    sql = _sql(how)
    assert len(on.sql(sql).lance_rewrite().used) == 1, sql
    assert _rows(on.sql(sql)) == _rows(off.sql(sql))
