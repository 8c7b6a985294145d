"""``ns.to_table`` / ``to_batches`` / ``count_rows`` accept SQL text as pylance's reads do.

The text means what it means in DataFusion: each filter's rows are checked against
plain DataFusion running ``SELECT * FROM t WHERE <filter>`` over the namespace's rows
in memory (as read back: a NULL struct's fields read NULL, where pyarrow fills them
with zeros that DataFusion's field access would expose), and a filter without an
exact pyarrow form is refused with a typed error.
"""

from __future__ import annotations

import math
from pathlib import Path

import datafusion
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.errors import PlanningError
from lance_sql.planning.namespace_scan import plan_scan

SCHEMA = pa.schema(
    [
        ("k", pa.int64()),
        ("s", pa.string()),
        ("x", pa.float64()),
        ("meta", pa.struct([("lang", pa.string()), ("n", pa.int32())])),
        ("emb", pa.list_(pa.float32(), 2)),
    ]
)
ROWS = pa.table(
    {
        "k": [1, 2, 3, 4, 5, 6],
        "s": ["a", None, "b", "it's", "a", ""],
        "x": [0.5, -0.0, float("nan"), None, 2.0, -3.5],
        "meta": [
            {"lang": "en", "n": 1},
            None,
            {"lang": "fr", "n": None},
            {"lang": "en", "n": 4},
            {"lang": None, "n": 5},
            {"lang": "de", "n": 6},
        ],
        "emb": [[1.0, 2.0], None, [0.0, 0.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]],
    },
    schema=SCHEMA,
)
FILTERS = [
    "k = 2",
    "k IN (1, 3, 99)",
    "s IS NULL",
    "s = 'it''s' OR k > 5",
    "s LIKE 'a%'",
    "x > 0",
    "x = 0.0",
    "NOT (x < 1)",
    "meta.lang = 'en'",
    "meta['n'] IS NULL",
    "emb IS NOT NULL AND k BETWEEN 2 AND 5",
    "k <> 4 AND s <> ''",
]


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> lance_sql.PartitionedNamespace:
    root = str(Path(tmp_path_factory.mktemp("sqlfilter")) / "ns")
    ns = lance_sql.PartitionedNamespace.create(root, SCHEMA, "bucket(3, k)")
    ns.append(ROWS)
    return ns


def _datafusion(ns: lance_sql.PartitionedNamespace, where: str) -> list[dict]:
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [ns.to_table().to_batches()])
    return ctx.sql(f"SELECT * FROM t WHERE {where}").to_arrow_table().to_pylist()


def _keys(rows: list[dict]) -> list[tuple]:
    """Rows comparable as a bag (NaN equals NaN here, as both sides keep the same rows)."""
    return sorted(
        tuple("nan" if isinstance(v, float) and math.isnan(v) else repr(v) for v in r.values())
        for r in rows
    )


@pytest.mark.parametrize("where", FILTERS)
def test_sql_text_filters_keep_what_datafusion_keeps(
    ns: lance_sql.PartitionedNamespace, where: str
) -> None:
    expected = _keys(_datafusion(ns, where))
    assert _keys(ns.to_table(filter=where).to_pylist()) == expected
    assert ns.count_rows(filter=where) == len(expected)
    assert _keys([r for b in ns.to_batches(filter=where) for r in b.to_pylist()]) == expected


def test_sql_text_prunes_like_the_expression(ns: lance_sql.PartitionedNamespace) -> None:
    assert len(plan_scan(ns, "k = 2").object_ids) == 1
    assert len(plan_scan(ns, pc.field("k") == 2).object_ids) == 1


@pytest.mark.parametrize(
    ("where", "error", "match"),
    [
        ("murmur3(k) = 1", PlanningError, "murmur3"),
        ("nope = 1", PlanningError, "nope"),
        (5, TypeError, "Expression or SQL text, got int"),
    ],
)
def test_bad_filters_are_refused_with_a_typed_error(
    ns: lance_sql.PartitionedNamespace, where: object, error: type, match: str
) -> None:
    for read in (ns.to_table, ns.count_rows, lambda filter: list(ns.to_batches(filter=filter))):
        with pytest.raises(error, match=match):
            read(filter=where)
