"""``__manifest`` commits given only the rows that change.

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

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from lance_sql.tables.namespace.manifest_commit import (
    Change,
    base_unique,
    carry_entries,
    commit_update,
    positions,
    unique,
    with_ancestors,
)
from lance_sql.tables.namespace.manifest_fragments import Committed


def plan_delta(base: Committed, changed: pa.Table) -> Change | None:
    """The :class:`Change` that replaces or adds the rows of ``changed`` (by object id) in
    ``base``, every other row kept; None when ids are not unique (the full-row path
    decides)."""
    old_ids = base.rows.column("object_id")
    new_ids = changed.column("object_id")
    if not base_unique(base) or not unique(new_ids):
        return None
    ids = new_ids.to_pylist()
    hit = positions(old_ids, ids)
    found = set(old_ids.take(pa.array(hit, pa.int64())).to_pylist())
    keep = np.ones(base.rows.num_rows, bool)
    keep[hit] = False
    return with_ancestors(base, keep, changed, [oid for oid in ids if oid not in found])


def commit_changed(
    snapshot: Any, changed: pa.Table, *, storage_options: Mapping[str, str] | None = None
) -> Any | None:
    """Commit the rows ``changed`` (re-pinned and new rows, ``__manifest``'s own schema) on
    ``snapshot`` as one ``Update``; the new :class:`.ManifestSnapshot`, or None when the
    commit needs the full rows. Raises CommitConflictError as ``commit_rows`` does."""
    from lance_sql.tables.namespace.manifest_table import _conflicts, _snapshot, conform_rows

    if not changed.num_rows or not snapshot.identity:
        return None  # (no identity: rows changed in memory, e.g. a mutation's drops)
    uri, version = snapshot.uri, snapshot.version
    with _conflicts(uri, version):
        changed = conform_rows(changed, snapshot.lance_schema)
        props = snapshot.properties
        done = commit_update(uri, version, changed, storage_options, props, plan=plan_delta)
    if done is None:
        return None
    snap = _snapshot(snapshot.root, done, storage_options)
    carry_entries(snapshot, snap)
    return snap


__all__ = ["commit_changed", "plan_delta"]
