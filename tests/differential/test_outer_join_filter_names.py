"""A WHERE condition on the NULL-padded side of an outer join keeps to its side.

DataFusion 55's physical filter pushdown moves a condition left above an outer
join through the join by column *name*. When the other side outputs a column
of the same name, ``a RIGHT JOIN b ON ... WHERE a.c1 IS NULL`` (with ``b.c1``
read too) gets the condition on ``b.c1``: plain DataFusion over memory tables
returns wrong rows (apache/datafusion#21246). lance-sql names the padded side's
columns apart, so its answers are DuckDB's, for outer joins the user wrote and
for those lance-sql's outer-join elimination leaves (``FULL`` made ``RIGHT``).
The tables are the differential corpus' pylance-written namespaces (``s0``,
``s1``: string keys, float and timestamp columns); DuckDB over the same rows
decides the rows, plain DataFusion the schema.
"""

from __future__ import annotations

import pytest
from diff_harness import Contexts, duck_rows_equal, rows_of, run_duck, run_lance, schema_of

JOINED = "s1 t0 JOIN s0 t1 ON t0.c0 = t1.c0"

QUERIES = {
    # found by the generated-SQL run: FULL made RIGHT by the WHERE, t0.c1 IS NULL left above
    "full_made_right_distinct": (
        f"SELECT DISTINCT t2.c1 FROM {JOINED} FULL JOIN s0 t2 ON t0.c0 = t2.c0 "
        "WHERE (nullif(t2.c0, '') = 'a' AND (NOT t0.c1 IS NOT NULL))"
    ),
    "full_made_right_rows": (
        f"SELECT t2.c1, t2.id FROM {JOINED} FULL JOIN s0 t2 ON t0.c0 = t2.c0 "
        "WHERE nullif(t2.c0, '') = 'a' AND t0.c1 IS NULL"
    ),
    "right_join_chain": (
        f"SELECT DISTINCT t2.c1 FROM {JOINED} RIGHT JOIN s0 t2 ON t0.c0 = t2.c0 "
        "WHERE nullif(t2.c0, '') = 'a' AND t0.c1 IS NULL"
    ),
    "right_join_key_filter": (
        "SELECT b.c1 FROM s1 a RIGHT JOIN s0 b ON a.c0 = b.c0 WHERE a.c1 IS NULL AND b.c0 = 'a'"
    ),
    "right_join_or": (
        "SELECT a.id, a.c1, b.id, b.c1 FROM s1 a RIGHT JOIN s0 b ON a.c0 = b.c0 "
        "WHERE a.c1 IS NULL OR b.c1 > 1"
    ),
    "left_join_padded_is_null": (
        "SELECT a.c1, a.id FROM s1 a LEFT JOIN s0 b ON a.c0 = b.c0 "
        "WHERE b.c1 IS NULL AND a.c0 = 'a'"
    ),
    "left_join_coalesce": (
        "SELECT a.id, a.c1, b.id, b.c1 FROM s1 a LEFT JOIN s0 b ON a.c0 = b.c0 "
        "WHERE coalesce(b.c1, 0) = 0"
    ),
    "full_join_both_padded": (
        "SELECT * FROM s1 a FULL JOIN s0 b ON a.c0 = b.c0 AND a.c1 = b.c1 "
        "WHERE a.c1 IS NULL OR b.id IS NULL"
    ),
    "full_join_star": "SELECT * FROM s1 a FULL JOIN s0 b ON a.c0 = b.c0 WHERE a.c1 IS NULL",
    # outer joins inside the padded side of another: each is named apart, innermost first
    "nested_right_joins": (
        "SELECT t2.c1, t3.c1 FROM s1 t0 RIGHT JOIN (s0 t2 RIGHT JOIN s1 t3 ON t2.c0 = t3.c0) "
        "ON t0.c0 = t2.c0 WHERE t0.c1 IS NULL AND t2.c1 IS NULL AND t3.c0 = 'a'"
    ),
    "nested_left_joins": (
        "SELECT t0.c1, t2.c1, t3.c1 FROM s1 t0 LEFT JOIN (s0 t2 LEFT JOIN s1 t3 "
        "ON t2.c0 = t3.c0) ON t0.c0 = t2.c0 WHERE t3.c1 IS NULL AND t0.c0 = 'a'"
    ),
    "chained_right_joins": (
        "SELECT t4.c1, t3.c1 FROM s0 t2 RIGHT JOIN s1 t3 ON t2.c0 = t3.c0 "
        "RIGHT JOIN s0 t4 ON t3.c0 = t4.c0 WHERE t2.c1 IS NULL AND t4.c0 = 'a'"
    ),
    "chained_full_joins": (
        "SELECT t0.c1, t1.c1 FROM s1 t0 FULL JOIN s0 t1 ON t0.c0 = t1.c0 "
        "FULL JOIN s1 t2 ON t1.c0 = t2.c0 WHERE t0.c1 IS NULL AND t2.c1 > 1"
    ),
}


@pytest.mark.parametrize("spj", [True, False], ids=["spj-on", "spj-off"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_padded_side_condition_gives_duckdb_rows(diff: Contexts, name: str, spj: bool) -> None:
    sql = QUERIES[name]
    got = run_lance(diff, sql, spj=spj)
    assert schema_of(got) == schema_of(diff.plain.sql(sql).to_arrow_table()), sql
    duck = run_duck(diff, sql)
    assert duck_rows_equal(got, duck), (
        f"rows differ from DuckDB ({got.num_rows} vs {duck.num_rows})\n  query: {sql}\n"
        f"  got: {rows_of(got)[:5]}\n  duckdb: {rows_of(duck)[:5]}"
    )


def test_plain_datafusion_is_wrong_here(diff: Contexts) -> None:
    """The reason for the above: plain DataFusion 55 itself returns rows DuckDB does not.
    When a DataFusion release fixes it, this test fails: the naming can then go."""
    sql = QUERIES["right_join_key_filter"]
    assert run_duck(diff, sql).num_rows == 0
    assert diff.plain.sql(sql).to_arrow_table().num_rows > 0
