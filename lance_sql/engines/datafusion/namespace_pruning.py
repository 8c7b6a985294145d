"""The pruning hook of a namespace table: which partition tables a scan reads, planned
on the thread DataFusion calls the provider from (inside its runtime: see
:func:`.sql_evaluation.inside_datafusion`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion.namespace_plans import (
    MISS,
    PLANS,
)
from lance_sql.engines.datafusion.sql_evaluation import inside_datafusion
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
) -> list[str] | None:
    """The default pruning hook: the scan planner (``planning.namespace_scan.plan_scan``).

    Returns the object ids of the partition tables that may hold rows
    matching ``filter`` (None: all of them). The full filter is still applied
    inside every selected table, so pruning can only skip work. ``schema`` is
    the schema the filter's column names refer to (the one registered in
    DataFusion). Plans on the calling thread, cached per snapshot (:func:`plan_pruning`).
    """
    schema = schema or namespace.schema
    if filter is None:
        return None
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
    # a nested runtime panics, so the SQL engine runs such calls on a thread of
    # its own (sql_evaluation.inside_datafusion); the rest plans right here.
    with inside_datafusion():
        plan = _plan_pruning(filter, prune_filter, namespace, schema)
    PLANS.put(filter, prune_filter, namespace, schema, plan)
    return plan


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
