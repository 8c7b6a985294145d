"""The ``__manifest`` Lance table: its schema, snapshots, and atomic commits.

Base columns match pylance 14's ``DirectoryNamespace``, so pylance can still list the
namespace. Root properties live in the table metadata and, identically, in the schema
metadata (set in the same commit as the rows); readers overlay the first on the second.
Layout: docs/namespaces.md, "On-disk layout".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import CommitConflictError, FormatError, NotFoundError
from lance_sql.spec.partition_field import PartitionField
from lance_sql.tables.namespace import manifest_commit as mc
from lance_sql.tables.namespace import manifest_fragments as fragments
from lance_sql.tables.namespace.layout import manifest_uri
from lance_sql.tables.namespace.locations import derive_locations
from lance_sql.tables.namespace.manifest_commit import commit_or_discard, commit_overwrite
from lance_sql.tables.namespace.reader import PartitionTable, table_entries
from lance_sql.tables.path_kind import wrong_kind
from lance_sql.tables.pylance_errors import pylance_errors

PK_KEY = b"lance-schema:unenforced-primary-key:position"

BASE_FIELDS = (
    pa.field("object_id", pa.utf8(), nullable=False, metadata={PK_KEY: b"0"}),
    pa.field("object_type", pa.utf8(), nullable=False),
    pa.field("location", pa.utf8()),
    # JSON (per-partition statistics make it most of the table's bytes): Lance's default
    # string compression took 1.3 of 2.2 ms to write 365 rows of it, for a few KB saved
    pa.field("metadata", pa.utf8(), metadata={b"lance-encoding:compression": b"none"}),
    pa.field("base_objects", pa.list_(pa.field("object_id", pa.utf8()))),
)
READ_FIELDS = (
    pa.field("read_version", pa.uint64()),
    pa.field("read_branch", pa.utf8()),
    pa.field("read_tag", pa.utf8()),
)


def manifest_schema(partition_fields: Iterable[PartitionField] = ()) -> pa.Schema:
    """Base + read columns + one column per distinct partition field id (first-seen order)."""
    fields = list(BASE_FIELDS + READ_FIELDS)
    seen: set[str] = set()
    for pf in partition_fields:
        if pf.field_id not in seen:
            seen.add(pf.field_id)
            fields.append(pa.field(pf.column_name, pf.result_type, nullable=True))
    return pa.schema(fields)


def conform_rows(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` with exactly ``schema``: missing columns NULL, order and types fixed."""
    if rows.schema.equals(schema, check_metadata=True):
        return rows  # (a snapshot's own rows: every write conforms them again)
    arrays = []
    for f in schema:
        if f.name in rows.column_names:
            col = rows.column(f.name)
            arrays.append(col if col.type.equals(f.type) else col.cast(f.type))
        else:
            arrays.append(pa.nulls(rows.num_rows, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


@dataclass(frozen=True)
class ManifestSnapshot:
    """One version of ``__manifest``: all its rows and its root properties."""

    root: str
    version: int
    rows: pa.Table
    properties: dict[str, str]
    lance_schema: pa.Schema = field(repr=False)
    # Which committed files hold ``rows`` (set by :func:`_snapshot` only; a copy made with
    # ``dataclasses.replace`` has none): lets :func:`refreshed` skip re-reading them.
    identity: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)
    # Structures derived from ``rows`` (entries, layouts), computed once per snapshot; a
    # copy made with ``dataclasses.replace`` starts empty (its rows may differ).
    derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def uri(self) -> str:
        return manifest_uri(self.root)


def read_manifest(
    root: str, version: int | None = None, *, storage_options: Mapping[str, str] | None = None
) -> ManifestSnapshot:
    """Open ``__manifest`` (latest or ``version``); NotFoundError names what is missing."""
    try:
        return _read_manifest(root, version, storage_options)
    except NotFoundError as exc:
        better = wrong_kind(root, "namespace", storage_options)  # a dataset or a file at the root
        if better is not None:
            raise better from exc
        raise


def _read_manifest(
    root: str, version: int | None, storage_options: Mapping[str, str] | None
) -> ManifestSnapshot:
    import lance

    uri = manifest_uri(root)
    with _errors(uri, storage_options, version=version):
        try:
            ds = lance.dataset(uri, version=version, storage_options=_opts(storage_options))
        except (ValueError, OSError) as exc:
            text = str(exc).lower()
            if version is not None and ("version" in text or "not found" in text):
                raise NotFoundError(f"__manifest has no version {version}", path=uri) from exc
            raise
        return _snapshot(root, ds, storage_options)


def _check_columns(schema: pa.Schema, uri: str) -> None:
    """A damaged or foreign ``__manifest`` must fail here, typed, not deep in a reader
    (``location`` may be absent: it is derived from the table directories)."""
    for name in ("object_id", "object_type", "location"):
        idx = schema.get_field_index(name)
        if (idx >= 0 or name != "location") and (idx < 0 or schema.field(idx).type != pa.utf8()):
            raise FormatError(
                f"__manifest has no string column {name!r} (columns: {schema.names})", path=uri
            )


def _identity(ds: Any) -> tuple[str, ...]:
    """The version and data file names of an open ``__manifest`` (names are random per
    write, so a namespace deleted and recreated at the same version differs)."""
    files = [fragments.file_path(df) for f in ds.get_fragments() for df in f.data_files()]
    return (str(ds.version), *files)


def refreshed(
    snapshot: ManifestSnapshot, *, storage_options: Mapping[str, str] | None = None
) -> ManifestSnapshot:
    """The latest ``__manifest``: ``snapshot`` itself when nothing was committed since
    (same version, same files: its rows are not read again), else a fresh read."""
    if not snapshot.identity:
        return read_manifest(snapshot.root, storage_options=storage_options)
    import lance

    uri = manifest_uri(snapshot.root)
    with _errors(uri, storage_options):
        ds = lance.dataset(uri, storage_options=_opts(storage_options))
        if (
            ds.version == snapshot.version
            and _identity(ds) == snapshot.identity
            and fragments.root_properties(ds) == snapshot.properties
            and ds.schema.equals(snapshot.lance_schema, check_metadata=True)
        ):
            snapshot.derived[DATASET] = ds  # (the next commit on it opens it no more)
            return snapshot
        return _snapshot(snapshot.root, ds, storage_options)


def _errors(uri: str, storage_options: Any, version: int | None = None) -> Any:
    name = "__manifest (the namespace's table index)"
    return pylance_errors(name, uri, version=version, storage_options=storage_options)


DATASET = ("dataset",)  # ManifestSnapshot.derived key: __manifest open at its version


def _snapshot(
    root: str,
    ds: Any,
    storage_options: Mapping[str, str] | None = None,
    *,
    written: pa.Table | None = None,
) -> ManifestSnapshot:
    """The snapshot of open ``ds``; ``written``: the rows just committed as ``ds``."""
    _check_columns(ds.schema, manifest_uri(root))
    lance_schema, ident = ds.schema, _identity(ds)
    last = fragments.last_snapshot(
        manifest_uri(root), root, ds.version, ident, fragments.root_properties(ds)
    )
    if last is not None and last.lance_schema.equals(lance_schema):
        last.derived[DATASET] = ds
        return last  # the same version read again: keep what was derived from it
    if written is not None and written.schema.equals(lance_schema, check_metadata=True):
        rows = written.combine_chunks()  # one chunk per column, as a read gives
    else:
        rows = fragments.load_rows(manifest_uri(root), ds)  # only fragments not read before
    if "location" not in lance_schema.names:
        derived = derive_locations(
            root, rows, manifest=manifest_uri(root), storage_options=storage_options
        )
        at = min(2, rows.num_columns)
        location = pa.field("location", pa.utf8())
        rows, before = rows.add_column(at, location, derived), rows
        fragments.carry_versions(before, rows)
        lance_schema = lance_schema.insert(at, location)
    snap = ManifestSnapshot(root, ds.version, rows, fragments.root_properties(ds), lance_schema)
    object.__setattr__(snap, "identity", ident)
    snap = fragments.keep(manifest_uri(root), snap)
    snap.derived[DATASET] = ds
    return snap


# (root, field ids, partition column types) -> {row of __manifest: its entry or None}
_ENTRIES: dict[tuple[Any, ...], dict[tuple[Any, ...], PartitionTable | None]] = {}
_ENTRIES_MAX = 1 << 16  # rows remembered per namespace before starting over
_ENTRIES_NAMESPACES = 64  # namespaces (and field id lists) remembered before starting over
_MISS = object()
_ENTRY_COLUMNS = ("object_id", "object_type", "location", "read_version", "read_branch", "read_tag")


def snapshot_entries(snapshot: ManifestSnapshot, field_ids: list[str]) -> list[PartitionTable]:
    """``table_entries`` of ``snapshot``; a row equal in every column its entry is made of
    to one seen before reuses that entry, so only new or changed rows are derived."""
    memo = ("entries", tuple(field_ids))
    done = snapshot.derived.get(memo)
    if done is not None:
        return list(done)
    rows = snapshot.rows
    if rows.num_rows:  # only table rows can be entries (namespace rows are about half)
        rows = rows.filter(pc.equal(rows.column("object_type"), "table"))
    parts = [f"partition_field_{fid}" for fid in field_ids]
    names = [n for n in (*_ENTRY_COLUMNS, *parts) if n in rows.column_names]
    types = tuple((n, str(rows.schema.field(n).type)) for n in names)
    key = (snapshot.root, tuple(field_ids), types)
    if key not in _ENTRIES and len(_ENTRIES) >= _ENTRIES_NAMESPACES:
        _ENTRIES.clear()
    cache = _ENTRIES.setdefault(key, {})
    if len(cache) > _ENTRIES_MAX:
        cache.clear()
    keys = list(zip(*(_key_values(rows.column(n)) for n in names), strict=True))
    got: list[Any] = [cache.get(k, _MISS) for k in keys]
    missing = [i for i, e in enumerate(got) if e is _MISS]
    if missing:
        fresh = table_entries(rows.take(missing), snapshot.root, field_ids)
        by_oid = {e.object_id: e for e in fresh}
        oid_at = names.index("object_id")
        for i in missing:
            got[i] = cache[keys[i]] = by_oid.get(keys[i][oid_at])
    out = [e for e in got if e is not None]
    out.sort(key=lambda e: e.object_id)
    snapshot.derived[memo] = tuple(out)
    return out


def _key_values(col: pa.ChunkedArray) -> list[Any]:
    """``col`` as Python values equal exactly when the values are (temporals as integers)."""
    t = col.type
    if not pa.types.is_temporal(t) or pa.types.is_interval(t):  # (dates, times, durations)
        return col.to_pylist()
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return arr.view(pa.int64() if t.bit_width == 64 else pa.int32()).to_pylist()


def _opts(storage_options: Mapping[str, str] | None) -> dict[str, str] | None:
    return dict(storage_options) if storage_options else None


def create_manifest(
    root: str,
    schema: pa.Schema,
    properties: Mapping[str, str],
    rows: pa.Table | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> ManifestSnapshot:
    """Create ``__manifest`` (refusing an existing one) with ``rows`` and root properties.

    Version 1 carries the properties as schema metadata, so no reader ever sees a
    namespace without its spec; version 2 mirrors them (:func:`mirror_properties`).
    """
    import lance

    uri = manifest_uri(root)
    schema = with_properties(schema, properties)
    rows = conform_rows(rows if rows is not None else schema.empty_table(), schema)
    try:
        ds = lance.write_dataset(
            rows, uri, schema=schema, mode="create", storage_options=_opts(storage_options)
        )
    except (OSError, ValueError) as exc:
        if "exist" in str(exc).lower():
            raise CommitConflictError(f"a namespace already exists at {root} ({exc})") from exc
        raise
    return mirror_properties(_snapshot(root, ds), properties, storage_options=storage_options)


def mirror_properties(
    snapshot: ManifestSnapshot,
    properties: Mapping[str, str],
    *,
    storage_options: Mapping[str, str] | None = None,
) -> ManifestSnapshot:
    """Copy root ``properties`` just committed as schema metadata into the table metadata.

    pylance 14 cannot set table metadata in the commit that writes rows. Only new keys or
    values equal to the schema metadata's are written, so a crash between the two commits
    or a lost race leaves nothing stale (readers overlay both maps).
    """
    if not properties:
        return snapshot
    try:
        return update_properties(snapshot, dict(properties), storage_options=storage_options)
    except CommitConflictError:
        return snapshot


def with_properties(schema: pa.Schema, properties: Mapping[str, str]) -> pa.Schema:
    """``schema`` whose metadata also holds ``properties`` (root properties of ``__manifest``)."""
    md = dict(schema.metadata or {})
    md.update({k.encode(): v.encode() for k, v in properties.items()})
    return schema.with_metadata(md)


def commit_rows(
    snapshot: ManifestSnapshot,
    rows: pa.Table,
    *,
    schema: pa.Schema | None = None,
    properties: Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> ManifestSnapshot:
    """Make ``rows`` all rows (optionally with a new schema) in ONE commit on ``snapshot``:
    only the rows that change when schema and properties stay, else a rewrite. Raises
    CommitConflictError when a commit since ``snapshot`` conflicts."""
    props = {**snapshot.properties, **(properties or {})}
    if schema is None:
        snap = commit_update_rows(snapshot, rows, props, storage_options)
        if snap is not None:
            return snap
    schema = with_properties(schema or snapshot.lance_schema, props)
    rows = conform_rows(rows, schema)
    with _conflicts(snapshot.uri, snapshot.version):
        ds = commit_overwrite(snapshot.uri, schema, rows, snapshot.version, storage_options)
    return _snapshot(snapshot.root, ds, storage_options, written=rows)


def commit_update_rows(
    snapshot: ManifestSnapshot,
    rows: pa.Table,
    properties: Mapping[str, str],
    storage_options: Mapping[str, str] | None,
    plan: Any = None,
) -> ManifestSnapshot | None:
    """:func:`.manifest_commit.commit_update` of ``rows`` on ``snapshot``; None when the
    table must be rewritten."""
    with _conflicts(snapshot.uri, snapshot.version):
        rows = conform_rows(rows, snapshot.lance_schema)
        done = mc.commit_update(
            snapshot.uri,
            snapshot.version,
            rows,
            storage_options,
            properties,
            plan=plan or mc.plan_change,
            ds=snapshot.derived.get(DATASET),
        )
    if done is None:
        return None
    snap = _snapshot(snapshot.root, done, storage_options)
    fragments.carry_entries(snapshot, snap)  # (its entries, where it wrote rows re-derived)
    return snap


def update_properties(
    snapshot: ManifestSnapshot,
    updates: Mapping[str, str | None],
    *,
    storage_options: Mapping[str, str] | None = None,
) -> ManifestSnapshot:
    """Set (or with None, remove) root properties in one commit based on ``snapshot``."""
    import lance

    op = lance.LanceOperation.UpdateConfig(
        table_metadata_updates=lance.LanceOperation.UpdateMap(dict(updates)),
        schema_metadata_updates=lance.LanceOperation.UpdateMap(dict(updates)),
    )
    with _conflicts(snapshot.uri, snapshot.version):
        ds = commit_or_discard(snapshot.uri, op, snapshot.version, _opts(storage_options), [], [])
    return _snapshot(snapshot.root, ds, storage_options)


@contextmanager
def _conflicts(uri: str, read_version: int) -> Iterator[None]:
    """pylance's commit conflicts as :class:`CommitConflictError` (nothing was committed)."""
    from lance.commit import CommitConflictError as LanceConflict

    try:
        yield
    except LanceConflict as exc:
        first = str(exc).split(", /")[0]  # (pylance appends its Rust source path)
        raise CommitConflictError(
            f"__manifest at {uri} changed since version {read_version}; nothing was committed "
            f"({first})"
        ) from exc
