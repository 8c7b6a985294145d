"""DataFusion tables over directory namespaces.

A partitioned namespace is one :class:`NamespaceTable`: each scan node pins one
``__manifest`` version, prunes, and reads each partition table at the version it
pins. A plain directory namespace is a schema of its tables
(``name."object_id"``).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion.namespace_plans import (
    PlannerPrune,
    ProvenFilterUnit,
    PruneHook,
    proven_tables,
    without_proven_filter,
)
from lance_sql.engines.datafusion.provider import ScanUnitDataset
from lance_sql.engines.datafusion.sql_evaluation import inside_datafusion
from lance_sql.errors import LanceSqlError, SchemaMismatchError
from lance_sql.planning.scan_plan import ScanPlan
from lance_sql.spec.arrow_json import field_id_of
from lance_sql.spec.predicates import NULL_BOOL, And, Not, Or, Predicate, Unsupported, to_sql
from lance_sql.tables.chain import ChainedUnit, chain_units
from lance_sql.tables.dataset_cache import open_all
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.reader import PartitionTable, open_for_read, partition_units
from lance_sql.tables.scan import ScanMetrics, ScanUnit

#: (object_id, uri, read_version, read_branch, read_tag) of a partition table entry.
_PinKey = tuple[str, str, "int | None", "str | None", "str | None"]


#: Cached pins kept at least, before pins a new view no longer has are dropped.
STALE_PINS_MIN = 1024


def _pin(entry: PartitionTable) -> _PinKey:
    return (entry.object_id, entry.uri, entry.read_version, entry.read_branch, entry.read_tag)


class _UnitCache:
    """Scan units of the partition tables a :class:`NamespaceTable` has read, by pin.

    Units hold no per-scan state, so queries reuse those of every earlier query that
    read the same pins; a table read at latest or at a tag is planned again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._view: PartitionedNamespace | None = None
        self._by_pin: dict[_PinKey, list[ScanUnit]] = {}
        #: pins read at latest or at a tag: planned again for each view
        self._unpinned: set[_PinKey] = set()
        self._all: list[ScanUnit] | None = None

    def units(
        self,
        ns: PartitionedNamespace,
        partitions: Iterable[PartitionTable | str] | None,
        table: Any,  # the NamespaceTable asking
    ) -> list[ScanUnit]:
        """Units of ``partitions`` (object ids or entries; all when None) in object id order."""
        by_pin, every = self._for_view(ns)
        if partitions is None and every is not None:
            return every
        if partitions is not None:
            # entries by bisection in the view's sorted tables: a pruned query selecting
            # one of 100,000s costs what it selects (its tables are in object id order)
            wanted = sorted({p if isinstance(p, str) else p.object_id for p in partitions})
            found = [ns.table_entry(oid) for oid in wanted]
            unknown = [oid for oid, e in zip(wanted, found, strict=True) if e is None]
            if unknown:
                raise LanceSqlError(f"not partition tables of this namespace: {unknown}")
            entries = [e for e in found if e is not None]
        else:
            entries = ns.tables()
        missing = [e for e in entries if _pin(e) not in by_pin]
        if missing:
            opts = table.storage_options
            opened = open_all(missing, lambda e: open_for_read(e, storage_options=opts))
            fresh = {
                _pin(e): partition_units(
                    e,
                    o,
                    table.schema,
                    rows_per_unit=table.rows_per_unit,
                    storage_options=table.storage_options,
                    metrics=table.metrics,
                    scan_options=table.scan_options,
                )
                for e, o in zip(missing, opened, strict=True)
            }
            with self._lock:
                by_pin.update(fresh)
                if by_pin is self._by_pin:
                    self._unpinned.update(k for k in fresh if k[2] is None or k[4])
        out = [u for e in entries for u in by_pin[_pin(e)]]
        if partitions is None:
            with self._lock:
                if self._view is ns:
                    self._all = out
        return out

    def _for_view(
        self, ns: PartitionedNamespace
    ) -> tuple[dict[_PinKey, list[ScanUnit]], list[ScanUnit] | None]:
        """The units by pin for view ``ns`` (a new view drops those of latest/tag reads)."""
        with self._lock:
            if self._view is ns:
                return self._by_pin, self._all
            for k in self._unpinned:
                self._by_pin.pop(k, None)
            self._unpinned = set()
            self._all = None
            self._view = ns
            by_pin = self._by_pin
        # (amortized: stale pins pile up; the tables listed only then: 1-3 ms at 100,000)
        if len(by_pin) > STALE_PINS_MIN and len(by_pin) > 2 * len(ns.tables()):
            live = {_pin(e) for e in ns.tables()}
            with self._lock:
                self._by_pin = {k: v for k, v in self._by_pin.items() if k in live}
                return self._by_pin, self._all
        return by_pin, None


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
        #: predicate (IR) over the namespace columns used for pruning only (never applied to rows)
        self.prune_filter: Predicate | None = None
        #: pylance scanner options of every partition table's scans (``register_namespace``)
        self.scan_options: dict[str, Any] | None = None
        self._base: NamespaceTable | None = None
        self._units = _UnitCache()  # shared with derived tables (same schema and views)
        super().__init__(namespace.schema, self._plan, name=name)

    @property
    def prunes_with_planner(self) -> bool:
        """True when pruning uses the planner (so :meth:`with_prune_filter` can add to it)."""
        return isinstance(self.prune, PlannerPrune)

    def with_prune_filter(self, pred: Predicate) -> NamespaceTable:
        """This table, also pruning with ``pred`` (implied by the WHERE); rows as before."""
        if not self.prunes_with_planner:
            raise ValueError(f"{self.name}: prune filters need the planner pruning hook")
        base = self._base or self
        derived = NamespaceTable.__new__(NamespaceTable)
        derived.__dict__.update(base.__dict__)
        derived._last_columns = threading.local()
        derived._base = base
        derived.prune_filter = pred
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

        manifest_ds = self._manifest_ds
        if manifest_ds is None:
            with self._lock:
                if self._manifest_ds is None:
                    self._manifest_ds = lance.dataset(
                        self._namespace.snapshot.uri, storage_options=self.storage_options
                    )
                manifest_ds = self._manifest_ds
        # the check itself outside the lock: concurrent queries do not queue behind its I/O
        if manifest_ds.latest_version == self._namespace.manifest_version:
            return self._namespace
        with self._lock:
            latest = manifest_ds.latest_version
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
        # DataFusion calls this from inside its runtime: SQL the planner or a pruning hook
        # evaluates runs on a thread of its own, the rest right here (no thread hop)
        with inside_datafusion():
            return self._plan_here(filter)

    def _plan_here(self, filter: pc.Expression | None) -> ScanPlan:
        ns = self._current()
        planner = self.prune if isinstance(self.prune, PlannerPrune) else None
        plan: ScanPlan | None = None
        if planner is not None:  # the scan planner (lance_sql.planning.namespace_scan)
            plan = planner.plan(filter, self.prune_filter, ns)
            partitions = None if plan.selects_all else plan.object_ids
        else:
            partitions = self.prune(filter, ns) if self.prune is not None else None
        table_units = self._units.units(ns, partitions, self)
        proven = proven_tables(plan, filter)
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
            return scan_line(self, ns, plan, filter, (table_units, units, n_proven))

        if plan is None:
            return ScanPlan.of_units(units, describe)
        return plan.with_units(units, describe)

    def _chain_anew(self, table_units: list[ScanUnit]) -> list[ScanUnit]:
        """``table_units`` as balanced chains, at least one (an empty one keeps a partition)."""
        chains = chain_units(table_units, self.partitions, self.schema)
        return chains or [ChainedUnit([], self.schema)]

    def _chains(self, table_units: list[ScanUnit]) -> list[ScanUnit]:
        """``table_units`` as balanced chains; the same chains while the units are reused."""
        return self._reused(table_units, self._chain_anew)


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
    totals = Counter(spec_version_of(t.object_id) for t in ns.tables())
    with _TOTALS_LOCK:
        _TOTALS[ns] = totals
    return totals


def _time_warnings(ns: PartitionedNamespace) -> str:
    """``, warnings=[...]`` for time fields that prune no time range (EXPLAIN), else ``""``."""
    from lance_sql.spec.transforms.spec_text import time_partition_warnings

    found = time_partition_warnings(ns.current_spec, ns.schema)
    return f", warnings=[{'; '.join(found)}]" if found else ""


def spec_version_lines(
    selected: set[str], totals: Mapping[int | None, int], manifest_filters: Mapping[int, str]
) -> list[str]:
    """Per spec version: ``v{N}: selected/total, manifest_filter=...`` (``TRUE``: none)."""
    from lance_sql.tables.namespace.layout import spec_version_of

    chosen = Counter(spec_version_of(object_id) for object_id in selected)
    out = []
    for version in sorted(totals, key=lambda v: (v is None, v or 0)):
        label = "other" if version is None else f"v{version}"
        mf = manifest_filters.get(version, "TRUE") if version is not None else "TRUE"
        out.append(f"{label}: {chosen[version]}/{totals[version]}, manifest_filter={mf}")
    return out


def scan_line(
    table: Any,
    ns: PartitionedNamespace,
    plan: Any,
    filter: pc.Expression | None,
    units: tuple[Sequence[Any], Sequence[Any], int],
) -> str:
    """The EXPLAIN line of one scan of namespace ``table`` (``plan`` None: a custom hook)."""
    table_units, partitions, n_proven = units
    selected_ids = {getattr(u, "entry", u).object_id for u in table_units}
    totals = _version_totals(ns)
    pin = "latest" if table.follow_latest else "pinned"
    where = "filter=none" if filter is None else f"filter={filter} (in each partition table)"
    shown = "" if table.prune_filter is None else to_sql(table.prune_filter)
    prune_sql = shown and f", prune_filter={shown}"
    spec_filters = {}
    if plan is not None:  # why parts of the filter cannot prune
        prune_sql += pruning_note(plan, filter, table.prune_filter)
        if plan.selection is not None:
            spec_filters = {s.spec_version: s.manifest_filter for s in plan.specs}
    versions = spec_version_lines(selected_ids, totals, spec_filters)
    skipped = 0 if plan is None else plan.skipped_by_bounds
    by_key = 0 if plan is None else plan.skipped_by_key_filter
    return (
        f"LanceNamespaceScan: table={table.name}, root={table.root}, "
        f"manifest_version={ns.manifest_version} ({pin}), "
        f"partition_tables={len(selected_ids)}/{sum(totals.values())}, "
        + (f"skipped_by_bounds={skipped}, " if skipped else "")
        + (f"skipped_by_key_filter={by_key}, " if by_key else "")
        + f"units={len(table_units)}, partitions={len(partitions)}, {where}{prune_sql}, "
        + (f"filter_proven_by_partition_values={n_proven}, " if n_proven else "")
        + f"spec_versions=[{'; '.join(versions)}]{_time_warnings(ns)}"
    )


def pruning_note(plan: Any, filter: pc.Expression | None, prune_filter: Any) -> str:
    """``, not_used_for_pruning=[...]``, or ``""`` when the planner used everything.

    Pruning never fails a query: a filter part the planner cannot read selects every
    partition table. That must not happen silently: the note names each such part and why.
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
