"""The ``LanceNamespaceScan:`` line a namespace scan adds to EXPLAIN.

Pruning never fails a query: a filter part the planner cannot read selects every
partition table. That must not happen silently, so the line ends with
``not_used_for_pruning=[...]`` naming each such part and why.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow.compute as pc

from lance_sql.spec.predicates import NULL_BOOL, And, Not, Or, Predicate, Unsupported, to_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

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
    """``, not_used_for_pruning=[...]``, or ``""`` when the planner used everything."""
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
