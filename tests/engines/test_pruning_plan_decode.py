"""Transform-term pruning reads the query's filter from the Substrait plan, not from SQL text.

The pass used to print DataFusion's filter with its unparser and parse the text
again; the unparser misprints a string literal holding two quotes in a row, so
such a filter pruned nothing. Decoded from Substrait, it prunes, and terms over
a field inside a struct (moved by DataFusion into a projection under the
filter) and terms used twice (computed once in a projection under the
filter) prune too. Rows are compared with plain DataFusion over the same rows
(with lance-sql's DataFusion over an in-memory table where the filter calls murmur3).
"""

from __future__ import annotations

import datetime as dt
import re
import warnings
from typing import Any

import datafusion
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.tables.namespace.namespace import PartitionedNamespace

S = ["''", "'", "ab", "a'", "'b", "''x", "", "zz", None]
TS = pa.struct([("ts", pa.timestamp("us")), ("n", pa.int64())])


def _rows() -> pa.Table:
    n = 60
    stamps = [
        None if i % 11 == 0 else {"ts": dt.datetime(2025, 1, 1 + i % 9, i % 24), "n": i}
        for i in range(n)
    ]
    return pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "s": pa.array([S[i % len(S)] for i in range(n)]),
            "st": pa.array(stamps, TS),
        }
    )


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    base = tmp_path_factory.mktemp("decode")
    rows = _rows()
    trunc = [{"source": "s", "transform": {"type": "truncate", "width": 2}}]
    PartitionedNamespace.create(str(base / "by_s"), rows.schema, trunc).append(rows)
    bucket = [{"source": "k", "transform": "bucket", "num_buckets": 4}]
    PartitionedNamespace.create(str(base / "by_k"), rows.schema, bucket).append(rows)
    day = [{"source": "st.ts", "transform": "day"}]
    PartitionedNamespace.create(str(base / "by_day"), rows.schema, day).append(rows)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("by_s", str(base / "by_s"))
    ctx.register_namespace("by_day", str(base / "by_day"))
    ctx.register_namespace("by_k", str(base / "by_k"))
    # murmur3 is lance-sql's function: its reference rows come from an in-memory table
    ctx.register_record_batches("mem", [rows.to_batches()])
    plain = datafusion.SessionContext()
    for name in ("by_s", "by_day", "by_k"):
        plain.register_record_batches(name, [rows.to_batches()])
    return ctx, plain


def _read(ctx: Any, sql: str) -> tuple[list[int], str]:
    with capture_scans() as records:
        keys = sorted(ctx.sql(sql).to_arrow_table().column("k").to_pylist())
    found = [re.search(r"partition_tables=(\d+/\d+)", r.plan.description) for r in records]
    return keys, ",".join(m.group(1) for m in found if m)


@pytest.mark.parametrize(
    ("table", "where", "reads"),
    [
        ("by_s", "left(s, 2) = ''''''", "1/8"),  # the value '' (two quotes): the unparser lost one
        ("by_s", "left(s, 2) IN ('''''', 'ab')", "2/8"),
        ("by_s", "substr(s, 1, 2) = 'a'''", "1/8"),
        ("by_s", "s LIKE '''%'", "3/8"),
        ("by_day", "date_trunc('day', st['ts']) = TIMESTAMP '2025-01-03'", "1/10"),
        ("by_day", "CAST(st['ts'] AS DATE) = DATE '2025-01-04' AND k > 3", "1/10"),
        # a term used twice is computed once in a projection under the filter
        ("by_s", "left(s, 2) = 'ab' OR left(s, 2) = 'zz'", "2/8"),
        ("by_k", "murmur3(k) % 4 = 1 OR murmur3(k) % 4 = 2", "2/4"),
        ("by_k", "abs(murmur3(k)) % 4 = 3 OR (abs(murmur3(k)) % 4 = 0 AND k > 7)", "2/4"),
    ],
)
def test_filters_decoded_from_the_plan_prune(
    tables: tuple[Any, Any], table: str, where: str, reads: str
) -> None:
    ctx, plain = tables
    sql = f"SELECT k FROM {table} WHERE {where}"
    keys, read = _read(ctx, sql)
    reference = ctx.sql(sql.replace(table, "mem")) if "murmur3" in where else plain.sql(sql)
    assert keys == sorted(reference.to_arrow_table().column("k").to_pylist())
    assert keys, where
    assert read == reads, (where, read)


@pytest.mark.parametrize(
    "where",
    [
        "e = [{'k': '1', 'w': 1.0}]",
        "s = 'a' AND e = [{'k': '1', 'w': 1.0}]",
        "e[1]['k'] = '1'",
    ],
)
def test_filters_with_nested_literals_equal_plain_datafusion(tmp_path: Any, where: str) -> None:
    """A filter holding a list-of-struct literal keeps DataFusion's own plan: its Substrait
    consumer would name the literal's struct fields c0, c1 and refuse the comparison."""
    item = pa.struct([("k", pa.string()), ("w", pa.float32())])
    table = pa.table(
        {
            "id": [1, 2, 3],
            "s": ["a", "b", "a"],
            "e": pa.array([[{"k": "1", "w": 1.0}], None, [{"k": "2", "w": 2.0}]], pa.list_(item)),
        }
    )
    root = str(tmp_path / "ns")
    ns = PartitionedNamespace.create(root, table.schema, [{"source": "s", "transform": "identity"}])
    ns.append(table)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    plain = datafusion.SessionContext()
    plain.register_record_batches("t", [table.to_batches()])
    query = f"SELECT id FROM t WHERE {where} ORDER BY id"
    assert ctx.sql(query).to_arrow_table().column(0).to_pylist() == (
        plain.sql(query).to_arrow_table().column(0).to_pylist()
    )


def test_nested_literal_search_uses_no_deprecated_protobuf_api() -> None:
    """The literal search reads protobuf's ``is_repeated``, not the deprecated ``label``
    (whose warning a plan pass would otherwise print, or raise under ``-W error``)."""
    from substrait import algebra_pb2

    from lance_sql.engines.datafusion.prune_plan import _nested_literal

    expr = algebra_pb2.Expression()
    expr.scalar_function.arguments.add().value.literal.i64 = 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert not _nested_literal(expr)
        expr.scalar_function.arguments.add().value.literal.list.values.add().i64 = 1
        assert _nested_literal(expr)
