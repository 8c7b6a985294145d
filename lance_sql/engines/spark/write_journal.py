"""No orphan files: every Lance file a task attempt writes is journaled before Spark hears of it.

One small object per completed data file and new table location under
``{root}/_spark_staging/{write_id}/``. Each attempt rewrites a lease ``{attempt}.live``;
before cleaning up, the driver writes ``_fence`` and waits until no other lease changed
for :data:`STALE_SECONDS` of its own clock (other machines' clocks never matter); a
fenced attempt raises :class:`WriteFencedError` and removes what it wrote. Then the
driver deletes every journaled file no commit took, new tables ``__manifest`` does not
list, and the journal. A killed worker's file is ``ns.cleanup``'s.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from lance.progress import FragmentWriteProgress

from lance_sql.errors import LanceSqlError

HEARTBEAT_SECONDS = 0.5
STALE_SECONDS = 4.0
MAX_WAIT_SECONDS = 120.0
STAGING_DIR = "_spark_staging"
FENCE = "_fence"
LEASE_SUFFIX = ".live"


class WriteFencedError(LanceSqlError):
    """The driver already commits or aborts this write: this attempt's work is discarded."""


def journal_uri(root: str, write_id: str) -> str:
    """The folder of one write's journal (its data-file records and attempt leases)."""
    return f"{root.rstrip('/')}/{STAGING_DIR}/{write_id}"


def journal_loc(root: str, write_id: str, storage_options: Mapping[str, str] | None) -> Any:
    """The journal folder resolved to a filesystem and path."""
    from lance_sql.format.storage import resolve

    return resolve(journal_uri(root, write_id), storage_options)


class AttemptLease:
    """The lease of one task attempt; a context manager."""

    def __init__(
        self,
        root: str,
        write_id: str,
        attempt: str | None,
        storage_options: Mapping[str, str] | None,
        heartbeat: float = HEARTBEAT_SECONDS,
    ) -> None:
        self.root, self.write_id = root, write_id
        self.attempt = attempt or uuid.uuid4().hex  # names its lease and journal objects
        self.storage_options = dict(storage_options) if storage_options else None
        self._loc = journal_loc(root, write_id, storage_options)
        self._heartbeat = heartbeat
        self._stop = threading.Event()
        self._fenced = threading.Event()
        self._thread: threading.Thread | None = None
        self._beats = 0

    @property
    def path(self) -> str:
        return f"{self._loc.path}/{self.attempt}{LEASE_SUFFIX}"

    def __enter__(self) -> AttemptLease:
        self._loc.fs.makedirs(self._loc.path, exist_ok=True)
        self._beat()
        self._thread = threading.Thread(
            target=self._run, name=f"lance-sql-lease-{self.attempt[:8]}", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with contextlib.suppress(OSError, LanceSqlError):  # else the driver removes it
            self._loc.fs.rm(self.path)

    def put(self, entry: dict[str, Any]) -> None:
        """One journal object ``{attempt}-{random}.json`` holding ``entry`` (see write_journal)."""
        self._loc.fs.makedirs(self._loc.path, exist_ok=True)
        name = f"{self._loc.path}/{self.attempt}-{uuid.uuid4().hex[:12]}.json"
        self._loc.fs.pipe_file(name, json.dumps(entry).encode())

    def check(self) -> None:
        """Raise :class:`WriteFencedError` if the driver has fenced the write."""
        if self._fenced.is_set() or self._fence_up():
            self._fenced.set()
            raise WriteFencedError(
                f"lance_ns {self.root}: write {self.write_id} was already committed or aborted "
                f"by the driver; task attempt {self.attempt} discards its files"
            )

    def _fence_up(self) -> bool:
        try:
            return bool(self._loc.fs.exists(f"{self._loc.path}/{FENCE}"))
        except OSError:
            return False

    def _beat(self) -> None:
        self._beats += 1
        self._loc.fs.pipe_file(self.path, str(self._beats).encode())

    def _run(self) -> None:
        # A fenced attempt goes on beating until it ends: the driver waits for its cleanup.
        while not self._stop.wait(self._heartbeat):
            try:
                if not self._fenced.is_set() and self._fence_up():
                    self._fenced.set()
                self._beat()
            except OSError:
                continue  # a missed beat; STALE_SECONDS tolerates several


def fence_and_wait(
    root: str,
    write_id: str,
    storage_options: Mapping[str, str] | None,
    committed_attempts: Iterable[str] = (),
    max_wait: float = MAX_WAIT_SECONDS,
    stale: float = STALE_SECONDS,
) -> list[str]:
    """Raise the fence, then wait until every other attempt's lease is gone or stale; the
    attempts still alive when ``max_wait`` ran out (``ns.cleanup`` removes their files)."""
    loc = journal_loc(root, write_id, storage_options)
    if not _exists(loc):
        return []  # no attempt ever started (or none wrote): nothing can be in flight
    loc.fs.pipe_file(f"{loc.path}/{FENCE}", b"fenced")
    skip = set(committed_attempts)
    seen: dict[str, tuple[bytes, float]] = {}
    deadline = time.monotonic() + max_wait
    while True:
        alive = []
        now = time.monotonic()
        for attempt, beat in _leases(loc, skip).items():
            last = seen.get(attempt)
            if last is None or last[0] != beat:
                seen[attempt] = (beat, now)
                alive.append(attempt)
            elif now - last[1] < stale:
                alive.append(attempt)
        if not alive or now >= deadline:
            return alive
        time.sleep(min(HEARTBEAT_SECONDS, stale / 4))


def _exists(loc: Any) -> bool:
    try:
        loc.fs.invalidate_cache(loc.path)
        return bool(loc.fs.exists(loc.path))
    except OSError:
        return False


def _leases(loc: Any, skip: set[str]) -> dict[str, bytes]:
    """``attempt -> heartbeat`` of the leases in the journal (a vanished one is skipped)."""
    out: dict[str, bytes] = {}
    try:
        loc.fs.invalidate_cache(loc.path)
        names = [str(p).rsplit("/", 1)[-1] for p in loc.fs.ls(loc.path, detail=False)]
    except OSError:
        return out
    for name in names:
        if not name.endswith(LEASE_SUFFIX):
            continue
        attempt = name[: -len(LEASE_SUFFIX)]
        if attempt in skip:
            continue
        try:
            out[attempt] = bytes(loc.fs.cat_file(f"{loc.path}/{name}"))
        except (OSError, FileNotFoundError):
            continue  # the attempt ended between the listing and the read
    return out


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
