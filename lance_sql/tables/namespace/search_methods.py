"""``PartitionedNamespace`` methods for indexes of every kind and search (a mixin).

The search itself plans with the pruning planner, a layer above this one: the
method reaches it through the planner the planning layer registers
(:mod:`.filter_hook`), as the row operations do.
"""

from __future__ import annotations

from typing import Any

from lance_sql.tables.namespace import indexes
from lance_sql.tables.namespace.filter_hook import filter_planner


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

    def create_scalar_index(
        self,
        column: str,
        index_type: str = "BTREE",
        *,
        name: str | None = None,
        replace: bool = False,
        **params: Any,
    ) -> indexes.NamespaceIndex:
        """Build a Lance scalar index on ``column`` in every partition table (one commit).

        Later writes keep it: new partitions get it built, appended ones get
        their new rows added, in the commit that publishes them.
        """
        return self.create_index(column, index_type, name=name, replace=replace, **params)

    def list_indexes(self) -> list[indexes.NamespaceIndex]:
        """The namespace's scalar indexes (as of this snapshot)."""
        return indexes.read_indexes(self._snapshot.properties)  # type: ignore[attr-defined]

    def drop_index(self, name: str) -> None:
        """Drop the scalar index ``name`` from every partition table (one commit)."""
        indexes.drop_index(self, name)  # type: ignore[arg-type]

    def index_coverage(self) -> Any:
        """Per partition table and index: rows, indexed rows, unindexed fragments."""
        return indexes.index_coverage(self)  # type: ignore[arg-type]

    def optimize_indexes(self) -> int:
        """Build missing indexes and add unindexed rows in every partition table (one commit).

        Returns the number of partition tables changed. Writes already do this
        in their own commit; this catches up tables a vector index skipped while
        they were small (``min_rows``) or written by other tools.
        """
        return indexes.optimize_indexes(self)  # type: ignore[arg-type]

    def search(self, *args: Any, **kwargs: Any) -> Any:
        """Vector, full-text or hybrid search: see :func:`lance_sql.search` (docs/search.md)."""
        return filter_planner().search(self, *args, **kwargs)


__all__ = ["SearchMethods"]
