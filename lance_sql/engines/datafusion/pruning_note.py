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

from typing import Any

import pyarrow.compute as pc

from lance_sql.spec.predicates import NULL_BOOL, And, Not, Or, Predicate, Unsupported


def pruning_note(plan: Any, filter: pc.Expression | None, prune_filter: Any) -> str:
    """``, not_used_for_pruning=[...]`` for EXPLAIN, or ``""`` when the planner used everything.

    ``plan``: the scan planner's ``ScanPlan`` for ``filter`` AND ``prune_filter``;
    it lists the parts it could not read or plan (``extra["not_used_for_pruning"]``).
    """
    if filter is None and prune_filter is None:
        return ""
    reasons = list(plan.extra.get("not_used_for_pruning", ()))
    if plan.predicate is not None:
        reasons += _unsupported(plan.predicate)
    reasons = list(dict.fromkeys(reasons))
    return f", not_used_for_pruning=[{'; '.join(reasons)}]" if reasons else ""


def _unsupported(pred: Predicate) -> list[str]:
    if isinstance(pred, (And, Or)):
        return [r for c in pred.children for r in _unsupported(c)]
    if isinstance(pred, Not):
        return _unsupported(pred.child)
    if isinstance(pred, Unsupported) and pred != NULL_BOOL:
        return [pred.description]
    return []


__all__ = ["pruning_note"]
