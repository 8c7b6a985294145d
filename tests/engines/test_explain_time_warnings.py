"""EXPLAIN warns about a day-of-month / month-of-year time partition alone (issue #20 item 6)."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))])


def _scan_line(tmp_path: Any, spec: Any) -> str:
    root = os.path.join(tmp_path, "ns")
    ns = PartitionedNamespace.create(root, SCHEMA, spec)
    ns.append(pa.table({"id": [1], "ts": [dt.datetime(2026, 1, 3)]}, schema=SCHEMA))
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("e", root)
    plan = "\n".join(ctx.sql("EXPLAIN SELECT * FROM e").to_arrow_table().column("plan").to_pylist())
    (line,) = [x for x in plan.splitlines() if "LanceNamespaceScan:" in x]
    return line


def test_day_of_month_alone_is_flagged(tmp_path: Any) -> None:
    line = _scan_line(tmp_path, [{"source": "ts", "transform": "day"}])
    assert "warnings=[" in line and "day of month" in line and "days(ts)" in line


@pytest.mark.parametrize("spec", ["days(ts)", "years(ts)", "bucket(4, id)"])
def test_time_fields_that_prune_are_not_flagged(tmp_path: Any, spec: str) -> None:
    assert "warnings=" not in _scan_line(tmp_path, spec)
