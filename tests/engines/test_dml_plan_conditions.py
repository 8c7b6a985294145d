"""SQL DELETE and UPDATE read their condition and new values from DataFusion's plan.

Each statement runs on a partitioned namespace through ``lance_sql.SessionContext``
and is compared with plain DataFusion over a memory table holding the same rows:
the rows a DELETE keeps are those where the condition is not TRUE; an UPDATE's
rows are ``CASE WHEN (condition) IS TRUE THEN value ELSE column END``. The
conditions are those a text round trip got wrong or refused (two quotes in a
row, ``SIMILAR TO``) and those whose meaning is DataFusion's own (NaN ordering,
NULL in ``IN``, struct fields, zoned timestamps, nested values).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datafusion
import pyarrow as pa
import pytest

from lance_sql.tables.namespace.namespace import PartitionedNamespace
from tests.engines.dml_condition_rows import namespace, norm, plain, rows

ITEM = pa.struct([("k", pa.string()), ("w", pa.float64())])
ROWS = rows(
    [
        {"a": 1, "b": "x"},
        {"a": 2, "b": None},
        None,
        {"a": None, "b": "y"},
        {"a": 5, "b": "x"},
        {"a": 2, "b": "z"},
    ],
    e=pa.array(
        [
            [{"k": "1", "w": 1.0}],
            [],
            None,
            [{"k": "1", "w": 1.0}, {"k": "2", "w": 2.0}],
            [{"k": "1", "w": float("nan")}],
            [{"k": "1", "w": 1.0}],
        ],
        pa.list_(ITEM),
    ),
)
SCHEMA = ROWS.schema


def _namespace(tmp: Path) -> Any:
    return namespace(tmp, ROWS)


def _plain(sql: str) -> pa.Table:
    """``sql`` by plain DataFusion over the rows as a namespace returns them (a NULL
    struct's fields are NULL there; plain DataFusion's ``get_field`` returns whatever
    a memory table's child array holds)."""
    return plain(sql, t=_stored())


def _stored() -> pa.Table:
    st = ROWS.column("st").combine_chunks()
    fields = [pa.array(f.to_pylist(), f.type) for f in st.flatten()]
    rebuilt = pa.StructArray.from_arrays(fields, fields=list(st.type), mask=st.is_null())
    return ROWS.set_column(SCHEMA.get_field_index("st"), "st", rebuilt)


def _all(ctx: Any) -> list[dict[str, Any]]:
    return ctx.sql("SELECT * FROM t").to_arrow_table().to_pylist()


CONDITIONS = [
    "s = 'a''''b'",  # two quotes in a row: the unparser printed it as a''b
    "s IN ('''''', 'ab')",
    "s SIMILAR TO '(a|b)%'",  # the unparser printed SIMILAR TO as LIKE
    "f > 1",  # NaN is greater than every number in DataFusion
    "f = 'NaN'",
    "f < 'NaN'",
    "f = 0.0",  # -0.0 = 0.0
    "k IN (1, NULL)",
    "k NOT IN (1, NULL)",  # never TRUE
    "st['a'] > 1",
    "st['b'] IS NULL",
    "st['a'] IN (2, NULL) AND k > 0",
    "tz > TIMESTAMP '1970-01-01T00:30:00+00:00'",  # naive literal: local in the column's zone
    "tz < '1970-01-01T01:30:00Z'",
    "k = 1 AND tz > TIMESTAMP '1970-01-01T05:00:00'",  # a covered-looking partition
    "e = [named_struct('k', '1', 'w', 1.0)]",  # a nested value
    "k = 3",  # a partition the condition covers entirely
    "k >= 2 AND k <= 3",
    "murmur3(k) % 2 = 0 OR s IS NULL",
]


@pytest.mark.parametrize("where", CONDITIONS)
def test_delete_equals_plain_datafusion(tmp_path: Path, where: str) -> None:
    ctx, _ = _namespace(tmp_path)
    if "murmur3" in where:  # plain DataFusion lacks murmur3: compare with lance-sql's SELECT
        keep = ctx.sql(f"SELECT * FROM t WHERE NOT ({where}) OR ({where}) IS NULL")
        keep = keep.to_arrow_table().to_pylist()
    else:
        keep = _plain(f"SELECT * FROM t WHERE NOT ({where}) OR ({where}) IS NULL").to_pylist()
    count = ctx.sql(f"DELETE FROM t WHERE {where}").to_arrow_table().column(0)[0].as_py()
    assert count == ROWS.num_rows - len(keep)
    assert norm(_all(ctx)) == norm(keep)


def test_delete_of_a_covered_partition_drops_it_without_rewriting(tmp_path: Path) -> None:
    """The condition's IR proves partition k = 3 entirely: it leaves ``__manifest``."""
    ctx, root = _namespace(tmp_path)
    before = len(PartitionedNamespace.open(root).tables())
    ctx.sql("DELETE FROM t WHERE k = 3").collect()
    assert len(PartitionedNamespace.open(root).tables()) == before - 1


UPDATES = [
    ("s", "'x''''y'", "k < 2"),  # two quotes in a row in a SET value
    ("s", "concat(s, '''')", "s LIKE '%''%'"),
    ("f", "f * 2", "f > 1"),
    ("f", "NULL", "k NOT IN (0, NULL)"),
    ("st", "named_struct('a', st['a'] + 1, 'b', 'n')", "st['a'] IS NOT NULL"),
    ("tz", "TIMESTAMP '2024-03-31T02:30:00+02:00'", "tz IS NULL OR k = 1"),
    ("e", "[named_struct('k', 'z', 'w', 0.5)]", "e = [named_struct('k', '1', 'w', 1.0)]"),
    ("k", "k + 10", "s LIKE '%''%' OR f < 1"),
    ("k", "k + 20", "s SIMILAR TO '(a|b)%'"),
]


@pytest.mark.parametrize(("column", "value", "where"), UPDATES)
def test_update_equals_plain_datafusion(
    tmp_path: Path, column: str, value: str, where: str
) -> None:
    ctx, _ = _namespace(tmp_path)
    typeof = ", ".join(f"arrow_typeof({c}) AS {c}" for c in SCHEMA.names)
    types = _plain(f"SELECT {typeof} FROM t LIMIT 1").to_pylist()[0]
    items = [
        f"CASE WHEN ({where}) IS TRUE THEN arrow_cast(({value}), '{types[c]}') ELSE {c} END AS {c}"
        if c == column and not pa.types.is_nested(SCHEMA.field(c).type)
        else f"CASE WHEN ({where}) IS TRUE THEN {value} ELSE {c} END AS {c}"
        if c == column
        else c
        for c in SCHEMA.names
    ]
    want = _plain(f"SELECT {', '.join(items)} FROM t").cast(SCHEMA).to_pylist()
    matched = len(_plain(f"SELECT k FROM t WHERE {where}"))
    count = ctx.sql(f"UPDATE t SET {column} = {value} WHERE {where}").to_arrow_table()
    assert count.column(0)[0].as_py() == matched
    assert norm(_all(ctx)) == norm(want)


def test_condition_travels_as_ir_and_an_engine_plan(tmp_path: Path) -> None:
    """The DELETE's condition reaches the row operation as a RowCondition: its IR (which
    prunes) and DataFusion's plan of it over the rows, not as SQL text."""
    from lance_sql.engines.datafusion.dml_plan import row_condition
    from lance_sql.spec.predicates import And, Compare, Unsupported
    from lance_sql.tables.namespace.sql_eval import RowCondition

    ctx, _ = _namespace(tmp_path)
    where = "k = 1 AND tz > TIMESTAMP '1970-01-01T05:00:00'"
    plan = datafusion.SessionContext.sql(ctx, f"DELETE FROM t WHERE {where}").logical_plan()
    found = row_condition(ctx, plan.inputs()[0], ctx.registered_namespaces()["t"], "t")
    assert isinstance(found, RowCondition)
    assert found.rows.columns == ("k", "tz")
    pred = found.predicate
    assert isinstance(pred, And)
    assert any(isinstance(c, Compare) and c.term.name == "k" for c in pred.children)
    assert any(isinstance(c, Unsupported) for c in pred.children)  # the zoned conjunct


#: partitions by the float column itself (NaN sorts above every number in DataFusion)
#: and by a field inside a struct column
BY_F = [{"field_id": "f", "source": "f", "transform": {"type": "identity"}}]
BY_ST_A = [{"field_id": "a", "source": "st.a", "transform": {"type": "identity"}}]
PARTITIONED = [
    *((BY_F, w) for w in ["f > 1", "f = 'NaN'", "f >= 'NaN'", "f = 0.0", "f IS NULL"]),
    (BY_F, "f IN (0.0, 1.0, NULL)"),
    *((BY_ST_A, w) for w in ["st['a'] = 2", "st['a'] > 1 AND st['b'] = 'x'", "st IS NULL"]),
    (BY_ST_A, "st['a'] IS NULL"),
]


@pytest.mark.parametrize(("spec", "where"), PARTITIONED)
def test_delete_on_partition_columns_equals_plain_datafusion(
    tmp_path: Path, spec: list[dict[str, Any]], where: str
) -> None:
    """The condition's IR decides which partitions are dropped unread and which are read;
    the rows are DataFusion's."""
    ctx, _ = namespace(tmp_path, ROWS, spec)
    keep = _plain(f"SELECT * FROM t WHERE NOT ({where}) OR ({where}) IS NULL").to_pylist()
    ctx.sql(f"DELETE FROM t WHERE {where}").collect()
    assert norm(_all(ctx)) == norm(keep)


VECTORS = pa.table(
    {
        "k": [0, 1, 2, 3],
        "v": pa.array(
            [[1.0, 2.0], None, [3.0, float("nan")], [0.0, -0.0]], pa.list_(pa.float32(), 2)
        ),
    }
)


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM t WHERE v IS NULL",
        "DELETE FROM t WHERE array_length(v) = 2 AND k > 1",
        "DELETE FROM t WHERE v[2] > 1",  # NaN sorts above every number
        "UPDATE t SET k = k + 10 WHERE v IS NOT NULL AND v[1] < 2",
    ],
)
def test_conditions_on_vector_columns_equal_plain_datafusion(
    tmp_path: Path, statement: str
) -> None:
    """A fixed-size list column (which DataFusion 55's Substrait producer refuses) in a
    condition: the rows are DataFusion's (its expressions run on them)."""
    ctx, _ = namespace(tmp_path, VECTORS)
    where = statement.split(" WHERE ", 1)[1]
    if statement.startswith("DELETE"):
        want = plain(f"SELECT k FROM t WHERE NOT ({where}) OR ({where}) IS NULL", t=VECTORS)
    else:
        case = f"CASE WHEN ({where}) IS TRUE THEN k + 10 ELSE k END AS k"
        want = plain(f"SELECT {case} FROM t", t=VECTORS)
    ctx.sql(statement).collect()
    got = ctx.sql("SELECT k FROM t").to_arrow_table().column(0).to_pylist()
    assert sorted(got) == sorted(want.column(0).to_pylist())
