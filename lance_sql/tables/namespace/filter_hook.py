"""The filter planner the namespace's row operations use, registered from the planning layer.

``delete``, ``overwrite(where=...)``, ``update`` and ``merge`` take SQL filter
text over the namespace schema and need the pruning planner (strict
projection) to tell which partitions a filter covers entirely. The planner
lives one layer above this one (``lance_sql.planning``), so it registers
itself here when imported (:mod:`lance_sql.planning.mutation_plan`); this
layer only knows the small protocol below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow.compute as pc

from lance_sql.errors import LanceSqlError


@dataclass(frozen=True)
class FilterClassification:
    """Which partition tables a filter selects, by ``object_id``.

    ``covered``: every row matches (the partition values prove the filter);
    ``partial``: some rows may match. Tables in neither hold no matching row.
    """

    expression: pc.Expression | None  # for pushdown into Lance scans (None: none)
    covered: tuple[str, ...]
    partial: tuple[str, ...]


class FilterPlanner(Protocol):
    def expression(self, ns: Any, filter: Any) -> pc.Expression:
        """``filter`` (SQL text or pyarrow expression) as an expression over ``ns.schema``."""
        ...

    def classify(self, ns: Any, filter: Any) -> FilterClassification:
        """Prune ``ns``'s partition tables for ``filter`` (strict and inclusive projections)."""
        ...


_PLANNER: FilterPlanner | None = None


def register_filter_planner(planner: FilterPlanner) -> None:
    global _PLANNER
    _PLANNER = planner


def filter_planner() -> FilterPlanner:
    if _PLANNER is None:
        raise LanceSqlError(
            "no filter planner is registered: import lance_sql.planning (importing "
            "lance_sql.PartitionedNamespace does) before deleting, updating or merging"
        )
    return _PLANNER


__all__ = [
    "FilterClassification",
    "FilterPlanner",
    "filter_planner",
    "register_filter_planner",
]
