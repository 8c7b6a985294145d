"""Aggregates over storage-partitioned joins (partial and eager aggregation) never change an answer.

Random rows in two bucketed namespaces, random aggregate queries over their
join (inner/outer, GROUP BY either side, sum/count/min/max/avg, extra ON and
WHERE conditions), run by lance-sql with eager aggregation forced on, with its
usual threshold, and with SPJ off, and by plain DataFusion over memory tables
of the same rows: equal schemas and rows. Integer sums near 2**62 check that a
partial sum does not overflow where DataFusion's own does not.
"""

from __future__ import annotations

import math
import os
from decimal import Decimal
from pathlib import Path

import datafusion
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.engines.datafusion import agg_plan

EXAMPLES = int(os.environ.get("LANCE_SQL_AGG_EXAMPLES", "120"))

ORDERS = pa.schema(
    [
        ("order_id", pa.int64()),
        ("customer_id", pa.int64()),
        ("amount", pa.float64()),
        ("qty", pa.int32()),
        ("price", pa.decimal128(10, 2)),
        ("tag", pa.string()),
    ]
)
CUSTOMERS = pa.schema([("id", pa.int64()), ("segment", pa.string()), ("big", pa.int64())])


def _orders(n: int) -> pa.Table:
    return pa.table(
        {
            "order_id": list(range(n)),
            "customer_id": [None if i % 17 == 0 else (i * 7) % 40 for i in range(n)],
            "amount": [None if i % 11 == 0 else (i % 13) * 0.25 for i in range(n)],
            "qty": [(i % 5) - 2 for i in range(n)],
            "price": pa.array(
                [Decimal(f"{(i % 9) * 100 + i % 3}.{i % 100:02d}") for i in range(n)],
                pa.decimal128(10, 2),
            ),
            "tag": [None if i % 7 == 0 else "abc"[i % 3] for i in range(n)],
        },
        schema=ORDERS,
    )


def _customers(n: int) -> pa.Table:
    return pa.table(
        {
            "id": list(range(n)),
            "segment": [None if i % 9 == 0 else "xyz"[i % 3] for i in range(n)],
            "big": [2**62 - i for i in range(n)],
        },
        schema=CUSTOMERS,
    )


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object, object]:
    root = Path(tmp_path_factory.mktemp("plan_agg"))
    o = lance_sql.PartitionedNamespace.create(
        str(root / "orders"),
        ORDERS,
        [{"source": "customer_id", "transform": {"type": "bucket", "num_buckets": 8}}],
    )
    c = lance_sql.PartitionedNamespace.create(
        str(root / "customers"),
        CUSTOMERS,
        [{"source": "id", "transform": {"type": "bucket", "num_buckets": 4}}],
    )
    orders, customers = _orders(600), _customers(30)
    o.append(orders)
    c.append(customers)
    on, off = lance_sql.SessionContext(), lance_sql.SessionContext(spj=False)
    for ctx in (on, off):
        ctx.register_namespace("orders", str(root / "orders"))
        ctx.register_namespace("customers", str(root / "customers"))
    plain = datafusion.SessionContext()
    plain.from_arrow(orders, name="orders")
    plain.from_arrow(customers, name="customers")
    return on, off, plain


MEASURES = [
    "sum(o.amount)",
    "count(*)",
    "count(o.tag)",
    "min(o.order_id)",
    "max(o.tag)",
    "sum(o.qty)",
    "sum(o.price)",
    "avg(o.amount)",
    "sum(c.big)",
    "avg(c.big)",
    "max(c.segment)",
    "count(c.segment)",
]
KEYS = ["c.segment", "o.tag", "c.id", "o.customer_id"]
JOINS = ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]
EXTRA = ["", " AND o.order_id > c.id", " AND o.qty > 0"]
WHERE = ["", " WHERE o.amount > 1", " WHERE c.segment IS NULL", " WHERE o.tag <> 'a' OR c.id < 9"]


@st.composite
def queries(draw: st.DrawFn) -> str:
    measures = draw(st.lists(st.sampled_from(MEASURES), min_size=1, max_size=4, unique=True))
    keys = draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True))
    join = draw(st.sampled_from(JOINS))
    items = ", ".join([*keys, *measures])
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    return (
        f"SELECT {items} FROM orders o {join} customers c "
        f"ON o.customer_id = c.id{draw(st.sampled_from(EXTRA))}"
        f"{draw(st.sampled_from(WHERE))}{group}"
    )


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    def norm(v: object) -> object:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else round(v, 6)
        return v

    return sorted((tuple(norm(v) for v in r.values()) for r in table.to_pylist()), key=repr)


def _check(contexts: tuple[object, object, object], sql: str) -> None:
    on, off, plain = contexts
    expected = plain.sql(sql).to_arrow_table()  # type: ignore[attr-defined]
    for ctx in (on, off):
        got = ctx.sql(sql).to_arrow_table()  # type: ignore[attr-defined]
        assert got.schema.equals(expected.schema), (sql, got.schema, expected.schema)
        assert _rows(got) == _rows(expected), sql


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(sql=queries(), force=st.booleans())
def test_aggregates_over_spj_equal_plain_datafusion(contexts, sql: str, force: bool) -> None:
    old = agg_plan.MIN_RATIO
    agg_plan.MIN_RATIO = 0.0 if force else old
    try:
        _check(contexts, sql)
    finally:
        agg_plan.MIN_RATIO = old


def test_aggregate_runs_inside_the_groups(contexts) -> None:
    on = contexts[0]
    sql = (
        "SELECT c.segment, sum(o.amount), count(*) FROM orders o "
        "JOIN customers c ON o.customer_id = c.id GROUP BY c.segment"
    )
    done = on.sql(sql).lance_rewrite()
    assert [t.group.inside for t in done.used] == [
        "partial aggregate + left side aggregated before the join"
    ]
    _check(contexts, sql)


def test_outer_join_aggregate_is_partial_only(contexts) -> None:
    on = contexts[0]
    sql = (
        "SELECT c.segment, sum(o.amount) FROM orders o "
        "LEFT JOIN customers c ON o.customer_id = c.id GROUP BY c.segment"
    )
    assert [t.group.inside for t in on.sql(sql).lance_rewrite().used] == ["partial aggregate"]
    _check(contexts, sql)


def test_large_integer_sums_do_not_wrap(contexts) -> None:
    """avg(big) over values near 2**62: the partial state must not wrap around (issue #15)."""
    on, _, plain = contexts
    sql = "SELECT avg(c.big) FROM orders o JOIN customers c ON o.customer_id = c.id"
    assert _rows(on.sql(sql).to_arrow_table()) == _rows(plain.sql(sql).to_arrow_table())
