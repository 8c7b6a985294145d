"""``__manifest`` commits given only the rows that change, and what they carry forward.

An append knows exactly which rows of ``__manifest`` it changes: the rows of
the partition tables it re-pins and the rows it adds. :func:`commit_changed`
commits just those (plus the existing ancestors of added rows, which a commit
must touch, see :mod:`.manifest_commit`) without building or comparing every
row of the next version, so its cost does not grow with the number of
partitions. It returns None when the commit needs the whole table (nothing
cached for the version written on, a top-level row, duplicate ids); the
caller then commits the full rows with :func:`.manifest_table.commit_rows`.

"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.namespace.manifest_commit import (
    Change,
    _unique,
    apply_change,
    carry_entries,
    open_base,
)
from lance_sql.tables.namespace.manifest_fragments import Committed


@dataclass
class RowChanges:
    """Changes of existing ``__manifest`` rows a write commits with its own rows (those of a
    :class:`.mutation.Mutation`: row deletes re-pin tables, overwrites drop them)."""

    rows: pa.Table  # the rows of the re-pinned tables, with their new pins and bounds
    dropped: set[str]  # object ids of the rows removed
    entries: dict[str, Any]  # object id -> its entry now (re-pinned; None: dropped)
    apply: Callable[[pa.Table], pa.Table]  # all rows of a version -> with these changes
    properties: dict[str, str] = field(default_factory=dict)  # root properties set too


def plan_delta(base: Committed, changed: pa.Table, removed: Collection[str] = ()) -> Change | None:
    """The :class:`Change` that replaces or adds the rows of ``changed`` (by object id) in
    ``base`` and removes the rows of ``removed``; None when ids are not unique (the
    full-row path decides)."""
    old_ids = base.rows.column("object_id")
    if "unique" not in base.facts:
        base.facts["unique"] = _unique(old_ids)  # once per cached version, then carried
    new_ids = changed.column("object_id")
    if not base.facts["unique"] or not _unique(new_ids):
        return None
    ids = new_ids.to_pylist()
    hit = _positions(old_ids, ids)
    found = set(old_ids.take(pa.array(hit, pa.int64())).to_pylist())
    top_level = False
    ancestors: set[str] = set()
    for oid in ids:
        if oid in found:
            continue
        parts = oid.split("$")
        top_level = top_level or len(parts) == 1
        ancestors.update("$".join(parts[:i]) for i in range(1, len(parts)))
    ancestors -= set(ids)  # (an ancestor written anyway, or added too)
    keep = np.ones(base.rows.num_rows, bool)
    keep[hit] = False
    keep[_positions(old_ids, sorted(set(removed) - set(ids)))] = False
    write = changed
    if ancestors:  # existing ancestors of added rows: rewritten as they are
        up = _positions(old_ids, sorted(ancestors))
        keep[up] = False
        touched = base.rows.take(pa.array(up, pa.int64()))
        write = pa.concat_tables([touched.cast(changed.schema), changed])
    return Change(keep, write, top_level, unique_after=True)


def _positions(ids: pa.ChunkedArray, wanted: list[str]) -> np.ndarray:
    """Positions in ``ids`` of the values of ``wanted`` (a few), in row order."""
    if not wanted:
        return np.zeros(0, np.int64)
    mask = pc.is_in(ids, value_set=pa.array(wanted, pa.utf8()))
    return np.flatnonzero(mask.to_numpy(zero_copy_only=False))


def commit_changed(
    snapshot: Any,
    changed: pa.Table,
    removed: Collection[str] = (),
    *,
    storage_options: Mapping[str, str] | None = None,
) -> Any | None:
    """Commit the rows ``changed`` (re-pinned and new rows, ``__manifest``'s own schema)
    and the removal of the rows of object ids ``removed`` on ``snapshot`` as one
    ``Update``; the new :class:`.ManifestSnapshot`, or None when the commit needs the
    full rows. Raises CommitConflictError as ``commit_rows`` does."""
    from lance_sql.tables.namespace.manifest_table import (
        DATASET,
        _conflicts,
        _snapshot,
        conform_rows,
    )

    if not (changed.num_rows or removed) or not snapshot.identity:
        return None  # (no identity: rows changed in memory, e.g. a mutation's drops)
    with _conflicts(snapshot.uri, snapshot.version):
        changed = conform_rows(changed, snapshot.lance_schema)
        opened = open_base(
            snapshot.uri,
            snapshot.version,
            changed.schema,
            snapshot.properties,
            storage_options,
            snapshot.derived.get(DATASET),
        )
        if opened is None:
            return None
        base, ds = opened
        change = plan_delta(base, changed, removed)
        if change is None or change.top_level_add:
            return None
        done = apply_change(snapshot.uri, ds, base, snapshot.version, change, storage_options)
    snap = _snapshot(snapshot.root, done, storage_options)
    carry_entries(snapshot, snap)
    return snap


__all__ = ["RowChanges", "commit_changed", "plan_delta"]
