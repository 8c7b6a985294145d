"""Deriving table locations for a ``__manifest`` without a ``location`` column: the one
directory named ``{8 hex}_{object_id}``, ``{object_id}.lance`` or ``{object_id}``; none or
several raise :class:`FormatError` (a guess could read another table's data)."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pyarrow as pa

from lance_sql.errors import FormatError
from lance_sql.format.storage import resolve

_HEX_PREFIX = re.compile(r"^[0-9a-f]{8}_(.+)$")


def derive_locations(
    root: str,
    rows: pa.Table,
    *,
    manifest: str,
    storage_options: Mapping[str, str] | None = None,
) -> pa.Array:
    """The ``location`` of every row of ``rows`` (NULL for namespace rows)."""
    kinds = rows.column("object_type").to_pylist()
    oids = rows.column("object_id").to_pylist()
    if "table" not in kinds:
        return pa.nulls(rows.num_rows, pa.utf8())
    loc = resolve(root, storage_options)
    names = [
        str(p).rstrip("/").rsplit("/", 1)[-1]
        for p in loc.fs.ls(loc.path, detail=False)
        if loc.fs.isdir(p)
    ]
    candidates: dict[str, list[str]] = {}
    for name in names:
        m = _HEX_PREFIX.match(name)
        keys = {name, name[: -len(".lance")] if name.endswith(".lance") else name}
        if m:
            keys.add(m.group(1))
        for key in keys:
            candidates.setdefault(key, []).append(name)
    out: list[str | None] = []
    for oid, kind in zip(oids, kinds, strict=True):
        if kind != "table":
            out.append(None)
            continue
        found = sorted(set(candidates.get(oid, [])))
        if len(found) != 1:
            why = "no directory" if not found else f"{len(found)} directories ({found})"
            raise FormatError(
                f"__manifest has no location column and {why} could hold table {oid!r}: "
                "its location cannot be derived unambiguously (expected exactly one of "
                f"'{{8 hex}}_{oid}', '{oid}.lance' or '{oid}' under the root)",
                path=manifest,
            )
        out.append(found[0])
    return pa.array(out, pa.utf8())
