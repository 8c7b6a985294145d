"""Which partition namespaces one spec version has in a ``__manifest`` snapshot.

A write needs, for every partition it touches, the object id of the partition
namespace at each level (to put a new table under it, or to create it). The
mapping is derived from all namespace rows, once per snapshot
(:attr:`ManifestSnapshot.derived`); a writer that has just committed hands its
own, updated mapping to the snapshot it made (:func:`remember_namespaces`), so
the next write on that snapshot does not derive it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.namespace.layout import NAMESPACE
from lance_sql.tables.namespace.manifest_table import ManifestSnapshot
from lance_sql.tables.namespace.partition_rows import _key

MEMO = "namespaces"  # first item of this module's ManifestSnapshot.derived keys

Namespaces = dict[tuple[Any, ...], str]


def _memo_key(prefix: str, fids: Sequence[str]) -> tuple[Any, ...]:
    return (MEMO, prefix, tuple(fids))


def namespace_layout(
    snapshot: ManifestSnapshot, prefix: str, fids: Sequence[str]
) -> tuple[Namespaces, bool]:
    """The partition namespaces under spec namespace ``prefix`` (object id by the partition
    values of their level, keyed as :func:`.partition_rows._key` keys them) and whether
    ``prefix``'s own row exists. The dict returned is the caller's own."""
    done = snapshot.derived.get(_memo_key(prefix, fids))
    if done is None:
        done = _derive(snapshot.rows, prefix, fids)
        snapshot.derived[_memo_key(prefix, fids)] = done
    return dict(done[0]), done[1]


def remember_namespaces(
    snapshot: ManifestSnapshot,
    prefix: str,
    fids: Sequence[str],
    namespaces: Mapping[tuple[Any, ...], str],
    has_spec_row: bool,
) -> None:
    """Record the layout of ``snapshot`` when the caller knows it (a writer whose commit
    made ``snapshot`` from the rows it read plus its own, none removed)."""
    snapshot.derived[_memo_key(prefix, fids)] = (dict(namespaces), has_spec_row)


def carry_namespaces(source: ManifestSnapshot, target: ManifestSnapshot) -> None:
    """Give ``target`` the layouts found for ``source``: only for a ``target`` whose
    namespace rows are ``source``'s (e.g. only table rows dropped or re-pinned)."""
    for key, value in source.derived.items():
        if key[0] == MEMO:
            target.derived.setdefault(key, value)


def _derive(rows: pa.Table, prefix: str, fids: Sequence[str]) -> tuple[Namespaces, bool]:
    namespaces: Namespaces = {}
    wanted = {"object_id", *(f"partition_field_{fid}" for fid in fids)}
    ns_rows = rows.filter(pc.equal(rows.column("object_type"), NAMESPACE))
    cols = {n: ns_rows.column(n).to_pylist() for n in ns_rows.column_names if n in wanted}
    for i, oid in enumerate(cols.get("object_id", [])):
        parts = oid.split("$")
        if parts[0] != prefix:
            continue
        level = len(parts) - 1
        if 1 <= level <= len(fids):
            key = tuple(_key(_val(cols, fids[j], i)) for j in range(level))
            namespaces[key] = oid
    return namespaces, prefix in cols.get("object_id", [])


def _val(cols: Mapping[str, list[Any]], fid: str, i: int) -> Any:
    values = cols.get(f"partition_field_{fid}")
    return None if values is None else values[i]


__all__ = ["MEMO", "carry_namespaces", "namespace_layout", "remember_namespaces"]
