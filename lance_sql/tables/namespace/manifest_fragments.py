"""Rows of ``__manifest`` versions by fragment: read only the fragments not seen before.

The last few versions read or written are kept per ``__manifest`` with each row's address
(fragment id << 32 | offset); a newer version reuses the rows of every fragment it shares
with the newest kept one, filtering those whose deletion vector changed.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import LanceSqlError
from lance_sql.tables.namespace.layout import spec_ids_of
from lance_sql.tables.namespace.reader import table_entries

_STATES_PER_TABLE = 4
_TABLES = 64
ADDR = "_rowaddr"


@dataclass(frozen=True)
class Committed:
    """Rows of one ``__manifest`` version and where each lives (fragment id << 32 | offset)."""

    version: int
    frags: tuple[Any, ...]  # per fragment: (id, data file paths, deletion file)
    rows: pa.Table
    addresses: np.ndarray
    facts: dict[str, Any] = field(default_factory=dict, compare=False)  # derived once


# __manifest uri -> version -> Committed (the few versions read or written last)
_STATE: OrderedDict[str, OrderedDict[int, Committed]] = OrderedDict()
_LOCK = threading.Lock()  # writers on threads share it


def _frag_key(meta: Any) -> tuple[Any, ...]:
    d = meta.deletion_file
    deletion = None if d is None else (d.id, d.read_version, d.num_deleted_rows, d.file_type)
    return (meta.id, tuple(file_path(f) for f in meta.files), deletion)


def file_path(data_file: Any) -> str:
    """``data_file.path`` without the class pylance 14 builds on every read of it (0.16 ms;
    a commit reads every fragment's)."""
    return str(getattr(data_file, "_path", None) or data_file.path)


def fragment_keys(ds: Any) -> tuple[Any, ...]:
    return tuple(_frag_key(f.metadata) for f in ds.get_fragments())


def remember_state(uri: str, state: Committed) -> None:
    with _LOCK:
        per = _STATE.get(uri) or OrderedDict()
        _put_last(per, state.version, state, _STATES_PER_TABLE)
        _put_last(_STATE, uri, per, _TABLES)


def _put_last(cache: OrderedDict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """Put ``value`` last in ``cache`` and drop the oldest entries beyond ``limit``."""
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > limit:
        cache.popitem(last=False)


def find_state(uri: str, version: int | None = None) -> Committed | None:
    with _LOCK:
        per = _STATE.get(uri)
        if not per:
            return None
        if version is None:
            return max(per.values(), key=lambda c: c.version)
        return per.get(version)


def slices_of(state: Committed) -> dict[int, tuple[int, int]]:
    """:func:`row_slices` of ``state`` (computed once per state, or given by its commit)."""
    if "slices" not in state.facts:
        state.facts["slices"] = row_slices(state.addresses)
    return state.facts["slices"]  # type: ignore[no-any-return]


def row_slices(addresses: np.ndarray) -> dict[int, tuple[int, int]]:
    """fragment id -> (start, stop) of its rows (rows are stored in fragment order)."""
    if not len(addresses):
        return {}
    fids = (addresses >> np.uint64(32)).astype(np.int64)
    cuts = np.flatnonzero(np.diff(fids)) + 1
    starts = np.concatenate([[0], cuts])
    stops = np.concatenate([cuts, [len(fids)]])
    return {int(fids[a]): (int(a), int(b)) for a, b in zip(starts, stops, strict=True)}


MAX_CHUNKS = 256  # chunks of cached rows before :func:`kept_rows` copies them into one


def kept_rows(rows: pa.Table, keep: np.ndarray) -> pa.Table:
    """The rows of ``rows`` where ``keep``: zero-copy slices around the few rows dropped,
    one copy when the runs or chunks grow many."""
    dropped = np.flatnonzero(~keep)
    if not len(dropped):
        return rows
    if len(dropped) > 64:
        return rows.filter(pa.array(keep))
    starts = np.concatenate([[0], dropped + 1])
    stops = np.concatenate([dropped, [len(keep)]])
    pieces = [rows.slice(int(a), int(b - a)) for a, b in zip(starts, stops, strict=True) if b > a]
    return pa.concat_tables(pieces) if pieces else rows.slice(0, 0)


def few_chunks(rows: pa.Table) -> pa.Table:
    """``rows``, copied into one chunk per column once slices made :data:`MAX_CHUNKS`."""
    if rows.num_columns and rows.column(0).num_chunks > MAX_CHUNKS:
        return rows.combine_chunks()
    return rows


def load_rows(uri: str, ds: Any) -> pa.Table:
    """All rows of open ``__manifest`` ``ds``, reading only fragments not cached for it."""
    frags = ds.get_fragments()
    keys = tuple(_frag_key(f.metadata) for f in frags)
    prev = find_state(uri)
    if prev is not None and not prev.rows.schema.equals(ds.schema):
        prev = None  # another schema (columns changed, or a damaged manifest): read anew
    if prev is not None and prev.version == ds.version and prev.frags == keys:
        return prev.rows
    known = {k[0]: k for k in prev.frags} if prev is not None else {}
    where = slices_of(prev) if prev is not None else {}
    pieces: list[tuple[pa.Table, np.ndarray, np.ndarray | None] | Any] = []
    missing = []
    prev_v = _VERSIONS.get(id(prev.rows)) if prev is not None else None
    known_v = prev_v[1] if prev_v is not None and prev_v[0]() is prev.rows else None
    versions: list[np.ndarray | pa.Table] = []  # per piece: carried, or to compute
    for f, k in zip(frags, keys, strict=True):
        old = known.get(k[0])
        if prev is None or old is None or old[1] != k[1] or k[0] not in where:
            pieces.append(f)
            missing.append(f)
            continue
        a, b = where[k[0]]
        rows, addrs = prev.rows.slice(a, b - a), prev.addresses[a:b]
        vers = None if known_v is None else known_v[a:b]
        if old[2] != k[2]:  # another deletion vector: keep the rows still live
            live = f.to_table(columns=[], with_row_address=True).column(ADDR).to_numpy()
            if not np.isin(live, addrs).all():  # (an older version: rows not cached)
                pieces.append(f)
                missing.append(f)
                continue
            keep = np.isin(addrs, live)
            rows, addrs = kept_rows(rows, keep), addrs[keep]
            vers = None if vers is None else vers[keep]
        pieces.append((rows, addrs, vers))
    read: dict[int, tuple[pa.Table, np.ndarray]] = {}
    if missing:
        table = ds.scanner(fragments=missing, with_row_address=True).to_table()
        addrs = table.column(ADDR).to_numpy()
        table = table.drop_columns([ADDR])
        for fid, (a, b) in row_slices(addrs).items():
            read[fid] = (table.slice(a, b - a), addrs[a:b])
    tables, arrays = [], []
    for p in pieces:
        if isinstance(p, tuple):
            rows, addrs, vers = p
        else:
            rows, addrs = read.get(p.fragment_id, (None, None))
            vers = rows
        if rows is None:
            continue
        tables.append(rows)
        arrays.append(addrs)
        versions.append(vers)
    schema = ds.schema
    out = (
        pa.concat_tables([t.cast(schema) if not t.schema.equals(schema) else t for t in tables])
        if tables
        else schema.empty_table()
    )
    out = few_chunks(out)
    if known_v is not None and all(v is not None for v in versions):
        got = [v if isinstance(v, np.ndarray) else table_versions_of(v) for v in versions]
        _remember_versions(out, np.concatenate(got) if got else np.zeros(0, np.int64))
    addresses = np.concatenate(arrays) if arrays else np.zeros(0, np.uint64)
    remember_state(uri, Committed(int(ds.version), keys, out, addresses.astype(np.uint64)))
    return out


# id(rows) -> (weak reference to rows, their table versions): rows of consecutive versions
# share all but a few rows, so their versions are carried, never recomputed over all rows
_VERSIONS: dict[int, tuple[Any, np.ndarray]] = {}


def table_versions(rows: pa.Table) -> np.ndarray:
    """Per ``__manifest`` row: N for a partition table under spec version ``v{N}``, else -1
    (read-only; carried through each commit or read, :func:`carry_versions`)."""
    hit = _VERSIONS.get(id(rows))
    if hit is not None and hit[0]() is rows:
        return hit[1]
    return _remember_versions(rows, table_versions_of(rows))


def table_versions_of(rows: pa.Table) -> np.ndarray:
    """:func:`table_versions` computed afresh over every row."""
    if not rows.num_rows:
        return np.zeros(0, np.int64)
    is_table = pc.equal(rows.column("object_type"), "table").to_numpy(zero_copy_only=False)
    return np.where(np.asarray(is_table, bool), spec_ids_of(rows.column("object_id")), -1)


def _remember_versions(rows: pa.Table, versions: np.ndarray) -> np.ndarray:
    key = id(rows)

    def gone(ref: Any) -> None:  # (runs when rows is freed: no lock, one atomic dict step)
        if _VERSIONS.get(key, (None,))[0] is ref:
            _VERSIONS.pop(key, None)

    versions.flags.writeable = False
    _VERSIONS[key] = (weakref.ref(rows, gone), versions)
    return versions


def carry_versions(old: pa.Table, new: pa.Table, keep: np.ndarray | None = None) -> None:
    """Record the table versions of ``new``: the rows of ``old`` where ``keep`` (all when
    None), in order, then ``new``'s remaining rows. A no-op when ``old``'s are unknown."""
    hit = _VERSIONS.get(id(old))
    if hit is None or hit[0]() is not old:
        return
    kept = hit[1] if keep is None else hit[1][keep]
    added = new.slice(len(kept)) if new.num_rows > len(kept) else new.slice(0, 0)
    _remember_versions(new, np.concatenate([kept, table_versions_of(added)]))


def repinned(
    rows: pa.Table, versions: Mapping[str, int], dropped: Collection[str] = ()
) -> pa.Table:
    """``__manifest`` ``rows`` with ``read_version`` set to ``versions[object_id]`` where
    given, without the rows of ``dropped`` object ids."""
    oids = rows.column("object_id")
    if versions:
        at = rows.schema.get_field_index("read_version")
        old = rows.column(at)
        idx = pc.index_in(oids, value_set=pa.array(list(versions), pa.utf8()))
        new = pc.take(pa.array(list(versions.values()), old.type), idx)
        rows = rows.set_column(at, rows.schema.field(at), pc.if_else(pc.is_null(idx), old, new))
    if dropped:
        gone = pc.is_in(oids, value_set=pa.array(sorted(dropped), pa.utf8()))
        rows = rows.filter(pc.invert(gone))
    return rows


def seed_overwrite(uri: str, ds: Any, rows: pa.Table) -> None:
    """Record ``rows`` as the rows of ``ds``, just written whole (one run per fragment)."""
    arrays = [
        (np.uint64(f.fragment_id) << np.uint64(32))
        + np.arange(f.metadata.physical_rows, dtype=np.uint64)
        for f in ds.get_fragments()
    ]
    addresses = np.concatenate(arrays) if arrays else np.zeros(0, np.uint64)
    if len(addresses) == rows.num_rows:
        remember_state(uri, Committed(int(ds.version), fragment_keys(ds), rows, addresses))


# __manifest uri -> the ManifestSnapshot made last (re-reading that version returns it,
# with what was derived from it)
_SNAPSHOTS: OrderedDict[str, Any] = OrderedDict()


def last_snapshot(uri: str, root: str, version: int, identity: Any, properties: Any) -> Any:
    with _LOCK:
        snap = _SNAPSHOTS.get(uri)
    if snap is None:
        return None
    same = (snap.root, snap.version, snap.identity, snap.properties)
    return snap if same == (root, version, identity, properties) else None


def keep(uri: str, snapshot: Any) -> Any:
    """Record ``snapshot`` as the last one made of ``uri``; returns it."""
    with _LOCK:
        _put_last(_SNAPSHOTS, uri, snapshot, _TABLES)
    return snapshot


def root_properties(ds: Any) -> dict[str, str]:
    """Root properties of an open ``__manifest``: schema metadata, overlaid by table metadata."""
    properties = {
        k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
        for k, v in (ds.schema.metadata or {}).items()
    }
    properties.update(ds.metadata or {})
    return properties


def carry_entries(before: Any, after: Any) -> None:
    """Give snapshot ``after`` (committed by :func:`.apply_change` on ``before``) the partition
    table entries ``before`` had, changed only where the commit wrote rows."""
    state = find_state(after.uri, after.version)
    delta = state.facts.get("delta") if state is not None else None
    if delta is None or delta[0] != before.version or not before.identity:
        return
    _, replaced, write = delta
    tables = write.filter(pc.equal(write.column("object_type"), "table"))
    for key, old in list(before.derived.items()):
        if isinstance(key, tuple) and key and key[0] == "entries":
            try:
                fresh = table_entries(tables, after.root, list(key[1]))
            except LanceSqlError:
                continue  # (an unsafe location...: the readers of ``after`` report it)
            if len(replaced) + len(fresh) > 64:  # (a fold, a large write)
                out = [e for e in old if e.object_id not in replaced] + fresh
                out.sort(key=attrgetter("object_id"))
            else:  # sorted by object id: remove and insert the few by bisection
                out = list(old)
                for oid in replaced:
                    at = bisect.bisect_left(out, oid, key=attrgetter("object_id"))
                    if at < len(out) and out[at].object_id == oid:
                        del out[at]
                for e in fresh:
                    bisect.insort(out, e, key=attrgetter("object_id"))
            after.derived.setdefault(key, tuple(out))
