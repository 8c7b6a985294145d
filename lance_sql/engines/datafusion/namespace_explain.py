"""The per-spec-version lines a namespace scan adds to EXPLAIN (selected / total tables)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping

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
    totals: dict[int | None, int] = {}
    for t in ns.tables():
        v = spec_version_of(t.object_id)
        totals[v] = totals.get(v, 0) + 1
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
