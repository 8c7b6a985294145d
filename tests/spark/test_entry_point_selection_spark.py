"""The Spark reader selects the same partition tables as SQL and ``plan_scan``.

The namespaces of ``tests/planning/test_entry_point_selection.py`` (three spec
versions of identity, bucket, day, month and truncate fields), a few filters
given as the reader's ``where`` option; rows equal plain DataFusion's over a
memory table.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from entry_point_cases import Case, build_case

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans

pytestmark = pytest.mark.spark
_NS_LINE = re.compile(r"LanceNamespaceScan: .*?partition_tables=(\d+)/(\d+)")


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    base = tmp_path_factory.mktemp("entry_points_spark")
    return [build_case(seed, str(base / f"ns{seed}")) for seed in range(2)]


SPARK_FILTERS = [
    "k = 7",
    "k IN (-9, 12) OR s = 'ab'",
    "d >= DATE '2025-01-02' AND NOT (s IS NULL)",
    "x > 0",
]


def test_spark_reader_selects_the_same_partition_tables(spark: Any, cases: list[Case]) -> None:
    import lance_sql.engines.spark as lance_spark

    for case in cases:
        for sql in SPARK_FILTERS:
            plan = lance_sql.plan_scan(case.ns, sql)
            planned = len(case.all_ids) if plan.selects_all else len(plan.object_ids)
            report = lance_spark.describe_read(spark, str(case.ns.root), where=sql)
            assert report.partition_tables == planned, sql
            with capture_scans() as records:
                case.ctx.sql(f"SELECT k FROM t WHERE {sql}").to_arrow_table()
            m = _NS_LINE.search(records[0].plan.description)
            assert m is not None and int(m.group(1)) == planned, sql
            got = spark.read.format("lance_ns").option("where", sql).load(str(case.ns.root))
            want = case.plain.sql(f"SELECT k, s FROM t WHERE {sql}").to_arrow_table()
            rows = [(r.k, r.s) for r in got.select("k", "s").collect()]
            expected = list(zip(want["k"].to_pylist(), want["s"].to_pylist(), strict=True))
            assert sorted(rows, key=repr) == sorted(expected, key=repr), sql
