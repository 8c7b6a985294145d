"""EXPLAIN ANALYZE / VERBOSE / FORMAT show the plan lance-sql runs, not the plan as built.

Before: those forms printed DataFusion's output for the plan *without*
lance-sql's rewrites, and a ``storage-partitioned join: not used`` line said so;
``EXPLAIN ANALYZE`` of a storage-partitioned join therefore ran (and timed) a
plain join. Now DataFusion explains, and for ANALYZE runs, the rewritten plan.
"""

from __future__ import annotations

import pytest

import lance_sql

JOIN = (
    "SELECT c.segment, count(*) AS n FROM orders o JOIN customers c "
    "ON o.customer_id = c.id GROUP BY c.segment"
)


@pytest.fixture(scope="module")
def ctx(appendix_f_roots: tuple[str, str]) -> lance_sql.SessionContext:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("orders", appendix_f_roots[0])
    ctx.register_namespace("customers", appendix_f_roots[1])
    return ctx


def _explain(ctx: lance_sql.SessionContext, sql: str) -> dict[str, str]:
    table = ctx.sql(sql).to_arrow_table()
    return {r["plan_type"]: r["plan"] or "" for r in table.to_pylist()}


def _tables(ctx: lance_sql.SessionContext) -> set[str]:
    return set(ctx.catalog().schema().names())


@pytest.mark.parametrize(
    "words", ["EXPLAIN ANALYZE", "explain analyze verbose", "/* x */ EXPLAIN  ANALYZE"]
)
def test_explain_analyze_runs_the_storage_partitioned_join(ctx, words: str) -> None:
    groups = ctx.sql(JOIN).count()
    before = _tables(ctx)
    plans = _explain(ctx, f"{words} {JOIN}")
    text = plans["Plan with Metrics"]
    assert "StoragePartitionedJoin: orders" in text
    assert f"metrics=[output_rows={groups}," in text.splitlines()[0]  # it ran
    assert "not used" not in "\n".join(plans.values())
    assert _tables(ctx) == before  # the view it explained through is gone


def test_explain_verbose_shows_the_rewritten_plan(ctx) -> None:
    plans = _explain(ctx, f"EXPLAIN VERBOSE {JOIN}")
    assert "__lance_spj" in plans["initial_logical_plan"]
    assert "StoragePartitionedJoin: orders" in plans["physical_plan"]


def test_explain_format_tree_lists_the_scan_descriptions(ctx) -> None:
    plans = _explain(ctx, f"EXPLAIN FORMAT tree {JOIN}")
    (physical,) = plans.values()
    assert "┌" in physical
    assert "StoragePartitionedJoin: orders orders x customers customers" in physical


def test_explain_analyze_without_a_rewrite(ctx) -> None:
    plans = _explain(ctx, "EXPLAIN ANALYZE SELECT count(*) FROM orders WHERE amount > 3")
    text = plans["Plan with Metrics"]
    assert "LanceNamespaceScan: table=orders" in text
    assert "not used" not in text


def test_explain_analyze_of_a_declined_join_says_why(ctx) -> None:
    ctx.spj_small_side_rows = 10_000
    ctx.spj_large_side_rows = 100
    try:
        plans = _explain(ctx, f"EXPLAIN ANALYZE {JOIN}")
    finally:
        ctx.spj_small_side_rows = 500_000
        ctx.spj_large_side_rows = 1_000_000
    text = plans["Plan with Metrics"]
    assert "storage-partitioned join: not used (orders x customers" in text
    assert "StoragePartitionedJoin" not in text
