"""EXPLAIN over a Lance table or namespace scanned twice with different filters (issue #15).

``EXPLAIN SELECT count(*) FROM t a JOIN t b ON a.x = b.x WHERE a.y = 1 AND
b.y = 2`` raised ``ValueError: An Expression cannot be evaluated to python
True or False``: the annotation removed a scan record from a list with ``==``,
which compares the pyarrow filter Expressions. EXPLAIN must never fail; each
``DatasetExec`` line gets the description of its own scan, and the queries
themselves return DataFusion's rows over memory tables.
"""

from __future__ import annotations

import re
from pathlib import Path

import datafusion
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.engines.datafusion.provider import ExplainAnnotation, ScanRecord
from lance_sql.planning.scan_plan import ScanPlan
from lance_sql.tables.namespace.namespace import PartitionedNamespace

NATIONS = ["FRANCE", "GERMANY", "JAPAN", "PERU"]


def _tables() -> dict[str, pa.Table]:
    n = 40
    return {
        "t": pa.table({"x": [i % 10 for i in range(n)], "y": [i % 3 for i in range(n)]}),
        "nation": pa.table({"n_nationkey": list(range(4)), "n_name": NATIONS}),
        "supplier": pa.table(
            {"s_suppkey": list(range(8)), "s_nationkey": [i % 4 for i in range(8)]}
        ),
        "customer": pa.table(
            {"c_custkey": list(range(10)), "c_nationkey": [(i * 3) % 4 for i in range(10)]}
        ),
        "orders": pa.table({"o_orderkey": list(range(n)), "o_custkey": [i % 10 for i in range(n)]}),
        "lineitem": pa.table(
            {
                "l_orderkey": [i % n for i in range(2 * n)],
                "l_suppkey": [(i * 5) % 8 for i in range(2 * n)],
                "l_extendedprice": [float(i) for i in range(2 * n)],
                "l_year": [1995 + i % 3 for i in range(2 * n)],
            }
        ),
    }


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, datafusion.SessionContext]:
    root: Path = tmp_path_factory.mktemp("explain_self_joins")
    tables = _tables()
    lance_ctx = lance_sql.SessionContext()
    ns_ctx = lance_sql.SessionContext()
    ns_off = lance_sql.SessionContext(spj=False)
    plain = datafusion.SessionContext()
    for name, table in tables.items():
        lance.write_dataset(table, str(root / f"{name}.lance"), max_rows_per_file=16)
        lance_ctx.register_lance(name, str(root / f"{name}.lance"))
        first = table.schema.names[0]
        ns = PartitionedNamespace.create(
            str(root / name),
            table.schema,
            [{"source": first, "transform": "bucket", "num_buckets": 4}],
        )
        ns.append(table)
        ns_ctx.register_namespace(name, str(root / name))
        ns_off.register_namespace(name, str(root / name))
        plain.register_record_batches(name, [table.to_batches()])
    return {"lance": lance_ctx, "ns": ns_ctx, "ns_off": ns_off, "plain": plain}


SELF_JOIN = "SELECT count(*) AS c FROM t a JOIN t b ON a.x = b.x WHERE a.y = 1 AND b.y = 2"
Q7 = """
SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue
FROM (
    SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation, l_year,
           l_extendedprice AS volume
    FROM supplier, lineitem, orders, customer, nation n1, nation n2
    WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey
      AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey
      AND ((n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY')
        OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE'))
      AND l_year BETWEEN 1995 AND 1996
) AS shipping
GROUP BY supp_nation, cust_nation, l_year
ORDER BY supp_nation, cust_nation, l_year
"""
QUERIES = [
    SELF_JOIN,
    "SELECT a.x, b.y FROM t a JOIN t b ON a.x = b.x WHERE a.y = 1 AND b.y = 1 ORDER BY 1, 2",
    "SELECT count(*) AS c FROM t a JOIN t b ON a.x = b.x JOIN t c ON b.x = c.x "
    "WHERE a.y = 0 AND b.y = 1 AND c.y = 2",
    "SELECT count(*) AS c FROM t a LEFT JOIN t b ON a.x = b.x AND b.y = 2 WHERE a.y = 1",
    "SELECT count(*) AS c FROM t a JOIN t b ON a.x = b.x WHERE a.y IN (1, 2) AND b.y IN (1, 2)",
    "SELECT count(*) AS c FROM t WHERE y = 1 UNION ALL SELECT count(*) FROM t WHERE y = 2",
    "SELECT n1.n_name, n2.n_name FROM nation n1, nation n2 "
    "WHERE n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY'",
    Q7,
]


def _explain(ctx: datafusion.SessionContext, sql: str) -> str:
    rows = ctx.sql(f"EXPLAIN {sql}").to_arrow_table().to_pylist()
    return "\n".join(r["plan"] for r in rows)


@pytest.mark.parametrize("which", ["lance", "ns", "ns_off"])
@pytest.mark.parametrize("sql", QUERIES)
def test_explain_never_fails_and_rows_match(
    contexts: dict[str, datafusion.SessionContext], which: str, sql: str
) -> None:
    ctx = contexts[which]
    text = _explain(ctx, sql)
    assert "physical_plan_error" not in text and "DatasetExec" in text
    assert ctx.sql(sql).to_arrow_table().to_pylist() == (
        contexts["plain"].sql(sql).to_arrow_table().to_pylist()
    )


def test_each_scan_is_described_under_its_own_node(
    contexts: dict[str, datafusion.SessionContext],
) -> None:
    lines = _explain(contexts["lance"], SELF_JOIN).split("\n")
    pairs = [
        (line, lines[i + 1])
        for i, line in enumerate(lines[:-1])
        if line.lstrip().startswith("DatasetExec:")
    ]
    assert len(pairs) == 2
    for node, described in pairs:
        pushed = re.search(r"filter_expr=(\(y == \d\))", node)
        assert pushed is not None, node
        assert described.lstrip().startswith("LanceScan: table=t")
        assert f"filter={pushed.group(1)}" in described, (node, described)


def test_annotation_with_equal_columns_and_different_filters() -> None:
    """The unit the crash was in: two records whose only difference is the filter."""
    records = [
        ScanRecord("t", ["x"], pc.field("y") == 1, ScanPlan.of_units((), "LanceScan: one")),
        ScanRecord("t", ["x"], pc.field("y") == 2, ScanPlan.of_units((), "LanceScan: two")),
        ScanRecord("t", ["x"], pa.scalar(False), ScanPlan.of_units((), "LanceScan: none")),
    ]
    plan = "\n".join(
        [
            "HashJoinExec",
            "  DatasetExec: number_of_fragments=1, filter_expr=(y == 2), projection=[x]",
            "  DatasetExec: number_of_fragments=1, filter_expr=(y == 1), projection=[x]",
            "  DatasetExec: number_of_fragments=1, filter_expr=false, projection=[x]",
            "  DatasetExec: number_of_fragments=1, projection=[x]",
        ]
    )
    out = ExplainAnnotation(records).annotate(plan).split("\n")
    assert out[2].strip() == "LanceScan: two, columns=[x]"
    assert out[4].strip() == "LanceScan: one, columns=[x]"
    assert out[6].strip() == "LanceScan: none, columns=[x]"
    assert len(out) == 8  # the fourth node has no record left: nothing added
