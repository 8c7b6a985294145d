"""Point lookups through reused scan units never change an answer.

A scan unit keeps its pylance fragment objects and its stored row count for
the table version it pins, and a unit too small to sample decides late
materialization without reading either again. Lookups with new literals,
NULLs and lists, before and after appends that add files to existing
partition tables (new pins) and new ones, are compared with plain DataFusion
over the same rows in memory.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import datafusion
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

DAYS = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(4)]

LOOKUPS = [
    "SELECT id, day, x, s FROM t WHERE id = {k}",
    "SELECT id, x FROM t WHERE id = {k} AND x >= 0",
    "SELECT id, s FROM t WHERE id IN ({k}, {k2}, -1) ORDER BY id",
    "SELECT id, x FROM t WHERE id = {k} OR x IS NULL ORDER BY id",
    "SELECT count(*) AS n FROM t WHERE id = NULL",
    "SELECT id, s FROM t WHERE s = 'w{k}' ORDER BY id",
    "SELECT count(*) AS n, sum(x) AS sx FROM t WHERE day = DATE '{d}' AND id > {k}",
]


def rows(start: int, n: int, days: list[dt.date]) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "day": pa.array([days[i % len(days)] for i in ids], pa.date32()),
            "x": pa.array([None if i % 11 == 0 else float(i % 37) for i in ids], pa.float64()),
            "s": pa.array([f"w{i}" for i in ids], pa.string()),
        }
    )


def answers(ctx: object, sqls: list[str]) -> list[list[dict[str, object]]]:
    return [ctx.sql(q).to_arrow_table().to_pylist() for q in sqls]  # type: ignore[attr-defined]


@pytest.mark.parametrize("index", [True, False], ids=["key-filters", "no-index"])
def test_lookups_with_new_literals_and_snapshots_equal_plain_datafusion(
    tmp_path: Path, index: bool
) -> None:
    first = rows(0, 400, DAYS[:3])
    ns = PartitionedNamespace.create(
        str(tmp_path / "ns"), first.schema, [{"source": "day", "transform": "identity"}]
    )
    ns.append(first)
    if index:
        ns.create_scalar_index("id", "BTREE")
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(tmp_path / "ns"))
    seen = [first]
    keys = [0, 7, 123, 399, 400, 650, 799, 1000]
    for step, more in enumerate([None, rows(400, 300, DAYS), rows(700, 100, DAYS[3:])]):
        if more is not None:  # files added to existing tables (new pins) and a new table
            PartitionedNamespace.open(str(tmp_path / "ns")).append(more)
            seen.append(more)
        ref = datafusion.SessionContext()
        ref.register_record_batches("t", [pa.concat_tables(seen).to_batches()])
        sqls = [
            q.format(k=k, k2=k + 1, d=DAYS[(k + step) % len(DAYS)]) for k in keys for q in LOOKUPS
        ]
        assert answers(ctx, sqls) == answers(ref, sqls), f"after step {step}"
