"""DataFusion tables over directory namespaces.

* A **partitioned namespace** becomes one table with the namespace schema
  (:class:`NamespaceTable`). Each scan node pins one ``__manifest`` version
  (latest when the query is planned, or the registered ``version``), asks an
  optional pruning hook which partition tables to read, and scans each of them
  at the version ``__manifest`` pins: one DataFusion partition per partition
  table (or per chunk of fragments of a large one), with the projection and
  the filter pushed into each table's Lance scan.
* A **plain directory namespace** (a V2 ``__manifest`` without partition spec,
  e.g. written by pylance's ``DirectoryNamespace``) becomes a DataFusion schema
  whose tables are its tables, queried as ``name."object_id"`` (ids of nested
  tables contain ``$`` and need quotes).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion.lance_provider import LanceDatasetTable
from lance_sql.engines.datafusion.namespace_plans import (
    MISS,
    PLANS,
    proven_tables,
    without_proven_filter,
)
from lance_sql.engines.datafusion.provider import ScanPlan, ScanUnitDataset
from lance_sql.engines.datafusion.pruning_note import pruning_note
from lance_sql.errors import LanceSqlError, SchemaMismatchError
from lance_sql.tables.chain import chain_units
from lance_sql.tables.lance_table import LanceTable
from lance_sql.tables.namespace.arrow_json import field_id_of
from lance_sql.tables.namespace.layout import root_uri
from lance_sql.tables.namespace.manifest_table import read_manifest
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.properties import NotPartitionedError, parse_properties
from lance_sql.tables.namespace.reader import (
    PartitionTable,
    open_many_for_read,
    partition_units,
    table_entries,
)
from lance_sql.tables.proven_filter import ProvenFilterUnit
from lance_sql.tables.scan import ScanMetrics, ScanUnit, projected_schema

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
) -> Any:
    from lance_sql.planning.planner import plan_partitions, to_predicate
    from lance_sql.planning.predicates import and_

    errors = _PLANNING_ERRORS
    preds = []
    for f in (filter, prune_filter):
        if f is None:
            continue
        try:
            preds.append(to_predicate(f, schema))
        except errors:
            continue
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
    except errors:
        return None


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


class EmptyUnit(ScanUnit):
    """No rows: keeps at least one DataFusion partition when pruning removes everything."""

    def __init__(self, schema: pa.Schema) -> None:
        self._schema = schema

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        projected_schema(self._schema, columns)
        return iter(())

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        return 0

    def describe(self) -> str:
        return "no partition tables"


class NamespaceTable(ScanUnitDataset):
    """A partitioned namespace as one DataFusion table (``register_table``-ready)."""

    def __init__(
        self,
        namespace: PartitionedNamespace,
        *,
        name: str,
        follow_latest: bool,
        prune: PruneHook | None = None,
        partitions: int | None = None,
        rows_per_unit: int = 4_000_000,
    ) -> None:
        self.root = namespace.root
        self.partitions = partitions or max(1, os.cpu_count() or 1)
        self.storage_options = namespace.storage_options
        self.follow_latest = follow_latest
        self.prune = prune
        self.rows_per_unit = rows_per_unit
        self.metrics = ScanMetrics()
        self._lock = threading.Lock()
        self._namespace = namespace
        namespace.metrics = self.metrics
        self._manifest_ds: Any = None
        #: SQL filter over the namespace columns used for pruning only (never applied to rows)
        self.prune_filter: str | None = None
        self._base: NamespaceTable | None = None
        self._units = _UnitCache()  # shared with derived tables (same schema and views)
        self._chained: tuple[list[ScanUnit], list[ScanUnit]] | None = None
        super().__init__(namespace.schema, self._plan, name=name)

    @property
    def prunes_with_planner(self) -> bool:
        """True when pruning uses the planner (so :meth:`with_prune_filter` can add to it)."""
        return isinstance(self.prune, PlannerPrune)

    def with_prune_filter(self, sql: str) -> NamespaceTable:
        """This table, pruning also with ``sql`` (a filter the query's WHERE implies).

        The derived table reads the same namespace views (and counts into the
        same :attr:`metrics`); ``sql`` only narrows the partition tables
        selected, rows are filtered by the query as before. Used by the
        transform-term pass (:mod:`.transform_filters`) for predicates
        DataFusion does not push into a Python table.
        """
        if not self.prunes_with_planner:
            raise ValueError(f"{self.name}: prune filters need the planner pruning hook")
        base = self._base or self
        derived = NamespaceTable.__new__(NamespaceTable)
        derived.__dict__.update(base.__dict__)
        derived._last_columns = threading.local()
        derived._base = base
        derived.prune_filter = sql
        derived._planner = derived._plan
        return derived

    @property
    def namespace(self) -> PartitionedNamespace:
        """The namespace view the most recent scan used."""
        return self._namespace

    def _current(self) -> PartitionedNamespace:
        if self._base is not None:
            self._namespace = self._base._current()
            return self._namespace
        if not self.follow_latest:
            return self._namespace
        import lance

        with self._lock:
            if self._manifest_ds is None:
                self._manifest_ds = lance.dataset(
                    self._namespace.snapshot.uri, storage_options=self.storage_options
                )
            latest = self._manifest_ds.latest_version
            if latest != self._namespace.manifest_version:
                ns = PartitionedNamespace.open(
                    self.root, version=latest, storage_options=self.storage_options
                )
                _check_schema(self.name, self.schema, ns.schema, latest)
                ns.metrics = self.metrics
                ns.adopt_open_tables(self._namespace)
                self._namespace = ns
            return self._namespace

    def _plan(self, filter: pc.Expression | None) -> ScanPlan:
        ns = self._current()
        report: Any = None
        plan: Any = None
        skipped = by_key = 0  # tables skipped by column bounds / key filters (planning/)
        if isinstance(self.prune, PlannerPrune):
            plan = self.prune.plan(filter, self.prune_filter, ns)
            partitions = None if plan is None else plan.selected.column("object_id").to_pylist()
            if plan is not None:
                report = plan.report  # its SQL is printed by describe() only
                skipped = plan.skipped_by_bounds
                by_key = plan.skipped_by_key_filter
        else:
            partitions = self.prune(filter, ns) if self.prune is not None else None
        table_units = self._units.units(ns, partitions, self)
        proven = (
            proven_tables(plan, filter) if isinstance(self.prune, PlannerPrune) else frozenset()
        )
        if proven and self.prune_filter is None:
            units, table_units = without_proven_filter(
                table_units, proven, filter, self._chains, self._chain_anew
            )
        else:
            units = self._chains(table_units)

        n_proven = (
            len(table_units)
            if units and isinstance(units[0], ProvenFilterUnit)
            else sum(isinstance(u, ProvenFilterUnit) for u in table_units)
        )

        def describe() -> str:  # EXPLAIN only (ScanPlan computes it on first use)
            selected_ids = {getattr(u, "entry", u).object_id for u in table_units}
            totals = _version_totals(ns)
            pin = "latest" if self.follow_latest else "pinned"
            where = (
                "filter=none" if filter is None else f"filter={filter} (in each partition table)"
            )
            prune_sql = "" if self.prune_filter is None else f", prune_filter={self.prune_filter}"
            if isinstance(self.prune, PlannerPrune):  # why parts of the filter cannot prune
                prune_sql += pruning_note(plan, filter, self.prune_filter, ns, self.prune.schema)
            spec_filters = {} if report is None else {s.spec_id: s.filter_sql for s in report.specs}
            versions = spec_version_lines(selected_ids, totals, spec_filters)
            return (
                f"LanceNamespaceScan: table={self.name}, root={self.root}, "
                f"manifest_version={ns.manifest_version} ({pin}), "
                f"partition_tables={len(selected_ids)}/{sum(totals.values())}, "
                + (f"skipped_by_bounds={skipped}, " if skipped else "")
                + (f"skipped_by_key_filter={by_key}, " if by_key else "")
                + f"units={len(table_units)}, partitions={len(units)}, {where}{prune_sql}, "
                + (f"filter_proven_by_partition_values={n_proven}, " if n_proven else "")
                + f"spec_versions=[{'; '.join(versions)}]{_time_warnings(ns)}"
            )

        return ScanPlan(units, describe)

    def _chain_anew(self, table_units: list[ScanUnit]) -> list[ScanUnit]:
        """``table_units`` as balanced chains (never cached: the units are this query's)."""
        return chain_units(table_units, self.partitions, self.schema) or [EmptyUnit(self.schema)]

    def _chains(self, table_units: list[ScanUnit]) -> list[ScanUnit]:
        """``table_units`` as balanced chains; the same chains while the units are reused."""
        cached = self._chained
        if cached is not None and cached[0] is table_units:
            return cached[1]
        units = chain_units(table_units, self.partitions, self.schema) or [EmptyUnit(self.schema)]
        self._chained = (table_units, units)
        return units


#: (object_id, uri, read_version, read_branch, read_tag) of a partition table entry.
_PinKey = tuple[str, str, "int | None", "str | None", "str | None"]


def _pin(entry: PartitionTable) -> _PinKey:
    return (entry.object_id, entry.uri, entry.read_version, entry.read_branch, entry.read_tag)


class _UnitCache:
    """Scan units of the partition tables a :class:`NamespaceTable` has read, by pin.

    Units hold no per-scan state, so a query reuses the units (open datasets,
    column mappings, fragment splits) of every earlier query that read the
    same pins. Kept per namespace view; a new ``__manifest`` version carries
    over the units of tables it pins at the same version (a table read at
    latest or at a tag is planned again). Missing tables are opened
    concurrently (:func:`~lance_sql.tables.namespace.reader.open_many_for_read`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._view: PartitionedNamespace | None = None
        self._pins: dict[str, _PinKey] = {}
        self._by_pin: dict[_PinKey, list[ScanUnit]] = {}
        self._all: list[ScanUnit] | None = None
        #: object id -> (position in ``ns.tables()``, entry) of the current view
        self._order: dict[str, tuple[int, PartitionTable]] = {}

    def units(
        self,
        ns: PartitionedNamespace,
        partitions: Iterable[PartitionTable | str] | None,
        table: NamespaceTable,
    ) -> list[ScanUnit]:
        """Units of ``partitions`` (object ids or entries; all when None) in object id order."""
        pins, by_pin, every, order = self._for_view(ns)
        if partitions is None and every is not None:
            return every
        if partitions is not None:
            wanted = {p if isinstance(p, str) else p.object_id for p in partitions}
            unknown = wanted - pins.keys()
            if unknown:
                raise LanceSqlError(f"not partition tables of this namespace: {sorted(unknown)}")
            # object id order without a pass over every table of the view (a pruned
            # service query selects one of hundreds)
            entries = [order[oid][1] for oid in sorted(wanted, key=lambda o: order[o][0])]
        else:
            entries = ns.tables()
        missing = [e for e in entries if pins[e.object_id] not in by_pin]
        if missing:
            opened = open_many_for_read(missing, storage_options=table.storage_options)
            fresh = {
                pins[e.object_id]: partition_units(
                    e,
                    o,
                    table.schema,
                    rows_per_unit=table.rows_per_unit,
                    storage_options=table.storage_options,
                    metrics=table.metrics,
                )
                for e, o in zip(missing, opened, strict=True)
            }
            with self._lock:
                by_pin.update(fresh)
        out = [u for e in entries for u in by_pin[pins[e.object_id]]]
        if partitions is None:
            with self._lock:
                if self._view is ns:
                    self._all = out
        return out

    def _for_view(
        self, ns: PartitionedNamespace
    ) -> tuple[
        dict[str, _PinKey],
        dict[_PinKey, list[ScanUnit]],
        list[ScanUnit] | None,
        dict[str, tuple[int, PartitionTable]],
    ]:
        with self._lock:
            if self._view is ns:
                return self._pins, self._by_pin, self._all, self._order
        tables = ns.tables()
        pins = {e.object_id: _pin(e) for e in tables}
        order = {e.object_id: (i, e) for i, e in enumerate(tables)}
        keep = {k for k in pins.values() if k[2] is not None and not k[4]}
        with self._lock:
            if self._view is not ns:
                self._by_pin = {k: v for k, v in self._by_pin.items() if k in keep}
                self._pins = pins
                self._order = order
                self._all = None
                self._view = ns
            return self._pins, self._by_pin, self._all, self._order


_TOTALS_LOCK = threading.Lock()
_TOTALS: weakref.WeakKeyDictionary[PartitionedNamespace, dict[int | None, int]] = (
    weakref.WeakKeyDictionary()
)


def _version_totals(ns: PartitionedNamespace) -> dict[int | None, int]:
    """Partition tables per spec version of this namespace view (computed once per view)."""
    from lance_sql.tables.namespace.layout import spec_version_of

    with _TOTALS_LOCK:
        hit = _TOTALS.get(ns)
    if hit is not None:
        return hit
    totals: dict[int | None, int] = {}
    for t in ns.tables():
        v = spec_version_of(t.object_id)
        totals[v] = totals.get(v, 0) + 1
    with _TOTALS_LOCK:
        _TOTALS[ns] = totals
    return totals


def _time_warnings(ns: PartitionedNamespace) -> str:
    """``, warnings=[...]`` for time fields that prune no time range (EXPLAIN), else ``""``."""
    from lance_sql.tables.namespace.spec_text import time_partition_warnings

    found = time_partition_warnings(ns.current_spec, ns.schema)
    return f", warnings=[{'; '.join(found)}]" if found else ""


def spec_version_lines(
    selected: set[str], totals: Mapping[int | None, int], manifest_filters: Mapping[int, str]
) -> list[str]:
    """Per spec version: ``v{N}: selected/total, manifest_filter=...`` (EXPLAIN).

    ``totals`` counts the partition tables per version (None: an object id
    outside any ``v{N}$``); ``manifest_filters`` holds the planner's
    per-version partition predicate; a version without one (no pruning, or a
    version no spec describes) reads ``TRUE``.
    """
    from lance_sql.tables.namespace.layout import spec_version_of

    chosen: dict[int | None, int] = {}
    for object_id in selected:
        v = spec_version_of(object_id)
        chosen[v] = chosen.get(v, 0) + 1
    out = []
    for version in sorted(totals, key=lambda v: (v is None, v or 0)):
        label = "other" if version is None else f"v{version}"
        mf = manifest_filters.get(version, "TRUE") if version is not None else "TRUE"
        out.append(f"{label}: {chosen.get(version, 0)}/{totals[version]}, manifest_filter={mf}")
    return out


def _check_schema(name: str, registered: pa.Schema, now: pa.Schema, version: int) -> None:
    """Every registered column must still exist (by field id) with the same type."""
    by_id = {field_id_of(f): f for f in now}
    for f in registered:
        current = by_id.get(field_id_of(f))
        if current is None or not current.type.equals(f.type):
            raise SchemaMismatchError(
                f"{name}: namespace column {f.name!r} (field id {field_id_of(f)}) was dropped "
                f"or retyped in __manifest version {version}; register the namespace again"
            )


def register_namespace(
    ctx: Any,
    name: str,
    root: str | os.PathLike[str],
    *,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    prune: PruneHook | str | None = "planner",
    partitions: int | None = None,
) -> NamespaceTable | list[str]:
    """Register the directory namespace at ``root`` in DataFusion context ``ctx``.

    A partitioned namespace becomes table ``name`` (returns its
    :class:`NamespaceTable`); without ``version`` each query reads the latest
    ``__manifest`` as of planning, with one that version forever. A plain
    directory namespace becomes schema ``name`` holding one table per table of
    the namespace, named by object id (returns the table names). ``prune`` is
    the partition pruning hook: ``"planner"`` (default, :func:`planner_prune`),
    ``None`` (read every partition table) or a callable
    ``prune(filter, namespace) -> object ids | None``; ``partitions`` is the number of
    DataFusion partitions a scan is split into (default: CPU count).
    """
    root_s = root_uri(root)
    snapshot = read_manifest(root_s, version, storage_options=storage_options)
    try:
        parse_properties(snapshot.properties)
    except NotPartitionedError:
        return _register_directory(ctx, name, root_s, snapshot, storage_options, partitions)
    ns = PartitionedNamespace(root_s, snapshot, storage_options=storage_options, read_only=True)
    if prune == "planner":
        prune = PlannerPrune(ns.schema)
    elif isinstance(prune, str):
        raise ValueError(f"prune must be 'planner', None or a callable, got {prune!r}")
    provider = NamespaceTable(
        ns, name=name, follow_latest=version is None, prune=prune, partitions=partitions
    )
    if ctx.table_exist(name):
        ctx.deregister_table(name)
    ctx.register_table(name, provider)
    return provider


def _register_directory(
    ctx: Any,
    name: str,
    root: str,
    snapshot: Any,
    storage_options: Mapping[str, str] | None,
    partitions: int | None,
) -> list[str]:
    from datafusion.catalog import Schema

    entries = table_entries(snapshot.rows, root, [], partitions_only=False)
    schema = Schema.memory_schema()
    k = partitions or max(1, os.cpu_count() or 1)
    names = []
    for entry in entries:
        table = LanceTable.open(
            entry.uri, version=entry.read_version, storage_options=storage_options
        )
        schema.register_table(
            entry.object_id,
            LanceDatasetTable(table, name=f"{name}.{entry.object_id}", partitions=k),
        )
        names.append(entry.object_id)
    catalog = ctx.catalog()
    if name in catalog.schema_names():
        catalog.deregister_schema(name)
    catalog.register_schema(name, schema)
    return names


__all__ = [
    "EmptyUnit",
    "NamespaceTable",
    "PlannerPrune",
    "PruneHook",
    "plan_pruning",
    "planner_prune",
    "register_namespace",
    "spec_version_lines",
]
