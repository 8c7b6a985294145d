"""Join dynamic filter pushdown on: self-joins and join chains with subqueries give DuckDB's rows.

DataFusion 55 pushes a join's dynamic filter through a projection by column
name. lance-sql's join passes rebuild join trees and put the columns back in
their order with a projection; after a self-join that projection held two
columns of one name (``t0.sku``, ``t2.sku``) and the filter of ``t0.sku IN
(...)`` landed on ``t2.sku``: 7,599 rows instead of 7,920. These queries run on
lance-sql contexts with the pushdown forced on (SPJ on and off) over the
differential corpus' pylance-written tables; DuckDB over the same rows decides
the rows, plain DataFusion over memory tables the schema (names, types,
nullability).
"""

from __future__ import annotations

import datafusion
import pyarrow as pa
import pytest
from diff_data import DATASETS, NAMESPACES
from diff_harness import Contexts, duck_rows_equal, rows_of, run_duck, schema_of

import lance_sql
from lance_sql.engines.datafusion.session_defaults import default_config

PUSHDOWN = "datafusion.optimizer.enable_join_dynamic_filter_pushdown"
ITEMS = "t0.item_id, t0.order_id, t0.sku, t0.qty"
ALL = ", ".join(str(i) for i in range(1, 24))

QUERIES = {
    "chain_in_order_by_all": (
        "SELECT * FROM items t0, orders t1, items t2 WHERE t0.order_id = t1.order_id "
        "AND t1.order_id = t2.order_id AND t0.sku IN (SELECT s.sku FROM products s WHERE true) "
        f"ORDER BY {ALL}"
    ),
    "chain_in_second_copy_limit": (
        "SELECT * FROM items t0, orders t1, items t2 WHERE t0.order_id = t1.order_id "
        "AND t1.order_id = t2.order_id AND t2.sku IN (SELECT s.sku FROM products s) "
        "ORDER BY t0.item_id, t2.item_id LIMIT 300"
    ),
    "self_join_exists_limit": (
        f"SELECT {ITEMS}, t2.item_id, t2.sku FROM items t0 JOIN items t2 "
        "ON t0.order_id = t2.order_id WHERE EXISTS "
        "(SELECT 1 FROM products p WHERE p.sku = t0.sku) ORDER BY t0.item_id, t2.item_id LIMIT 500"
    ),
    "self_join_not_exists": (
        f"SELECT {ITEMS}, t2.item_id, t2.sku FROM items t0 JOIN items t2 "
        "ON t0.order_id = t2.order_id WHERE NOT EXISTS "
        "(SELECT 1 FROM products p WHERE p.sku = t2.sku) ORDER BY t0.item_id, t2.item_id"
    ),
    "chain_self_join_in_both": (
        "SELECT t0.item_id, t0.sku, t1.order_id, t2.item_id, t2.sku FROM items t0 "
        "JOIN orders t1 ON t0.order_id = t1.order_id JOIN items t2 ON t1.order_id = t2.order_id "
        "WHERE t0.sku IN (SELECT sku FROM products WHERE rating > 2) "
        "AND t2.sku NOT IN (SELECT sku FROM products WHERE rating > 4 AND sku IS NOT NULL) "
        "ORDER BY 1, 4"
    ),
    "four_table_chain_in": (
        "SELECT * FROM items t0, orders t1, items t2, customers c "
        "WHERE t0.order_id = t1.order_id AND t1.order_id = t2.order_id "
        "AND t1.customer_id = c.id AND t0.sku IN (SELECT sku FROM products) "
        "ORDER BY t0.item_id, t2.item_id LIMIT 400"
    ),
    "four_table_chain_exists_count": (
        "SELECT count(*), count(DISTINCT t0.sku), count(DISTINCT t2.sku) "
        "FROM orders t1 JOIN items t0 ON t0.order_id = t1.order_id "
        "JOIN items t2 ON t2.order_id = t1.order_id JOIN customers c ON c.id = t1.customer_id "
        "WHERE EXISTS (SELECT 1 FROM products p WHERE p.sku = t0.sku)"
    ),
}


def _pushdown_config(base: datafusion.SessionConfig) -> datafusion.SessionConfig:
    return base.set(PUSHDOWN, "true")


def _lance(diff: Contexts, config: datafusion.SessionConfig, spj: bool) -> lance_sql.SessionContext:
    ctx = lance_sql.SessionContext(config, spj=spj)
    for name in NAMESPACES:
        ctx.register_namespace(name, diff.uris[name])
    for name in DATASETS:
        ctx.register_lance(name, diff.uris[name])
    return ctx


@pytest.fixture(scope="module")
def pushdown_on(diff: Contexts) -> dict[bool, lance_sql.SessionContext]:
    """lance-sql contexts (SPJ on / off) with DataFusion's join dynamic filter pushdown on."""
    return {spj: _lance(diff, _pushdown_config(default_config()), spj) for spj in (True, False)}


def _check(diff: Contexts, got: pa.Table, sql: str) -> None:
    assert schema_of(got) == schema_of(diff.plain.sql(sql).to_arrow_table()), sql
    duck = run_duck(diff, sql)
    assert got.num_rows == duck.num_rows, f"{got.num_rows} rows, DuckDB {duck.num_rows}: {sql}"
    assert duck_rows_equal(got, duck, ordered="ORDER BY" in sql), (
        f"rows differ from DuckDB\n  query: {sql}\n  got: {rows_of(got)[:5]}\n"
        f"  duckdb: {rows_of(duck)[:5]}"
    )


@pytest.mark.parametrize("spj", [True, False], ids=["spj-on", "spj-off"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_pushdown_on_gives_duckdb_rows(
    diff: Contexts, pushdown_on: dict[bool, lance_sql.SessionContext], name: str, spj: bool
) -> None:
    ctx = pushdown_on[spj]
    sql = QUERIES[name]
    _check(diff, ctx.sql(sql).to_arrow_table(), sql)


def test_user_config_with_pushdown_on(diff: Contexts) -> None:
    """A ``SessionConfig`` the user passes (DataFusion's defaults, pushdown on) is used as
    given and still gets the right rows."""
    config = datafusion.SessionConfig().with_information_schema(True)
    ctx = _lance(diff, _pushdown_config(config), spj=True)
    setting = ctx.sql(
        f"SELECT value FROM information_schema.df_settings WHERE name = '{PUSHDOWN}'"
    ).to_pylist()
    assert setting == [{"value": "true"}]
    sql = QUERIES["chain_in_order_by_all"]
    got = ctx.sql(sql).to_arrow_table()
    assert got.num_rows == 7920
    _check(diff, got, sql)


def test_rewritten_plan_projects_no_repeated_name(
    pushdown_on: dict[bool, lance_sql.SessionContext],
) -> None:
    """No projection of the plan lance-sql runs outputs two columns of one name."""
    df = pushdown_on[False].sql(QUERIES["chain_in_order_by_all"])
    rewrite = df.lance_rewrite()
    assert rewrite.dataframe is not None
    plan = rewrite.dataframe.execution_plan().display_indent()
    projections = [line for line in plan.splitlines() if "ProjectionExec: expr=[" in line]
    assert projections, plan
    for line in projections:
        names = [item.rsplit(" as ", 1)[1] for item in line.split("expr=[", 1)[1][:-1].split(", ")]
        assert len(names) == len(set(names)), line


def test_default_config_keeps_pushdown_off() -> None:
    """``SessionContext()`` without a config gets ``default_config()``: the pushdown off
    (DataFusion 55 still remaps such filters by name in operators it builds itself)."""
    ctx = lance_sql.SessionContext(default_config().with_information_schema(True))
    setting = ctx.sql(
        f"SELECT value FROM information_schema.df_settings WHERE name = '{PUSHDOWN}'"
    ).to_pylist()
    assert setting == [{"value": "false"}]
