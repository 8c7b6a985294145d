"""Differential property test: SQL with storage-partitioned joins on equals off.

Namespaces are real pylance writes, so a small fixed pool is written once per
module (compatible and incompatible bucket / identity specs, NULL keys, skew)
and hypothesis draws pairs, join types, extra conditions and query shapes.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SPECS = {
    "b16": [{"source": "k", "transform": "bucket", "num_buckets": 16}],
    "b8": [{"source": "k", "transform": "bucket", "num_buckets": 8}],
    "b6": [{"source": "k", "transform": "bucket", "num_buckets": 6}],
    "b5": [{"source": "k", "transform": "bucket", "num_buckets": 5}],
    "id": [{"source": "k", "transform": "identity"}],
    "v": [{"source": "v", "transform": "identity"}],
}


@pytest.fixture(scope="module")
def pool(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("spj_diff")
    roots = {}
    for i, (name, spec) in enumerate(SPECS.items()):
        ns = PartitionedNamespace.create(
            str(tmp / name),
            pa.schema([pa.field("k", pa.int64()), pa.field("v", pa.int64())]),
            spec,
        )
        n = 40
        keys = [
            None if (j + i) % 9 == 0 else 1 if j % 4 == 0 else (j * (i + 3)) % 17 for j in range(n)
        ]
        ns.append(pa.table({"k": keys, "v": [(j * 5 + i) % 7 for j in range(n)]}))
        roots[name] = str(tmp / name)
    return roots


def _contexts(pool: dict[str, str]) -> tuple[lance_sql.SessionContext, lance_sql.SessionContext]:
    out = []
    for spj in (True, False):
        ctx = lance_sql.SessionContext(spj=spj)
        for name, root in pool.items():
            ctx.register_namespace(name, root)
        out.append(ctx)
    return out[0], out[1]


def _rows(ctx: lance_sql.SessionContext, sql: str) -> Counter:
    table = ctx.sql(sql).to_arrow_table()  # rows as tuples: output names may repeat
    return Counter(zip(*(c.to_pylist() for c in table.columns), strict=True))


SHAPES = [
    "SELECT a.k, a.v, b.k, b.v FROM {l} a {j} {r} b ON {on}",
    "SELECT b.v, count(*) AS n, sum(a.v) AS s FROM {l} a {j} {r} b ON {on} GROUP BY b.v",
    "SELECT a.v AS x, b.v AS y FROM {l} a {j} {r} b ON {on} WHERE a.v > 2 OR b.v IS NULL",
]


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    left=st.sampled_from(sorted(SPECS)),
    right=st.sampled_from(sorted(SPECS)),
    join=st.sampled_from(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]),
    extra=st.sampled_from(["", " AND a.v > b.v", " AND b.v <> 3"]),
    shape=st.sampled_from(SHAPES),
)
def test_spj_on_equals_off(pool, contexts, left, right, join, extra, shape) -> None:
    on, off = contexts
    sql = shape.format(l=left, r=right, j=join, on="a.k = b.k" + extra)
    assert _rows(on, sql) == _rows(off, sql), sql


@pytest.fixture(scope="module")
def contexts(pool):
    return _contexts(pool)
