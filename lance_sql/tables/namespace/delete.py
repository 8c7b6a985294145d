"""``ns.delete(filter)``: partitions whose every row matches leave ``__manifest`` unread,
the others get Lance row deletes; one commit. Details: docs/namespaces.md, "Delete"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_sql.tables.dataset_cache import open_all
from lance_sql.tables.namespace.filter_hook import filter_planner
from lance_sql.tables.namespace.mutation import ROWID, Mutation, run
from lance_sql.tables.namespace.sql_eval import RowCondition, matching_mask, row_condition


@dataclass(frozen=True)
class Matched:
    """Rows of one partition table a filter matches (namespace columns + ``_rowid``)."""

    object_id: str
    rows: pa.Table
    whole: bool  # the partition is covered: every row matches, ``rows`` may be empty


def matching_rows(
    m: Mutation, filter: Any, *, columns: Sequence[str] | None = None, full_covered: bool = False
) -> list[Matched]:
    """Per partition table the rows ``filter`` matches (covered tables: read only with
    ``full_covered``, else ``rows`` is empty and ``whole`` True)."""
    if isinstance(filter, str):
        filter = row_condition(m.ns.schema, filter)
    planned = filter.predicate if isinstance(filter, RowCondition) else filter
    cls = filter_planner().classify(m.ns, planned)
    cols = None if columns is None else list(columns)
    out: list[Matched] = []
    for oid in cls.covered:
        entry = m.entries[oid]
        rows = m.rows(entry, cols) if full_covered else pa.table({ROWID: pa.array([], pa.uint64())})
        out.append(Matched(oid, rows, True))

    def read(oid: str) -> pa.Table:
        return m.rows(m.entries[oid], cols, pushdown=cls.expression)

    # Partition scans overlap on the shared I/O threads (pylance releases the GIL):
    # with the filter pushed into Lance, a point delete's cost is per-partition latency.
    tables = open_all(cls.partial, read)
    for oid, rows in zip(cls.partial, tables, strict=True):
        if rows.num_rows:
            rows = rows.filter(matching_mask(rows.drop_columns([ROWID]), filter))
        if rows.num_rows:
            out.append(Matched(oid, rows, False))
    return out


def delete_matching(m: Mutation, filter: Any) -> int:
    """Stage the deletion of every row ``filter`` matches into ``m``; returns the count."""
    filter = row_condition(m.ns.schema, filter) if isinstance(filter, str) else filter
    hits = matching_rows(m, filter, columns=_filter_columns(m, filter))
    return sum(remove(m, hit) for hit in hits)


def remove(m: Mutation, hit: Matched) -> int:
    """Stage the deletion of ``hit``'s rows (its whole table when covered); the count."""
    entry = m.entries[hit.object_id]
    if hit.whole:
        m.drop(entry)
        return m.count(entry)
    return m.delete_rowids(entry, hit.rows.column(ROWID))


def _filter_columns(m: Mutation, filter: Any) -> list[str] | None:
    """The namespace columns ``filter`` mentions (None: all of them, when unsure)."""
    if isinstance(filter, RowCondition):
        return list(filter.rows.columns) or None
    return None


def delete(ns: Any, filter: Any) -> int:
    """Delete the rows ``filter`` matches (see the module docstring); returns rows deleted."""
    return run(ns, lambda m: delete_matching(m, filter))  # (Mutation refuses a read-only ns)
