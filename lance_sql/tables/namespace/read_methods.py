"""Filtered reads of a ``PartitionedNamespace``: ``to_table``, ``to_batches``, ``count_rows``.

A filtered read scans only the partition tables the scan planner selects (the
same planner, and so the same tables, as SQL, DataFrames, ``plan_scan`` and
the Spark reader). The planner lives a layer above this one: the methods
reach it through the planner the planning layer registers (:mod:`.filter_hook`),
as the row operations do; without it every table is read (same rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import SpecError
from lance_sql.tables.namespace.filter_hook import filter_planner
from lance_sql.tables.namespace.properties import SCHEMA_KEY
from lance_sql.tables.scan import ScanUnit


class ReadMethods:
    """Mixed into :class:`~.namespace.PartitionedNamespace`."""

    _schema: pa.Schema
    root: str
    schema: Any
    scan_units: Any
    tables: Any

    def _units_for(
        self, filter: pc.Expression | str | None, partitions: Iterable[Any] | None
    ) -> list[ScanUnit]:
        """Scan units of the tables the scan planner selects for ``filter`` (within
        ``partitions`` when given): the same tables SQL, DataFrames and ``plan_scan`` read."""
        if filter is not None:
            plan = filter_planner().scan_plan(self, filter)
            if plan is not None and not plan.selects_all:
                chosen = set(plan.object_ids)
                if partitions is not None:  # unknown ids stay: scan_units names them
                    given = {p if isinstance(p, str) else p.object_id for p in partitions}
                    chosen = (chosen & given) | (given - {e.object_id for e in self.tables()})
                partitions = sorted(chosen)
        return self.scan_units(partitions)

    def _read_filter(self, filter: pc.Expression | str | None) -> pc.Expression | None:
        """``filter`` as the pyarrow expression the scan units apply: SQL text (DataFusion's
        dialect, as in ``ns.delete``) is converted by the planner, which prunes for the
        text itself (as ``plan_scan`` does)."""
        if filter is None or isinstance(filter, pc.Expression):
            return filter
        if isinstance(filter, str):
            return filter_planner().expression(self, filter)
        raise TypeError(
            f"filter of namespace {self.root!r}: give a pyarrow.compute.Expression or SQL "
            f"text, got {type(filter).__name__}"
        )

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        partitions: Iterable[Any] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Batches of the rows ``filter`` keeps, read from the partition tables it selects."""
        if columns is not None:
            missing = [c for c in columns if c not in self._schema.names]
            if missing:
                raise SpecError(f"no namespace column(s) {missing}", key=SCHEMA_KEY)
        rows = self._read_filter(filter)
        for unit in self._units_for(filter, partitions):
            yield from unit.to_batches(columns, rows)

    def to_table(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        partitions: Iterable[Any] | None = None,
    ) -> pa.Table:
        """All rows (of ``partitions``) with the namespace schema, projected and filtered;
        only the partition tables the scan planner selects for ``filter`` are read."""
        batches = list(self.to_batches(columns, filter, partitions=partitions))
        out_schema = (
            self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])
        )
        if not out_schema.names:
            n = sum(b.num_rows for b in batches)
            return pa.table({"_": pa.nulls(n)}).select([])
        return pa.Table.from_batches(batches, schema=out_schema)

    def count_rows(self, filter: pc.Expression | str | None = None) -> int:
        """Rows ``filter`` keeps, counted in the partition tables the scan planner selects."""
        rows = self._read_filter(filter)
        return sum(u.count_rows(rows) for u in self._units_for(filter, None))


__all__ = ["ReadMethods"]
