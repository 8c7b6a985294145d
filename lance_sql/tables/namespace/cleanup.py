"""Removing what failed or killed writers left in a namespace, and nothing else.

Leftovers are found by proving nothing references them; every ``__manifest`` version
counts as live and files younger than ``older_than`` are kept. Details:
docs/reliability.md, "Cleanup".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from lance_sql.format.metadata import open_metadata
from lance_sql.format.storage import FileInfo, Location, list_dir, remove_file, resolve, walk_files
from lance_sql.format.versions import list_manifests
from lance_sql.tables.namespace.bounds import referenced_key_filters
from lance_sql.tables.namespace.key_filters import FILTER_DIR
from lance_sql.tables.namespace.layout import MANIFEST_NAME, manifest_uri

STAGING_DIRS = ("_spark_staging",)
_TABLE_DIR_RE = re.compile(r"^[0-9a-f]{8}_.+")
KEY_FILTER_PREFIX = FILTER_DIR + "/"
_CLEANABLE = ("data/", "_deletions/", "_transactions/", "_versions/")


@dataclass
class CleanupReport:
    """What a cleanup deleted (or, in a dry run, would delete)."""

    root: str
    dry_run: bool
    older_than: timedelta
    files: list[str] = field(default_factory=list)  # full URLs
    bytes: int = 0
    kept_recent: int = 0  # unreferenced files spared because younger than ``older_than``
    reasons: dict[str, int] = field(default_factory=dict)  # why -> number of files

    def _add(self, info: FileInfo, reason: str) -> None:
        self.files.append(info.location.url)
        self.bytes += info.size
        self.reasons[reason] = self.reasons.get(reason, 0) + 1

    def __str__(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        lines = [
            f"cleanup of {self.root} (older than {self.older_than}): {verb} "
            f"{len(self.files)} files, {self.bytes} bytes; kept {self.kept_recent} recent "
            "unreferenced files"
        ]
        lines += [f"  {n:6d}  {why}" for why, n in sorted(self.reasons.items())]
        lines += [f"  {url}" for url in self.files]
        return "\n".join(lines)


@dataclass
class _Pins:
    """Which versions of one table location ``__manifest`` ever pinned."""

    versions: set[int] = field(default_factory=set)
    all_versions: bool = False  # pinned to latest, a branch or a tag: keep every version
    key_filters: set[str] = field(default_factory=set)  # key filter files any version uses


def cleanup_namespace(
    ns: Any,
    *,
    older_than: timedelta,
    dry_run: bool = True,
    now: datetime | None = None,
) -> CleanupReport:
    """Find (and unless ``dry_run``, delete) files of ``ns`` no ``__manifest`` version uses.

    Only ``ns.root`` and ``ns.storage_options`` are used (the latest state on storage
    counts). ``older_than`` protects files of writers still in flight; ``timedelta(0)``
    is only safe when no writer is running.
    """
    if older_than < timedelta(0):
        raise ValueError(f"older_than must not be negative, got {older_than}")
    root: str = ns.root
    opts: Mapping[str, Any] | None = ns.storage_options
    cutoff = (now or datetime.now(timezone.utc)) - older_than
    report = CleanupReport(root, dry_run, older_than)
    pins = _manifest_pins(root, opts)
    root_loc = resolve(root, opts)

    manifest_loc = root_loc.join(MANIFEST_NAME)
    _clean_table(manifest_loc, None, cutoff, report, opts)
    for entry in _list_dirs(root_loc):
        name = entry.name
        if name == MANIFEST_NAME:
            continue
        referenced = [loc for loc in pins if loc == name or loc.startswith(name + "/")]
        if not referenced:
            if name in STAGING_DIRS or _TABLE_DIR_RE.match(name):
                _clean_all(entry, cutoff, report, "unreferenced directory")
            continue
        for loc in referenced:
            _clean_table(root_loc.join(loc), pins[loc], cutoff, report, opts)
    if not dry_run:
        for url in report.files:
            remove_file(resolve(url, opts))
    return report


_PIN_COLUMNS = ("object_type", "location", "read_version", "read_branch", "read_tag", "metadata")


def _manifest_pins(root: str, opts: Mapping[str, Any] | None) -> dict[str, _Pins]:
    """``location -> pins`` over EVERY ``__manifest`` version (each may be time-travelled to)."""
    uri = manifest_uri(root)
    pins: dict[str, _Pins] = {}
    for mf in list_manifests(resolve(uri, opts)):
        ds = _open(uri, mf.version, opts)
        _add_pins(pins, ds.to_table(columns=_pin_columns(ds)))
    return pins


def _open(uri: str, version: int | None, opts: Mapping[str, Any] | None) -> Any:
    import lance

    return lance.dataset(uri, version=version, storage_options=dict(opts) if opts else None)


def _pin_columns(ds: Any) -> list[str]:
    return [c for c in _PIN_COLUMNS if c in ds.schema.names]


def _add_pins(pins: dict[str, _Pins], table: Any, only: set[str] | None = None) -> None:
    """Add the pins of ``__manifest`` rows ``table`` to ``pins`` (``only``: of these locations)."""
    rows = table.to_pydict()
    n = table.num_rows
    for i in range(n):
        loc = rows.get("location", [None] * n)[i]
        if rows["object_type"][i] != "table" or not loc or (only is not None and loc not in only):
            continue
        pin = pins.setdefault(loc, _Pins())
        rv = rows.get("read_version", [None] * n)[i]
        pin.key_filters |= referenced_key_filters(rows.get("metadata", [None] * n)[i])
        if (
            rv is None
            or rows.get("read_branch", [None] * n)[i]
            or rows.get("read_tag", [None] * n)[i]
        ):
            pin.all_versions = True
        else:
            pin.versions.add(int(rv))


def written_rows(root: str, opts: Mapping[str, Any] | None) -> dict[int, Any]:
    """``__manifest`` version -> the rows its commit wrote, for every version after the
    oldest one kept (read before old versions are removed)."""
    uri = manifest_uri(root)
    versions = sorted(m.version for m in list_manifests(resolve(uri, opts)))
    out: dict[int, Any] = {}
    seen: set[tuple[Any, ...]] | None = None
    for v in versions:
        ds = _open(uri, v, opts)
        frags = ds.get_fragments()
        keys = [(f.fragment_id, tuple(df.path for df in f.data_files())) for f in frags]
        if seen is not None:
            new = [f for f, k in zip(frags, keys, strict=True) if k not in seen]
            cols = _pin_columns(ds)
            out[v] = ds.scanner(fragments=new, columns=cols).to_table() if new else None
        seen = set(keys)
    return out


def expiry_pins(
    root: str, opts: Mapping[str, Any] | None, written: Mapping[int, Any]
) -> dict[str, _Pins]:
    """``location -> pins`` over the ``__manifest`` versions left, of the tables ``written``
    wrote rows for (only their versions can have lost their last pin)."""
    import pyarrow.compute as pc

    changed = [t for t in written.values() if t is not None and "location" in t.column_names]
    only = {loc for t in changed for loc in t.column("location").drop_null().to_pylist()}
    pins: dict[str, _Pins] = {}
    if not only:
        return pins
    uri = manifest_uri(root)
    left = sorted(m.version for m in list_manifests(resolve(uri, opts)))
    for i, v in enumerate(left):
        got = written.get(v)
        if i and left[i - 1] == v - 1 and v in written:
            if got is not None:
                _add_pins(pins, got, only)
            continue
        ds = _open(uri, v, opts)  # the first of a run: its rows of the changed tables
        where = pc.field("location").isin(sorted(only)) if len(only) < 10_000 else None
        _add_pins(pins, ds.to_table(columns=_pin_columns(ds), filter=where), only)
    return pins


def _list_dirs(root: Location) -> list[Location]:
    return [e.location for e in list_dir(root) if e.is_dir]


def _old(info: FileInfo, cutoff: datetime) -> bool:
    return info.mtime is not None and info.mtime <= cutoff


def _clean_all(loc: Location, cutoff: datetime, report: CleanupReport, reason: str) -> None:
    """A whole unreferenced directory: only when every file in it is old enough."""
    files = walk_files(loc)
    if not all(_old(f, cutoff) for f in files):
        report.kept_recent += len(files)
        return
    for f in files:
        report._add(f, reason)


def _clean_table(
    loc: Location,
    pins: _Pins | None,
    cutoff: datetime,
    report: CleanupReport,
    opts: Mapping[str, Any] | None,
) -> None:
    """Uncommitted versions and unreferenced files of one Lance table at ``loc`` (``pins``
    None: ``__manifest`` itself, all its versions live)."""
    files = walk_files(loc)
    if not files or any(f.relative.startswith("tree/") for f in files):
        # Branches (``tree/``) have their own histories that may share this table's data
        # files; proving a file unreferenced would mean reading all of them: keep all.
        return
    versions = list_manifests(loc)
    if not versions:
        return
    by_version = {m.version: m for m in versions}
    drop: set[int] = set()
    if pins is not None and not pins.all_versions and pins.versions:
        newest_pinned = max(pins.versions)
        # Below the newest pin, an unpinned version is a failed append or the Restore a
        # later writer made over it: no reader is ever sent there.
        drop = {v for v in by_version if v < newest_pinned and v not in pins.versions}
        newer = [v for v in by_version if v > newest_pinned]
        infos = {f.location.path: f for f in files}
        # The newest version may be a writer's in flight: drop the uncommitted tail only
        # when all of it is old (deleting part of it would leave a gap under that writer).
        if newer and all(
            (info := infos.get(by_version[v].location.path)) is not None and _old(info, cutoff)
            for v in newer
        ):
            drop |= set(newer)
    kept = [v for v in by_version if v not in drop]
    referenced = _referenced_files(loc, kept, opts)
    dropped_paths = {by_version[v].location.path for v in drop}
    for f in files:
        rel = f.relative
        if f.location.path in dropped_paths:
            report._add(f, "uncommitted table version")
            continue
        if pins is not None and rel.startswith(KEY_FILTER_PREFIX):
            if rel[len(KEY_FILTER_PREFIX) :] in pins.key_filters:
                continue
            if _old(f, cutoff):
                report._add(f, "unreferenced key filter")
            else:
                report.kept_recent += 1
            continue
        if not rel.startswith(_CLEANABLE) or rel.startswith("_versions/"):
            continue  # version manifests, hints, tags, branches, indices: never here
        if rel in referenced:
            continue
        if _old(f, cutoff):
            report._add(f, "unreferenced file")
        else:
            report.kept_recent += 1


def _referenced_files(
    loc: Location, versions: Iterable[int], opts: Mapping[str, Any] | None
) -> set[str]:
    """Relative paths of data, deletion and transaction files the given versions use."""
    out: set[str] = set()
    for v in versions:
        md = open_metadata(loc.url, v, storage_options=opts)
        txn = getattr(md._manifest, "transaction_file", "")
        if txn:
            out.add(f"_transactions/{txn}")
        for frag in md.fragments:
            for df in frag.files:
                if df.base_id is None:
                    out.add(f"data/{df.path}")
            if frag.deletion_file is not None and frag.deletion_file.base_id is None:
                out.add(frag.deletion_file.path)
    return out
