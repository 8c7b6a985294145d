"""``PartitionedNamespace`` methods for indexes of every kind and search (a mixin).

The search itself plans with the pruning planner, a layer above this one: the
method reaches it through the package root (``lance_sql.search``), which sits
above every layer, as the row operations reach their filter planner.
"""

from __future__ import annotations

from typing import Any

from lance_sql.tables.namespace import indexes


class SearchMethods:
    """Mixed into :class:`~.namespace.PartitionedNamespace`."""

    def create_index(
        self,
        column: str,
        index_type: str | None = None,
        *,
        name: str | None = None,
        replace: bool = False,
        **params: Any,
    ) -> indexes.NamespaceIndex:
        """Build a vector, text or scalar index on ``column`` in every partition table.

        One ``__manifest`` commit; later writes keep it (docs/search.md).
        """
        return indexes.create_index(
            self,  # type: ignore[arg-type]
            column,
            index_type,
            name=name,
            replace=replace,
            **params,
        )

    def optimize_indexes(self) -> int:
        """Build missing indexes and add unindexed rows in every partition table (one commit).

        Returns the number of partition tables changed. Writes already do this
        in their own commit; this catches up tables a vector index skipped while
        they were small (``min_rows``) or written by other tools.
        """
        return indexes.optimize_indexes(self)  # type: ignore[arg-type]

    def search(self, *args: Any, **kwargs: Any) -> Any:
        """Vector, full-text or hybrid search: see :func:`lance_sql.search` (docs/search.md)."""
        import lance_sql

        return lance_sql.search(self, *args, **kwargs)


__all__ = ["SearchMethods"]
