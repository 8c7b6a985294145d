"""A scan unit whose filter its partition values already prove (residual elimination).

When the planner proves that a partition table's stored partition values
make a scan's whole filter TRUE for every row of that table (the table's
residual is TRUE, :attr:`lance_sql.planning.planner.PartitionPlan.residuals`),
re-evaluating the filter inside the table's Lance scan only costs time:
``WHERE day = D`` over the ``identity(day)`` table of day ``D``. Iceberg
drops such conjuncts from a file's residual the same way.

:class:`ProvenFilterUnit` wraps such a unit and scans it without the filter
it was planned for. It drops the filter only when the filter it is handed is
that very filter (``equals``); any other filter is applied as before. With no
filter left, a ``count(*)`` of the unit comes from metadata (live rows) and
a chain of such units reads no page at all (:mod:`.chain`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.scan import ScanUnit, normalize_filter


class ProvenFilterUnit(ScanUnit):
    """``inner`` scanned without ``proven``, a filter its partition values prove TRUE."""

    def __init__(self, inner: ScanUnit, proven: pc.Expression) -> None:
        self.inner = inner
        self.proven = proven

    def _drop(self, filter: object) -> pc.Expression | None:
        f = normalize_filter(filter)
        if f is not None and (f is self.proven or f.equals(self.proven)):
            return None
        return f

    @property
    def schema(self) -> pa.Schema:
        return self.inner.schema

    @property
    def estimated_rows(self) -> int | None:
        return self.inner.estimated_rows

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        return self.inner.to_batches(columns, self._drop(filter), batch_size)

    def read_table(self, columns: Sequence[str], filter: pc.Expression | None = None) -> pa.Table:
        return self.inner.read_table(columns, self._drop(filter))

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        return self.inner.count_rows(self._drop(filter))

    def describe(self) -> str:
        return f"{self.inner.describe()} (filter proven by partition values)"

    def __getattr__(self, name: str) -> object:  # e.g. ``entry`` of a partition table unit
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


__all__ = ["ProvenFilterUnit"]
