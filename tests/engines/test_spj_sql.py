"""Storage-partitioned joins through SQL: results equal the plain join, other joins unchanged."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> tuple[str, str]:
    """Appendix F: orders bucket[16] on customer_id, customers bucket[8] on id."""
    tmp: Path = tmp_path_factory.mktemp("spj_sql")
    orders = PartitionedNamespace.create(
        str(tmp / "orders"),
        pa.schema(
            [
                pa.field("order_id", pa.int64()),
                pa.field("customer_id", pa.int64()),
                pa.field("amount", pa.float64()),
            ]
        ),
        [{"source": "customer_id", "transform": "bucket", "num_buckets": 16}],
    )
    customers = PartitionedNamespace.create(
        str(tmp / "customers"),
        pa.schema([pa.field("id", pa.int64()), pa.field("segment", pa.string())]),
        [{"source": "id", "transform": "bucket", "num_buckets": 8}],
    )
    n = 300
    keys = [None if i % 23 == 0 else (i * 7) % 60 if i % 3 else 1 for i in range(n)]
    orders.append(
        pa.table(
            {"order_id": list(range(n)), "customer_id": keys, "amount": [i / 4 for i in range(n)]}
        )
    )
    ids = [None, *range(0, 50)]
    customers.append(pa.table({"id": ids, "segment": [f"s{i % 3}" for i in range(len(ids))]}))
    return str(tmp / "orders"), str(tmp / "customers")


def _ctx(roots: tuple[str, str], spj: bool) -> lance_sql.SessionContext:
    ctx = lance_sql.SessionContext(spj=spj)
    ctx.register_namespace("orders", roots[0])
    ctx.register_namespace("customers", roots[1])
    ctx.from_pydict({"k": [1, 2, 3], "w": [10, 20, 30]}, name="extra")
    return ctx


def _rows(ctx: lance_sql.SessionContext, sql: str) -> Counter:
    table = ctx.sql(sql).to_arrow_table()
    return Counter(tuple(r.values()) for r in table.to_pylist())


QUERIES = [
    "SELECT o.order_id, c.segment FROM orders o {j} customers c ON o.customer_id = c.id",
    "SELECT * FROM orders o {j} customers c ON c.id = o.customer_id",
    "SELECT o.*, segment FROM orders AS o {j} customers AS c ON o.customer_id = c.id",
    "SELECT c.segment, sum(o.amount) AS s, count(*) FROM orders o {j} customers c "
    "ON o.customer_id = c.id GROUP BY c.segment",
    "SELECT order_id, id FROM orders o {j} customers c ON o.customer_id = c.id WHERE o.amount > 20",
    "SELECT o.order_id, e.w FROM orders o {j} customers c ON o.customer_id = c.id "
    "JOIN extra e ON e.k = c.id",
]


@pytest.mark.parametrize("join", ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
@pytest.mark.parametrize("query", QUERIES)
def test_spj_equals_plain_join(roots, join, query) -> None:
    sql = query.format(j=join)
    on, off = _ctx(roots, True), _ctx(roots, False)
    assert on.sql(sql).schema().names == off.sql(sql).schema().names
    assert _rows(on, sql) == _rows(off, sql)
    assert on.spj_last_reason is None
    text = "\n".join(on.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist())
    assert "StoragePartitionedJoin: orders o x customers c" in text


def test_extra_condition_inner_join(roots) -> None:
    sql = (
        "SELECT o.order_id, c.id FROM orders o JOIN customers c "
        "ON o.customer_id = c.id AND o.amount > c.id"
    )
    assert _rows(_ctx(roots, True), sql) == _rows(_ctx(roots, False), sql)


def test_explain_appendix_f(roots) -> None:
    ctx = _ctx(roots, True)
    sql = (
        "SELECT c.segment, sum(o.amount) FROM orders o JOIN customers c "
        "ON o.customer_id = c.id GROUP BY c.segment"
    )
    text = "\n".join(ctx.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist())
    assert "how=inner, on=[customer_id=id], groups=8" in text
    assert "bucket[16] x bucket[8] grouped by bucket % 8" in text
    assert re.search(r"partitions left=1[0-6] right=8", text)  # buckets the data filled
    # The namespace scans run inside the SPJ units: the physical plan scans one table
    # (the SPJ table, one partition per group) and has no join and no RepartitionExec
    # below the aggregation's own hash repartition.
    physical = ctx.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist()[-1]
    assert "HashJoinExec" not in physical
    assert "number_of_fragments=8" in physical
    scan_at = physical.index("DatasetExec")
    last_repartition = physical.rfind("RepartitionExec", 0, scan_at)
    between = physical[last_repartition:scan_at]
    assert "AggregateExec: mode=Partial" in between  # the repartition is the aggregate's shuffle


def test_off_leaves_query_unchanged(roots) -> None:
    ctx = _ctx(roots, False)
    sql = "SELECT o.order_id FROM orders o JOIN customers c ON o.customer_id = c.id"
    text = "\n".join(ctx.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist())
    assert "HashJoinExec" in text and "StoragePartitionedJoin" not in text


def test_other_joins_planned_as_before(roots) -> None:
    sql = "EXPLAIN SELECT * FROM t1 JOIN t2 ON t1.a = t2.b"

    def plan(ctx: lance_sql.SessionContext) -> list[str]:
        ctx.from_pydict({"a": [1, 2]}, name="t1")
        ctx.from_pydict({"b": [2, 3]}, name="t2")
        return ctx.sql(sql).to_arrow_table().column("plan").to_pylist()

    assert plan(_ctx(roots, True)) == plan(lance_sql.SessionContext())


def test_incompatible_or_unsupported_falls_back(roots) -> None:
    ctx = _ctx(roots, True)
    sql = "SELECT o.order_id FROM orders o JOIN customers c ON o.order_id = c.id"
    assert _rows(ctx, sql) == _rows(_ctx(roots, False), sql)
    assert "no partition field on the join keys" in (ctx.spj_last_reason or "")
    sql = (
        "SELECT o.order_id FROM orders o LEFT JOIN customers c ON o.customer_id = c.id AND c.id > 3"
    )
    assert _rows(ctx, sql) == _rows(_ctx(roots, False), sql)
    assert "non-equi ON conditions on a left join" in (ctx.spj_last_reason or "")


def test_rewrite_is_byte_identical_without_namespace_join(roots) -> None:
    from lance_sql.engines.datafusion.spj_rewrite import storage_partitioned_join

    ctx = _ctx(roots, True)
    for sql in ["SELECT  *  FROM orders -- x", "select 1 from extra join extra e2 on true"]:
        assert storage_partitioned_join(ctx, sql) is sql


def test_benchmark_runs_tiny() -> None:
    import importlib.util

    path = Path(__file__).parents[2] / "benchmarks" / "bench_spj.py"
    spec = importlib.util.spec_from_file_location("bench_spj", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    ratios = module.main(["--orders", "2000", "--customers", "300", "--repeats", "1"])
    assert set(ratios) == {"time_ratio", "rss_ratio"}
