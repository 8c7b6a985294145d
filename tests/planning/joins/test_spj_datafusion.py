"""The DataFusion prototype: UNION ALL of per-group joins equals the plain join, no shuffle."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from lance_sql.engines.datafusion.spj import spj_dataframe
from lance_sql.planning.joins import plan_join
from lance_sql.planning.joins.plan import PRESERVED, JoinPlan
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


@pytest.mark.parametrize("how", sorted(PRESERVED))
def test_union_of_group_joins_equals_plain_join(namespaces, how) -> None:
    orders, customers = namespaces
    plan = plan_join(orders, customers, [("customer_id", "id")], how)
    assert plan.compatible and "bucket % 2" in plan.regrouping
    fallback = JoinPlan(False, "forced", (), "", plan.how, plan.on)
    assert _rows(spj_dataframe(plan, orders, customers)) == _rows(
        spj_dataframe(fallback, orders, customers, name="plain")
    )


def test_no_repartition_below_the_union(namespaces) -> None:
    orders, customers = namespaces
    plan = plan_join(orders, customers, [("customer_id", "id")], "inner")
    text = spj_dataframe(plan, orders, customers).execution_plan().display_indent()
    assert "UnionExec" in text and "HashJoinExec" in text
    assert "RepartitionExec" not in text
