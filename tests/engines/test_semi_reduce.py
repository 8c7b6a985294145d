"""Semi-join reduction of grouped aggregates (``semi_reduce``): fewer groups, never other rows.

Each query runs in lance-sql over Lance datasets (the pass applies: a fact
table of 40,000 rows, a dimension filtered to a few rows) and in DuckDB over
the same Arrow tables; answers must be equal. NULL keys on both sides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import lance_sql

N = 40_000


def _fact() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "k": pa.array([None if i % 13 == 0 else i % 2000 for i in range(N)], pa.int64()),
            "k2": pa.array([i % 7 for i in range(N)], pa.int64()),
            "q": pa.array([float((i * 31) % 50) for i in range(N)], pa.float64()),
        }
    )


def _dim() -> pa.Table:
    n = 2100  # keys 0..2099: 100 match no fact row; one NULL key
    return pa.table(
        {
            "dk": pa.array([None if i == 5 else i for i in range(n)], pa.int64()),
            "brand": pa.array([f"b{i % 40}" for i in range(n)], pa.string()),
            "size": pa.array([i % 25 for i in range(n)], pa.int64()),
            "d2": pa.array([i % 7 for i in range(n)], pa.int64()),
        }
    )


@pytest.fixture
def tables(write_lance: Callable[..., str]) -> dict[str, tuple[str, pa.Table]]:
    return {
        "fact": (write_lance(_fact(), "fact", max_rows_per_file=10_000), _fact()),
        "dim": (write_lance(_dim(), "dim"), _dim()),
    }


def _context(tables: dict[str, tuple[str, pa.Table]]) -> Any:
    ctx = lance_sql.SessionContext()
    for name, (uri, _) in tables.items():
        ctx.register_lance(name, uri)
    return ctx


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    def norm(v: Any) -> Any:
        return round(v, 6) if isinstance(v, float) else v

    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return sorted((tuple(norm(v) for v in r) for r in zip(*cols, strict=True)), key=repr)


def _duck(tables: dict[str, tuple[str, pa.Table]], sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    for name, (_, table) in tables.items():
        con.register(name, table)
    return _rows(con.sql(sql).to_arrow_table())


SELECTIVE = "brand = 'b3' AND size = 3"  # 2100 rows: ~53 estimated (2 conjuncts), 2-3 real

QUERIES = {
    # TPC-H q17's shape: a correlated average over the fact, per selected dimension key
    "q17": (
        "SELECT sum(q) / 7.0 AS s FROM fact, dim WHERE dk = k AND "
        f"{SELECTIVE} AND q < (SELECT 0.5 * avg(q) FROM fact f2 WHERE f2.k = dk)"
    ),
    "inner": (
        "SELECT d.dk, a.n, a.s FROM dim d JOIN (SELECT k, count(*) AS n, sum(q) AS s "
        f"FROM fact GROUP BY k) a ON a.k = d.dk WHERE {SELECTIVE}"
    ),
    "left_outer": (
        "SELECT d.dk, a.n FROM dim d LEFT JOIN (SELECT k, count(*) AS n FROM fact GROUP BY k) a "
        f"ON a.k = d.dk WHERE {SELECTIVE}"
    ),
    "two_keys": (
        "SELECT d.dk, d.d2, a.n FROM dim d JOIN (SELECT k, k2, count(*) AS n FROM fact "
        f"GROUP BY k, k2) a ON a.k = d.dk AND a.k2 = d.d2 WHERE {SELECTIVE}"
    ),
    "key_and_measure": (  # TPC-H q2's shape: joined on the key and on the aggregate
        "SELECT d.dk, a.m FROM dim d JOIN (SELECT k, min(q) AS m FROM fact GROUP BY k) a "
        f"ON a.k = d.dk AND a.m < d.size WHERE {SELECTIVE}"
    ),
    "in_subquery": (
        f"SELECT dk FROM dim WHERE {SELECTIVE} AND dk IN "
        "(SELECT k FROM fact GROUP BY k HAVING sum(q) > 400)"
    ),
    "not_in_kept_rows": (  # anti join: the aggregate side only filters, dim rows survive
        f"SELECT dk FROM dim WHERE {SELECTIVE} AND NOT EXISTS "
        "(SELECT 1 FROM (SELECT k FROM fact GROUP BY k HAVING sum(q) > 600) a WHERE a.k = dk)"
    ),
    "full_outer_untouched": (
        "SELECT d.dk, a.k, a.n FROM (SELECT * FROM dim WHERE "
        f"{SELECTIVE}) d FULL JOIN (SELECT k, count(*) AS n FROM fact GROUP BY k) a ON a.k = d.dk"
    ),
    "null_keys": (
        "SELECT d.dk, a.n FROM dim d JOIN (SELECT k, count(*) AS n FROM fact GROUP BY k) a "
        "ON a.k = d.dk WHERE d.brand = 'b5' AND d.size = 5"
    ),
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_same_answer_as_duckdb(name: str, tables: dict[str, tuple[str, pa.Table]]) -> None:
    sql = QUERIES[name]
    ctx = _context(tables)
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(tables, sql)


@pytest.mark.parametrize("name", ["q17", "inner", "two_keys", "key_and_measure"])
def test_the_aggregate_is_reduced(name: str, tables: dict[str, tuple[str, pa.Table]]) -> None:
    done = _context(tables).sql(QUERIES[name]).lance_rewrite()
    assert any("semi-join reduced" in line for line in done.join_stats), done.join_stats


def test_an_unfiltered_side_reduces_nothing(tables: dict[str, tuple[str, pa.Table]]) -> None:
    """Every key of an unfiltered table (TPC-H q18's orders): no reduction."""
    sql = (
        "SELECT d.dk, a.n FROM dim d JOIN (SELECT k, count(*) AS n FROM fact GROUP BY k) a "
        "ON a.k = d.dk"
    )
    ctx = _context(tables)
    done = ctx.sql(sql).lance_rewrite()
    assert not any("semi-join reduced" in line for line in done.join_stats), done.join_stats
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(tables, sql)


def test_full_outer_join_is_not_reduced(tables: dict[str, tuple[str, pa.Table]]) -> None:
    done = _context(tables).sql(QUERIES["full_outer_untouched"]).lance_rewrite()
    assert not any("semi-join reduced" in line for line in done.join_stats), done.join_stats


def test_a_volatile_reducer_is_not_computed_twice(tables: dict[str, tuple[str, pa.Table]]) -> None:
    """``random()`` in the filtered side: a second evaluation could keep other keys."""
    sql = (
        "SELECT d.dk, a.n FROM dim d JOIN (SELECT k, count(*) AS n FROM fact GROUP BY k) a "
        f"ON a.k = d.dk WHERE {SELECTIVE} AND random() < 2.0"
    )
    ctx = _context(tables)
    done = ctx.sql(sql).lance_rewrite()
    assert not any("semi-join reduced" in line for line in done.join_stats), done.join_stats
    plain = sql.replace(" AND random() < 2.0", "")
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(tables, plain)
