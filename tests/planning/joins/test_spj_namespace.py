"""plan_join against real partitioned namespaces written by pylance (appendix F), with pruning."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from join_helpers import reference_join

from lance_sql.planning.joins import JoinPlan, plan_join
from lance_sql.tables.namespace.namespace import PartitionedNamespace


def _namespaces(tmp_path: Path) -> tuple[PartitionedNamespace, PartitionedNamespace]:
    orders = PartitionedNamespace.create(
        str(tmp_path / "orders"),
        pa.schema([pa.field("order_id", pa.int64()), pa.field("customer_id", pa.int64())]),
        [
            {
                "source": "customer_id",
                "transform": "bucket",
                "num_buckets": 16,
                "field_id": "customer_bucket",
            }
        ],
    )
    customers = PartitionedNamespace.create(
        str(tmp_path / "customers"),
        pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())]),
        [{"source": "id", "transform": "bucket", "num_buckets": 8, "field_id": "id_bucket"}],
    )
    cids = list(range(40))
    orders.append(
        pa.table({"order_id": list(range(200)), "customer_id": [cids[i % 40] for i in range(200)]})
    )
    customers.append(pa.table({"id": cids, "name": [f"c{i}" for i in cids]}))
    return orders, customers


def test_appendix_f_on_real_namespaces(tmp_path: Path) -> None:
    orders, customers = _namespaces(tmp_path)
    plan = plan_join(orders, customers, [("customer_id", "id")])
    assert plan.compatible and len(plan.groups) <= 8
    for g in plan.groups:
        (i,) = g.key
        assert [dict(r.values)["id_bucket"] for r in g.right] == [i]
        assert all(dict(r.values)["customer_bucket"] % 8 == i for r in g.left)
    # group-by-group over the real data equals the plain join
    import lance

    def rows(ns, refs, id_col, tag):
        out = []
        for r in refs:
            t = lance.dataset(f"{ns.root}/{r.location}").to_table()
            out += [{**row, tag: row[id_col]} for row in t.to_pylist()]
        return out

    got = sum(
        (
            reference_join(
                rows(orders, g.left, "order_id", "lid"),
                rows(customers, g.right, "id", "rid"),
                plan.on,
                "inner",
            )
            for g in plan.groups
        ),
        start=reference_join([], [], plan.on, "inner"),
    )
    assert sum(got.values()) == 200
    assert JoinPlan.from_json(plan.to_json()) == plan


def test_filters_prune_each_side_first(tmp_path: Path) -> None:
    orders, customers = _namespaces(tmp_path)
    full = plan_join(orders, customers, [("customer_id", "id")])
    pruned = plan_join(orders, customers, [("customer_id", "id")], right_filter="id = 7")
    assert len(pruned.groups) == 1
    (g,) = pruned.groups
    assert len(g.right) == 1 and g.key in {x.key for x in full.groups}
    left_only = plan_join(
        orders, customers, [("customer_id", "id")], "left", left_filter="customer_id IN (1, 2)"
    )
    assert sum(len(x.left) for x in left_only.groups) <= 2
