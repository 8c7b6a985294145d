"""Planner API for the namespace layer: filter + specs + ``__manifest`` rows -> partitions.

Free of I/O on purpose: tables in, tables out. The namespace layer reads
``__manifest`` (all of it, or pre-filtered with :attr:`PartitionPlan.manifest_filter`
pushed into pylance), calls :func:`plan_partitions`, and scans each selected
partition table with that partition's residual filter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.planning.passes import prepare
from lance_sql.planning.pruning import (
    ManifestFilter,
    PruningReport,
    fully_proven,
    project_to_manifest,
    proofs,
    report,
    residuals_from_proofs,
    select_mask,
    spec_ids,
)
from lance_sql.spec.predicates import TRUE, Predicate
from lance_sql.tables.dataset_cache import OpenCache
from lance_sql.tables.namespace.manifest_fragments import table_versions
from lance_sql.tables.namespace.spec import PartitionSpec

FilterLike = Predicate | pc.Expression | str | None


def to_predicate(filter: FilterLike, schema: pa.Schema) -> Predicate:
    """Any accepted filter form -> a prepared predicate over the namespace schema."""
    if filter is None:
        return TRUE
    if isinstance(filter, str):
        from lance_sql.planning.sql_filter import parse_filter

        return parse_filter(filter, schema)
    if isinstance(filter, pc.Expression):
        from lance_sql.planning.substrait_filter import from_pyarrow

        return from_pyarrow(filter, schema)
    return prepare(filter, schema)


@dataclass(frozen=True)
class PartitionPlan:
    """Selected partition tables and, row for row, the filter still to apply to each."""

    predicate: Predicate
    manifest_filter: ManifestFilter
    selected: pa.Table
    residuals: tuple[Predicate, ...]
    report: PruningReport
    #: Partition tables the pruning selected whose column bounds prove no row matches
    #: (:mod:`.bounds`); they are not in ``selected``.
    skipped_by_bounds: int = 0
    #: Partition tables whose key filters (Bloom filters of indexed columns,
    #: :mod:`.key_filters`) rule out the predicate (not counted in ``skipped_by_bounds``).
    skipped_by_key_filter: int = 0

    def proven_object_ids(self) -> frozenset[str]:
        """Object ids of the selected tables whose partition values prove the whole predicate.

        Their residual is TRUE: every conjunct's strict projection holds for the
        table's stored partition values under the table's own spec version, so
        a scan of such a table needs no filter (residual elimination).
        """
        done = [i for i, r in enumerate(self.residuals) if r is TRUE or r == TRUE]
        if not done:
            return frozenset()
        return frozenset(self.selected.column("object_id").take(done).to_pylist())


def plan_partitions(
    filter: FilterLike,
    specs: dict[int, PartitionSpec],
    schema: pa.Schema,
    manifest_rows: pa.Table,
    *,
    root: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> PartitionPlan:
    """Prune ``manifest_rows`` (``__manifest`` rows: object_id, object_type, partition columns).

    Returns the partition-table rows that may hold matching rows, the residual
    predicate per selected row (TRUE where the partition's values prove the
    whole filter), and a :class:`PruningReport`. With the namespace ``root``, key
    filters of the tables may skip them too (reading the filter files, cached).
    """
    for name in ("object_id", "object_type"):
        if name not in manifest_rows.column_names:
            raise PlanningError(f"__manifest rows lack the {name!r} column")
    pred = to_predicate(filter, schema)
    mf = project_to_manifest(pred, specs, schema)
    selected, versions = _selection(manifest_rows, mf)
    return finish_plan(pred, mf, selected, versions, root=root, storage_options=storage_options)


#: per ``__manifest`` rows object (a service's current snapshots; held, so its ``id`` is
#: not reused while cached): the selection of each ``__manifest`` predicate
_SELECTIONS: OpenCache[tuple[pa.Table, OpenCache[tuple[pa.Table, np.ndarray]]]] = OpenCache(4)


def _selection(manifest_rows: pa.Table, mf: ManifestFilter) -> tuple[pa.Table, np.ndarray]:
    """(selected rows, spec version of every table row), cached per rows object and
    ``__manifest`` predicate: a service plans the same snapshot's rows again and again."""
    _, by_predicate = _SELECTIONS.get_or_open(
        id(manifest_rows), lambda: (manifest_rows, OpenCache(1024))
    )

    def select() -> tuple[pa.Table, np.ndarray]:
        versions = table_versions(manifest_rows)  # (carried from the previous version's rows)
        return manifest_rows.filter(pa.array(select_mask(manifest_rows, mf, versions))), versions

    return by_predicate.get_or_open(repr(mf.predicate), select)


def finish_plan(
    pred: Predicate,
    mf: ManifestFilter,
    selected: pa.Table,
    table_versions: np.ndarray,
    *,
    root: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> PartitionPlan:
    """Residuals and report for ``selected`` (rows passing ``mf``), vectorised.

    ``table_versions`` is the spec version of every partition table of the
    manifest (-1 for other rows), for the report's totals. Tables whose
    column bounds prove ``pred`` never TRUE are dropped from ``selected``, and with
    ``root``, those whose key filters do (counted there, not again as bounds').
    """
    from lance_sql.planning.bounds_skipping import skip_by_bounds
    from lance_sql.planning.key_filter_skipping import key_skip_mask

    # key filters first (vectorised), so bounds only test the tables they leave
    by_key_mask = key_skip_mask(pred, selected, root, storage_options)
    by_key = 0 if by_key_mask is None else int(by_key_mask.sum())
    selected, skipped = skip_by_bounds(pred, selected, by_key_mask)
    versions = spec_ids(selected)
    proven = proofs(selected, mf, versions)
    res = residuals_from_proofs(proven, mf)
    rep = report(mf, table_versions, versions, fully_proven(proven))
    return PartitionPlan(pred, mf, selected, tuple(res), rep, skipped, by_key)
