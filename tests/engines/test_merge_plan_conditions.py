"""MERGE's clause conditions and values mean what they mean to DataFusion.

SQL ``MERGE INTO`` and ``ns.merge`` run on a partitioned namespace and are
compared with plain DataFusion over memory tables holding the same rows: a
matched target row takes the clause when ``(condition) IS TRUE`` over the
joined row (deleted, or its column cast to the column's type as UPDATE casts
it); a source row no target row matched is inserted when its condition is
TRUE. The shapes are those text handling gets wrong or refuses: two quotes in
a row, ``SIMILAR TO``, NULL in ``IN`` lists, zoned timestamps, NaN and -0.0,
struct fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datafusion
import pyarrow as pa
import pytest

from lance_sql.tables.namespace.namespace import PartitionedNamespace
from tests.engines.dml_condition_rows import NAN, namespace, norm, plain, rows

ROWS = rows(
    [
        {"a": 1, "b": "x"},
        {"a": 2, "b": "q"},
        {"a": None, "b": None},
        {"a": None, "b": "y"},
        {"a": 5, "b": "x"},
        {"a": 2, "b": "z"},
    ]
)
SCHEMA = ROWS.schema
SOURCE = pa.table(
    {
        "k": [0, 1, 2, 3, 4, 6, 7, 8],
        "s2": ["a'b", None, "x''y", "ab", "''", "n", None, "a''b"],
        "g": [NAN, 1.0, -0.0, None, 2.0, 0.0, NAN, None],
    }
)

#: conditions over the joined row; {t} and {s} are the target's and the source's names
CONDITIONS = [
    "{t}.s = 'a''''b'",  # two quotes in a row
    "{s}.s2 = 'a''b' OR {s}.s2 = 'x''''y'",
    "{t}.s IN ('''''', 'ab', NULL)",  # NULL in an IN list: never FALSE for the others
    "{t}.k NOT IN (1, NULL)",  # never TRUE
    "{t}.s SIMILAR TO '(a|b)%'",
    "{s}.s2 IS NULL",
    "{t}.tz > TIMESTAMP '1970-01-01T00:30:00+00:00'",  # zoned column, zoned literal
    "{t}.tz < TIMESTAMP '1970-01-01T01:30:00'",  # naive literal: local in the column's zone
    "{t}.f > 1",  # NaN sorts above every number
    "{t}.f = 0.0 OR {s}.g = 'NaN'",  # -0.0 = 0.0, NaN = NaN
    "{t}.st['a'] IN (2, NULL)",
    "{t}.st['b'] = {s}.s2 OR {t}.s = {s}.s2",
]
#: (column, new value) pairs of UPDATE SET
VALUES = [
    ("s", "'x''''y'"),
    ("s", "concat({t}.s, '''', {s}.s2)"),
    ("s", "CASE WHEN {s}.s2 SIMILAR TO '(a|x)%' THEN 'y' END"),
    ("tz", "TIMESTAMP '2024-03-31T02:30:00+02:00'"),
    ("tz", "TIMESTAMP '2024-03-31 01:30:00'"),  # naive: local in the column's zone
    ("f", "NULL"),
    ("f", "{s}.g"),
    ("k", "{t}.k + 10"),
    ("k", "{t}.k + 0.6"),  # float to int64, as DataFusion casts it
    ("st", "named_struct('a', {t}.k * 2, 'b', {s}.s2)"),
]


def _namespace(tmp: Path) -> tuple[Any, str]:
    return namespace(tmp, ROWS, src=SOURCE)


def _plain(sql: str) -> pa.Table:
    return plain(sql, t=ROWS, src=SOURCE)


def _rows(root: str) -> list[dict[str, Any]]:
    return PartitionedNamespace.open(root).to_table().select(SCHEMA.names).to_pylist()


def _matched(cond: str) -> str:
    return f"(s.k IS NOT NULL AND ({cond.format(t='t', s='s')}) IS TRUE)"


def _want_delete(cond: str) -> list[dict[str, Any]]:
    cols = ", ".join(f"t.{c}" for c in SCHEMA.names)
    sql = f"SELECT {cols} FROM t LEFT JOIN src s ON t.k = s.k WHERE NOT {_matched(cond)}"
    return _plain(sql).cast(SCHEMA).to_pylist()


def _want_update(column: str, value: str, cond: str) -> list[dict[str, Any]]:
    typeof = _plain(f"SELECT arrow_typeof({column}) AS c FROM t LIMIT 1").column(0)[0].as_py()
    new = value.format(t="t", s="s")
    if not pa.types.is_nested(SCHEMA.field(column).type):
        new = f"arrow_cast(({new}), '{typeof}')"
    items = [
        f"CASE WHEN {_matched(cond)} THEN {new} ELSE t.{c} END AS {c}" if c == column else f"t.{c}"
        for c in SCHEMA.names
    ]
    sql = f"SELECT {', '.join(items)} FROM t LEFT JOIN src s ON t.k = s.k"
    return _plain(sql).cast(SCHEMA).to_pylist()


@pytest.mark.parametrize("cond", CONDITIONS)
def test_sql_merge_delete_equals_plain_datafusion(tmp_path: Path, cond: str) -> None:
    ctx, root = _namespace(tmp_path)
    want = _want_delete(cond)
    sql = (
        f"MERGE INTO t USING src AS s ON t.k = s.k "
        f"WHEN MATCHED AND {cond.format(t='t', s='s')} THEN DELETE"
    )
    count = ctx.sql(sql).to_arrow_table().column(0)[0].as_py()
    assert count == ROWS.num_rows - len(want)
    assert norm(_rows(root)) == norm(want)


@pytest.mark.parametrize("cond", CONDITIONS)
def test_python_merge_delete_equals_plain_datafusion(tmp_path: Path, cond: str) -> None:
    _, root = _namespace(tmp_path)
    want = _want_delete(cond)
    ns = PartitionedNamespace.open(root)
    out = ns.merge(SOURCE, on=["k"], when_matched_delete=cond.format(t="target", s="source"))
    assert out.deleted == ROWS.num_rows - len(want)
    assert norm(_rows(root)) == norm(want)


@pytest.mark.parametrize(("column", "value"), VALUES)
@pytest.mark.parametrize("cond", [CONDITIONS[0], CONDITIONS[4], CONDITIONS[10], "TRUE"])
def test_sql_merge_update_equals_plain_datafusion(
    tmp_path: Path, column: str, value: str, cond: str
) -> None:
    ctx, root = _namespace(tmp_path)
    want = _want_update(column, value, cond)
    sql = (
        f"MERGE INTO t USING src AS s ON t.k = s.k WHEN MATCHED AND "
        f"{cond.format(t='t', s='s')} THEN UPDATE SET {column} = {value.format(t='t', s='s')}"
    )
    ctx.sql(sql).collect()
    assert norm(_rows(root)) == norm(want)


@pytest.mark.parametrize(("column", "value"), VALUES)
def test_python_merge_update_equals_plain_datafusion(
    tmp_path: Path, column: str, value: str
) -> None:
    _, root = _namespace(tmp_path)
    want = _want_update(column, value, "TRUE")
    ns = PartitionedNamespace.open(root)
    ns.merge(SOURCE, on=["k"], when_matched_update={column: value.format(t="target", s="source")})
    assert norm(_rows(root)) == norm(want)


@pytest.mark.parametrize(
    "cond", ["s.s2 IN ('n', NULL)", "s.s2 IS NULL", "s.s2 = 'a''''b'", "s.g = 'NaN'", "TRUE"]
)
def test_sql_merge_insert_equals_plain_datafusion(tmp_path: Path, cond: str) -> None:
    """``WHEN NOT MATCHED AND cond THEN INSERT``: the source rows no target row matched
    whose condition is TRUE, their values cast to the columns as INSERT casts them."""
    ctx, root = _namespace(tmp_path)
    values = "s.k * 2, concat(s.s2, ''''), s.g, TIMESTAMP '2024-03-31T02:30:00+02:00'"
    added = _plain(
        f"SELECT s.k * 2 AS k, concat(s.s2, '''') AS s, s.g AS f, "
        f"arrow_cast(TIMESTAMP '2024-03-31T02:30:00+02:00', 'Timestamp(µs, \"Europe/Paris\")') "
        f"AS tz FROM src s WHERE s.k NOT IN (SELECT k FROM t) AND ({cond}) IS TRUE"
    ).to_pylist()
    want = ROWS.to_pylist() + [{**r, "st": None} for r in added]
    sql = (
        f"MERGE INTO t USING src AS s ON t.k = s.k "
        f"WHEN NOT MATCHED AND {cond} THEN INSERT (k, s, f, tz) VALUES ({values})"
    )
    count = ctx.sql(sql).to_arrow_table().column(0)[0].as_py()
    assert count == len(added)
    assert norm(_rows(root)) == norm(want)


def test_merge_clauses_reach_the_engine_as_plans(tmp_path: Path) -> None:
    """Each part of a MERGE is planned once by DataFusion (expressions, not SQL text)."""
    from lance_sql.engines.datafusion.dml_merge import parse_merge
    from lance_sql.engines.datafusion.dml_plan import RowsPlan
    from lance_sql.tables.namespace.merge_rows import plan_merge

    _, root = _namespace(tmp_path)
    ns = PartitionedNamespace.open(root)
    statement = parse_merge(
        "MERGE INTO t USING src AS s ON t.k = s.k WHEN MATCHED AND t.s = 'a''''b' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET s = s.s2 WHEN NOT MATCHED THEN INSERT (k) VALUES (s.k)",
        ns.schema,
        "t",
    )
    plan = plan_merge(ns, SOURCE.append_column("__lance_sql_row", pa.array(range(8))), statement)
    assert isinstance(plan.pairs.plan, RowsPlan) and plan.pairs.plan.right == "s"
    assert all(isinstance(e, datafusion.Expr) for e in plan.pairs.plan.select)
    assert plan.values[0] is None and plan.values[1] is not None and plan.lone_source
