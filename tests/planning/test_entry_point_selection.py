"""Every entry point selects the same partition tables for the same filter.

Random filters (comparisons, IN lists, IS [NOT] NULL under AND / OR / NOT over
an int64, a date, a string and a non-partition int32 column) on random
namespaces of three spec versions (identity, bucket, day, month and truncate
fields) go through each way of reading a namespace:

* ``ns.to_table(filter=)`` (an expression or SQL text) and ``ns.count_rows(filter=)``
  (the tables they ask ``scan_units`` for);
* ``lance_sql.plan_scan(ns, sql)``;
* SQL ``SELECT ... WHERE`` and a ``ctx.table(...).filter(...)`` DataFrame (the
  ``LanceNamespaceScan`` each scan node planned, and its EXPLAIN count);
* a row operation's planning (the tables a ``DELETE`` with the filter would
  touch: the covered and the partially matching ones).

All must select the same tables, and every one's rows must equal plain
DataFusion's over the same rows in a memory table.

``tests/spark/test_entry_point_selection_spark.py`` checks the Spark reader
on a few filters.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from entry_point_cases import POOLS, SCHEMA, Case, build_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.tables.namespace.filter_hook import filter_planner

POOL = 3
_NS_LINE = re.compile(r"LanceNamespaceScan: .*?partition_tables=(\d+)/(\d+)")


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    base = tmp_path_factory.mktemp("entry_points")
    return [build_case(seed, str(base / f"ns{seed}")) for seed in range(POOL)]


# ------------------------------------------------------------------ random filters


def _sql_lit(col: str, v: Any) -> str:
    if col == "d":
        return f"DATE '{v.isoformat()}'"
    if col == "s":
        return "'" + v.replace("'", "''") + "'"
    if col == "m":
        return f"CAST('{v}' AS DECIMAL(38, 4))"
    return str(v)


@st.composite
def _atom(draw: st.DrawFn) -> tuple[str, pc.Expression]:
    col = draw(st.sampled_from(list(POOLS)))
    typ = SCHEMA.field(col).type
    field = pc.field(col)
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "null"]))
    if kind == "null":
        if draw(st.booleans()):
            return f"{col} IS NULL", field.is_null()
        return f"{col} IS NOT NULL", field.is_valid()
    if kind == "in":
        vals = draw(st.lists(st.sampled_from(POOLS[col]), min_size=1, max_size=3, unique=True))
        text = ", ".join(_sql_lit(col, v) for v in vals)
        return f"{col} IN ({text})", field.isin(pa.array(vals, typ))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
    v = draw(st.sampled_from(POOLS[col]))
    lit = pa.scalar(v, typ)
    expr = {
        "=": field == lit,
        "!=": field != lit,
        "<": field < lit,
        "<=": field <= lit,
        ">": field > lit,
        ">=": field >= lit,
    }[op]
    return f"{col} {op} {_sql_lit(col, v)}", expr


def _combine(children: st.SearchStrategy) -> st.SearchStrategy:
    pair = st.tuples(children, children)
    return st.one_of(
        pair.map(lambda p: (f"({p[0][0]}) AND ({p[1][0]})", p[0][1] & p[1][1])),
        pair.map(lambda p: (f"({p[0][0]}) OR ({p[1][0]})", p[0][1] | p[1][1])),
        children.map(lambda c: (f"NOT ({c[0]})", ~c[1])),
    )


FILTERS = st.recursive(_atom(), _combine, max_leaves=4)


# ------------------------------------------------------------------ selections


def _spied_tables(case: Case, read: Any) -> tuple[frozenset[str], Any]:
    """The partition tables a namespace read asks ``scan_units`` for (None: all)."""
    ns = case.ns
    asked: list[frozenset[str]] = []
    real = type(ns).scan_units

    def spy(partitions: Any = None, **kwargs: Any) -> Any:
        ids = (
            case.all_ids
            if partitions is None
            else frozenset(p if isinstance(p, str) else p.object_id for p in partitions)
        )
        asked.append(ids)
        return real(ns, partitions, **kwargs)

    ns.scan_units = spy  # type: ignore[method-assign]
    try:
        out = read(ns)
    finally:
        del ns.scan_units
    return asked[-1], out


def _engine_tables(case: Case, run: Any) -> tuple[frozenset[str] | None, pa.Table]:
    """The tables a query's scan planned; None when DataFusion planned no scan (it
    proved the filter false, e.g. ``x IN (1) AND NOT x IN (1)``)."""
    with capture_scans() as records:
        out = run()
    if not records:
        return None, out
    (rec,) = [r for r in records if r.table == "t"] or records
    plan = rec.plan
    ids = case.all_ids if plan.selects_all else frozenset(plan.object_ids)
    m = _NS_LINE.search(plan.description)
    assert m is not None, plan.description
    assert int(m.group(1)) == len(ids), plan.description  # EXPLAIN's count is the plan's
    return ids, out


def _rows(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


PRUNED = [0, 0]  # (examples, examples where the selection was smaller than all tables)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(which=st.integers(0, POOL - 1), f=FILTERS)
def test_every_entry_point_selects_the_same_partition_tables(
    cases: list[Case], which: int, f: tuple[str, pc.Expression]
) -> None:
    case = cases[which]
    sql, expr = f
    plan = lance_sql.plan_scan(case.ns, sql)
    planned = frozenset(plan.object_ids)

    by_to_table, table = _spied_tables(case, lambda ns: ns.to_table(filter=expr))
    assert by_to_table == planned, (sql, sorted(by_to_table), sorted(planned))
    by_count, count = _spied_tables(case, lambda ns: ns.count_rows(filter=expr))
    assert by_count == planned, (sql, sorted(by_count), sorted(planned))
    by_text, table_by_text = _spied_tables(case, lambda ns: ns.to_table(filter=sql))
    assert by_text == planned, (sql, sorted(by_text), sorted(planned))
    query = f"SELECT k, d, s, x, m FROM t WHERE {sql}"
    by_sql, got_sql = _engine_tables(case, lambda: case.ctx.sql(query).to_arrow_table())
    by_df, got_df = _engine_tables(
        case,
        lambda: case.ctx.table("t").filter(sql).select("k", "d", "s", "x", "m").to_arrow_table(),
    )
    ops = filter_planner().classify(case.ns, sql)
    by_delete = frozenset(ops.covered) | frozenset(ops.partial)

    want = _rows(case.plain.sql(query).to_arrow_table())
    for by_engine in (by_sql, by_df):
        if by_engine is None:  # no scan at all: nothing can match
            assert want == [], sql
        else:
            assert by_engine == planned, (sql, sorted(by_engine), sorted(planned))
    # a DELETE touches at least every table a scan could find a matching row in
    assert by_delete >= planned and by_delete == planned, (sql, sorted(by_delete))
    assert set(ops.covered) <= plan.proven | (case.all_ids - planned), sql

    assert _rows(table) == want, sql
    assert _rows(table_by_text) == want, sql
    assert _rows(got_sql) == want, sql
    assert _rows(got_df) == want, sql
    assert count == len(want), sql
    PRUNED[0] += 1
    PRUNED[1] += planned != case.all_ids


def test_some_examples_pruned() -> None:
    """The selection test is not vacuous: a good share of its filters pruned tables."""
    if PRUNED[0] == 0:
        pytest.skip("runs after the selection test")
    assert PRUNED[1] >= PRUNED[0] // 5, PRUNED
