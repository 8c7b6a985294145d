"""Opened Lance datasets shared across queries: one pylance session, an LRU by pinned version.

A query over a namespace opens one pylance dataset per partition table it
reads. Opening costs a manifest read and parse (in pylance, and once more in
this project's own metadata parser for the field ids): about 0.3 ms per table
locally, far more on object stores, and the same tables are opened again by
every new ``SessionContext``, every re-registration and every new
``__manifest`` version that pins them unchanged.

* :func:`read_session` is one ``lance.Session`` for every dataset opened for
  reading, so pylance's metadata and index caches (file metadata, scalar
  index pages) are shared by all of them instead of one cache per dataset.
* :class:`OpenCache` is a bounded, thread-safe LRU of opened objects keyed
  by *pinned* version (uri, version, branch, storage options). A version is
  immutable, so a hit is always the right data; a table read at "latest" or
  at a tag (which can move) is never cached here.
* :func:`open_all` opens many at once on a small thread pool: pylance opens
  and scans release the GIL in Rust, so opens overlap their I/O.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

#: Byte capacities of the shared pylance session's caches.
METADATA_CACHE_BYTES = 512 * 1024 * 1024
INDEX_CACHE_BYTES = 1024 * 1024 * 1024

#: Opened datasets kept across queries (each holds its manifest: a few KB to a few MB).
OPEN_CACHE_ENTRIES = 4096

#: Threads that open datasets concurrently.
OPEN_THREADS = max(4, 2 * (os.cpu_count() or 1))

_session: Any = None
_session_lock = threading.Lock()


def read_session() -> Any:
    """The process-wide ``lance.Session`` that every read-only open shares (created once)."""
    global _session
    with _session_lock:
        if _session is None:
            import lance

            _session = lance.Session(
                metadata_cache_size_bytes=METADATA_CACHE_BYTES,
                index_cache_size_bytes=INDEX_CACHE_BYTES,
            )
        return _session


def options_key(storage_options: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """Storage options as a hashable part of a cache key."""
    return tuple(sorted((storage_options or {}).items()))


V = TypeVar("V")


class OpenCache(Generic[V]):
    """A bounded, thread-safe LRU; :meth:`get_or_open` opens a missing key outside the lock.

    Two threads missing the same key may both open it; the first stored
    result wins and both return it (opens are idempotent reads).
    """

    def __init__(self, capacity: int = OPEN_CACHE_ENTRIES) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
                self.hits += 1
            return value

    def put(self, key: Hashable, value: V) -> V:
        with self._lock:
            existing = self._items.get(key)
            if existing is not None:
                self._items.move_to_end(key)
                return existing
            self._items[key] = value
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
            return value

    def get_or_open(self, key: Hashable, opener: Callable[[], V]) -> V:
        hit = self.get(key)
        if hit is not None:
            return hit
        with self._lock:
            self.misses += 1
        return self.put(key, opener())

    def discard(self, key: Hashable) -> None:
        with self._lock:
            self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


#: Datasets reopened at a pinned version by scan units shipped to other processes
#: (Spark tasks unpickle units; a reused Python worker keeps them across tasks).
_PINNED: OpenCache[Any] = OpenCache()


def open_pinned(uri: str, version: int, storage_options: Mapping[str, str] | None) -> Any:
    """The pylance dataset at ``uri`` and ``version``, shared process-wide (never commit on it)."""
    key = (uri, version, options_key(storage_options))
    hit = _PINNED.get(key)
    if hit is not None and hit.version == version:
        return hit
    if hit is not None:  # someone moved the shared dataset (checkout): replace it
        _PINNED.discard(key)
    import lance

    opts = dict(storage_options) if storage_options else None
    return _PINNED.put(
        key, lance.dataset(uri, version=version, storage_options=opts, session=read_session())
    )


_POOL = concurrent.futures.ThreadPoolExecutor(
    max_workers=OPEN_THREADS, thread_name_prefix="lance-sql-open"
)

T = TypeVar("T")
R = TypeVar("R")


def open_all(items: Iterable[T], opener: Callable[[T], R]) -> list[R]:
    """``[opener(i) for i in items]``, run concurrently; the first error is raised.

    Safe to call from any thread, including a DataFusion worker (the pool's
    threads never call back into DataFusion). One item runs inline.
    """
    items = list(items)
    if len(items) <= 1:
        return [opener(i) for i in items]
    futures = [_POOL.submit(opener, i) for i in items]
    return [f.result() for f in futures]


__all__ = [
    "INDEX_CACHE_BYTES",
    "METADATA_CACHE_BYTES",
    "OPEN_CACHE_ENTRIES",
    "OpenCache",
    "open_all",
    "open_pinned",
    "options_key",
    "read_session",
]
