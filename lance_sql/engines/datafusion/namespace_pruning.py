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
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.reader import (
    PartitionTable,
)

#: ``prune(filter, namespace) -> partitions to read`` (None: all of them).
PruneHook = Callable[
    ["pc.Expression | None", PartitionedNamespace], "Iterable[PartitionTable | str] | None"
]


def planner_prune(
    filter: pc.Expression | None,
    namespace: PartitionedNamespace,
    schema: pa.Schema | None = None,
    *,
    here: bool = False,
) -> list[str] | None:
    """The default pruning hook: the scan planner (``planning.namespace_scan.plan_scan``).

    Returns the object ids of the partition tables that may hold rows
    matching ``filter`` (None: all of them). The full filter is still applied
    inside every selected table, so pruning can only skip work. ``schema`` is
    the schema the filter's column names refer to (the one registered in
    DataFusion). ``here``: plan on the calling thread (never from inside a scan).
    """
    schema = schema or namespace.schema
    if filter is None:
        return None
    if here:  # the caller is not on a DataFusion worker: no thread hop needed
        plan = _plan_pruning(filter, None, namespace, schema)
    else:
        plan = plan_pruning(filter, None, namespace, schema)
    return None if plan.selects_all else plan.object_ids


def plan_pruning(
    filter: pc.Expression | None,
    prune_filter: Any,
    namespace: PartitionedNamespace,
    schema: pa.Schema,
) -> Any:
    """The scan planner's ``ScanPlan`` for ``filter``, narrowed by ``prune_filter``.

    ``filter`` is what DataFusion pushed into the scan; ``prune_filter`` is a
    predicate (IR) over ``schema`` that the query's WHERE implies but DataFusion
    does not push (transform terms, see :mod:`.prune_plan`). Either one that the
    planner cannot read is dropped (dropping a conjunct only widens the
    selection), so pruning never fails a query. Plans are cached per snapshot.
    """
    if filter is None and prune_filter is None:  # every table: nothing to plan off-thread
        return _plan_pruning(None, None, namespace, schema)
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
    prune_filter: Any,
    namespace: PartitionedNamespace,
    schema: pa.Schema,
    failures: list[str] | None = None,
) -> Any:
    """The scan planner's plan; ``failures`` (EXPLAIN) collects why a part was dropped."""
    from lance_sql.planning.namespace_scan import plan_scan

    return plan_scan(
        namespace,
        filter,
        schema=schema,
        prune_filter=prune_filter,
        failures=[] if failures is None else failures,
    )


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

    def plan(self, filter: pc.Expression | None, prune_filter: Any, namespace: Any) -> Any:
        return plan_pruning(filter, prune_filter, namespace, self.schema)
