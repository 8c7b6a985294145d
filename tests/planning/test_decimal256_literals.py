"""Decimal literals keep their exact type in SQL text, decimal256 included.

A decimal256 column's literals (precision up to 76) are written as
``Decimal256(p, s)``: ``Decimal128`` holds at most 38 digits, and DataFusion and
Lance refuse ``Decimal128(50, 2)``. Such text is what Lance runs over
``__manifest`` when a namespace is planned from its root path; a refused
filter there reads every ``__manifest`` row instead (``PUSHDOWN_FALLBACKS``).
Answers are checked against plain DataFusion over a memory table.
"""

from __future__ import annotations

import decimal

import datafusion
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.planning import manifest_scan
from lance_sql.spec.predicates import Literal, literal_sql

D = decimal.Decimal
BIG = "123456789012345678901234567890123456789012"  # 42 digits: no Decimal128 holds it
T = pa.decimal256(50, 2)


@pytest.mark.parametrize(
    ("value", "t"),
    [
        (D("12.30"), pa.decimal128(10, 2)),
        (D("-1" + "0" * 35 + ".25"), pa.decimal128(38, 2)),
        (D("2.00"), T),
        (D(BIG + ".99"), T),
        (D("-" + BIG + ".01"), T),
        (D("7" * 76), pa.decimal256(76, 0)),
        (D("1.5"), pa.decimal256(20, 1)),
    ],
)
def test_decimal_literal_sql_is_the_exact_value_and_type(value: D, t: pa.DataType) -> None:
    ctx = datafusion.SessionContext()
    got = ctx.sql(f"SELECT {literal_sql(Literal(value, t))} AS x").to_arrow_table()
    assert got.schema.field("x").type == t
    assert got.column("x").to_pylist() == [value]


@pytest.fixture(scope="module")
def namespace(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[lance_sql.PartitionedNamespace, pa.Table]:
    root = tmp_path_factory.mktemp("d256") / "ns"
    schema = pa.schema([("d", T), ("e", T), ("v", pa.int64())])
    values = [D(BIG + ".00"), D("2.00"), None, D("-7.25"), D("-" + BIG + ".50"), D("2.00")]
    data = pa.table(
        {
            "d": pa.array(values, T),
            "e": pa.array(list(reversed(values)), T),
            "v": list(range(len(values))),
        },
        schema=schema,
    )
    ns = lance_sql.PartitionedNamespace.create(
        str(root), schema, [{"field_id": "dp", "source": "d", "transform": {"type": "identity"}}]
    )
    ns.append(data.slice(0, 3))
    ns.append(data.slice(3))
    return ns, data


WHERE = [
    "d = 2",
    "d < 2",
    "d >= -7",
    "d <> 2",
    "d IN (2, -7)",
    "d BETWEEN -8 AND 3",
    "e > 0 AND d < 3",
    "d = 2 OR e = 2",
    "d IS NULL",
    "d = 2.5",
    f"d = CAST('{BIG}.00' AS DECIMAL(50, 2))",
    f"d > CAST('-{BIG}.50' AS DECIMAL(50, 2))",
]


def _values(ns: lance_sql.PartitionedNamespace, plan: lance_sql.ScanPlan) -> set[int]:
    """The ``v`` of every row of the partition tables ``plan`` selected."""
    return {
        v for u in plan.scan_units(ns) for b in u.to_batches(None, None) for v in b["v"].to_pylist()
    }


@pytest.mark.parametrize("where", WHERE)
def test_decimal256_filters_answer_as_datafusion(namespace, where: str) -> None:
    ns, data = namespace
    mem = datafusion.SessionContext()
    mem.from_arrow(data, "n")
    sql = f"SELECT v FROM n WHERE {where} ORDER BY v"
    want = mem.sql(sql).to_arrow_table().column("v").to_pylist()
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", ns.root)
    assert ctx.sql(sql).to_arrow_table().column("v").to_pylist() == want
    before = manifest_scan.PUSHDOWN_FALLBACKS[0]
    plan = lance_sql.plan_scan(ns.root, where)
    # Lance ran the pushed __manifest filter (no fallback to reading every row) ...
    assert manifest_scan.PUSHDOWN_FALLBACKS[0] == before, plan.manifest_filter
    # ... and the selected partition tables hold every answer
    assert set(want) <= _values(ns, plan)
    assert set(want) <= _values(ns, lance_sql.plan_scan(ns, where))


@pytest.mark.parametrize("value", [D(BIG + ".00"), D("-" + BIG + ".50"), D("2.00"), D("3.00")])
def test_decimal256_expression_filters_of_wide_values(namespace, value: D) -> None:
    """pyarrow expressions with literals no Decimal128 holds (pyarrow's Substrait cannot
    carry a decimal256 literal, so these are not used for pruning: every table is read;
    ``plan_scan`` refuses them with a PlanningError)."""
    ns, data = namespace
    expr = pc.field("d") == pa.scalar(value, T)
    want = sorted(data.filter(expr).column("v").to_pylist())
    assert sorted(ns.to_table(filter=expr).column("v").to_pylist()) == want
    assert ns.count_rows(filter=expr) == len(want)
