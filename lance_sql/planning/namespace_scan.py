"""``plan_scan``: the one scan planner of a namespace (or of its root path).

Every entry point that reads a partitioned namespace gets its :class:`~.scan_plan.ScanPlan`
here: pruning over every spec version, column bounds, key filters, and the tables
whose partition values prove the whole filter (residual elimination).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import LanceSqlError, PlanningError, first_line
from lance_sql.planning import manifest_scan
from lance_sql.planning.planner import PartitionPlan, plan_partitions, to_predicate
from lance_sql.planning.scan_filter import ScanFilter
from lance_sql.planning.scan_plan import (
    PLAN_COLUMNS,
    PlannedPartition,
    ScanPlan,
    SpecVersionReport,
    partition_columns,
    planned_partitions,
)
from lance_sql.spec.predicates import and_

#: Errors that make the planner select every table (the reason is reported).
PLANNING_ERRORS = (LanceSqlError, NotImplementedError, ValueError, TypeError, pa.ArrowException)


def plan_scan(
    ns: Any,
    filter: Any = None,
    *,
    schema: pa.Schema | None = None,
    prune_filter: Any = None,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    failures: list[str] | None = None,
    pruning: bool = True,
) -> ScanPlan:
    """Plan a scan of ``ns`` (a ``PartitionedNamespace``, or its root path) for ``filter``.

    ``filter``: predicate IR, pyarrow expression or SQL text over ``schema`` (default:
    the namespace's). ``prune_filter`` narrows the selection only (implied by the
    caller's filter, not scanned). With a root path only the selected ``__manifest``
    rows are read, at ``version``. A filter that does not parse raises
    :class:`PlanningError`; with a ``failures`` list it is left out of pruning and the
    reason appended. ``pruning=False`` selects every table, keeping the scan filter.
    """
    if isinstance(ns, (str, os.PathLike)):
        return plan_scan_at(ns, filter, version=version, storage_options=storage_options)
    schema = schema or ns.schema
    dropped: list[str] = []  # parts left out of pruning, and why (EXPLAIN)
    preds = []
    scan_filter = None
    for f, scans in ((filter, True), (prune_filter, False)):
        if f is None:
            continue
        try:
            pred = to_predicate(f, schema)
        except PLANNING_ERRORS as e:
            if failures is None:
                raise PlanningError(f"scan filter {f!s} cannot be planned: {e}") from e
            dropped.append(f"{f}: {first_line(e)}")
            continue
        preds.append(pred)
        if scans and failures is None:
            scan_filter = ScanFilter.of(f, pred, schema)
        elif scans:  # an engine applies its own filter: the shippable form only on demand
            scan_filter = functools.partial(ScanFilter.of, f, pred, schema)
    plan = _plan_namespace(ns, preds if pruning else [], schema, scan_filter, dropped)
    if failures is not None:
        failures.extend(dropped)
    if dropped:
        plan.extra["not_used_for_pruning"] = dropped
    return plan


def _plan_namespace(
    ns: Any, preds: list[Any], schema: pa.Schema, scan_filter: Any, dropped: list[str]
) -> ScanPlan:
    if not preds:
        return _everything(ns, scan_filter)
    try:  # vectorised over the in-memory __manifest rows; no per-partition Python
        sel = plan_partitions(
            and_(*preds),
            ns.specs,
            schema,
            ns.snapshot.rows,
            root=str(ns.root),
            storage_options=ns.storage_options,
        )
    except PLANNING_ERRORS as e:
        dropped.append(f"the planner failed: {first_line(e)}")
        return _everything(ns, scan_filter, reason=str(e))
    return _from_selection(sel, str(ns.root), ns.manifest_version, ns.specs, scan_filter)


def plan_scan_at(
    root: str | os.PathLike[str],
    filter: Any,
    *,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> ScanPlan:
    """:func:`plan_scan` of the namespace at ``root``, reading only the rows it selects."""
    from lance_sql.tables.namespace.layout import root_uri
    from lance_sql.tables.namespace.manifest_fragments import root_properties
    from lance_sql.tables.namespace.namespace import parse_properties

    ds = manifest_scan.open_manifest(root, version, storage_options=storage_options)
    schema, specs = parse_properties(root_properties(ds))
    try:
        pred = to_predicate(filter, schema)
    except PLANNING_ERRORS as e:
        raise PlanningError(f"scan filter {filter!s} cannot be planned: {e}") from e
    cols = [*PLAN_COLUMNS, *partition_columns(specs)]
    sel = manifest_scan.plan_manifest(
        ds, pred, specs, schema, columns=cols, root=root_uri(root), storage_options=storage_options
    )
    scan_filter = None if filter is None else ScanFilter.of(filter, pred, schema)
    return _from_selection(sel, root_uri(root), ds.version, specs, scan_filter)


def _from_selection(
    sel: PartitionPlan,
    root: str,
    manifest_version: int,
    specs: Mapping[int, Any],
    scan_filter: ScanFilter | None,
) -> ScanPlan:
    """The plan of the planner's selection; renderings and partition objects on first use."""
    rep = sel.report

    def ids() -> list[str]:
        col = sel.selected.column("object_id")
        return pc.take(col, pc.sort_indices(col)).to_pylist()

    return ScanPlan(
        root=root,
        manifest_version=manifest_version,
        partitions=lambda: planned_partitions(sel.selected, partition_columns(specs)),
        total_partitions=rep.total,
        specs=rep.specs,
        manifest_filter=lambda: rep.manifest_filter_sql,
        scan_filter=scan_filter,
        skipped_by_bounds=sel.skipped_by_bounds,
        skipped_by_key_filter=sel.skipped_by_key_filter,
        proven=sel.proven_object_ids(),
        selection=sel,
        object_ids=ids,
    )


def _everything(ns: Any, scan_filter: ScanFilter | None, reason: str | None = None) -> ScanPlan:
    """Every partition table selected: no filter, or none the planner could use."""

    @functools.cache
    def parts() -> tuple[PlannedPartition, ...]:
        return planned_partitions(ns.partitions(), partition_columns(ns.specs))

    def everything() -> tuple[SpecVersionReport, ...]:
        versions = [p.spec_version for p in parts()]
        return tuple(
            SpecVersionReport(v, "TRUE", versions.count(v), versions.count(v))
            for v in sorted(ns.specs)
        )

    return ScanPlan(
        root=str(ns.root),
        manifest_version=ns.manifest_version,
        partitions=parts,
        total_partitions=lambda: len(ns.tables()),
        specs=everything,
        pruned=reason is None,
        reason=reason,
        scan_filter=scan_filter,
        selects_all=True,
    )
