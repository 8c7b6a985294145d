"""Which partition namespaces and tables one spec version has in a ``__manifest`` snapshot.

A write needs, for every partition it touches, the object id of the partition
namespace at each level (to put a new table under it, or to create it) and
the partition table's entry. The mappings are derived from all rows, once per
snapshot (:attr:`ManifestSnapshot.derived`); a writer that has just committed
hands its own, updated mappings to the snapshot it made
(:func:`remember_namespaces`, :func:`remember_tables`), so the next write on
that snapshot does not derive them again: an append into one partition costs
the same at any number of partitions. The mappings are shared, never changed
in place (a writer copies one before adding to it).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.namespace.layout import NAMESPACE
from lance_sql.tables.namespace.manifest_table import ManifestSnapshot
from lance_sql.tables.namespace.partition_rows import _key, keys_of

if TYPE_CHECKING:
    from lance_sql.tables.namespace.reader import PartitionTable

MEMO = "namespaces"  # first item of this module's ManifestSnapshot.derived keys
TABLES = "table_ids"  # (the other one: partition values -> table object id)

Namespaces = dict[tuple[Any, ...], str]


def _memo_key(prefix: str, fids: Sequence[str]) -> tuple[Any, ...]:
    return (MEMO, prefix, tuple(fids))


def namespace_layout(
    snapshot: ManifestSnapshot, prefix: str, fids: Sequence[str]
) -> tuple[Namespaces, bool]:
    """The partition namespaces under spec namespace ``prefix`` (object id by the partition
    values of their level, keyed as :func:`.partition_rows._key` keys them) and whether
    ``prefix``'s own row exists. The dict returned is shared: copy it before changing it."""
    done = snapshot.derived.get(_memo_key(prefix, fids))
    if done is None:
        done = _derive(snapshot.rows, prefix, fids)
        snapshot.derived[_memo_key(prefix, fids)] = done
    return done[0], done[1]


def remember_namespaces(
    snapshot: ManifestSnapshot,
    prefix: str,
    fids: Sequence[str],
    namespaces: Mapping[tuple[Any, ...], str],
    has_spec_row: bool,
) -> None:
    """Record the layout of ``snapshot`` when the caller knows it (a writer whose commit
    made ``snapshot`` from the rows it read plus its own, none removed)."""
    snapshot.derived[_memo_key(prefix, fids)] = (namespaces, has_spec_row)


class TableLookup:
    """Partition tables of one spec version by partition values: the object id from a
    mapping kept per snapshot, the entry by bisection in the snapshot's sorted entries."""

    def __init__(self, ids: Mapping[tuple[Any, ...], str], entries: Sequence[PartitionTable]):
        self.ids = ids
        self.entries = entries

    def get(self, key: tuple[Any, ...]) -> PartitionTable | None:
        oid = self.ids.get(key)
        if oid is None:
            return None
        at = bisect.bisect_left(self.entries, oid, key=_oid)
        found = at < len(self.entries) and self.entries[at].object_id == oid
        return self.entries[at] if found else None

    def __contains__(self, key: tuple[Any, ...]) -> bool:
        return self.get(key) is not None


def table_layout(
    snapshot: ManifestSnapshot,
    prefix: str,
    fids: Sequence[str],
    entries: Sequence[PartitionTable] | None = None,
) -> TableLookup:
    """The partition tables under spec namespace ``prefix``; ``entries``: the snapshot's
    partition tables when the caller has them (not memoized then: any field ids)."""
    from lance_sql.tables.namespace.manifest_table import snapshot_entries

    if entries is not None:
        entries = sorted(entries, key=_oid)
        return TableLookup(_table_ids(entries, prefix, fids), entries)
    entries = snapshot_entries(snapshot, list(fids))
    memo = (TABLES, prefix, tuple(fids))
    ids = snapshot.derived.get(memo)
    if ids is None:
        ids = snapshot.derived[memo] = _table_ids(entries, prefix, fids)
    return TableLookup(ids, entries)


def remember_tables(
    snapshot: ManifestSnapshot,
    prefix: str,
    fids: Sequence[str],
    ids: Mapping[tuple[Any, ...], str],
    added: Mapping[tuple[Any, ...], str],
) -> None:
    """Record the table ids of ``snapshot`` (made by a writer from the rows it read, whose
    tables had ``ids``, plus the tables ``added``; none removed)."""
    snapshot.derived[(TABLES, prefix, tuple(fids))] = {**ids, **added} if added else ids


def _table_ids(
    entries: Sequence[PartitionTable], prefix: str, fids: Sequence[str]
) -> dict[tuple[Any, ...], str]:
    out: dict[tuple[Any, ...], str] = {}
    depth = len(fids) + 2
    for entry in entries:
        parts = entry.object_id.split("$")
        if parts[0] == prefix and len(parts) == depth:
            values = entry.values
            out[keys_of([values.get(fid) for fid in fids])] = entry.object_id
    return out


def _oid(entry: Any) -> str:
    return str(entry.object_id)


def carry_namespaces(source: ManifestSnapshot, target: ManifestSnapshot) -> None:
    """Give ``target`` the layouts found for ``source``: only for a ``target`` whose
    namespace rows are ``source``'s (e.g. only table rows dropped or re-pinned)."""
    for key, value in source.derived.items():
        if key[0] in (MEMO, TABLES):
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


__all__ = [
    "MEMO",
    "TableLookup",
    "carry_namespaces",
    "namespace_layout",
    "remember_namespaces",
    "remember_tables",
    "table_layout",
]
