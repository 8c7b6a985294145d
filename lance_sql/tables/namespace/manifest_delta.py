"""``__manifest`` commits given only the rows that change (their cost follows the change,
not the number of partitions), falling back to all rows when the commit needs them."""

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
    unique,
    with_ancestors,
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
    """The :class:`Change` replacing or adding the rows of ``changed`` (by object id) in
    ``base`` and removing those of ``removed``; None when ids are not unique."""
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
    """Commit rows ``changed`` (re-pinned and new) and the removal of object ids ``removed``
    as one ``Update``; None when the commit needs all rows (raises as ``commit_rows``)."""
    from lance_sql.tables.namespace.manifest_table import commit_update_rows

    if not (changed.num_rows or removed) or not snapshot.identity:
        return None  # (no identity: rows changed in memory, e.g. a mutation's drops)
    return commit_update_rows(
        snapshot,
        changed,
        snapshot.properties,
        storage_options,
        plan=lambda base, rows: plan_delta(base, rows, removed),
    )


def commit_delta_or_rows(
    snapshot: Any,
    changed: pa.Table | None,
    removed: Collection[str],
    all_rows: Callable[[], pa.Table],
    properties: Mapping[str, str] | None,
    storage_options: Mapping[str, str] | None,
) -> Any:
    """:func:`commit_changed` when there are no new root ``properties``, else (or when it
    cannot) all rows ``all_rows()``; ``changed`` None: all rows only."""
    from lance_sql.tables.namespace.manifest_table import commit_rows

    if changed is not None and not properties:
        snap = commit_changed(snapshot, changed, removed, storage_options=storage_options)
        if snap is not None:
            return snap
    return commit_rows(
        snapshot, all_rows(), properties=properties or None, storage_options=storage_options
    )
