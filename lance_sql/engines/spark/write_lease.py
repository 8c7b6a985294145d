"""Zombie task attempts: a lease per attempt and a fence the driver raises before cleaning up.

Spark may commit or abort while cancelled attempts still write. Each attempt rewrites a
lease ``{attempt}.live``; the driver writes ``_fence`` and waits until no other lease
changed for :data:`STALE_SECONDS` of its own clock (other machines' clocks never matter).
A fenced attempt raises :class:`WriteFencedError` and removes what it wrote.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

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
