"""Pruning and join statistics for printed queries, read from the ``LanceScan:`` /
``LanceNamespaceScan:`` lines of EXPLAIN: what the engine planned, not a second estimate."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

_NS = re.compile(r"LanceNamespaceScan: table=(\S+?),.*?partition_tables=(\d+)/(\d+)")
_DS = re.compile(r"LanceScan: table=(\S+?),.*?fragments=(\d+)")


@dataclass(frozen=True)
class ScanStat:
    table: str
    read: int
    total: int
    kind: str  # "partition tables" or "fragments"

    def __str__(self) -> str:
        if self.kind == "fragments":
            return f"{self.table}: {self.read} fragments"
        return f"{self.table}: {self.read}/{self.total} partition tables read"


def explain_text(ctx: Any, sql: str, analyze: bool = False) -> str:
    """The annotated physical plan (and logical plan) of ``sql`` as one string."""
    word = "EXPLAIN ANALYZE" if analyze else "EXPLAIN"
    table: pa.Table = ctx.sql(f"{word} {sql}").to_arrow_table()
    parts = []
    for row in table.to_pylist():
        parts.append(f"{row['plan_type']}:\n{row['plan']}")
    return "\n".join(parts)


def scan_stats(plan: str) -> list[ScanStat]:
    """Every Lance scan in an EXPLAIN text, in plan order."""
    out = []
    for line in plan.splitlines():
        m = _NS.search(line)
        if m:
            out.append(ScanStat(m.group(1), int(m.group(2)), int(m.group(3)), "partition tables"))
            continue
        m = _DS.search(line)
        if m:
            out.append(ScanStat(m.group(1), int(m.group(2)), int(m.group(2)), "fragments"))
    return out


def join_summary(left: Any, right: Any, on: tuple[str, str], plan: str) -> str:
    """One line: is this join executed storage-partitioned, and why (not)."""
    from lance_sql.planning.joins import plan_join

    jp = plan_join(left, right, on=[on])
    if not jp.compatible:
        return f"storage-partitioned: no (layouts not compatible: {jp.reason})"
    layout = (
        f"{jp.regrouping}, {len(jp.groups)} groups" if jp.regrouping else f"{len(jp.groups)} groups"
    )
    # Only claim a storage-partitioned execution when the physical plan says so;
    # otherwise name the join node DataFusion actually chose.
    if "storagepartitioned" in plan.lower().replace("-", "").replace("_", ""):
        return f"storage-partitioned: yes ({layout})"
    m = re.search(r"(\w*JoinExec: mode=\w+|\w*JoinExec)", plan)
    how = m.group(1) if m else "a regular join"
    return (
        f"storage-partitioned: no (layouts are compatible — {layout} — but DataFusion "
        f"executes it as {how} with a hash repartition/broadcast, not per bucket group)"
    )
