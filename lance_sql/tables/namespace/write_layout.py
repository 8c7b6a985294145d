"""Which partition namespaces and tables one spec version has in a ``__manifest`` snapshot.

While a write touches few partitions it finds them by key (:func:`keyed_layout`), so the
first write after opening costs what it changes; else the mappings are derived once per
snapshot, and a committing writer hands its updated ones to the snapshot it made. The
mappings are shared, never changed in place (a writer copies one before adding to it).
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.namespace.bounds_rows import touched_rows
from lance_sql.tables.namespace.index_upkeep import INDEXES_KEY
from lance_sql.tables.namespace.layout import (
    NAMESPACE,
    derived_namespace_name,
    join_object_id,
    random_namespace_name,
)
from lance_sql.tables.namespace.manifest_table import ManifestSnapshot, snapshot_entries
from lance_sql.tables.namespace.partition_rows import keys_of
from lance_sql.tables.namespace.reader import PartitionTable, table_entries
from lance_sql.tables.namespace.write_target import WriteTarget

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


class TableLookup:
    """Partition tables of one spec version by partition values: the object id from a
    mapping kept per snapshot, the entry by bisection in the snapshot's sorted entries
    unless ``changed`` (object id -> entry, None for a table removed) has it."""

    def __init__(
        self,
        ids: Mapping[tuple[Any, ...], str],
        entries: Sequence[PartitionTable],
        changed: Mapping[str, PartitionTable | None] | None = None,
    ):
        self.ids = ids
        self.entries = entries
        self.changed = changed or {}

    def get(self, key: tuple[Any, ...]) -> PartitionTable | None:
        oid = self.ids.get(key)
        if oid is None or oid in self.changed:
            return None if oid is None else self.changed[oid]
        return find_entry(self.entries, oid)

    def __contains__(self, key: tuple[Any, ...]) -> bool:
        return self.get(key) is not None


def table_layout(snapshot: ManifestSnapshot, prefix: str, fids: Sequence[str]) -> TableLookup:
    """The partition tables under spec namespace ``prefix``."""
    # (the memo of snapshot_entries itself, not its copy: 3 ms at 100,000 tables)
    entries = snapshot.derived.get(("entries", tuple(fids))) or snapshot_entries(snapshot, fids)
    memo = (TABLES, prefix, tuple(fids))
    ids = snapshot.derived.get(memo)
    if ids is None:
        ids = snapshot.derived[memo] = _table_ids(entries, prefix, fids)
    return TableLookup(ids, entries)


FEW = 16  # partitions are looked up by key while at most 1/FEW of the __manifest rows
MAX_LOOKS = 8  # and in at most this many lookups (each filters all rows) per write

# Partition value types whose Arrow equality is :func:`.partition_rows._key`'s equality
# (floats are not: NaN, -0.0; nor nested or dictionary values)
_BY_VALUE = (
    pa.types.is_integer,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_binary,
    pa.types.is_boolean,
    pa.types.is_date,
)


def keyed_layout(
    snapshot: ManifestSnapshot, prefix: str, fids: Sequence[str], raws: Sequence[tuple[Any, ...]]
) -> tuple[Namespaces, TableLookup] | None:
    """The namespaces and tables of spec namespace ``prefix`` that partitions with values
    ``raws`` go into (reading only the rows sharing a first partition value with them), or
    None when they cannot be found by value."""
    rows = snapshot.rows
    column = f"partition_field_{fids[0]}" if fids else ""
    if column not in rows.column_names:
        return None
    col = rows.column(column)
    if not any(is_type(col.type) for is_type in _BY_VALUE):
        return None
    firsts = {r[0] for r in raws}
    memo = ("keyed", prefix, tuple(fids))  # (the last lookup: a mutation's, then its writer's)
    last = snapshot.derived.get(memo)
    if last is not None and last[0] == firsts:
        return last[1]  # type: ignore[no-any-return]
    try:
        values = pa.array(list(firsts), col.type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    sub = rows.filter(pc.is_in(col, value_set=values, skip_nulls=False))
    entries = table_entries(sub, snapshot.root, list(fids))
    found = _derive(sub, prefix, fids)[0], TableLookup(_table_ids(entries, prefix, fids), entries)
    snapshot.derived[memo] = (firsts, found)
    return found


def tables_by_key(
    snapshot: ManifestSnapshot, prefix: str, fids: Sequence[str], keys: Collection[tuple[Any, ...]]
) -> TableLookup:
    """A lookup of the partition tables of ``keys`` (by key when they are few)."""
    found = None
    if (TABLES, prefix, tuple(fids)) not in snapshot.derived and FEW * len(keys) <= len(
        snapshot.rows
    ):
        found = keyed_layout(snapshot, prefix, fids, list(keys))
    return table_layout(snapshot, prefix, fids) if found is None else found[1]


def has_row(snapshot: ManifestSnapshot, object_id: str) -> bool:
    """Whether ``snapshot`` has a row of ``object_id``."""
    ids = snapshot.rows.column("object_id")
    return bool(pc.any(pc.equal(ids, object_id)).as_py()) if len(ids) else False


class WriteLayout:
    """The namespaces and tables one write's spec version has in the snapshot it read.

    ``changed``: a mutation's tables (object id -> entry now, None: dropped).
    ``namespaces`` is shared with the snapshot until :meth:`add_namespace` copies it;
    ``created``: the namespaces the write adds.
    """

    def __init__(
        self,
        snapshot: ManifestSnapshot,
        prefix: str,
        fids: Sequence[str],
        changed: Mapping[str, PartitionTable | None] | None = None,
    ):
        self.snapshot, self.prefix, self.fids, self.changed = snapshot, prefix, list(fids), changed
        self._memo = (_memo_key(prefix, fids), (TABLES, prefix, tuple(fids)))
        self.keyed = bool(fids) and not all(k in snapshot.derived for k in self._memo)
        self.created: Namespaces = {}
        self._looked: set[Any] = set()  # first partition values looked up by key
        self._calls = 0
        self._own = False
        if self.keyed:
            self.namespaces: Namespaces = {}
            self.tables = TableLookup({}, [], changed)
            self.has_spec_row = has_row(snapshot, prefix)
        else:
            self.namespaces, self.tables, self.has_spec_row = self.of(snapshot)

    def of(
        self, snapshot: ManifestSnapshot, raws: Sequence[tuple[Any, ...]] | None = None
    ) -> tuple[Namespaces, TableLookup, bool]:
        """(namespaces, tables, whether the spec namespace row exists) of ``snapshot``; with
        ``raws`` (partition values) only those partitions need to be found."""
        found = None if raws is None else keyed_layout(snapshot, self.prefix, self.fids, raws)
        if found is None:
            namespaces, has_spec_row = namespace_layout(snapshot, self.prefix, self.fids)
            tables = table_layout(snapshot, self.prefix, self.fids)
        else:
            (namespaces, tables), has_spec_row = found, has_row(snapshot, self.prefix)
        return namespaces, TableLookup(tables.ids, tables.entries, self.changed), has_spec_row

    def look(self, keys: Sequence[tuple[tuple[Any, ...], tuple[Any, ...]]]) -> None:
        """Make sure the partitions of ``keys`` ((key, partition values) each) are known."""
        if not self.keyed:
            return
        fresh = {key[0]: raw for key, raw in keys if key[0] not in self._looked}
        if not fresh:
            return
        self._looked.update(fresh)
        self._calls += 1
        found = None
        if FEW * len(self._looked) <= len(self.snapshot.rows) and self._calls <= MAX_LOOKS:
            found = keyed_layout(self.snapshot, self.prefix, self.fids, list(fresh.values()))
        if found is None:  # many partitions: the whole layout
            self.keyed = False
            self.namespaces, self.tables, _ = self.of(self.snapshot)
            self._own = False
        else:
            by_oid = {e.object_id: e for e in (*self.tables.entries, *found[1].entries)}
            entries = sorted(by_oid.values(), key=attrgetter("object_id"))
            ids = {**self.tables.ids, **found[1].ids}
            self.tables = TableLookup(ids, entries, self.changed)
            self.namespaces, self._own = {**self.namespaces, **found[0]}, True
        for prefix, oid in self.created.items():
            self.add_namespace(prefix, oid)

    def add_namespace(self, prefix: tuple[Any, ...], oid: str) -> None:
        if not self._own:
            self.namespaces, self._own = dict(self.namespaces), True
        self.namespaces[prefix] = self.created[prefix] = oid

    def remember(self, snapshot: ManifestSnapshot, added: Mapping[tuple[Any, ...], str]) -> None:
        """Record the layout of ``snapshot``, made by this write's commit from the rows it
        read plus the tables ``added`` (when the whole layout was read)."""
        if not self.keyed:
            ids = self.tables.ids
            new = any(ids.get(key) != oid for key, oid in added.items())  # (a copy: 8 ms)
            snapshot.derived[self._memo[0]] = (self.namespaces, self.has_spec_row)
            snapshot.derived[self._memo[1]] = {**ids, **added} if new else ids


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


def find_entry(entries: Sequence[PartitionTable], object_id: str) -> PartitionTable | None:
    """The entry ``object_id`` of ``entries`` (sorted by object id), found by bisection."""
    at = bisect.bisect_left(entries, object_id, key=attrgetter("object_id"))
    return entries[at] if at < len(entries) and entries[at].object_id == object_id else None


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
            key = keys_of([_val(cols, fids[j], i) for j in range(level)])
            namespaces[key] = oid
    return namespaces, prefix in cols.get("object_id", [])


def _val(cols: Mapping[str, list[Any]], fid: str, i: int) -> Any:
    values = cols.get(f"partition_field_{fid}")
    return None if values is None else values[i]


def new_namespaces(
    namespaces: Namespaces, prefix: str, key: tuple[Any, ...], raw: tuple[Any, ...], write_id: Any
) -> tuple[str, list[tuple[tuple[Any, ...], str]]]:
    """The object id of the namespace a new table at ``key`` goes under, and the partition
    namespaces to create for it ((key prefix, object id) each). ``write_id``: new names
    derive from it (every task of a distributed write agrees); None: random names."""
    parent, created = prefix, []
    for level in range(1, len(key) + 1):
        oid = namespaces.get(key[:level])
        if oid is None:
            name = (
                random_namespace_name()
                if write_id is None
                else derived_namespace_name(f"{write_id}:{parent}:{raw[:level]!r}")
            )
            oid = join_object_id(parent, name)
            created.append((key[:level], oid))
        parent = oid
    return parent, created


def rebase_blocker(
    snapshot: ManifestSnapshot,
    latest: ManifestSnapshot,
    layout: tuple[Namespaces, TableLookup, bool],
    own_namespaces: Namespaces,
    targets: Iterable[WriteTarget],
    new_ns_keys: Sequence[tuple[Any, ...]],
    new_table_keys: Sequence[tuple[Any, ...]],
    changed_ids: Collection[str] = (),
) -> str | None:
    """Why an append that read ``snapshot`` cannot be replayed onto ``latest`` (None: it can).

    Safe when the concurrent commits changed neither schema nor specs, moved no partition
    table this append wrote, and created no partition (namespace) it also created.
    ``layout``: ``latest``'s of the write's spec version; ``own_namespaces``: the writer's;
    ``changed_ids``: tables the write also changes (they must be unchanged in ``latest``).
    """
    if _root_properties(latest.properties) != _root_properties(snapshot.properties):
        return "the namespace schema, partition specs or indexes changed"
    if not latest.lance_schema.equals(snapshot.lance_schema):
        return "the __manifest columns changed"
    if changed_ids:
        read, now = (touched_rows(s.rows, changed_ids)[1] for s in (snapshot, latest))
        if not read.sort_by("object_id").equals(now.sort_by("object_id")):
            return "a partition table this write replaces or re-pins was written concurrently"
    namespaces, tables, _ = layout
    for t in targets:
        if t.entry is None:
            continue
        now = tables.get(t.key)
        # the location too: a partition dropped and created again (a dynamic overwrite)
        # keeps its object id, and the new table may be at the same version number
        if now is None or _pin(now) != _pin(t.entry):
            return f"partition table {t.object_id!r} was written or removed concurrently"
    new_ns = set(new_ns_keys)
    for key in new_table_keys:
        if key in tables:
            return f"partition {key!r} was created concurrently"
        for level in range(1, len(key) + 1):  # the namespaces it goes under still exist
            prefix = key[:level]
            if prefix not in new_ns and namespaces.get(prefix) != own_namespaces.get(prefix):
                return f"partition namespace for {prefix!r} was removed concurrently"
    for key in new_ns_keys:
        if key in namespaces:
            return f"partition namespace for {key!r} was created concurrently"
    return None


def _root_properties(properties: Mapping[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in properties.items()
        if k in ("schema", INDEXES_KEY) or k.startswith("partition_spec_v")
    }


def _pin(e: PartitionTable) -> tuple[Any, ...]:
    return (e.object_id, e.location, e.read_version, e.read_branch, e.read_tag)
