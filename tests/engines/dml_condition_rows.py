"""Rows and helpers shared by the DML and MERGE condition tests
(``test_dml_plan_conditions.py``, ``test_merge_plan_conditions.py``): a partitioned
namespace holding the rows, and plain DataFusion's answer over memory tables.

The rows hold the values a text round trip got wrong or refused (two quotes in a
row, a pattern SIMILAR TO reads) and those whose meaning is DataFusion's own (NaN,
-0.0, NULL, zoned timestamps, struct fields)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datafusion
import pyarrow as pa

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

NAN = float("nan")
PARIS = pa.timestamp("us", "Europe/Paris")
STRUCT = pa.struct([("a", pa.int32()), ("b", pa.string())])
IDENTITY_K = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]

#: the scalar columns of both tests' rows (``st`` and more follow them)
COLUMNS = {
    "k": pa.array([0, 1, 2, 3, 4, 5], pa.int64()),
    "s": pa.array(["a''b", "a'b", "''", None, "(a|b)q", "ab"], pa.string()),
    "f": pa.array([1.0, NAN, None, -0.0, 0.0, 2.5], pa.float64()),
    "tz": pa.array([0, 3_600_000_000, None, 7_200_000_000, -3_600_000_000, 1], PARIS),
}


def rows(st: list[dict[str, Any] | None], **more: pa.Array) -> pa.Table:
    """:data:`COLUMNS`, then the struct column ``st`` of ``st``, then ``more``."""
    return pa.table({**COLUMNS, "st": pa.array(st, STRUCT), **more})


def namespace(
    tmp: Path, data: pa.Table, spec: list[dict[str, Any]] = IDENTITY_K, **sources: pa.Table
) -> tuple[Any, str]:
    """A lance-sql session with ``data`` as namespace ``t`` (partitioned by ``spec``) and
    each of ``sources`` as a memory table; and the namespace's root."""
    root = str(tmp / "ns")
    PartitionedNamespace.create(root, data.schema, spec).append(data)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    for name, table in sources.items():
        ctx.register_record_batches(name, [table.to_batches()])
    return ctx, root


def plain(sql: str, **tables: pa.Table) -> pa.Table:
    """``sql`` by plain DataFusion over ``tables`` as memory tables."""
    ctx = datafusion.SessionContext()
    for name, table in tables.items():
        ctx.register_record_batches(name, [table.to_batches()])
    return ctx.sql(sql).to_arrow_table()


def norm(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(r) for r in rows)  # NaN compares equal through its repr
