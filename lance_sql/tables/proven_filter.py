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

import pyarrow.compute as pc

from lance_sql.tables.scan import ForwardingUnit, ScanUnit, normalize_filter


class ProvenFilterUnit(ForwardingUnit):
    """``inner`` scanned without ``proven``, a filter its partition values prove TRUE."""

    def __init__(self, inner: ScanUnit, proven: pc.Expression) -> None:
        super().__init__(inner)
        self.proven = proven

    def inner_filter(self, filter: object) -> pc.Expression | None:
        f = normalize_filter(filter)
        if f is not None and (f is self.proven or f.equals(self.proven)):
            return None
        return f

    def describe(self) -> str:
        return f"{self.inner.describe()} (filter proven by partition values)"
