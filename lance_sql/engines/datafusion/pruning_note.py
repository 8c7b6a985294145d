"""EXPLAIN's word on the parts of a namespace scan's filter that pruning could not use.

Pruning never fails a query: a filter, or a part of one, that the planner
cannot read selects every partition table, and the full filter is still
applied inside each table. That must never happen silently, so the
``LanceNamespaceScan`` line of EXPLAIN ends with
``not_used_for_pruning=[...]`` naming each such part and why (a condition on
a column type Substrait cannot carry, a function the planner does not model,
a filter the planner failed on).
"""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion.namespace_pruning import _plan_pruning
from lance_sql.spec.predicates import NULL_BOOL, And, Not, Or, Predicate, Unsupported


def pruning_note(
    plan: Any,
    filter: pc.Expression | None,
    prune_filter: str | None,
    namespace: Any,
    schema: pa.Schema,
) -> str:
    """``, not_used_for_pruning=[...]`` for EXPLAIN, or ``""`` when the planner used everything.

    ``plan``: the planner's ``PartitionPlan`` for ``filter`` AND ``prune_filter``
    (None: planning failed or there was nothing to plan).
    """
    if filter is None and prune_filter is None:
        return ""
    if plan is not None:
        reasons = list(dict.fromkeys(_unsupported(plan.predicate)))
    else:
        reasons = _replan(filter, prune_filter, namespace, schema)
    return f", not_used_for_pruning=[{'; '.join(reasons)}]" if reasons else ""


def _unsupported(pred: Predicate) -> list[str]:
    if isinstance(pred, (And, Or)):
        return [r for c in pred.children for r in _unsupported(c)]
    if isinstance(pred, Not):
        return _unsupported(pred.child)
    if isinstance(pred, Unsupported) and pred != NULL_BOOL:
        return [pred.description]
    return []


def _replan(
    filter: pc.Expression | None, prune_filter: str | None, namespace: Any, schema: pa.Schema
) -> list[str]:
    """Why planning failed, found by planning again (EXPLAIN only).

    On a thread of its own: the planner may run DataFusion, and EXPLAIN may
    ask from inside DataFusion's runtime (a nested runtime panics).
    """
    out: list[str] = []

    def run() -> None:
        _plan_pruning(filter, prune_filter, namespace, schema, failures=out)

    worker = threading.Thread(target=run, name="lance-sql-pruning-note")
    worker.start()
    worker.join()
    return out or ["the planner failed"]


__all__ = ["pruning_note"]
