"""Filter + specs + ``__manifest`` rows -> selected partitions and their residual filters.

The caller reads ``__manifest``; with the namespace root, key filter files are read too.
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
    #: selected by pruning, then skipped (not in ``selected``) by column bounds / key filters
    skipped_by_bounds: int = 0
    skipped_by_key_filter: int = 0

    def proven_object_ids(self) -> frozenset[str]:
        """Object ids of the selected tables whose partition values prove the whole predicate
        (residual TRUE: their scans need no filter)."""
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

    Returns the partition-table rows that may hold matching rows, the residual per
    selected row (TRUE where the partition values prove the filter) and a report. With
    the namespace ``root``, the tables' key filters may skip them too.
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
    """(selected rows, spec version of every table row), cached per rows object and predicate."""
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
    """Residuals and report for ``selected`` (rows passing ``mf``), without the tables
    column bounds or (with ``root``) key filters prove empty; ``table_versions``: the
    spec version of every manifest row (-1: not a partition table), for the totals."""
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
