"""A field inside a struct column as a partition source prunes in SQL, DataFrame and plan_scan.

The namespace is partitioned by ``identity(s.a)`` and ``bucket[4](s.inner.b)``; every
query must return plain DataFusion's rows over the same data (a memory table) and
read only the partition tables its filter can match.
"""

from __future__ import annotations

import datafusion
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from datafusion import col, lit

import lance_sql
from lance_sql import PartitionedNamespace, SessionContext
from lance_sql.engines.datafusion.provider import capture_scans
from tests.ai_columns import partition_reads

INNER = pa.struct([pa.field("b", pa.int64())])
S = pa.struct([pa.field("a", pa.string()), pa.field("inner", INNER)])
SCHEMA = pa.schema([("id", pa.int64()), ("s", S), ("x", pa.int64())])
N = 60


def _rows() -> pa.Table:
    s = [
        None if i % 17 == 16 else {"a": "xyz"[i % 3], "inner": None if i % 7 == 6 else {"b": i}}
        for i in range(N)
    ]
    return pa.table({"id": range(N), "s": pa.array(s, S), "x": [i % 5 for i in range(N)]})


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("nested") / "ns"
    spec = [
        {"source": "s.a", "transform": "identity"},
        {"source": "s.inner.b", "transform": "bucket", "num_buckets": 4},
    ]
    ns = PartitionedNamespace.create(root, SCHEMA, spec)
    ns.append(_rows())
    ctx = SessionContext()
    ctx.register_namespace("n", str(root))
    plain = datafusion.SessionContext()
    plain.register_record_batches("n", [_nulls_down(_rows()).to_batches()])
    return ns, ctx, plain


def _nulls_down(table: pa.Table) -> pa.Table:
    """``table`` with a NULL struct's fields NULL too (DataFusion 55's ``s['a']`` returns
    the child array's value under a NULL struct)."""

    def fix(arr: pa.Array) -> pa.Array:
        if not pa.types.is_struct(arr.type):
            return arr
        children = [fix(c) for c in arr.flatten()]
        return pa.StructArray.from_arrays(children, fields=list(arr.type), mask=arr.is_null())

    return pa.table([fix(c.combine_chunks()) for c in table.columns], schema=table.schema)


def _tables(ns) -> int:
    return len(lance_sql.plan_scan(ns, None).partitions)


def _read(run) -> tuple[list, list[tuple[int, int]]]:
    with capture_scans() as records:
        rows = run()
    return rows, partition_reads(records)


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["id"])


#: (SQL WHERE, the same as plan_scan text, as a pyarrow expression)
CASES = [
    ("s['a'] = 'x'", "s.a = 'x'", pc.field("s", "a") == "x"),
    ("s.a IN ('x', 'z')", "s.a IN ('x', 'z')", pc.field("s", "a").isin(["x", "z"])),
    ("s['inner']['b'] = 13", "s.inner.b = 13", pc.field("s", "inner", "b") == 13),
    (
        "s['a'] = 'y' AND x = 1",
        "s.a = 'y' AND x = 1",
        (pc.field("s", "a") == "y") & (pc.field("x") == 1),
    ),
    ("s['a'] IS NULL", "s.a IS NULL", pc.field("s", "a").is_null()),
]


@pytest.mark.parametrize(("where", "text", "expr"), CASES)
def test_sql_dataframe_and_plan_scan_prune_by_a_nested_source(setup, where, text, expr):
    ns, ctx, plain = setup
    total = _tables(ns)
    want = _sorted(plain.sql(f"SELECT id, x FROM n WHERE {where}").to_pylist())
    by_text = len(lance_sql.plan_scan(ns, text).partitions)
    by_expr = len(lance_sql.plan_scan(ns, expr).partitions)
    assert by_text == by_expr < total, (by_text, by_expr, total)
    got, reads = _read(lambda: ctx.sql(f"SELECT id, x FROM n WHERE {where}").to_pylist())
    assert _sorted(got) == want
    assert reads == [(by_text, total)]


def test_dataframe_filter_on_a_struct_field_prunes(setup):
    ns, ctx, plain = setup
    total = _tables(ns)
    want = _sorted(plain.table("n").filter(col("s")["a"] == lit("z")).select(col("id")).to_pylist())
    got, reads = _read(
        lambda: ctx.table("n").filter(col("s")["a"] == lit("z")).select(col("id")).to_pylist()
    )
    assert _sorted(got) == want and want
    assert reads == [(len(lance_sql.plan_scan(ns, "s.a = 'z'").partitions), total)]
    assert reads[0][0] < total


def test_plan_scan_rows_match(setup):
    ns, _, plain = setup
    want = _sorted(plain.sql("SELECT id FROM n WHERE s['inner']['b'] = 15").to_pylist())
    got = ns.to_table(filter=pc.field("s", "inner", "b") == 15, columns=["id"]).to_pylist()
    assert _sorted(got) == want == [{"id": 15}]


def test_a_struct_field_predicate_keeps_its_path_through_json(setup):
    """Scan filters travel to Spark tasks as JSON: the path must come back."""
    from lance_sql.planning.plan_json import from_json_value, to_json_value
    from lance_sql.planning.planner import to_predicate
    from lance_sql.spec.predicates import to_sql

    ns, _, _ = setup
    pred = to_predicate("s.inner.b = 15 AND s['a'] = 'x'", ns.schema)
    assert from_json_value(to_json_value(pred)) == pred
    # and its SQL text reads back as the same predicate
    text = to_sql(pred)
    assert "s['inner']['b']" in text
    assert to_predicate(text, ns.schema) == pred
