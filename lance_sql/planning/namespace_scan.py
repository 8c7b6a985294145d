"""``plan_scan``: the scan plan of a namespace (or of its root path) for a filter."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lance_sql.errors import LanceSqlError, PlanningError
from lance_sql.planning import manifest_scan
from lance_sql.planning.planner import plan_partitions, to_predicate
from lance_sql.planning.scan_filter import ScanFilter
from lance_sql.planning.scan_plan import _BASE, PlannedPartition, ScanPlan, SpecVersionReport
from lance_sql.spec.predicates import to_sql


def _partition(row: Mapping[str, Any], value_cols: Sequence[str]) -> PlannedPartition:
    values = tuple((c, row[c]) for c in value_cols if row.get(c) is not None)
    return PlannedPartition(
        object_id=row["object_id"],
        location=row["location"],
        spec_version=row["spec_version"],
        read_version=row["read_version"],
        read_branch=row["read_branch"],
        read_tag=row["read_tag"],
        values=values,
    )


def _unpruned_versions(parts: pa.Table, specs: Mapping[int, Any]) -> tuple[SpecVersionReport, ...]:
    """Per spec version, every partition selected (a scan without pruning)."""
    versions = parts.column("spec_version").to_pylist()
    return tuple(
        SpecVersionReport(v, "TRUE", versions.count(v), versions.count(v)) for v in sorted(specs)
    )


def plan_scan(ns: Any, filter: Any = None) -> ScanPlan:
    """Prune ``ns`` (a ``PartitionedNamespace``) for ``filter`` (SQL text, pyarrow expression).

    ``ns`` may also be the namespace's root path: then only the ``__manifest``
    rows the filter selects are read (the filter runs inside the Lance scan,
    :func:`.manifest_scan.plan_scan_at`). A filter the planner cannot use
    selects every partition (``pruned`` False, with the reason); a filter that
    does not parse at all raises, naming the filter.
    """
    if isinstance(ns, (str, os.PathLike)):
        return manifest_scan.plan_scan_at(ns, filter)
    if filter is not None:
        try:
            pred = to_predicate(filter, ns.schema)
        except (LanceSqlError, NotImplementedError, ValueError, TypeError, pa.ArrowException) as e:
            raise PlanningError(f"scan filter {filter!s} cannot be planned: {e}") from e
        try:  # vectorised over the in-memory __manifest rows; no per-partition Python
            plan = plan_partitions(
                pred,
                ns.specs,
                ns.schema,
                ns.snapshot.rows,
                root=str(ns.root),
                storage_options=ns.storage_options,
            )
            return manifest_scan.scan_plan_from(
                plan,
                root=str(ns.root),
                manifest_version=ns.manifest_version,
                specs=ns.specs,
                scan_filter=ScanFilter.of(filter, pred, ns.schema),
            )
        except (LanceSqlError, NotImplementedError, ValueError, TypeError, pa.ArrowException):
            pass  # reported below, with every partition selected
    parts = ns.partitions()
    value_cols = [c for c in parts.column_names if c not in _BASE]
    total = parts.num_rows
    common = {"root": str(ns.root), "manifest_version": ns.manifest_version}
    everything = _unpruned_versions(parts, ns.specs)
    if filter is None:
        rows = parts.to_pylist()
        return ScanPlan(
            **common,
            partitions=tuple(_partition(r, value_cols) for r in rows),
            total_partitions=total,
            specs=everything,
        )
    try:
        pred = to_predicate(filter, ns.schema)
    except (LanceSqlError, NotImplementedError, ValueError, TypeError, pa.ArrowException) as e:
        raise PlanningError(f"scan filter {filter!s} cannot be planned: {e}") from e
    filter_sql = to_sql(pred)
    scan_filter = ScanFilter.of(filter, pred, ns.schema)
    try:
        manifest_rows = parts.append_column("object_type", pa.array(["table"] * total, pa.string()))
        plan = plan_partitions(pred, ns.specs, ns.schema, manifest_rows)
    except (LanceSqlError, NotImplementedError, ValueError, TypeError, pa.ArrowException) as e:
        return ScanPlan(
            **common,
            partitions=tuple(_partition(r, value_cols) for r in parts.to_pylist()),
            total_partitions=total,
            specs=everything,
            filter_sql=filter_sql,
            pruned=False,
            reason=str(e),
            scan_filter=scan_filter,
        )
    selected = plan.selected.to_pylist()
    rep = plan.report
    return ScanPlan(
        **common,
        partitions=tuple(_partition(r, value_cols) for r in selected),
        total_partitions=total,
        specs=tuple(
            SpecVersionReport(s.spec_id, s.filter_sql, s.selected, s.total, s.fully_matching)
            for s in rep.specs
        ),
        manifest_filter=rep.manifest_filter_sql,
        filter_sql=filter_sql,
        scan_filter=scan_filter,
        skipped_by_bounds=plan.skipped_by_bounds,
        skipped_by_key_filter=plan.skipped_by_key_filter,
        proven=plan.proven_object_ids(),
    )


__all__ = ["plan_scan"]
