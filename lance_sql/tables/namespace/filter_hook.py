"""The scan planner the namespace's reads and row operations use, registered from planning.

``to_table(filter=)``, ``to_batches`` and ``count_rows`` read only the
partition tables the scan planner selects; ``delete``, ``overwrite(where=...)``,
``update`` and ``merge`` take SQL filter text over the namespace schema and
need the same planner (strict projection) to tell which partitions a filter
covers entirely. The planner
lives one layer above this one (``lance_sql.planning``), so it registers
itself here when imported (:mod:`lance_sql.planning.mutation_plan`); this
layer only knows the small protocol below. The package root, which sits above
every layer and runs before any of its modules, registers a loader for it
(:func:`register_filter_planner_loader`); :func:`filter_planner` calls that
loader on first use, and falls back to no pruning. This module imports nothing
heavy, so the root can register at import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from lance_sql.errors import LanceSqlError

if TYPE_CHECKING:
    import pyarrow.compute as pc


class FilterClassification(NamedTuple):
    """Which partition tables a filter selects, by ``object_id``.

    ``covered``: every row matches (the partition values prove the filter);
    ``partial``: some rows may match. Tables in neither hold no matching row.
    """

    expression: pc.Expression | None  # for pushdown into Lance scans (None: none)
    covered: tuple[str, ...]
    partial: tuple[str, ...]


class NoPruning:
    """The protocol a filter planner implements (these four methods), and the planner used
    until the pruning planner is registered: every partition is a candidate and none is
    covered. Results are the same (filters are evaluated on the rows), only slower:
    ``lance_sql.PartitionedNamespace`` and ``lance_sql.planning`` register the real
    planner on import."""

    def expression(self, ns: Any, filter: Any) -> pc.Expression:
        """``filter`` (SQL text or pyarrow expression) as an expression over ``ns.schema``."""
        import pyarrow.compute as pc

        if isinstance(filter, pc.Expression):
            return filter
        raise LanceSqlError("no filter planner registered to convert SQL text")

    def classify(self, ns: Any, filter: Any) -> FilterClassification:
        """Prune ``ns``'s partition tables for ``filter`` (strict and inclusive projections)."""
        import pyarrow.compute as pc

        expr = filter if isinstance(filter, pc.Expression) else None
        return FilterClassification(expr, (), tuple(e.object_id for e in ns.tables()))

    def scan_plan(self, ns: Any, filter: Any) -> Any:
        """The scan planner's plan of ``ns`` for ``filter``: ``selects_all`` (every table),
        ``object_ids`` (the selected tables) and ``proven`` (tables whose partition
        values prove the whole filter); None: every table."""
        return None

    def search(self, ns: Any, *args: Any, **kwargs: Any) -> Any:
        """Vector, full-text or hybrid search of ``ns``, pruned for its ``where``."""
        raise LanceSqlError("search needs the planning layer: import lance_sql first")


#: a planner: :class:`NoPruning`'s four methods
FilterPlanner = Any
_PLANNER: FilterPlanner | None = None
_LOADER: Callable[[], object] | None = None


def register_filter_planner(planner: FilterPlanner) -> None:
    global _PLANNER
    _PLANNER = planner


def register_filter_planner_loader(loader: Callable[[], object]) -> None:
    """``loader`` imports the planner (which registers itself); called on first need."""
    global _LOADER
    _LOADER = loader


def filter_planner() -> FilterPlanner:
    """The registered planner; the first call runs the loader the package root registered.

    The loader imports the planning layer (the package root sits above every
    layer, so this layer never imports planning, nor the root, itself). Without
    it, a namespace imported from its module pruned nothing and pushed no filter
    into Lance: a point delete over 64 partitions took 15x longer.
    """
    if _PLANNER is None and _LOADER is not None:
        _LOADER()
    return NoPruning() if _PLANNER is None else _PLANNER
