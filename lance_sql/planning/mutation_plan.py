"""The filter planner of the namespace's row operations (``delete``, ``overwrite(where=)``...).

A partition whose values prove the filter is *covered* (a delete drops it without
reading it); other selected partitions may hold matching rows. Registered into
:mod:`lance_sql.tables.namespace.filter_hook` on import.
"""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.planning.namespace_scan import PLANNING_ERRORS, plan_scan
from lance_sql.planning.planner import to_predicate
from lance_sql.tables.namespace.filter_hook import (
    FilterClassification,
    register_filter_planner,
)


class PruningFilterPlanner:
    """A filter planner (:class:`~lance_sql.tables.namespace.filter_hook.NoPruning`'s methods)
    over the pruning planner."""

    def expression(self, ns: Any, filter: Any) -> pc.Expression:
        if isinstance(filter, pc.Expression):
            return filter
        from lance_sql.planning.arrow_expr import to_pyarrow

        try:
            return to_pyarrow(to_predicate(filter, ns.schema))
        except PLANNING_ERRORS as exc:
            raise PlanningError(f"filter {filter!s} has no pyarrow form: {exc}") from exc

    def classify(self, ns: Any, filter: Any) -> FilterClassification:
        try:
            expr = self.expression(ns, filter)
        except PlanningError:
            expr = None
        plan = plan_scan(ns, filter, failures=[])
        ids = [e.object_id for e in ns.tables()] if plan.selects_all else plan.object_ids
        covered = tuple(o for o in ids if o in plan.proven)
        partial = tuple(o for o in ids if o not in plan.proven)
        return FilterClassification(expr, covered, partial)

    def scan_plan(self, ns: Any, filter: Any) -> Any:
        return plan_scan(ns, filter, failures=[])

    def search(self, ns: Any, *args: Any, **kwargs: Any) -> Any:
        from lance_sql.planning.search import search

        return search(ns, *args, **kwargs)


register_filter_planner(PruningFilterPlanner())
