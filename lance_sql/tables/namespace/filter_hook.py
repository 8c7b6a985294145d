"""The scan planner the namespace's reads and row operations use, registered from planning.

The planner lives a layer above (``lance_sql.planning``) and registers itself here; the
package root registers a loader (:func:`register_filter_planner_loader`) that
:func:`filter_planner` runs on first use, falling back to no pruning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from lance_sql.errors import LanceSqlError

if TYPE_CHECKING:
    import pyarrow.compute as pc


class FilterClassification(NamedTuple):
    """Which partition tables a filter selects, by ``object_id``: ``covered`` (every row
    matches), ``partial`` (some may); tables in neither hold no matching row."""

    expression: pc.Expression | None  # for pushdown into Lance scans (None: none)
    covered: tuple[str, ...]
    partial: tuple[str, ...]


class NoPruning:
    """The protocol a filter planner implements, and the planner until the pruning one is
    registered: every partition is a candidate, none covered (same rows, slower)."""

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
    """The registered planner; the first call runs the loader the package root registered
    (this layer never imports planning itself)."""
    if _PLANNER is None and _LOADER is not None:
        _LOADER()
    return NoPruning() if _PLANNER is None else _PLANNER
