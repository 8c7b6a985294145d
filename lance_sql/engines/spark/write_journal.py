"""No orphan files: every Lance file a task attempt writes is journaled before Spark hears of it.

A Spark task attempt that fails, is retried, speculated, or whose Python
worker is killed may have written Lance data files that no commit message
describes. Each attempt therefore records every data file it completes (one
small object per file under ``{root}/_spark_staging/{write_id}/``, written
through pylance's ``FragmentWriteProgress.complete`` callback, and for the
last file of each ``write_fragments`` call, which pylance 14 reports no
completion for, as soon as the call returns; before the task's commit message
exists), and each new table's location (named by this write) once before its
first file there. The driver's ``commit`` and ``abort`` first wait for zombie
attempts to end (:mod:`.write_lease`), then delete every journaled file that no committed
message owns, every new-table directory of this write that ``__manifest`` does
not list (whole: also files a killed worker never journaled), and the journal
itself. Files of other writers are never touched: only names this write's
attempts journaled, and directories named from this write's id, are deleted.

Left to ``ns.cleanup``, in partition tables that existed before the write
only: a file a worker was killed while writing (a hidden ``.tmp*`` file on a
local disk; an unfinished multipart upload on object stores) and a file
finished in the instant between Lance's rename and the journal write (for a
call's last file: until ``write_fragments`` returns).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from lance.progress import FragmentWriteProgress

from lance_sql.engines.spark.write_lease import STAGING_DIR, AttemptLease, journal_uri
from lance_sql.errors import LanceSqlError


class FileJournal(FragmentWriteProgress):
    """Records, per completed Lance data file, ``{location, branch, file}`` (one object each)."""

    def __init__(
        self,
        root: str,
        write_id: str,
        attempt: str,
        location: str,
        branch: str | None,
        storage_options: Mapping[str, str] | None,
        lease: AttemptLease | None = None,
        begun: set[tuple[str, str | None]] | None = None,
    ) -> None:
        self.uri = journal_uri(root, write_id)
        self.write_id = write_id
        self.attempt = attempt  # one id per task attempt: the names of its journal objects
        self.location = location
        self.branch = branch
        self.storage_options = dict(storage_options) if storage_options else None
        self.lease = lease
        self.begun = begun if begun is not None else set()

    def begin(self, fragment: Any, **kwargs: Any) -> None:
        """Journal the table location once per attempt, before its first file there exists.

        Only a location this write named (a new table) is journaled: the driver
        removes such a directory whole when no commit lists it, and reads
        nothing else from a location entry, so one for an existing table would
        only cost a file per task and table.
        """
        if (self.location, self.branch) in self.begun:
            return
        if _named_by(self.location, self.write_id):
            self._put({"location": self.location, "branch": self.branch, "file": None})
        self.begun.add((self.location, self.branch))

    def complete(self, fragment: Any, **kwargs: Any) -> None:
        for f in fragment.to_json()["files"]:
            self._put({"location": self.location, "branch": self.branch, "file": f["path"]})
        if self.lease is not None:
            self.lease.check()  # a fenced (zombie) attempt stops here; its files are journaled

    def _put(self, entry: dict[str, Any]) -> None:
        from lance_sql.format.storage import resolve

        loc = resolve(self.uri, self.storage_options)
        name = f"{loc.path}/{self.attempt}-{uuid.uuid4().hex[:12]}.json"
        loc.fs.makedirs(loc.path, exist_ok=True)
        loc.fs.pipe_file(name, json.dumps(entry).encode())


def journal_factory(
    root: str,
    write_id: str,
    attempt: str,
    storage_options: Mapping[str, str] | None,
    lease: AttemptLease | None = None,
) -> Any:
    """``(location, branch) -> FileJournal`` for one task attempt (a staging writer's hook)."""
    begun: set[tuple[str, str | None]] = set()

    def make(location: str, branch: str | None) -> FileJournal:
        return FileJournal(root, write_id, attempt, location, branch, storage_options, lease, begun)

    return make


def new_attempt() -> str:
    return uuid.uuid4().hex


def read_journal(
    root: str,
    write_id: str,
    storage_options: Mapping[str, str] | None,
    skip: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Journaled files of the write, except those of the ``skip`` attempts (not even read)."""
    from lance_sql.format.storage import resolve

    loc = resolve(journal_uri(root, write_id), storage_options)
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


def remove_orphans(
    root: str,
    write_id: str,
    kept: set[tuple[str, str | None, str]],
    live_locations: set[str],
    storage_options: Mapping[str, str] | None,
    committed_attempts: Iterable[str] = (),
) -> int:
    """Delete journaled files not in ``kept``, this write's dead new tables, and the journal.

    Entries of ``committed_attempts`` are not read (their files are all kept).

    ``live_locations``: table locations ``__manifest`` lists now (a new-table
    directory not among them is removed whole; it was named from this write's
    id, so no other writer uses it). Returns the number of files deleted.
    """
    from lance_sql.format.storage import resolve
    from lance_sql.tables.namespace.layout import child_uri, data_dir_uri, resolve_location

    removed = 0
    dead_dirs: set[str] = set()
    for e in read_journal(root, write_id, storage_options, committed_attempts):
        location, branch, name = e.get("location"), e.get("branch"), e.get("file")
        if not isinstance(location, str):
            continue
        if location not in live_locations and _named_by(location, write_id):
            dead_dirs.add(location)  # also for files never journaled (a worker killed)
        if not isinstance(name, str) or (location, branch, name) in kept:
            continue
        try:
            where = location if not branch else f"{location}/tree/{branch}"
            resolve_location(root, f"{where}/data/{name}", location)  # never outside the root
            loc = resolve(f"{data_dir_uri(root, location, branch)}/{name}", storage_options)
            loc.fs.rm(loc.path)  # no exists() first: object-store listings may be cached
            removed += 1
        except FileNotFoundError:
            pass
        except (OSError, LanceSqlError):
            continue
    for location in dead_dirs:
        try:
            loc = resolve(child_uri(root, location), storage_options)
            if loc.fs.exists(loc.path) and not _has_versions(loc):
                loc.fs.rm(loc.path, recursive=True)
        except (OSError, LanceSqlError):
            continue
    try:
        loc = resolve(journal_uri(root, write_id), storage_options)
        if loc.fs.exists(loc.path):
            loc.fs.rm(loc.path, recursive=True)
        parent = resolve(f"{root.rstrip('/')}/{STAGING_DIR}", storage_options)
        if parent.fs.exists(parent.path) and not parent.fs.ls(parent.path):
            parent.fs.rm(parent.path, recursive=True)
    except (OSError, LanceSqlError):
        pass
    return removed


def _named_by(location: str, write_id: str) -> bool:
    """Whether ``location`` is a new-table directory this write named (from its id)."""
    from lance_sql.tables.namespace.layout import table_dir_name

    oid = location.split("_", 1)[1] if "_" in location else ""
    return bool(oid) and table_dir_name(oid, write_id) == location


def _has_versions(loc: Any) -> bool:
    """A directory holding committed Lance versions is a live table: never removed here."""
    return bool(loc.fs.exists(f"{loc.path}/_versions"))


__all__ = [
    "STAGING_DIR",
    "FileJournal",
    "committed_files",
    "journal_factory",
    "journal_uri",
    "new_attempt",
    "read_journal",
    "remove_orphans",
]
