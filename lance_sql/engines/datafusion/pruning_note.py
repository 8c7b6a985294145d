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

from lance_sql.errors import LanceSqlError
from lance_sql.planning.predicates import NULL_BOOL, And, Not, Or, Predicate, Unsupported

_ERRORS = (LanceSqlError, NotImplementedError, ValueError, TypeError, pa.ArrowException)


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
        from lance_sql.planning.planner import plan_partitions, to_predicate
        from lance_sql.planning.predicates import and_

        preds = []
        for f in (filter, prune_filter):
            if f is None:
                continue
            try:
                preds.append(to_predicate(f, schema))
            except _ERRORS as exc:
                out.append(f"{f}: {_first_line(exc)}")
        if not preds:
            return
        try:
            plan_partitions(
                and_(*preds),
                namespace.specs,
                schema,
                namespace.snapshot.rows,
                root=str(namespace.root),
                storage_options=namespace.storage_options,
            )
        except _ERRORS as exc:
            out.append(f"the planner failed: {_first_line(exc)}")

    worker = threading.Thread(target=run, name="lance-sql-pruning-note")
    worker.start()
    worker.join()
    return out or ["the planner failed"]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["pruning_note"]
