"""Which partition tables a namespace scan reads, and with which filter.

:class:`PlannerPrune` is the pruning hook, run inside DataFusion's runtime;
:data:`PLANS` caches partition plans; :func:`without_proven_filter` drops the
filter on tables whose partition values prove it (Iceberg's residuals).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion.sql_evaluation import inside_datafusion
from lance_sql.tables.dataset_cache import OpenCache
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.reader import PartitionTable
from lance_sql.tables.scan import ForwardingUnit, ScanUnit, normalize_filter

MISS = object()

#: Plan cache switch (benchmarks compare on / off).
ENABLE_PLAN_CACHE = [True]


class _PlanCache:
    """Partition plans by (``__manifest`` rows object, schema, filter, prune filter), LRU.

    A plan is a pure function of these, so a service answering a filter again on
    one snapshot skips planning; bounded by ``snapshots`` rows objects (a large
    ``__manifest`` is MBs) and ``capacity`` plans each.
    """

    def __init__(self, capacity: int = 2048, snapshots: int = 4) -> None:
        self._capacity = capacity
        #: id(rows) -> (rows, {key: (schema, filter, plan)})
        self._by_rows: OpenCache[tuple[pa.Table, OpenCache[Any]]] = OpenCache(snapshots)

    @staticmethod
    def _key(
        filter: pc.Expression | None, prune_filter: Any, ns: Any, schema: pa.Schema
    ) -> tuple[Any, ...]:
        from lance_sql.planning.key_filter_skipping import ENABLED

        text = None if filter is None else str(filter)
        return (str(ns.root), id(schema), text, prune_filter, ENABLED[0])

    def get(
        self, filter: pc.Expression | None, prune_filter: Any, ns: Any, schema: pa.Schema
    ) -> Any:
        rows = ns.snapshot.rows
        slot = self._by_rows.get(id(rows)) if ENABLE_PLAN_CACHE[0] else None
        if slot is None or slot[0] is not rows:
            return MISS
        hit = slot[1].get(self._key(filter, prune_filter, ns, schema))
        if hit is None or hit[0] is not schema or not _same_filter(hit[1], filter):
            return MISS
        return hit[2]

    def put(
        self,
        filter: pc.Expression | None,
        prune_filter: Any,
        ns: Any,
        schema: pa.Schema,
        plan: Any,
    ) -> None:
        if not ENABLE_PLAN_CACHE[0]:
            return
        rows = ns.snapshot.rows
        slot = self._by_rows.get_or_open(id(rows), lambda: (rows, OpenCache(self._capacity)))
        key = self._key(filter, prune_filter, ns, schema)
        slot[1].discard(key)  # (same text, another filter object)
        slot[1].put(key, (schema, filter, plan))

    def clear(self) -> None:
        self._by_rows.clear()


def _same_filter(a: pc.Expression | None, b: pc.Expression | None) -> bool:
    if a is None or b is None:
        return a is b
    return a is b or a.equals(b)


PLANS = _PlanCache()


def proven_tables(plan: Any, filter: pc.Expression | None) -> frozenset[str]:
    """Object ids of the selected tables whose partition values prove ``filter`` (see below)."""
    if plan is None or filter is None or not ENABLE_RESIDUAL_ELIMINATION[0]:
        return frozenset()
    return plan.proven  # type: ignore[no-any-return]


#: Residual elimination switch (benchmarks and tests compare on / off).
ENABLE_RESIDUAL_ELIMINATION = [True]


class ProvenFilterUnit(ForwardingUnit):
    """``inner`` scanned without ``proven``, a filter its partition values prove TRUE; only
    when handed that very filter (``equals``): any other filter is applied as before."""

    def __init__(self, inner: ScanUnit, proven: pc.Expression) -> None:
        super().__init__(inner)
        self.proven = proven

    def inner_filter(self, filter: object) -> pc.Expression | None:
        f = normalize_filter(filter)
        if f is not None and (f is self.proven or f.equals(self.proven)):
            return None
        return f

    def describe(self) -> str:
        return f"{self.inner.describe()} (filter proven by partition values)"


def without_proven_filter(
    table_units: list[ScanUnit],
    proven: frozenset[str],
    filter: pc.Expression | None,
    chains: Callable[[list[ScanUnit]], list[ScanUnit]],
    chain_anew: Callable[[list[ScanUnit]], list[ScanUnit]],
) -> tuple[list[ScanUnit], list[ScanUnit]]:
    """(engine partitions, table units) with ``filter`` dropped where partition values prove it.

    Only tables pinned at a version qualify: one read at latest may hold rows
    appended by pylance since.
    """
    assert filter is not None

    def qualifies(u: ScanUnit) -> bool:
        entry = getattr(u, "entry", None)
        return (
            entry is not None
            and entry.object_id in proven
            and entry.read_version is not None
            and not entry.read_tag
        )

    marks = [qualifies(u) for u in table_units]
    if table_units and all(marks):
        return [ProvenFilterUnit(c, filter) for c in chains(table_units)], table_units
    wrapped: list[ScanUnit] = [
        ProvenFilterUnit(u, filter) if m else u for u, m in zip(table_units, marks, strict=True)
    ]
    if not any(marks):
        return chains(table_units), table_units
    return chain_anew(wrapped), wrapped


#: ``prune(filter, namespace) -> partitions to read`` (None: all of them).
PruneHook = Callable[
    ["pc.Expression | None", PartitionedNamespace], "Iterable[PartitionTable | str] | None"
]


def plan_pruning(
    filter: pc.Expression | None,
    prune_filter: Any,
    namespace: PartitionedNamespace,
    schema: pa.Schema,
) -> Any:
    """The scan planner's ``ScanPlan`` for ``filter``, narrowed by ``prune_filter`` (IR).

    A part the planner cannot read is dropped (only widening the selection), so
    pruning never fails a query. Cached per snapshot.
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
) -> Any:
    """The scan planner's plan; a part of a filter it cannot read is dropped."""
    from lance_sql.planning.namespace_scan import plan_scan

    return plan_scan(namespace, filter, schema=schema, prune_filter=prune_filter, failures=[])


class PlannerPrune:
    """The ``"planner"`` pruning hook (the scan planner), bound to the schema registered in
    DataFusion; :class:`NamespaceTable` recognises it to also get the planner's report
    (EXPLAIN) and to add pruning-only filters (:meth:`NamespaceTable.with_prune_filter`).
    """

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def __call__(self, filter: pc.Expression | None, namespace: PartitionedNamespace) -> Any:
        """Object ids of the partition tables that may hold rows matching ``filter`` (None:
        all); the full filter is still applied inside each, so pruning only skips work."""
        if filter is None:
            return None
        plan = self.plan(filter, None, namespace)
        return None if plan.selects_all else plan.object_ids

    def plan(self, filter: pc.Expression | None, prune_filter: Any, namespace: Any) -> Any:
        return plan_pruning(filter, prune_filter, namespace, self.schema)


def planner_prune(
    filter: pc.Expression | None, namespace: PartitionedNamespace, schema: pa.Schema
) -> list[str] | None:
    """:class:`PlannerPrune` over ``schema``, called once."""
    return PlannerPrune(schema)(filter, namespace)
