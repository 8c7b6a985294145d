"""The pruning hook of a namespace table: which partition tables a scan reads, planned
on a thread of its own (DataFusion calls the provider from inside its runtime)."""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion.namespace_plans import (
    MISS,
    PLANS,
)
from lance_sql.errors import LanceSqlError
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.reader import (
    PartitionTable,
)

#: ``prune(filter, namespace) -> partitions to read`` (None: all of them).
PruneHook = Callable[
    ["pc.Expression | None", PartitionedNamespace], "Iterable[PartitionTable | str] | None"
]


#: Errors that make pruning fall back to reading every table (EXPLAIN says why).
_PLANNING_ERRORS = (LanceSqlError, NotImplementedError, ValueError, TypeError, pa.ArrowException)


def planner_prune(
    filter: pc.Expression | None,
    namespace: PartitionedNamespace,
    schema: pa.Schema | None = None,
    *,
    here: bool = False,
) -> list[str] | None:
    """The default pruning hook: :func:`lance_sql.planning.planner.plan_partitions`.

    Projects the scan's filter through every spec version onto the
    ``__manifest`` partition columns (spec appendix D) and returns the object
    ids of the partition tables that may hold matching rows. The full filter
    is still applied inside every selected table, so pruning can only skip
    work. A filter the planner cannot handle selects every table. ``schema``
    is the schema the filter's column names refer to (the one registered in
    DataFusion); specs refer to sources by field id, so it stays right after
    renames. ``here``: plan on the calling thread (never from inside a scan).
    """
    schema = schema or namespace.schema
    if here:  # the caller is not on a DataFusion worker: no thread hop needed
        plan = None if filter is None else _plan_pruning(filter, None, namespace, schema)
    else:
        plan = plan_pruning(filter, None, namespace, schema)
    return None if plan is None else plan.selected.column("object_id").to_pylist()


def plan_pruning(
    filter: pc.Expression | None,
    prune_filter: str | None,
    namespace: PartitionedNamespace,
    schema: pa.Schema,
) -> Any:
    """The planner's ``PartitionPlan`` for ``filter`` AND ``prune_filter`` (None: no pruning).

    ``filter`` is what DataFusion pushed into the scan; ``prune_filter`` is SQL
    text over ``schema`` that the query's WHERE implies but DataFusion does not
    push (transform terms, see :mod:`.transform_filters`). Either one that the
    planner cannot read is dropped (dropping a conjunct only widens the
    selection), so pruning never fails a query.
    """
    if filter is None and prune_filter is None:
        return None
    hit = PLANS.get(filter, prune_filter, namespace, schema)
    if hit is not MISS:
        return hit
    # DataFusion asks for fragments from inside its tokio runtime, and the
    # planner may itself run DataFusion (literal folding, expression fields):
    # a nested runtime panics, so planning runs on a thread of its own.
    plan = _PLANNING_THREAD.submit(_plan_pruning, filter, prune_filter, namespace, schema).result()
    PLANS.put(filter, prune_filter, namespace, schema, plan)
    return plan


_PLANNING_THREAD = concurrent.futures.ThreadPoolExecutor(
    max_workers=max(2, os.cpu_count() or 1), thread_name_prefix="lance-sql-prune"
)


def _plan_pruning(
    filter: pc.Expression | None,
    prune_filter: str | None,
    namespace: PartitionedNamespace,
    schema: pa.Schema,
    failures: list[str] | None = None,
) -> Any:
    """The planner's plan, or None; ``failures`` (EXPLAIN) collects why a part was dropped."""
    from lance_sql.planning.planner import plan_partitions, to_predicate
    from lance_sql.spec.predicates import and_

    errors = _PLANNING_ERRORS
    why = [] if failures is None else failures
    preds = []
    for f in (filter, prune_filter):
        if f is None:
            continue
        try:
            preds.append(to_predicate(f, schema))
        except errors as exc:
            why.append(f"{f}: {_first_line(exc)}")
    if not preds:
        return None
    try:
        return plan_partitions(
            and_(*preds),
            namespace.specs,
            schema,
            namespace.snapshot.rows,
            root=str(namespace.root),
            storage_options=namespace.storage_options,
        )
    except errors as exc:
        why.append(f"the planner failed: {_first_line(exc)}")
        return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class PlannerPrune:
    """The ``"planner"`` pruning hook, bound to the schema registered in DataFusion.

    A callable :data:`PruneHook` like any other; :class:`NamespaceTable`
    recognises it to also get the planner's per-spec-version report (EXPLAIN)
    and to add pruning-only filters (:meth:`NamespaceTable.with_prune_filter`).
    """

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def __call__(self, filter: pc.Expression | None, namespace: PartitionedNamespace) -> Any:
        return planner_prune(filter, namespace, self.schema)

    def plan(self, filter: pc.Expression | None, prune_filter: str | None, namespace: Any) -> Any:
        return plan_pruning(filter, prune_filter, namespace, self.schema)
