"""No orphan files: every Lance file a task attempt writes is journaled before Spark hears of it.

One small object per completed data file and new table location under
``{root}/_spark_staging/{write_id}/``. After the fence (:mod:`.write_lease`) the driver
deletes every journaled file no commit took, new tables ``__manifest`` does not list, and
the journal; only names this write journaled. A killed worker's file is ``ns.cleanup``'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from lance.progress import FragmentWriteProgress

from lance_sql.engines.spark.write_lease import (
    STAGING_DIR,
    AttemptLease,
    fence_and_wait,
    journal_loc,
)
from lance_sql.errors import LanceSqlError


class FileJournal(FragmentWriteProgress):
    """Records, per completed Lance data file, ``{location, branch, file}`` (one object each)."""

    def __init__(
        self,
        lease: AttemptLease,
        location: str,
        branch: str | None,
        begun: set[tuple[str, str | None]],
    ) -> None:
        self.lease = lease  # the attempt's: names its journal objects, sees the fence
        self.location = location
        self.branch = branch
        self.begun = begun  # (location, branch) pairs this attempt has begun

    def begin(self, fragment: Any, **kwargs: Any) -> None:
        """Journal a new table's location once per attempt, before its first file there (the
        driver removes such a directory whole when no commit lists it)."""
        if (self.location, self.branch) in self.begun:
            return
        if _named_by(self.location, self.lease.write_id):
            self.lease.put({"location": self.location, "branch": self.branch, "file": None})
        self.begun.add((self.location, self.branch))

    def complete(self, fragment: Any, **kwargs: Any) -> None:
        for f in fragment.to_json()["files"]:
            self.lease.put({"location": self.location, "branch": self.branch, "file": f["path"]})
        self.lease.check()  # a fenced (zombie) attempt stops here; its files are journaled


def stage_journaled(
    rows: Any, lease: AttemptLease, snapshot: Any, schema: Any, spec: Any, **writer_options: Any
) -> Any:
    """Stage ``rows`` as one task attempt's uncommitted files, each journaled; a StagedWrite.
    A failure (or a fence seen after the last file) removes this attempt's files."""
    from lance_sql.tables.namespace.writer import NamespaceWriter

    begun: set[tuple[str, str | None]] = set()
    writer = NamespaceWriter(
        snapshot,
        schema,
        spec,
        storage_options=lease.storage_options,
        write_id=lease.write_id,
        staging=True,
        progress=lambda location, branch: FileJournal(lease, location, branch, begun),
        **writer_options,
    )
    try:
        writer.write(rows)
        staged = writer.staged()
        lease.check()  # the driver gave up on this attempt: its message would be ignored
    except BaseException:
        writer.abort()
        raise
    return staged


def read_journal(
    root: str,
    write_id: str,
    storage_options: Mapping[str, str] | None,
    skip: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Journaled files of the write, except those of the ``skip`` attempts (not even read)."""
    loc = journal_loc(root, write_id, storage_options)
    loc.fs.invalidate_cache(loc.path)  # object-store filesystems cache listings
    if not loc.fs.exists(loc.path):
        return []
    skipped = set(skip)
    out = []
    for path in loc.fs.ls(loc.path, detail=False):
        name = str(path).rsplit("/", 1)[-1]
        if name.endswith(".json") and name.split("-", 1)[0] not in skipped:
            try:
                out.append(json.loads(loc.fs.cat_file(path)))
            except (OSError, ValueError):
                continue  # a journal object a killed worker left half-written: nothing in it
    return out


def committed_files(stages: Iterable[Any]) -> set[tuple[str, str | None, str]]:
    """``(location, branch, file)`` of every data file the committed stages hold."""
    out = set()
    for st in stages:
        for p in st.partitions:
            for frag in p.fragments:
                for f in json.loads(frag)["files"]:
                    out.add((p.location, p.branch, f["path"]))
    return out


def finish_write(
    root: str,
    write_id: str,
    storage_options: Mapping[str, str] | None,
    stages: Iterable[Any] = (),
    attempts: Iterable[str] = (),
    snapshot: Any = None,
    *,
    kept_deletions: set[tuple[str, str]] | None = None,
) -> int:
    """The driver's last step of a write, committed or not: fence, wait for the other attempts,
    remove data files outside ``stages`` and, with ``kept_deletions`` (``(location, file)``,
    row operations), every other journaled deletion file. Live tables: ``snapshot``'s."""
    from lance_sql.tables.namespace.manifest_table import read_manifest
    from lance_sql.tables.namespace.reader import table_entries

    attempts = list(attempts)
    fence_and_wait(root, write_id, storage_options, attempts)
    try:
        snapshot = snapshot or read_manifest(root, storage_options=storage_options)
        live = {e.location for e in table_entries(snapshot.rows, snapshot.root, [])}
    except LanceSqlError:  # no namespace: a create that never committed
        live = set()
    removed = 0
    for e in read_journal(root, write_id, storage_options) if kept_deletions is not None else []:
        location, name = e.get("location"), e.get("deletion")  # every attempt's, committed too
        ours = (
            isinstance(location, str) and isinstance(name, str) and name.startswith("_deletions/")
        )
        if ours and (location, name) not in kept_deletions:
            removed += _remove(root, location, name, storage_options)
    kept = committed_files(stages)
    return removed + remove_orphans(root, write_id, kept, live, storage_options, attempts)


def remove_orphans(
    root: str,
    write_id: str,
    kept: set[tuple[str, str | None, str]],
    live_locations: set[str],
    storage_options: Mapping[str, str] | None,
    committed_attempts: Iterable[str] = (),
) -> int:
    """Delete journaled files not in ``kept`` (``committed_attempts``' are not read), this
    write's new tables not in ``live_locations`` (named from its id: no other writer's),
    and the journal; the number of files deleted."""
    from lance_sql.format.storage import resolve
    from lance_sql.tables.namespace.layout import child_uri

    removed = 0
    dead_dirs: set[str] = set()
    for e in read_journal(root, write_id, storage_options, committed_attempts):
        location, branch, name = e.get("location"), e.get("branch"), e.get("file")
        if not isinstance(location, str):
            continue
        if location not in live_locations and _named_by(location, write_id):
            dead_dirs.add(location)  # also for files never journaled (a worker killed)
        if isinstance(name, str) and (location, branch, name) not in kept:
            where = f"tree/{branch}/data" if branch else "data"
            removed += _remove(root, location, f"{where}/{name}", storage_options)
    for location in dead_dirs:
        try:
            loc = resolve(child_uri(root, location), storage_options)
            if loc.fs.exists(loc.path) and not _has_versions(loc):
                loc.fs.rm(loc.path, recursive=True)
        except (OSError, LanceSqlError):
            continue
    try:
        loc = journal_loc(root, write_id, storage_options)
        if loc.fs.exists(loc.path):
            loc.fs.rm(loc.path, recursive=True)
        parent = resolve(f"{root.rstrip('/')}/{STAGING_DIR}", storage_options)
        if parent.fs.exists(parent.path) and not parent.fs.ls(parent.path):
            parent.fs.rm(parent.path, recursive=True)
    except (OSError, LanceSqlError):
        pass
    return removed


def _remove(root: str, location: str, path: str, storage_options: Any) -> int:
    """Remove the file ``path`` of the table at ``location`` (never outside the root): 1 or 0."""
    from lance_sql.format.storage import resolve
    from lance_sql.tables.namespace.layout import child_uri, resolve_location

    try:
        resolve_location(root, f"{location}/{path}", location)  # refuses an escaping name
        loc = resolve(f"{child_uri(root, location)}/{path}", storage_options)
        loc.fs.rm(loc.path)  # no exists() first: object-store listings may be cached
    except (OSError, LanceSqlError):  # FileNotFoundError too: nothing to remove
        return 0
    return 1


def _named_by(location: str, write_id: str) -> bool:
    """Whether ``location`` is a new-table directory this write named (from its id)."""
    from lance_sql.tables.namespace.layout import table_dir_name

    oid = location.split("_", 1)[1] if "_" in location else ""
    return bool(oid) and table_dir_name(oid, write_id) == location


def _has_versions(loc: Any) -> bool:
    """A directory holding committed Lance versions is a live table: never removed here."""
    return bool(loc.fs.exists(f"{loc.path}/_versions"))
