"""The hand-written corpus: lance-sql (SPJ on and off) must answer as plain DataFusion does.

Plain DataFusion runs the same text over memory tables of the same rows (see
``conftest.py``); where it is itself wrong (``oracle="duckdb"``) the rows are
compared with DuckDB's and the schema with plain DataFusion's.
"""

from __future__ import annotations

import pytest
from diff_harness import (
    Contexts,
    assert_same,
    duck_rows_equal,
    rows_of,
    run_duck,
    run_lance,
    run_plain,
    run_setup,
    schema_of,
)
from known_failures import KNOWN_FAILURES, known_failure
from sql_corpus import CORPUS, Q


def _cases() -> list[pytest.param]:
    out = []
    for q in CORPUS:
        for spj in (True, False):
            tag = "spj-on" if spj else "spj-off"
            reason = known_failure(q.id, spj)
            marks = [pytest.mark.xfail(strict=False, reason=reason)] if reason else []
            out.append(pytest.param(q, spj, id=f"{q.id}[{tag}]", marks=marks))
    return out


def _register_views(c: Contexts, q: Q) -> None:
    for name, sql in q.views:
        key = f"register_view:{name}"
        if key in c.setups_done:
            continue
        for ctx in c.all_contexts():
            ctx.register_view(name, ctx.sql(sql))
        c.setups_done.add(key)


def check(c: Contexts, q: Q, spj: bool) -> None:
    run_setup(c, q.setup)
    _register_views(c, q)
    want = run_plain(c, q.plain or q.sql, params=q.params)
    got = run_lance(c, q.sql, spj=spj, params=q.params)
    if q.oracle == "duckdb":
        assert schema_of(got) == schema_of(want), q.sql
        duck = run_duck(c, q.sql)
        assert duck_rows_equal(got, duck, ordered=q.ordered), (
            f"rows differ from DuckDB\n  query: {q.sql}\n  got: {rows_of(got)[:10]}\n"
            f"  duckdb: {rows_of(duck)[:10]}"
        )
        return
    assert_same(got, want, ordered=q.ordered, sql=q.sql)


def test_corpus_size() -> None:
    assert len(CORPUS) >= 200
    assert len({q.id for q in CORPUS}) == len(CORPUS), "duplicate query ids"
    bare = {k.split("[")[0] for k in KNOWN_FAILURES}
    from test_dataframe_programs import REGRESSIONS

    known = {q.id for q in CORPUS} | set(EXPLAINS) | set(REGRESSIONS)
    assert bare <= known, f"KNOWN_FAILURES names no query: {sorted(bare - known)}"


def test_same_schemas(diff: Contexts) -> None:
    """Every table has the same Arrow schema (nullability included) on all contexts."""
    for name in diff.tables:
        want = diff.plain.table(name).schema()
        assert diff.lance.table(name).schema() == want, name
        assert diff.lance_off.table(name).schema() == want, name
        assert diff.tables[name].schema == want, name


def test_set_lance_spj_false_statement(diff: Contexts) -> None:
    """``SET lance.spj = false`` in SQL is ``SessionContext(spj=False)``: same answers."""
    import lance_sql

    ctx = lance_sql.SessionContext()
    for name in ("orders", "customers"):
        ctx.register_namespace(name, diff.uris[name])
    sql = (
        "SELECT c.nation, count(*), sum(o.qty) FROM orders o JOIN customers c "
        "ON o.customer_id = c.id WHERE o.status <> 'done' GROUP BY c.nation"
    )
    want = run_plain(diff, sql)
    for value in ("false", "true"):
        ctx.sql(f"SET lance.spj = {value}")
        assert_same(ctx.sql(sql).to_arrow_table(), want, sql=f"{sql} [SET lance.spj={value}]")


@pytest.mark.parametrize(("q", "spj"), _cases())
def test_query(diff: Contexts, q: Q, spj: bool) -> None:
    check(diff, q, spj)


EXPLAINS = {
    "explain_scanned_twice_t": "EXPLAIN SELECT count(*) FROM t a JOIN t b ON a.x = b.x "
    "WHERE a.y = 1 AND b.y = 2",
    "explain_scanned_twice_orders": "EXPLAIN SELECT count(*) FROM orders a JOIN orders b "
    "ON a.customer_id = b.customer_id WHERE a.status = 'open' AND b.status = 'done'",
    "explain_contradiction": "EXPLAIN SELECT * FROM orders WHERE status = 'a' AND status = 'b' "
    "AND qty > 0",
    "explain_contradiction_partition_column": "EXPLAIN SELECT * FROM events "
    "WHERE kind = 'buy' AND kind = 'view' AND value > 0",
    "explain_comma_join": "EXPLAIN SELECT o.order_id FROM orders o, customers c "
    "WHERE o.customer_id = c.id",
    "explain_chain": "EXPLAIN SELECT count(*) FROM customers c JOIN orders o "
    "ON o.customer_id = c.id JOIN items i ON i.order_id = o.order_id",
}


def _explain_cases() -> list[pytest.param]:
    out = []
    for key, sql in EXPLAINS.items():
        for spj in (True, False):
            tag = "spj-on" if spj else "spj-off"
            reason = known_failure(key, spj)
            marks = [pytest.mark.xfail(strict=False, reason=reason)] if reason else []
            out.append(pytest.param(sql, spj, id=f"{key}[{tag}]", marks=marks))
    return out


@pytest.mark.parametrize(("sql", "spj"), _explain_cases())
def test_explain_does_not_crash(diff: Contexts, sql: str, spj: bool) -> None:
    plan = diff.lance_ctx(spj).sql(sql).to_arrow_table()
    assert plan.num_rows >= 1
