"""The filter planner of the namespace's row operations (``delete``, ``overwrite(where=)``...).

Registered into :mod:`lance_sql.tables.namespace.filter_hook` on import. A
partition whose residual is TRUE (its stored partition values prove every
conjunct: the strict projection) is *covered*: every row matches, so a delete
drops it from ``__manifest`` without reading it. Other selected partitions
(inclusive projection) may hold matching rows. When the planner cannot use a
filter, every partition is a candidate and none is covered.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import LanceSqlError, PlanningError
from lance_sql.planning.planner import plan_partitions, to_predicate
from lance_sql.spec.predicates import TRUE
from lance_sql.tables.namespace.filter_hook import (
    FilterClassification,
    register_filter_planner,
)

_PLAN_ERRORS = (LanceSqlError, NotImplementedError, ValueError, TypeError, pa.ArrowException)


class PruningFilterPlanner:
    """:class:`~lance_sql.tables.namespace.filter_hook.FilterPlanner` over the pruning planner."""

    def expression(self, ns: Any, filter: Any) -> pc.Expression:
        if isinstance(filter, pc.Expression):
            return filter
        from lance_sql.planning.arrow_expr import to_pyarrow

        try:
            return to_pyarrow(to_predicate(filter, ns.schema))
        except _PLAN_ERRORS as exc:
            raise PlanningError(f"filter {filter!s} has no pyarrow form: {exc}") from exc

    def classify(self, ns: Any, filter: Any) -> FilterClassification:
        try:
            expr = self.expression(ns, filter)
        except PlanningError:
            expr = None
        all_ids = tuple(e.object_id for e in ns.tables())
        try:
            root = getattr(ns, "root", None)  # key filters skip tables no row can match
            plan = plan_partitions(
                filter,
                ns.specs,
                ns.schema,
                ns.snapshot.rows,
                root=None if root is None else str(root),
                storage_options=getattr(ns, "storage_options", None),
            )
        except _PLAN_ERRORS:
            return FilterClassification(expr, (), all_ids)
        ids = plan.selected.column("object_id").to_pylist()
        covered = tuple(o for o, r in zip(ids, plan.residuals, strict=True) if r == TRUE)
        partial = tuple(o for o, r in zip(ids, plan.residuals, strict=True) if r != TRUE)
        return FilterClassification(expr, covered, partial)

    def search(self, ns: Any, *args: Any, **kwargs: Any) -> Any:
        from lance_sql.planning.search import search

        return search(ns, *args, **kwargs)


register_filter_planner(PruningFilterPlanner())

__all__ = ["PruningFilterPlanner"]
