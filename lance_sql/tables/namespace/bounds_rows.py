"""Column bounds in ``__manifest`` rows, re-tied when a row operation moves a table.

A table version holding a subset of the pinned version's rows (row deletes,
compaction, index changes) keeps its bounds (:func:`carried_forward`); a new
key filter is pointed to from the bounds (:func:`with_key_filters`). The
bounds themselves: :mod:`.bounds`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.namespace import key_filters as kf
from lance_sql.tables.namespace.bounds import TableBounds, bounds_of_metadata, usable, with_bounds


def carried_forward(rows: pa.Table, moves: Mapping[str, tuple[int | None, int]]) -> pa.Table:
    """``rows`` (``__manifest`` rows) whose tables in ``moves`` (object_id -> (pinned, new
    version), the new holding a subset of the rows) keep their bounds, re-tied to the new
    version; bounds not usable for the old version stay unusable."""

    def moved(oid: str, b: TableBounds | None, branch: Any, tag: Any, loc: Any) -> Any:
        old, new = moves[oid]
        # bounds usable for the old version, re-tied to the new (columns and key filters kept)
        return (
            replace(b, version=new) if b is not None and usable(b, old, branch, tag, loc) else None
        )

    return _rebound(rows, moves, moved)


def with_key_filters(
    rows: pa.Table, added: Mapping[str, tuple[int, Mapping[int, kf.KeyFilterRef]]]
) -> pa.Table:
    """``rows`` whose tables in ``added`` (object_id -> (version, refs)) point to more filters
    (a table without usable bounds gets bounds holding only the refs)."""

    def pointed(oid: str, b: TableBounds | None, branch: Any, tag: Any, loc: Any) -> Any:
        if branch or tag:
            return None
        version, refs = added[oid]
        if b is None or not usable(b, version, branch, tag, loc):
            b = TableBounds(version, branch, loc, {})
        return TableBounds(version, branch, loc, b.columns, {**b.key_filters, **refs})

    return _rebound(rows, added, pointed)


def _rebound(
    rows: pa.Table,
    object_ids: Mapping[str, Any],
    new_bounds: Callable[[str, TableBounds | None, Any, Any, Any], TableBounds | None],
) -> pa.Table:
    """``rows`` whose tables in ``object_ids`` get the bounds ``new_bounds(object_id,
    current bounds, read_branch, read_tag, location)`` returns (None: left as they are)."""
    if not object_ids or "metadata" not in rows.column_names:
        return rows
    mask, sub = touched_rows(rows, object_ids)
    oids = sub.column("object_id").to_pylist()
    meta = sub.column("metadata").to_pylist()
    cols = {c: sub.column(c).to_pylist() for c in ("read_branch", "read_tag", "location")}
    for i, oid in enumerate(oids):
        b = new_bounds(
            oid,
            bounds_of_metadata(meta[i]),
            cols["read_branch"][i],
            cols["read_tag"][i],
            cols["location"][i],
        )
        if b is not None:
            meta[i] = with_bounds(meta[i], b)
    return set_metadata(rows, mask, meta)


def touched_rows(rows: pa.Table, object_ids: Iterable[str]) -> tuple[pa.Array, pa.Table]:
    """(mask, the masked rows in order) of the ``__manifest`` rows of ``object_ids``."""
    ids = pa.array(sorted(set(object_ids)), pa.utf8())
    mask = pc.is_in(rows.column("object_id"), value_set=ids).combine_chunks()
    return mask, rows.filter(mask)


def set_metadata(rows: pa.Table, mask: pa.Array, values: list[str | None]) -> pa.Table:
    """``rows`` with the ``metadata`` of the masked rows replaced, in order, by ``values``."""
    at = rows.schema.get_field_index("metadata")
    col = rows.column(at).combine_chunks()
    new = pc.replace_with_mask(col, mask, pa.array(values, col.type))
    return rows.set_column(at, rows.schema.field(at), new)
