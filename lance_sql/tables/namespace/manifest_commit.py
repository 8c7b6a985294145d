"""``__manifest`` commits that write only the rows they change.

A row change is one Lance ``Update`` against the version read. Lance resolves concurrent
``Update`` s by fragment, so a commit touches every row whose concurrent change would make
it wrong: the rows it changes or removes and the existing ancestors of every row it adds.
Details: docs/namespaces.md, "Commits and concurrent writers".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.namespace.layout import remove_quietly
from lance_sql.tables.namespace.manifest_fragments import (
    ADDR,
    Committed,
    carry_versions,
    few_chunks,
    find_state,
    fragment_keys,
    kept_rows,
    remember_state,
    root_properties,
    seed_overwrite,
    slices_of,
)

MIN_FRAGMENTS = 16  # a fold stops at this many fragments
FOLD_AT = 32  # a commit that would leave more fragments folds the newest ones
MAX_FRAGMENTS = 64  # beyond this many fragments a commit rewrites the newest ones anyway
MAX_MARKED = 4096  # rows of one fragment marked deleted by one commit before it is rewritten


def _same(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Per row: ``a`` and ``b`` hold the same value (NULL equals NULL), vectorized."""
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    b = b.combine_chunks() if isinstance(b, pa.ChunkedArray) else b
    null_a, null_b = np.asarray(pc.is_null(a)), np.asarray(pc.is_null(b))
    t = a.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        la = np.asarray(pc.fill_null(pc.list_value_length(a), -1))
        lb = np.asarray(pc.fill_null(pc.list_value_length(b), -1))
        out = (la == lb) & (null_a == null_b)
        rows = np.flatnonzero(out & ~null_a & (la > 0))
        if len(rows):
            fa, fb = a.take(pa.array(rows)), b.take(pa.array(rows))
            eq = _same(fa.flatten(), fb.flatten())
            parents = np.asarray(pc.list_parent_indices(fa))
            out[rows[np.unique(parents[~eq])]] = False
        return out
    if pa.types.is_nested(t) or pa.types.is_dictionary(t):
        out = null_a & null_b
        check = np.flatnonzero(~out)
        la, lb = a.take(check).to_pylist(), b.take(check).to_pylist()
        out[check] = [x == y for x, y in zip(la, lb, strict=True)]
        return out
    eq = np.asarray(pc.fill_null(pc.equal(a, b), False))
    return eq | (null_a & null_b)


@dataclass
class Change:
    """What one commit writes: rows to write, base rows kept, fragments removed (object
    ids are unique before and after: both planners refuse duplicate ids)."""

    keep: np.ndarray  # per base row: stays where it is
    write: pa.Table  # rows of the new fragment (rewritten, changed and new rows)
    top_level_add: bool


def unique(ids: pa.ChunkedArray | pa.Array) -> bool:
    return bool(pc.count_distinct(ids).as_py() == len(ids))


def _match(base: Committed, new_ids: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray] | None:
    """(matched, position in base) per row of ``new_ids``; None for duplicate ids."""
    old_ids = base.rows.column("object_id")
    if "unique" not in base.facts:  # (checked once per cached version, then carried)
        base.facts["unique"] = unique(old_ids)
    if not base.facts["unique"]:
        return None
    nb = len(old_ids)
    if len(new_ids) >= nb and pc.all(pc.equal(new_ids.slice(0, nb), old_ids)).as_py() in (
        True,
        None,
    ):  # the usual shape: the rows read, in order, then new ones
        extra = new_ids.slice(nb)
        if len(extra) and (not unique(extra) or pc.any(pc.is_in(extra, old_ids)).as_py()):
            return None
        matched = np.zeros(len(new_ids), bool)
        matched[:nb] = True
        return matched, np.concatenate([np.arange(nb), np.zeros(len(extra), np.int64)])
    if not unique(new_ids):
        return None
    idx = pc.index_in(new_ids, value_set=old_ids)
    return np.asarray(pc.is_valid(idx)), np.asarray(pc.fill_null(idx, 0)).astype(np.int64)


def plan_change(base: Committed, rows: pa.Table) -> Change | None:
    """The rows of ``rows`` (all rows of the next version) that differ from ``base``; None
    when the rows cannot be matched by object id (duplicate ids)."""
    new_ids = rows.column("object_id")
    got = _match(base, new_ids)
    if got is None:
        return None
    matched, pos = got
    same = matched.copy()
    if base.rows.num_rows and same.any():
        aligned = bool(matched[: base.rows.num_rows].all()) and np.array_equal(
            pos[: base.rows.num_rows], np.arange(base.rows.num_rows)
        )
        n = base.rows.num_rows if aligned else len(pos)
        taken = base.rows if aligned else base.rows.take(pa.array(pos))
        for name in rows.column_names:
            if not same.any():
                break
            same[:n] &= _same(rows.column(name).slice(0, n), taken.column(name).slice(0, n))
    else:
        same[:] = False
    keep = np.zeros(base.rows.num_rows, bool)
    keep[pos[same]] = True
    added = new_ids.filter(pa.array(~matched)).to_pylist()
    return with_ancestors(base, keep, rows.filter(pa.array(~same)), added)


def ancestors_of(object_ids: list[str]) -> set[str]:
    return {
        "$".join(p[:i]) for oid in object_ids for p in [oid.split("$")] for i in range(1, len(p))
    }


def with_ancestors(
    base: Committed,
    keep: np.ndarray,
    write: pa.Table,
    added: list[str],
    known: dict[str, int] | None = None,
) -> Change:
    """The change writing ``write`` with ``keep`` of ``base``'s rows staying, plus the kept
    existing ancestors of the ``added`` ids rewritten as they are (``known``: their
    positions in ``base``, when the caller looked them up)."""
    ancestors = sorted(ancestors_of(added))
    top_level = any("$" not in oid for oid in added)
    if known is None:
        at = positions(base.rows.column("object_id"), ancestors)
    else:
        at = np.array([known[a] for a in ancestors if a in known], np.int64)
    up = [int(i) for i in at if keep[i]]
    if up:
        keep[up] = False
        touched = base.rows.take(pa.array(up, pa.int64()))
        write = pa.concat_tables([touched.cast(write.schema), write])
    return Change(keep, write, top_level)


def positions(ids: pa.ChunkedArray, wanted: list[str]) -> np.ndarray:
    """Positions in ``ids`` of the values of ``wanted`` (a few), in row order."""
    if not wanted:
        return np.zeros(0, np.int64)
    mask = pc.is_in(ids, value_set=pa.array(wanted, pa.utf8()))
    return np.flatnonzero(mask.to_numpy(zero_copy_only=False))


def fragment_plan(
    base: Committed, change: Change
) -> tuple[list[int], dict[int, np.ndarray], np.ndarray]:
    """(fragments removed, base addresses to mark deleted per kept fragment, base rows
    rewritten into the new fragment) under the compaction policy of the module."""
    where = slices_of(base)
    order = [k[0] for k in base.frags if k[0] in where]
    removed: list[int] = []
    rewrite = np.zeros(len(change.keep), bool)
    marks: dict[int, np.ndarray] = {}
    live = {fid: int(change.keep[a:b].sum()) for fid, (a, b) in where.items()}
    for fid in order:
        a, b = where[fid]
        dead = (b - a) - live[fid]
        if live[fid] == 0:
            removed.append(fid)
        elif dead and (dead * 2 > b - a or dead > MAX_MARKED):
            removed.append(fid)
            rewrite[a:b] = change.keep[a:b]
    acc = change.write.num_rows + int(rewrite.sum())
    remaining = [fid for fid in order if fid not in set(removed)]
    folding = len(remaining) + 1 > FOLD_AT
    while folding and len(remaining) >= MIN_FRAGMENTS:
        fid = remaining[-1]
        if live[fid] > 2 * acc and len(remaining) + 1 <= MAX_FRAGMENTS:
            break
        remaining.pop()
        removed.append(fid)
        a, b = where[fid]
        rewrite[a:b] = change.keep[a:b]
        acc += live[fid]
    gone = set(removed)
    for fid in remaining:
        a, b = where[fid]
        if fid in gone or live[fid] == b - a:
            continue
        marks[fid] = base.addresses[a:b][~change.keep[a:b]]
    return removed, marks, rewrite


def commit_update(
    uri: str,
    base_version: int,
    rows: pa.Table,
    storage_options: Mapping[str, str] | None,
    properties: Mapping[str, str] | None = None,
    *,
    plan: Callable[[Committed, pa.Table], Change | None] = plan_change,
    ds: Any = None,
) -> Any | None:
    """Commit ``rows`` (all rows of the next version, or what ``plan`` expects) as an
    ``Update`` of ``base_version`` writing only what changed; the new dataset, or None when
    the table must be rewritten (a top-level row added, other columns or ``properties``).
    Raises pylance's commit conflict when a concurrent commit touched the same fragments."""
    opened = open_base(uri, base_version, rows.schema, properties, storage_options, ds)
    if opened is None:
        return None
    base, ds = opened
    change = plan(base, rows)
    if change is None or change.top_level_add:
        return None
    if change.write.num_rows == 0 and change.keep.all():
        return None  # nothing changes: (rare) the caller commits as before
    return apply_change(uri, ds, base, base_version, change, storage_options)


def open_base(
    uri: str,
    base_version: int,
    schema: pa.Schema,
    properties: Mapping[str, str] | None,
    storage_options: Mapping[str, str] | None,
    ds: Any = None,
) -> tuple[Committed, Any] | None:
    """(cached rows, open dataset) of ``base_version`` when a commit of rows of ``schema``
    with root ``properties`` can write only what changed, else None."""
    import lance

    base = find_state(uri, base_version)
    if base is None:
        return None
    opts = dict(storage_options) if storage_options else None
    if ds is None or ds.version != base_version:
        ds = lance.dataset(uri, version=base_version, storage_options=opts)
    if fragment_keys(ds) != base.frags or not schema.equals(ds.schema):
        return None
    if properties is not None and root_properties(ds) != dict(properties):
        return None  # new root properties: they go with the rows (an Overwrite)
    return base, ds


def apply_change(
    uri: str,
    ds: Any,
    base: Committed,
    base_version: int,
    change: Change,
    storage_options: Mapping[str, str] | None,
) -> Any:
    """Commit ``change`` of ``base`` (open as ``ds``) as one ``Update``; cache its rows."""
    import lance
    from lance.fragment import write_fragments

    opts = dict(storage_options) if storage_options else None
    removed, marks, rewrite = fragment_plan(base, change)
    moved = base.rows.filter(pa.array(rewrite)) if rewrite.any() else None
    write = pa.concat_tables([moved, change.write]) if moved is not None else change.write
    if write.num_columns and write.column(0).num_chunks > 1:  # (kept in the cached rows)
        write = write.combine_chunks()
    new_frags = (
        write_fragments(write, uri, schema=ds.schema, mode="append", storage_options=opts)
        if write.num_rows
        else []
    )
    updated = []
    for fid, addrs in marks.items():
        got = ds.get_fragment(fid).delete(f"{ADDR} IN ({','.join(map(str, addrs.tolist()))})")
        if got is None:
            removed.append(fid)
        else:
            updated.append(got)
    op = lance.LanceOperation.Update(
        removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new_frags
    )
    out = commit_or_discard(uri, op, base_version, opts, new_frags, updated, retries=5)
    if int(out.version) == base_version + 1:
        stay = change.keep & ~rewrite
        gone = set(removed)
        slices: dict[int, tuple[int, int]] = {}  # (the new state's row_slices)
        for fid, (a, b) in slices_of(base).items():
            if fid in gone:
                stay[a:b] = False
            n = int(np.count_nonzero(stay[a:b]))
            if n:
                at = len(slices) and next(reversed(slices.values()))[1]
                slices[fid] = (at, at + n)
        old = {k[0] for k in base.frags}
        new_ids = [f for f in out.get_fragments() if f.fragment_id not in old]
        arrays = [base.addresses[stay]]
        for f in new_ids:
            n = f.metadata.physical_rows
            at = len(slices) and next(reversed(slices.values()))[1]
            slices[f.fragment_id] = (at, at + n)
            arrays.append(
                (np.uint64(f.fragment_id) << np.uint64(32)) + np.arange(n, dtype=np.uint64)
            )
        kept = kept_rows(base.rows, stay)
        same = write.schema.equals(kept.schema, check_metadata=True)
        all_rows = few_chunks(pa.concat_tables([kept, write if same else write.cast(kept.schema)]))
        carry_versions(base.rows, all_rows, stay)
        addresses = np.concatenate(arrays)
        if len(addresses) == all_rows.num_rows:
            state = Committed(int(out.version), fragment_keys(out), all_rows, addresses)
            state.facts["slices"] = slices
            replaced = base.rows.column("object_id").filter(pa.array(~stay))
            state.facts["delta"] = (base_version, set(replaced.to_pylist()), write)
            if base.facts.get("unique"):  # (the planners add no duplicate id)
                state.facts["unique"] = True
            remember_state(uri, state)
    return out


def commit_overwrite(
    uri: str,
    schema: pa.Schema,
    rows: pa.Table,
    base_version: int,
    storage_options: Mapping[str, str] | None,
) -> Any:
    """Replace every row of ``__manifest`` (and its schema) in one ``Overwrite`` commit."""
    import lance
    from lance.fragment import write_fragments

    opts = dict(storage_options) if storage_options else None
    frags = (
        write_fragments(rows, uri, schema=schema, mode="overwrite", storage_options=opts)
        if rows.num_rows
        else []
    )
    op = lance.LanceOperation.Overwrite(schema, frags)
    ds = commit_or_discard(uri, op, base_version, opts, frags, [])
    seed_overwrite(uri, ds, rows)
    return ds


def commit_or_discard(
    uri: str,
    op: Any,
    base_version: int,
    opts: Any,
    written: list[Any],
    marked: list[Any],
    retries: int = 0,
) -> Any:
    """Commit ``op``; when pylance refuses it (nothing was committed), delete the files this
    attempt wrote, so a retry leaves no orphan. ``retries``: pylance's retries after losing
    a race for the version number (an ``Update`` touching a fragment a concurrent commit
    touched is refused, never merged)."""
    import lance
    from lance.commit import CommitConflictError as LanceConflict

    try:
        return lance.LanceDataset.commit(
            uri, op, read_version=base_version, storage_options=opts, max_retries=retries
        )
    except LanceConflict:
        _discard(uri, written, marked, opts)
        raise


def _discard(uri: str, written: list[Any], marked: list[Any], opts: Any) -> None:
    paths = [f"data/{f.path}" for frag in written for f in frag.files]
    paths += [m.deletion_file.path(m.id) for m in marked if m.deletion_file is not None]
    remove_quietly(uri, paths, opts)
