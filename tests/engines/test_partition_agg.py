"""Partition-wise aggregation (engines/datafusion/agg_plan.py) against plain DataFusion.

An aggregate grouped by the column a namespace is partitioned by runs per group
of partition tables; every answer must equal plain DataFusion's over the same
rows in memory, NULL keys, several spec versions and HAVING included.
"""

from __future__ import annotations

from collections import Counter

import datafusion
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.engines.datafusion import agg_plan
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64()),
        pa.field("g", pa.string()),
        pa.field("v", pa.int64()),
        pa.field("f", pa.float64()),
    ]
)
N = 2000


def _rows(i0: int, n: int) -> pa.Table:
    ks = [None if i % 97 == 0 else (i * 7919) % 501 for i in range(i0, i0 + n)]
    return pa.table(
        {
            "k": pa.array(ks, pa.int64()),
            "g": [f"g{i % 5}" for i in range(i0, i0 + n)],
            "v": [None if i % 13 == 0 else i % 37 for i in range(i0, i0 + n)],
            "f": [float(i % 11) / 3 for i in range(i0, i0 + n)],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[str, pa.Table]:
    """``t``: bucket[8] on k, then a second spec bucket[4] on k (both hold rows)."""
    root = str(tmp_path_factory.mktemp("pagg") / "t")
    ns = PartitionedNamespace.create(
        root, SCHEMA, [{"source": "k", "transform": "bucket", "num_buckets": 8}]
    )
    ns.append(_rows(0, N))
    ns.add_spec([{"source": "k", "transform": "bucket", "num_buckets": 4}])
    ns.append(_rows(N, N))
    return root, pa.concat_tables([_rows(0, N), _rows(N, N)])


@pytest.fixture
def small_threshold(monkeypatch) -> None:
    monkeypatch.setattr(agg_plan, "MIN_INPUT_ROWS", 1)


def _ctx(root: str, spj: bool = True) -> lance_sql.SessionContext:
    ctx = lance_sql.SessionContext(spj=spj)
    ctx.register_namespace("t", root)
    ctx.from_pydict({"k": [1, 2, 3, 400], "w": [10, 20, 30, 40]}, name="d")
    return ctx


def _plain(table: pa.Table) -> datafusion.SessionContext:
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [table.to_batches()])
    ctx.from_pydict({"k": [1, 2, 3, 400], "w": [10, 20, 30, 40]}, name="d")
    return ctx


def _counter(table: pa.Table) -> Counter:
    return Counter(tuple(r.values()) for r in table.to_pylist())


def _explain(ctx: lance_sql.SessionContext, sql: str) -> str:
    table = ctx.sql("EXPLAIN " + sql).to_arrow_table()
    return "\n".join(str(v) for c in table.columns for v in c.to_pylist())


#: aggregates grouped by the partition source (k), with filters, HAVING and joins around them
APPLIED = [
    "SELECT a.*, d.w FROM (SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, min(g) AS m "
    "FROM t GROUP BY k) a JOIN d ON a.k = d.k",
    "SELECT a.*, d.w FROM (SELECT k, g, count(DISTINCT v) AS n, max(f) AS x FROM t "
    "WHERE v > 3 GROUP BY k, g) a LEFT JOIN d ON a.k = d.k",
    "SELECT g, k, sum(v) AS s FROM t GROUP BY g, k HAVING sum(v) > 40",
    "SELECT k FROM t GROUP BY k HAVING count(*) > 9",
    "SELECT k + 1 AS k1, count(v) FILTER (WHERE v % 2 = 0) AS e FROM t GROUP BY k "
    "HAVING min(v) >= 0",
    # TPC-H q18's shape: the aggregate feeds a semi join
    "SELECT d.k, d.w FROM d WHERE d.k IN (SELECT k FROM t GROUP BY k HAVING sum(v) > 100)",
]

#: aggregates not grouped by k: left to DataFusion
NOT_APPLIED = [
    "SELECT g, count(*) FROM t GROUP BY g HAVING count(*) > 1",
    "SELECT f, count(*) FROM t GROUP BY f HAVING count(*) > 1",
    "SELECT g, k, sum(v) FROM t GROUP BY ROLLUP (g, k) HAVING sum(v) > 1",
]


@pytest.mark.parametrize("sql", APPLIED)
def test_partition_wise_aggregate_equals_plain_datafusion(data, small_threshold, sql) -> None:
    root, table = data
    ctx = _ctx(root)
    want = _counter(_plain(table).sql(sql).to_arrow_table())
    assert _counter(ctx.sql(sql).to_arrow_table()) == want
    assert _counter(_ctx(root, spj=False).sql(sql).to_arrow_table()) == want
    text = _explain(ctx, sql)
    assert "PartitionWiseAggregate: t t, grouped by partition source k" in text, text


@pytest.mark.parametrize("sql", NOT_APPLIED)
def test_other_aggregates_are_left_to_datafusion(data, small_threshold, sql) -> None:
    root, table = data
    ctx = _ctx(root)
    assert _counter(ctx.sql(sql).to_arrow_table()) == _counter(
        _plain(table).sql(sql).to_arrow_table()
    )
    assert "PartitionWiseAggregate" not in _explain(ctx, sql)


def test_small_inputs_stay_plain(data) -> None:
    """Below the row threshold (default 1M) nothing changes."""
    root, table = data
    ctx = _ctx(root)
    sql = APPLIED[2]
    assert "PartitionWiseAggregate" not in _explain(ctx, sql)
    assert _counter(ctx.sql(sql).to_arrow_table()) == _counter(
        _plain(table).sql(sql).to_arrow_table()
    )


def test_float_grouping_key_is_not_partition_wise(tmp_path, small_threshold) -> None:
    """GROUP BY puts -0.0 and 0.0 in one group; their buckets differ: never per table."""
    schema = pa.schema([pa.field("x", pa.float64()), pa.field("v", pa.int64())])
    root = str(tmp_path / "f")
    ns = PartitionedNamespace.create(
        root, schema, [{"source": "x", "transform": "bucket", "num_buckets": 8}]
    )
    rows = pa.table({"x": [0.0, -0.0, 1.5, -0.0, 2.5, 0.0] * 10, "v": list(range(60))})
    ns.append(rows)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("f", root)
    sql = "SELECT x, count(*) AS n, sum(v) AS s FROM f GROUP BY x HAVING sum(v) > 0"
    plain = datafusion.SessionContext()
    plain.register_record_batches("f", [rows.to_batches()])
    assert _counter(ctx.sql(sql).to_arrow_table()) == _counter(plain.sql(sql).to_arrow_table())
    assert "PartitionWiseAggregate" not in _explain(ctx, sql)
