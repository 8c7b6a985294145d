"""A scan unit whose filter its partition values already prove (residual elimination).

When a table's residual is TRUE (``WHERE day = D`` over the ``identity(day)`` table of
day ``D``), the unit drops the filter, but only when handed that very filter
(``equals``); any other filter is applied as before.
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
