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

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.namespace.manifest_commit import (
    Change,
    ancestors_of,
    commit_update,
    unique,
    with_ancestors,
)
from lance_sql.tables.namespace.manifest_fragments import Committed, carry_entries


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
    ``base`` and removes the rows of ``removed``, every other row kept; None when the ids
    changed or removed are not unique in either (the full-row path decides). Only the
    rows of those ids are looked at: the cost follows the change."""
    new_ids = changed.column("object_id")
    if not unique(new_ids):
        return None
    ids = new_ids.to_pylist()
    gone = sorted(set(removed) - set(ids))
    wanted = [*ids, *gone, *sorted(ancestors_of(ids) - set(ids) - set(gone))]
    # one pass over the ids of base: the rows of those ids, in row order
    old_ids = base.rows.column("object_id")
    mask = pc.is_in(old_ids, value_set=pa.array(wanted, pa.utf8()))
    at = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    found = dict(zip(old_ids.filter(mask).to_pylist(), at.tolist(), strict=True))
    if len(found) != len(at):
        return None  # an id on several rows
    keep = np.ones(base.rows.num_rows, bool)
    keep[[found[oid] for oid in (*ids, *gone) if oid in found]] = False
    added = [oid for oid in ids if oid not in found]
    return with_ancestors(base, keep, changed, added, found)


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
    uri, version = snapshot.uri, snapshot.version
    with _conflicts(uri, version):
        changed = conform_rows(changed, snapshot.lance_schema)
        done = commit_update(
            uri,
            version,
            changed,
            storage_options,
            snapshot.properties,
            plan=lambda base, rows: plan_delta(base, rows, removed),
            ds=snapshot.derived.get(DATASET),
        )
    if done is None:
        return None
    snap = _snapshot(snapshot.root, done, storage_options)
    carry_entries(snapshot, snap)
    return snap
