"""The per-join SPJ decision (engines/datafusion/spj_plan.decide): plan choice and equal answers."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.engines.datafusion.spj_plan import LARGE_SIDE_ROWS, SMALL_SIDE_ROWS


@pytest.fixture(scope="module")
def roots(appendix_f_roots: tuple[str, str]) -> tuple[str, str]:
    """Appendix F: orders bucket[16] on customer_id, customers bucket[8] on id."""
    return appendix_f_roots


def _ctx(roots: tuple[str, str], spj: bool = True, small: int | None = None, large: int = 200):
    ctx = lance_sql.SessionContext(spj=spj)
    ctx.register_namespace("orders", roots[0])
    ctx.register_namespace("customers", roots[1])
    ctx.from_pydict({"k": [0, 1, 2], "w": [10, 20, 30]}, name="extra")
    if small is not None:
        ctx.spj_small_side_rows = small
        ctx.spj_large_side_rows = large
    return ctx


def _rows(ctx: lance_sql.SessionContext, sql: str) -> Counter:
    return Counter(tuple(r.values()) for r in ctx.sql(sql).to_arrow_table().to_pylist())


def _explain(ctx: lance_sql.SessionContext, sql: str) -> str:
    table = ctx.sql("EXPLAIN " + sql).to_arrow_table()
    return "\n".join(str(v) for c in table.columns for v in c.to_pylist())


JOIN = "SELECT o.order_id, c.segment FROM orders o JOIN customers c ON o.customer_id = c.id"


def test_defaults_keep_spj_for_small_namespaces(roots) -> None:
    """Two small inputs: nothing large to stream, SPJ stays (the defaults need >= 1M rows)."""
    assert SMALL_SIDE_ROWS < LARGE_SIDE_ROWS
    ctx = _ctx(roots)
    assert len(ctx.sql(JOIN).lance_rewrite().used) == 1
    text = _explain(ctx, JOIN)
    assert "StoragePartitionedJoin: orders orders x customers customers" in text
    assert "~300 x ~51 rows estimated" in text


def test_small_side_against_large_side_runs_plain(roots) -> None:
    ctx = _ctx(roots, small=100, large=200)  # customers 51 <= 100, orders 300 >= 200
    rewrite = ctx.sql(JOIN).lance_rewrite()
    assert rewrite.used == []
    assert any("the smaller input is small (~300 x ~51" in r for r in rewrite.reasons)
    text = _explain(ctx, JOIN)
    assert "StoragePartitionedJoin" not in text
    assert "storage-partitioned join: not used (orders x customers: the smaller input" in text
    assert _rows(ctx, JOIN) == _rows(_ctx(roots, spj=False), JOIN)


def test_reordered_chain_left_plain_is_planned_again(roots) -> None:
    """A pair declined for its unaggregated output: the query is planned without SPJ at all."""
    sql = SQLS[-2]
    ctx = _ctx(roots, small=40, large=200)
    rewrite = ctx.sql(sql).lance_rewrite()
    assert rewrite.used == []
    assert any("output rows estimated and no aggregate" in r for r in rewrite.reasons)
    assert len(_ctx(roots, small=40, large=400).sql(sql).lance_rewrite().used) == 1
    assert _rows(ctx, sql) == _rows(_ctx(roots, spj=False), sql)


def test_zero_turns_the_decision_off(roots) -> None:
    ctx = _ctx(roots, small=0, large=1)
    assert len(ctx.sql(JOIN).lance_rewrite().used) == 1


AGG = (
    "SELECT c.segment, sum(o.amount) FROM orders o JOIN customers c "
    "ON o.customer_id = c.id GROUP BY c.segment"
)


def test_both_large_and_aggregated_in_the_groups_keeps_spj(roots) -> None:
    ctx = _ctx(roots, small=40, large=200)  # customers 51 > 40, orders 300 >= 200
    rewrite = ctx.sql(AGG).lance_rewrite()
    assert rewrite.used and not rewrite.reasons
    assert "in each group: partial aggregate" in _explain(ctx, AGG)
    assert _rows(ctx, AGG) == _rows(_ctx(roots, spj=False), AGG)


def test_large_unaggregated_output_runs_plain(roots) -> None:
    """~300 output rows >= 200 leave the groups as they are: the plain join is put back."""
    ctx = _ctx(roots, small=40, large=200)
    rewrite = ctx.sql(JOIN).lance_rewrite()
    assert rewrite.used == []
    assert any("~300 output rows estimated and no aggregate" in r for r in rewrite.reasons)
    assert "StoragePartitionedJoin" not in _explain(ctx, JOIN)
    assert _rows(ctx, JOIN) == _rows(_ctx(roots, spj=False), JOIN)
    assert len(_ctx(roots, small=40, large=400).sql(JOIN).lance_rewrite().used) == 1


def test_filters_count_in_the_estimate(roots) -> None:
    """A WHERE conjunct keeps ~1/4 of the rows: 51 customers become ~13 <= 40."""
    ctx = _ctx(roots, small=40, large=200)
    sql = JOIN + " WHERE c.segment = 's1'"
    rewrite = ctx.sql(sql).lance_rewrite()
    assert rewrite.used == []
    assert any("~13 rows estimated" in r for r in rewrite.reasons), rewrite.reasons
    assert _rows(ctx, sql) == _rows(_ctx(roots, spj=False), sql)


SQLS = [
    JOIN,
    AGG,
    "SELECT o.order_id, c.segment FROM orders o LEFT JOIN customers c ON o.customer_id = c.id",
    "SELECT o.order_id, c.id FROM orders o FULL JOIN customers c ON o.customer_id = c.id",
    "SELECT c.* FROM customers c WHERE EXISTS "
    "(SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 10)",
    "SELECT c.* FROM customers c WHERE NOT EXISTS "
    "(SELECT 1 FROM orders o WHERE o.customer_id = c.id)",
    "SELECT c.segment, sum(o.amount), count(*) FROM orders o JOIN customers c "
    "ON o.customer_id = c.id WHERE o.amount < 50 GROUP BY c.segment",
    # the namespace pair is not adjacent: the join reordering asks the decision too
    "SELECT o.order_id, e.w, c.segment FROM orders o JOIN extra e ON o.order_id % 3 = e.k "
    "JOIN customers c ON o.customer_id = c.id",
    "SELECT e.w, sum(o.amount) FROM orders o JOIN extra e ON o.order_id % 3 = e.k "
    "JOIN customers c ON o.customer_id = c.id GROUP BY e.w",
]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sql=st.sampled_from(SQLS),
    small=st.sampled_from([0, 10, 60, 100, 400]),
    large=st.sampled_from([0, 50, 200, 1000]),
)
def test_answers_equal_whatever_the_decision(roots, sql: str, small: int, large: int) -> None:
    """Differential: every threshold pair gives the plain join's answer (no row lost or doubled)."""
    assert _rows(_ctx(roots, small=small, large=large), sql) == _rows(_ctx(roots, spj=False), sql)
